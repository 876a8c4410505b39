import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createHardware,
  runMachineSimulator,
  type Actuator,
  type HardwareEvent,
  type HardwareInputs,
  type MachineSimulator,
  type VendRequest,
} from '../../../src/hardware/index.js';
import { parseSettings } from '../../../src/settings/index.js';
import { silentLogger, systemClock } from '../../../src/util/index.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * The serial profiles over a real serial line: a socat pseudo-terminal pair, the gateway's
 * actuator on one end and `runMachineSimulator` on the other.
 */
describe('serial vend over a socat pty pair', () => {
  let dir: string;
  let socat: ChildProcess | null = null;
  let machine: MachineSimulator | null = null;
  let gateway: { actuator: Actuator; inputs: HardwareInputs } | null = null;

  beforeAll(() => {
    const found = spawnSync('socat', ['-V'], { stdio: 'ignore' });
    if (found.error || found.status !== 0) throw new Error('socat is required for the serial e2e tests: run scripts/install-test-deps.sh');
  });

  afterEach(async () => {
    await gateway?.actuator.stop();
    await gateway?.inputs.stop();
    await machine?.stop();
    stopSocat();
    gateway = null;
    machine = null;
    rmSync(dir, { recursive: true, force: true });
  });

  function stopSocat(): void {
    if (socat && socat.exitCode === null) socat.kill('SIGKILL');
    socat = null;
  }

  async function startSocat(): Promise<{ gatewayPath: string; machinePath: string }> {
    const gatewayPath = join(dir, 'gateway');
    const machinePath = join(dir, 'machine');
    const child = spawn('socat', ['-d', '-d', `pty,raw,echo=0,link=${gatewayPath}`, `pty,raw,echo=0,link=${machinePath}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    socat = child;
    let log = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString();
    });
    await waitFor(() => log.includes('starting data transfer loop') && existsSync(gatewayPath) && existsSync(machinePath), {
      what: `socat pty pair (${log})`,
    });
    return { gatewayPath, machinePath };
  }

  async function setup(
    profile: 'line' | 'mdb',
    serial: Record<string, unknown>,
    simulator: Partial<Parameters<typeof runMachineSimulator>[0]> = {},
  ) {
    dir = mkdtempSync(join(tmpdir(), 'vendgate-e2e-serial-'));
    const { gatewayPath, machinePath } = await startSocat();
    machine = await runMachineSimulator({
      path: machinePath,
      profile,
      baudRate: 115_200,
      logger: silentLogger(),
      vendDelayMs: 20,
      ...simulator,
    });
    const settings = parseSettings({
      device: {
        id: 'e2e-1',
        currency: 'EUR',
        catalog: [
          { slot: 'A1', name: 'Water', price: 150 },
          { slot: 'A2', name: 'Juice', price: 250 },
          { slot: '12', name: 'Chips', price: 150 },
        ],
      },
      actuator: { kind: 'serial', serial: { path: gatewayPath, baudRate: 115_200, profile, reconnectMaxMs: 300, ...serial } },
    });
    const hardware = await createHardware({ clock: systemClock, logger: silentLogger() }, settings);
    const events: HardwareEvent[] = [];
    hardware.inputs.on((event) => events.push(event));
    await hardware.inputs.start();
    await hardware.actuator.start();
    gateway = hardware;
    return { actuator: hardware.actuator, events, machine, gatewayPath, machinePath };
  }

  const vend = (slot: string, amount = 150): VendRequest => ({
    orderId: 1,
    reference: 'e2e-1-1-1',
    slot,
    amount,
    currency: 'MNT',
    mode: 'vending',
  });

  it('line profile: a vend is answered OK and the machine dispensed it once', async () => {
    const s = await setup('line', {});
    await waitFor(() => s.actuator.health().ok, { what: 'line up' });
    await expect(s.actuator.fire(vend('A1'))).resolves.toEqual({ result: 'vended', detail: 'OK A1' });
    expect(s.machine.vends).toEqual([{ slot: 'A1', ok: true, answered: true }]);
  });

  it('line profile: a jammed slot fails, and a silent machine is settled by the status command', async () => {
    const s = await setup('line', { timeoutMs: 500, statusCommand: 'STATUS\r\n' }, { failSlots: ['A2'], silentSlots: ['A1'] });
    await waitFor(() => s.actuator.health().ok, { what: 'line up' });
    await expect(s.actuator.fire(vend('A2', 250))).resolves.toEqual({
      result: 'failed',
      reason: 'machine answered "ERR A2 JAM"',
      slotFault: true,
    });
    await expect(s.actuator.fire(vend('A1'))).resolves.toMatchObject({
      result: 'vended',
      detail: expect.stringMatching(/status says vended/),
    });
    expect(s.machine.vends).toEqual([
      { slot: 'A2', ok: false, answered: true },
      { slot: 'A1', ok: true, answered: false },
    ]);
  });

  it('line profile: the pty pair disappearing is noticed, and the line comes back when it is recreated', async () => {
    const s = await setup('line', { timeoutMs: 500 });
    await waitFor(() => s.actuator.health().ok, { what: 'line up' });
    await machine!.stop();
    stopSocat();
    await waitFor(() => s.events.some((e) => e.type === 'line' && !e.up), { what: 'line down' });
    await expect(s.actuator.fire(vend('A1'))).resolves.toMatchObject({
      result: 'failed',
      reason: expect.stringMatching(/serial line down: nothing was sent/),
    });
    const { machinePath } = await startSocat();
    machine = await runMachineSimulator({ path: machinePath, profile: 'line', baudRate: 115_200, logger: silentLogger(), vendDelayMs: 20 });
    await waitFor(() => s.actuator.health().ok, { what: 'line back up', timeoutMs: 30_000 });
    await expect(s.actuator.fire(vend('A1'))).resolves.toMatchObject({ result: 'vended' });
    expect(machine.vends).toHaveLength(1);
  });

  it('MDB profile: enable with settings, the machine asks, approval dispenses', async () => {
    const s = await setup('mdb', { timeoutMs: 5_000, mdb: { setconf: ['C,SETCONF,mdb-always-idle=1'] } });
    await waitFor(() => s.actuator.health().ok, { what: 'reader enabled' });
    expect(s.machine.setconf).toEqual(['C,SETCONF,mdb-always-idle=1']);
    s.machine.select('12', '1.50');
    await waitFor(() => s.events.some((e) => e.type === 'vend_request'), { what: 'vend request' });
    expect(s.events).toContainEqual({ type: 'vend_request', item: '12', amount: 150, budgetSec: 120 });
    await expect(s.actuator.fire(vend('12'))).resolves.toEqual({ result: 'vended', detail: 'c,VEND,SUCCESS' });
    expect(s.machine.vends).toEqual([{ slot: '12', ok: true, answered: true }]);
  });

  it('MDB profile: an unknown item is denied, and after a reset the reader is set up and enabled again', async () => {
    const s = await setup('mdb', { timeoutMs: 5_000, mdb: { setconf: ['C,SETCONF,mdb-always-idle=1'] } });
    await waitFor(() => s.actuator.health().ok, { what: 'reader enabled' });
    s.machine.select('99', '1.50');
    await waitFor(() => s.machine.received.includes('C,STOP'), { what: 'C,STOP' });
    expect(s.events.filter((e) => e.type === 'vend_request')).toEqual([]);
    s.machine.reset();
    await waitFor(() => s.machine.enabled && s.machine.setconf.length === 1, { what: 're-enable after reset' });
    await waitFor(() => s.actuator.health().ok, { what: 'reader enabled again' });
  });
});
