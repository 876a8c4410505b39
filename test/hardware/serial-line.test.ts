import { afterEach, describe, expect, it } from 'vitest';
import { createHardware, type Actuator, type HardwareEvent, type HardwareInputs, type VendRequest } from '../../src/hardware/index.js';
import { systemClock } from '../../src/util/index.js';
import { captureLogger } from './fakes/capture-logger.js';
import { createMockSerial } from './fakes/mock-serial.js';
import { hardwareSettings } from './fakes/settings.js';
import { waitFor } from '../helpers/wait.js';

const request = (overrides: Partial<VendRequest> = {}): VendRequest => ({
  orderId: 3,
  reference: 'test-1-1-3',
  slot: 'A1',
  amount: 150,
  currency: 'MNT',
  mode: 'vending',
  ...overrides,
});

describe('serial line profile', () => {
  let running: { actuator: Actuator; inputs: HardwareInputs } | null = null;
  afterEach(async () => {
    await running?.actuator.stop();
    running = null;
  });

  async function machine(serial: Record<string, unknown> = {}, options: { plugged?: boolean } = {}) {
    const mock = createMockSerial();
    if (options.plugged === false) mock.unplug();
    const log = captureLogger();
    const settings = hardwareSettings({ actuator: { kind: 'serial', serial: { path: mock.path, reconnectMaxMs: 200, ...serial } } });
    const hardware = await createHardware({ clock: systemClock, logger: log.logger, serialBinding: mock.binding }, settings);
    const events: HardwareEvent[] = [];
    hardware.inputs.on((event) => events.push(event));
    await hardware.inputs.start();
    await hardware.actuator.start();
    running = hardware;
    if (options.plugged !== false) await waitFor(() => hardware.actuator.health().ok, { what: 'line up' });
    /** The machine answers once it has received `expected`. */
    const answer = async (expected: string, reply: string) => {
      await waitFor(() => mock.written().includes(expected), { what: `gateway to write ${JSON.stringify(expected)}` });
      mock.emit(reply);
    };
    return { mock, log, events, actuator: hardware.actuator, answer };
  }

  it('opening the port reports the line up', async () => {
    const { events } = await machine();
    expect(events).toContainEqual({ type: 'line', up: true, detail: expect.stringContaining('/dev/ttyMOCK0 open at 9600 baud') });
  });

  it('sends "VEND <slot>\\r\\n" and an OK answer is vended', async () => {
    const m = await machine();
    const outcome = m.actuator.fire(request());
    await m.answer('VEND A1\r\n', 'OK A1\r\n');
    await expect(outcome).resolves.toEqual({ result: 'vended', detail: 'OK A1' });
    expect(m.mock.written()).toBe('VEND A1\r\n');
  });

  it.each([
    ['ERR A1 JAM\r\n', 'ERR A1 JAM'],
    ['NAK\n', 'NAK'],
  ])('an error answer %j is a failed vend naming the line', async (reply, line) => {
    const m = await machine();
    const outcome = m.actuator.fire(request());
    await m.answer('VEND A1', reply);
    await expect(outcome).resolves.toEqual({ result: 'failed', reason: `machine answered "${line}"`, slotFault: true });
  });

  it('fills {slot}, {amount} and {reference}, and only the answer for this reference counts', async () => {
    const m = await machine({
      vendCommand: 'V;{slot};{amount};{reference}\n',
      okPattern: '^ACK {reference}$',
      errorPattern: '^NACK {reference}$',
    });
    const outcome = m.actuator.fire(request({ slot: 'A2', amount: 250 }));
    await m.answer('V;A2;250;test-1-1-3\n', 'ACK test-1-1-2\r\n');
    m.mock.emit('ACK test-1-1-3\r\n');
    await expect(outcome).resolves.toEqual({ result: 'vended', detail: 'ACK test-1-1-3' });
  });

  it('garbage lines are logged and ignored, and an answer split across reads still counts', async () => {
    const m = await machine();
    const outcome = m.actuator.fire(request());
    await m.answer('VEND A1', '\x00\xff#?noise\r\n');
    m.mock.emit('BUSY\r\nO');
    m.mock.emit('K A1\r\n');
    await expect(outcome).resolves.toMatchObject({ result: 'vended' });
    const ignored = m.log
      .entries()
      .filter((e) => e.msg === 'unrecognised line from the machine ignored')
      .map((e) => e.line);
    expect(ignored).toEqual(['\x00\ufffd#?noise', 'BUSY']);
  });

  it('bytes without a line feed (wrong baud rate) are dropped after 4 KiB with a warning, and later lines still count', async () => {
    const m = await machine();
    const outcome = m.actuator.fire(request());
    await m.answer('VEND A1', 'x'.repeat(5_000));
    await waitFor(() => m.log.entries().some((e) => e.msg?.toString().startsWith('no line feed from the machine')), { what: 'warning' });
    m.mock.emit('\r\nOK A1\r\n');
    await expect(outcome).resolves.toMatchObject({ result: 'vended' });
  });

  it('a line from the machine outside any vend is logged and changes nothing', async () => {
    const m = await machine();
    m.mock.emit('HELLO\r\n');
    await waitFor(() => m.log.entries().some((e) => e.line === 'HELLO'), { what: 'the line to be logged' });
    expect(m.mock.written()).toBe('');
    expect(m.actuator.health().ok).toBe(true);
  });

  it('no answer after the command was written is unknown, never failed, when there is no status command', async () => {
    const m = await machine({ timeoutMs: 200 });
    const outcome = await m.actuator.fire(request());
    expect(outcome).toMatchObject({
      result: 'unknown',
      detail: expect.stringMatching(/no answer within 200 ms.*may or may not have vended/),
    });
  });

  it.each([
    ['DONE A1', { result: 'vended' }],
    ['FAILED A1', { result: 'failed', reason: expect.stringMatching(/status says not vended/) }],
    ['NONE', { result: 'failed' }],
  ])('no answer, then the status command settles it: %s', async (status, expected) => {
    const m = await machine({ timeoutMs: 300, statusCommand: 'STATUS\r\n' });
    const outcome = m.actuator.fire(request());
    await m.answer('STATUS\r\n', `${status}\r\n`);
    await expect(outcome).resolves.toMatchObject(expected);
    expect(m.mock.written()).toBe('VEND A1\r\nSTATUS\r\n');
  });

  it('a status answer about another slot does not settle the vend', async () => {
    const m = await machine({ timeoutMs: 300, statusCommand: 'STATUS\r\n' });
    const outcome = m.actuator.fire(request());
    await m.answer('STATUS\r\n', 'DONE A2\r\n');
    await expect(outcome).resolves.toMatchObject({ result: 'unknown', detail: expect.stringMatching(/status query got no usable answer/) });
  });

  it('a late OK that arrives while the status is being asked is vended', async () => {
    const m = await machine({ timeoutMs: 300, statusCommand: 'STATUS\r\n' });
    const outcome = m.actuator.fire(request());
    await m.answer('STATUS\r\n', 'OK A1\r\n');
    await expect(outcome).resolves.toMatchObject({ result: 'vended' });
  });

  it('with the line down nothing is written: the vend waits timeoutMs, then fails as "serial line down"', async () => {
    const m = await machine({ timeoutMs: 300 }, { plugged: false });
    const outcome = await m.actuator.fire(request());
    expect(outcome).toMatchObject({ result: 'failed', reason: expect.stringMatching(/^serial line down: nothing was sent/) });
    expect(m.mock.written()).toBe('');
    expect(m.events).toContainEqual({
      type: 'line',
      up: false,
      detail: expect.stringMatching(/cannot open \/dev\/ttyMOCK0.*check the cable/),
    });
    expect(m.actuator.health()).toMatchObject({ ok: false });
  });

  it('a vend waiting for a line that comes back in time is sent and answered', async () => {
    const m = await machine({ timeoutMs: 3_000 }, { plugged: false });
    const outcome = m.actuator.fire(request());
    m.mock.replug();
    await m.answer('VEND A1', 'OK A1\r\n');
    await expect(outcome).resolves.toMatchObject({ result: 'vended' });
  });

  it('a disconnect after the command was written is unknown; the line reconnects by itself and is reported', async () => {
    const m = await machine({ timeoutMs: 3_000 });
    const outcome = m.actuator.fire(request());
    await waitFor(() => m.mock.written().includes('VEND A1'));
    m.mock.unplug();
    await expect(outcome).resolves.toMatchObject({
      result: 'unknown',
      detail: expect.stringMatching(/line went down after the vend command was sent/),
    });
    expect(m.events).toContainEqual({ type: 'line', up: false, detail: expect.stringMatching(/device disconnected/) });
    m.mock.replug();
    await waitFor(() => m.actuator.health().ok, { what: 'reconnect' });
    expect(m.events.filter((e) => e.type === 'line' && e.up)).toHaveLength(2);
    expect(m.mock.written()).toBe('VEND A1\r\n');
  });

  it('a disconnect mid-vend with a status command asks the machine once the line is back', async () => {
    const m = await machine({ timeoutMs: 3_000, statusCommand: 'STATUS\r\n' });
    const outcome = m.actuator.fire(request());
    await waitFor(() => m.mock.written().includes('VEND A1'));
    m.mock.unplug();
    await waitFor(() => m.events.some((e) => e.type === 'line' && !e.up));
    m.mock.replug();
    await m.answer('STATUS\r\n', 'DONE A1\r\n');
    await expect(outcome).resolves.toMatchObject({ result: 'vended', detail: expect.stringMatching(/status says vended/) });
  });

  it('queryOutcome asks with the status command after a crash', async () => {
    const m = await machine({ statusCommand: 'STATUS {reference}\r\n', statusVendedPattern: '^DONE {reference}$' });
    const answer = m.actuator.queryOutcome!(request());
    await m.answer('STATUS test-1-1-3\r\n', 'DONE test-1-1-3\r\n');
    await expect(answer).resolves.toBe('vended');
  });

  it('queryOutcome without a status command cannot tell', async () => {
    const m = await machine();
    await expect(m.actuator.queryOutcome!(request())).resolves.toBe('unknown');
    expect(m.mock.written()).toBe('');
  });

  it('a second vend while one waits for its answer is refused without writing', async () => {
    const m = await machine();
    const first = m.actuator.fire(request());
    await expect(m.actuator.fire(request({ orderId: 4 }))).resolves.toMatchObject({
      result: 'failed',
      reason: expect.stringMatching(/nothing was sent/),
    });
    await m.answer('VEND A1', 'OK A1\r\n');
    await first;
    expect(m.mock.written()).toBe('VEND A1\r\n');
  });

  it('stop closes the port and is safe twice; fire after stop sends nothing', async () => {
    const m = await machine();
    await m.actuator.stop();
    await m.actuator.stop();
    await expect(m.actuator.fire(request())).resolves.toMatchObject({ result: 'failed' });
    expect(m.mock.current()).toBeUndefined();
  });
});
