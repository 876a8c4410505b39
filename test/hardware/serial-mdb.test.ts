import { afterEach, describe, expect, it, vi } from 'vitest';
import { createHardware, type Actuator, type HardwareEvent, type VendRequest } from '../../src/hardware/index.js';
import { parseMdbAmount } from '../../src/hardware/serial/mdb-profile.js';
import { parseSetup } from '../../src/hardware/serial/mdb-lines.js';
import { checkSetup, machineSessions } from '../../src/hardware/serial/mdb-setup.js';
import { systemClock } from '../../src/util/index.js';
import { captureLogger } from './fakes/capture-logger.js';
import { createMockSerial } from './fakes/mock-serial.js';
import { hardwareSettings } from './fakes/settings.js';
import { waitFor } from '../helpers/wait.js';

const SETCONF = ['C,SETCONF,mdb-always-idle=1', 'C,SETCONF,mdb-currency-code=0x1496'];
const ENABLE = ['C,0', ...SETCONF, 'C,1'].map((l) => `${l}\n`).join('');

const chips = (overrides: Partial<VendRequest> = {}): VendRequest => ({
  orderId: 9,
  reference: 'test-1-1-9',
  slot: '12',
  amount: 150,
  currency: 'MNT',
  mode: 'vending',
  ...overrides,
});

