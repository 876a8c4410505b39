import { afterEach, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { runMachineSimulator, type MachineSimulator } from '../../src/hardware/index.js';
import { silentLogger } from '../../src/util/index.js';
import { createMockSerial } from './fakes/mock-serial.js';
import { waitFor } from '../helpers/wait.js';

/** The test plays the gateway: it writes commands into the simulator's port and reads its answers. */
describe('machine simulator (vendgate simulate-machine)', () => {
  let sim: MachineSimulator | null = null;
  afterEach(async () => {
    await sim?.stop();
    sim = null;
  });

  async function start(options: Partial<Parameters<typeof runMachineSimulator>[0]> & { profile: 'line' | 'mdb' }) {
    const mock = createMockSerial('/dev/ttyMACHINE');
    sim = await runMachineSimulator({ path: mock.path, logger: silentLogger(), binding: mock.binding, vendDelayMs: 1, ...options });
    const said = () => mock.written();
    const tell = async (line: string, expectReply?: string) => {
      const before = said().length;
      mock.emit(`${line}\n`);
      if (expectReply !== undefined) await waitFor(() => said().slice(before).includes(expectReply), { what: `reply ${expectReply}` });
      return said().slice(before);
    };
    return { mock, sim, said, tell };
  }

  it('line: answers VEND with OK, remembers it for STATUS', async () => {
    const m = await start({ profile: 'line' });
    expect(await m.tell('STATUS', 'NONE\r\n')).toBe('NONE\r\n');
    await m.tell('VEND A1\r', 'OK A1\r\n');
    await m.tell('STATUS', 'DONE A1\r\n');
    expect(m.sim.vends).toEqual([{ slot: 'A1', ok: true, answered: true }]);
  });

  it('line: a failing slot answers ERR and STATUS says FAILED', async () => {
    const m = await start({ profile: 'line', failSlots: ['B2'] });
    await m.tell('VEND B2', 'ERR B2 JAM\r\n');
    await m.tell('STATUS', 'FAILED B2\r\n');
  });

  it('line: the failure probability uses the injected random source', async () => {
    const m = await start({ profile: 'line', failProbability: 0.5, random: () => 0.4 });
    await m.tell('VEND A1', 'ERR A1 JAM\r\n');
  });

  it('line: a silent slot vends without answering', async () => {
    const m = await start({ profile: 'line', silentSlots: ['A1'] });
    await m.tell('VEND A1');
    await waitFor(() => m.sim.vends.length === 1);
    expect(m.sim.vends[0]).toEqual({ slot: 'A1', ok: true, answered: false });
    await m.tell('STATUS', 'DONE A1\r\n');
  });

  it('mdb: enable, the customer selects, approval dispenses with SUCCESS, IDLE, ENABLED', async () => {
    const m = await start({ profile: 'mdb' });
    await m.tell('C,SETCONF,mdb-always-idle=1', 'c,SET,OK\r\n');
    await m.tell('C,1', 'c,STATUS,ENABLED\r\n');
    expect(m.sim.enabled).toBe(true);
    expect(m.sim.setconf).toEqual(['C,SETCONF,mdb-always-idle=1']);
    const before = m.said().length;
    m.sim.select('12', '1.50');
    await waitFor(() => m.said().slice(before) === 'c,STATUS,VEND,1.50,12\r\n');
    expect(await m.tell('C,VEND,1.50', 'c,STATUS,ENABLED\r\n')).toBe('c,VEND,SUCCESS\r\nc,STATUS,IDLE\r\nc,STATUS,ENABLED\r\n');
    expect(m.sim.vends).toEqual([{ slot: '12', ok: true, answered: true }]);
  });

  it('mdb: a failing item answers c,ERR,VEND 3', async () => {
    const m = await start({ profile: 'mdb', failSlots: ['12'] });
    await m.tell('C,1', 'ENABLED');
    m.sim.select('12', '1.50');
    await waitFor(() => m.said().includes('c,STATUS,VEND'));
    expect(await m.tell('C,VEND,1.50', 'c,STATUS,ENABLED\r\n')).toBe('c,ERR,VEND 3\r\nc,STATUS,ENABLED\r\n');
  });

  it('mdb: a selection while the reader is not enabled is ignored, and an out-of-sequence command resets the reader', async () => {
    const m = await start({ profile: 'mdb' });
    m.sim.select('12', '1.50');
    expect(m.said()).toBe('');
    await m.tell('C,SETCONF,x=1', 'c,SET,OK');
    await m.tell('C,1', 'ENABLED');
    expect(await m.tell('C,STOP', 'c,STATUS,INACTIVE\r\n')).toBe('c,STATUS,INACTIVE\r\n');
    expect(m.sim.enabled).toBe(false);
    expect(m.sim.setconf).toEqual([]);
  });

  it('mdb: the operator types "select 12 1.50" on the input stream; the VMC gives up after sessionTimeoutMs', async () => {
    const input = new PassThrough();
    const m = await start({ profile: 'mdb', input, sessionTimeoutMs: 50 });
    await m.tell('C,1', 'ENABLED');
    const before = m.said().length;
    input.write('select 12 1.50\n');
    await waitFor(() => m.said().slice(before) === 'c,STATUS,VEND,1.50,12\r\nc,STATUS,ENABLED\r\n', { what: 'request then VMC timeout' });
  });

  it('mdb: autoVend asks again whenever the reader is enabled and idle', async () => {
    const m = await start({ profile: 'mdb', autoVend: { item: '12', amount: '1.50', intervalMs: 10 } });
    await m.tell('C,1', 'c,STATUS,VEND,1.50,12');
  });
});