describe('serial MDB profile (Qibixx-style board)', () => {
  let actuator: Actuator | null = null;
  afterEach(async () => {
    vi.useRealTimers();
    await actuator?.stop();
    actuator = null;
  });

  /** With setTimeout faked: lets the mock port's nextTick/promise chain run until `predicate` holds. */
  async function settle(predicate: () => boolean): Promise<void> {
    for (let i = 0; i < 1_000 && !predicate(); i++) await new Promise((resolve) => setImmediate(resolve));
    expect(predicate()).toBe(true);
  }

  async function board(mdb: Record<string, unknown> = {}, serial: Record<string, unknown> = {}) {
    const mock = createMockSerial();
    const log = captureLogger();
    const settings = hardwareSettings({
      actuator: {
        kind: 'serial',
        serial: { path: mock.path, profile: 'mdb', timeoutMs: 2_000, reconnectMaxMs: 200, mdb: { setconf: SETCONF, ...mdb }, ...serial },
      },
    });
    const hardware = await createHardware({ clock: systemClock, logger: log.logger, serialBinding: mock.binding }, settings);
    const events: HardwareEvent[] = [];
    hardware.inputs.on((event) => events.push(event));
    await hardware.inputs.start();
    await hardware.actuator.start();
    actuator = hardware.actuator;
    await waitFor(() => mock.written().endsWith('C,1\n'), { what: 'enable sequence' });
    mock.emit('c,STATUS,ENABLED\r\n');
    await waitFor(() => hardware.actuator.health().ok, { what: 'reader enabled' });
    const sent = () => mock.written();
    /** Bytes written since the enable sequence. */
    const after = (mark: number) => mock.written().slice(mark);
    const requestVend = async (amount: string, item: string) => {
      mock.emit(`c,STATUS,VEND,${amount},${item}\r\n`);
    };
    /** The machine asks to vend `item` at `amount` (chips at 1.50 unless given): resolves when that is a vend_request event. */
    const vendRequested = async (amount = '1.50', item = '12') => {
      await requestVend(amount, item);
      await waitFor(() => events.some((e) => e.type === 'vend_request'), { what: 'the vend_request event' });
    };
    /** Fires the vend of chips() and resolves when its approval (C,VEND,1.50) went to the board: the vend's outcome, still to come. */
    const approve = async () => {
      const outcome = hardware.actuator.fire(chips());
      await waitFor(() => sent().endsWith('C,VEND,1.50\n'), { what: 'the approval' });
      return { outcome };
    };
    return { mock, log, events, actuator: hardware.actuator, sent, after, requestVend, vendRequested, approve };
  }

  it('at start disables, re-sends the volatile settings, then enables: C,0, SETCONF…, C,1', async () => {
    const b = await board();
    expect(b.sent()).toBe(ENABLE);
    expect(b.actuator.health()).toMatchObject({ ok: true, detail: expect.stringMatching(/MDB reader enabled/) });
  });

  it('without settings to send, start is just C,1', async () => {
    const b = await board({ setconf: [] });
    expect(b.sent()).toBe('C,1\n');
  });

  it("the machine's vend request becomes a vend_request event in smallest units", async () => {
    const b = await board();
    await b.vendRequested();
    expect(b.events).toContainEqual({ type: 'vend_request', item: '12', amount: 150, budgetSec: 120 });
  });

  it("approving after payment sends C,VEND with the machine's amount, and c,VEND,SUCCESS is vended", async () => {
    const b = await board();
    await b.vendRequested();
    const mark = b.sent().length;
    const outcome = b.actuator.fire(chips());
    await waitFor(() => b.after(mark) === 'C,VEND,1.50\n');
    b.mock.emit('c,VEND,SUCCESS\r\nc,STATUS,IDLE\r\nc,STATUS,ENABLED\r\n');
    await expect(outcome).resolves.toEqual({ result: 'vended', detail: 'c,VEND,SUCCESS' });
    expect(b.events.filter((e) => e.type === 'session_cancel')).toEqual([]);
  });

  it('c,ERR,VEND after the approval is a failed vend', async () => {
    const b = await board();
    await b.vendRequested();
    const { outcome } = await b.approve();
    b.mock.emit('c,ERR,VEND 3\r\nc,STATUS,ENABLED\r\n');
    await expect(outcome).resolves.toEqual({ result: 'failed', reason: 'machine reported "c,ERR,VEND 3"', slotFault: true });
  });

  it.each([
    ['an unknown item', '1.50', '99', /item "99" is not in device.catalog/],
    ['a zero price', '0.00', '12', /not positive/],
    ['a negative price', '-1.50', '12', /not a positive decimal/],
    ['a price that is not a number', 'abc', '12', /not a positive decimal/],
  ])('%s is denied with C,STOP and never becomes an order', async (_name, amount, item, why) => {
    const b = await board();
    const mark = b.sent().length;
    await b.requestVend(amount, item);
    await waitFor(() => b.after(mark) === 'C,STOP\n', { what: 'C,STOP' });
    expect(b.events.filter((e) => e.type === 'vend_request')).toEqual([]);
    expect(b.log.entries().find((e) => e.msg === 'mdb vend request denied')).toMatchObject({ why: expect.stringMatching(why) });
    await expect(b.actuator.fire(chips())).resolves.toMatchObject({ result: 'failed' });
  });

  it('fire with no open session, or for another item or amount, sends nothing', async () => {
    const b = await board();
    const mark = b.sent().length;
    await expect(b.actuator.fire(chips())).resolves.toMatchObject({
      result: 'failed',
      reason: expect.stringMatching(/no vend session open/),
    });
    await b.vendRequested();
    await expect(b.actuator.fire(chips({ amount: 250 }))).resolves.toMatchObject({
      result: 'failed',
      reason: expect.stringMatching(/asked for item 12 at 150/),
    });
    expect(b.after(mark)).toBe('');
  });

  it('denySession sends C,STOP and closes the session; without a session it sends nothing', async () => {
    const b = await board();
    const mark = b.sent().length;
    await b.actuator.denySession!('invoice expired');
    expect(b.after(mark)).toBe('');
    await b.vendRequested();
    await b.actuator.denySession!('invoice expired');
    expect(b.after(mark)).toBe('C,STOP\n');
    await expect(b.actuator.fire(chips())).resolves.toMatchObject({ result: 'failed' });
  });

  it('the machine ending the session (customer cancel or its own timeout) emits session_cancel', async () => {
    const b = await board();
    await b.vendRequested();
    b.mock.emit('c,STATUS,ENABLED\r\n');
    await waitFor(() => b.events.some((e) => e.type === 'session_cancel'));
    await expect(b.actuator.fire(chips())).resolves.toMatchObject({ result: 'failed', reason: expect.stringMatching(/nothing was sent/) });
  });

  it('an unpaid vend request is denied after sessionTimeoutSec', async () => {
    const b = await board({ sessionTimeoutSec: 30 });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const mark = b.sent().length;
    await b.requestVend('1.50', '12');
    await settle(() => b.events.some((e) => e.type === 'vend_request'));
    await vi.advanceTimersByTimeAsync(29_999);
    expect(b.events.some((e) => e.type === 'session_cancel')).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await settle(() => b.after(mark) === 'C,STOP\n');
    expect(b.events).toContainEqual({ type: 'session_cancel' });
  });

  it('after a reset (c,STATUS,INACTIVE) the reader re-sends its settings and enables again, and the open session is canceled', async () => {
    const b = await board();
    await b.vendRequested();
    const mark = b.sent().length;
    b.mock.emit('c,STATUS,INACTIVE\r\n');
    await waitFor(() => b.after(mark) === ENABLE, { what: 're-enable' });
    expect(b.events).toContainEqual({ type: 'session_cancel' });
    expect(b.actuator.health().ok).toBe(false);
    b.mock.emit('c,STATUS,ENABLED\r\n');
    await waitFor(() => b.actuator.health().ok);
  });

  it('a reset after the approval is unknown, and the reader is re-enabled after it', async () => {
    const b = await board();
    await b.vendRequested();
    const { outcome } = await b.approve();
    const mark = b.sent().length;
    b.mock.emit('c,STATUS,INACTIVE\r\n');
    await expect(outcome).resolves.toMatchObject({
      result: 'unknown',
      detail: expect.stringMatching(/session ended .*INACTIVE.* after the approval/),
    });
    await waitFor(() => b.after(mark) === ENABLE, { what: 're-enable' });
  });

  it('no result within timeoutMs after the approval is unknown, never failed', async () => {
    const b = await board({}, { timeoutMs: 200 });
    await b.vendRequested();
    await expect(b.actuator.fire(chips())).resolves.toEqual({
      result: 'unknown',
      detail: 'no vend result within 200 ms after the approval',
    });
  });

  it('a disconnect after the approval is unknown; on reconnect the reader is set up and enabled again', async () => {
    const b = await board();
    await b.vendRequested();
    const { outcome } = await b.approve();
    const mark = b.sent().length;
    b.mock.unplug();
    await expect(outcome).resolves.toMatchObject({ result: 'unknown', detail: expect.stringMatching(/line went down after the approval/) });
    b.mock.replug();
    await waitFor(() => b.after(mark) === ENABLE, { what: 're-enable after reconnect' });
    expect(b.events.filter((e) => e.type === 'line').map((e) => (e as { up: boolean }).up)).toEqual([true, false, true]);
  });

  it('a line down while a vend request waits for payment cancels it (the board may have reset)', async () => {
    const b = await board();
    await b.vendRequested();
    b.mock.unplug();
    await waitFor(() => b.events.some((e) => e.type === 'session_cancel'));
    await expect(b.actuator.fire(chips())).resolves.toMatchObject({ result: 'failed', reason: expect.stringMatching(/nothing was sent/) });
  });

  it('a revalue request (change back onto a card) is denied with a reason: nothing approved, no session touched', async () => {
    const b = await board();
    await b.vendRequested('1500');
    const mark = b.sent().length;
    b.mock.emit('c,STATUS,REVALUE,500\r\n');
    await waitFor(() => b.log.entries().some((e) => /revalue request denied: vendgate holds no credit/.test(String(e.msg))));
    expect(b.after(mark)).not.toMatch(/C,VEND|C,REVALUE/);
    expect(b.events.some((e) => e.type === 'session_cancel')).toBe(false);
    expect(b.actuator.health().ok).toBe(true);
  });

  it('garbage from the board is logged and ignored', async () => {
    const b = await board();
    b.mock.emit('zz,??\r\n');
    await waitFor(() => b.log.entries().some((e) => e.msg === 'unrecognised line from the MDB board ignored' && e.line === 'zz,??'));
    expect(b.actuator.health().ok).toBe(true);
  });
});

describe('MDB amounts', () => {
  it.each([
    ['1.50', 100, 150],
    ['0.05', 100, 5],
    ['1500', 1, 1500],
    ['1500.00', 1, 1500],
    ['2.5', 100, 250],
  ])('%s at scale %i is %i smallest units', (text, scale, units) => {
    expect(parseMdbAmount(text, scale)).toBe(units);
  });

  it('an amount finer than the scale is refused', () => {
    expect(parseMdbAmount('1.505', 100)).toMatch(/finer than/);
  });
});

describe("the machine's setup as the board reports it", () => {
  it.each([
    ['c,SETUP,3,1496,1,0,30,00000020', true, /level 3, always idle on \(options 0x20\): both session styles/],
    ['c,SETUP,3,1496,1,0,30,0x21', true, /always idle on \(options 0x21\)/],
    ['c,SETUP,3,1496,1,0,30,00000001', false, /level 3, always idle off \(options 0x01\): authorization first only/],
    ['c,SETUP,1,1496,1,0,30', false, /level 1, no always idle/],
    ['c,SETUP,2,1496,1,0,30,00000020', false, /level 2, no always idle/],
    ['c,SETUP,3,1496,1,0,30', null, /option bits not reported: always idle unknown/],
    ['c,SETUP,3,1496,1,0,30,later-fields', null, /option bits not reported/],
  ])('%s: always idle %s', (line, alwaysIdle, detail) => {
    const setup = parseSetup(line);
    expect(setup).not.toBeNull();
    const sessions = machineSessions(setup!);
    expect(sessions.alwaysIdle).toBe(alwaysIdle);
    expect(sessions.detail).toMatch(detail);
  });

  it('always idle configured against a machine without it is refused in one line; authorization first is never refused for it', () => {
    const ours = { currency: 'MNT', decimals: undefined, scale: 1 } as const;
    const refused = checkSetup('c,SETUP,3,1496,1,0,30,00000000', { ...ours, session: 'always-idle' }).refused;
    expect(refused).toMatch(
      /^MDB setup refused: actuator\.serial\.mdb\.session is always-idle, the machine reports level 3, always idle off/,
    );
    expect(refused).not.toMatch(/\n/);
    expect(checkSetup('c,SETUP,3,1496,1,0,30,00000000', { ...ours, session: 'authorization-first' }).refused).toBeNull();
    expect(checkSetup('c,SETUP,1,1496,1,0,30', { ...ours, session: 'authorization-first' }).refused).toBeNull();
    expect(checkSetup('c,SETUP,3,1496,1,0,30', { ...ours, session: 'always-idle' })).toMatchObject({ refused: null, responseTimeSec: 30 });
  });

  it('decimal places that disagree with the setting, or amounts finer than MNT is charged in, are refused in one line', () => {
    const ours = { currency: 'MNT', scale: 1, session: 'always-idle' } as const;
    expect(checkSetup('c,SETUP,3,1496,1,2,30,00000020', { ...ours, decimals: 0 }).refused).toMatch(
      /the machine's prices have 2 decimal places, actuator\.serial\.mdb\.decimals says 0/,
    );
    expect(checkSetup('c,SETUP,3,1496,1,2,30,00000020', { ...ours, decimals: undefined }).refused).toMatch(
      /the machine counts in 1\/100 of a unit, MNT is charged in 1\/1/,
    );
    expect(checkSetup('c,SETUP,3,1496,1,0,30,00000020', { ...ours, decimals: 0 }).refused).toBeNull();
  });
});
