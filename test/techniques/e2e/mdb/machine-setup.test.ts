import { afterEach, describe, expect, it } from 'vitest';
import { mdbStack, type MdbStack } from './harness.js';
import { startVmcOnPty, type VmcOnPty } from '../../../fakes/mdb-vmc/pty.js';
import { byName, deviceConfig, selftestFor } from '../../../selftest/harness.js';

/**
 * What the machine's setup tells vendgate, against the VMC model on a real pty: the board reports
 * `c,SETUP,<level>,<currency>,<scale>,<decimals>,<response s>[,<options>]` as the VMC brings the
 * reader up. Always idle is a level-3 option bit (0x20) the VMC must have switched on; a setting
 * the machine says it cannot serve is refused in one line, and the selftest says what it supports.
 */

/** The stack of the running test, stopped after it. */
let stack: MdbStack | null = null;
afterEach(async () => {
  await stack?.stop();
  stack = null;
});

/** Waits for the VMC to enable the reader and for the board's setup line in the log, and returns that line. */
async function setupReported(s: MdbStack): Promise<Record<string, any>> {
  await s.waitFor(() => s.pty.vmc.state === 'enabled', { what: 'the reader enabled' });
  return s.waitFor(() => s.svc.logs().find((l) => l.msg === 'mdb machine setup reported by the board'), {
    what: 'the setup line',
  });
}

const kioskOrder = (s: MdbStack) =>
  fetch(`${s.svc.localUrl}/api/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ slot: '12' }),
  });

/** A sale the kiosk way: the order taken, paid, the paid credit starts the session, item 12 chosen there and vended. */
async function sellOnKiosk(s: MdbStack): Promise<void> {
  expect((await kioskOrder(s)).status).toBe(201);
  const order = await s.waitFor(() => s.orders().find((o) => o.state === 'awaiting_payment'), { what: 'the order' });
  await s.pay(order);
  await s.waitFor(() => s.pty.vmc.state === 'session-idle', { what: 'the session started with the credit' });
  s.pty.vmc.select('12', '2800');
  await s.waitFor(() => s.orders()[0]?.state === 'vended', { timeoutMs: 45_000, what: 'the vend' });
}

describe('the MDB machine setup reported by the board', () => {
  const refusals = (s: MdbStack) => s.svc.logs().filter((l) => l.level === 'error' && /^MDB setup refused/.test(String(l.msg)));

  async function refusedInOneLine(s: MdbStack, pattern: RegExp) {
    const alarm = await s.waitFor(() => s.alarms().find((a) => a.name === 'mdb_setup_mismatch'), { what: 'the setup alarm' });
    expect(alarm.message).toMatch(pattern);
    // The reader is switched off: the machine stops polling it, nothing can be sold.
    await s.waitFor(() => s.pty.vmc.received.at(-1) === 'C,0' && s.pty.vmc.state === 'inactive', { what: 'the reader switched off' });
    expect(refusals(s)).toHaveLength(1);
    expect(refusals(s)[0]!.msg).toBe(alarm.message);
    expect(s.pty.vmc.received.some((l) => l.startsWith('C,START') || l.startsWith('C,VEND'))).toBe(false);
    expect(s.orders()).toEqual([]);
  }

  it('always idle configured on a level 3 machine with always idle off is refused in one line, and the reader stays off', async () => {
    const s = (stack = await mdbStack({ vmc: { style: 'authorization-first', level: 3 } }));
    await refusedInOneLine(
      s,
      /session is always-idle, the machine reports level 3, always idle off \(options 0x00\).*set session: authorization-first/,
    );
  });

  it('always idle configured on a level 1 machine (always idle is a level 3 option) is refused the same way', async () => {
    const s = (stack = await mdbStack({ vmc: { style: 'authorization-first', level: 1 } }));
    await refusedInOneLine(s, /session is always-idle, the machine reports level 1, no always idle/);
  });

  it('a machine whose currency is not device.currency is refused in one line', async () => {
    const s = (stack = await mdbStack({ vmc: { currency: 1978 } }));
    await refusedInOneLine(s, /currency code is 978, device\.currency MNT is 496/);
  });

  it('authorization first on a machine with always idle off comes up and sells, and the log says what the machine supports', async () => {
    const s = (stack = await mdbStack({ vmc: { style: 'authorization-first', level: 3 }, mdb: { session: 'authorization-first' } }));
    const setup = await setupReported(s);
    expect(setup.sessions).toBe('level 3, always idle off (options 0x00): authorization first only');
    await sellOnKiosk(s);
    expect(s.alarms().filter((a) => a.name === 'mdb_setup_mismatch')).toEqual([]);
  });

  it('a board that reports no option bits: always idle is not refused, the machine is not second-guessed', async () => {
    const s = (stack = await mdbStack({ vmc: { setupReport: 'without-options' } }));
    const setup = await setupReported(s);
    expect(setup.sessions).toMatch(/option bits not reported: always idle unknown/);
    expect(s.pty.vmc.select('12', '2800')).toBe(true);
    await s.waitFor(() => s.orders().find((o) => o.state === 'awaiting_payment'), { what: 'the order' });
    expect(s.alarms().filter((a) => a.name === 'mdb_setup_mismatch')).toEqual([]);
  });
});

describe('session: auto follows what the machine reports', () => {
  const selection = async (s: MdbStack) => ((await (await fetch(`${s.svc.localUrl}/api/state`)).json()) as { selection: string }).selection;

  it('always idle on: the customer chooses on the machine, the kiosk takes no order of its own', async () => {
    const s = (stack = await mdbStack({ vmc: { style: 'always-idle' }, mdb: { session: 'auto' } }));
    const setup = await setupReported(s);
    expect(setup.inForce).toBe('always-idle');
    expect(await selection(s)).toBe('machine');
    const refused = await kioskOrder(s);
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: { code: 'VG_ERR_CHOOSE_ON_MACHINE' } });
    expect(s.pty.vmc.select('12', '2800')).toBe(true);
    const order = await s.waitFor(() => s.orders().find((o) => o.state === 'awaiting_payment'), { what: 'the order' });
    await s.pay(order);
    await s.waitFor(() => s.orders()[0]?.state === 'vended', { timeoutMs: 45_000, what: 'the vend' });
    expect(s.pty.vmc.dispensed).toEqual([{ item: '12', approved: '12@2800' }]);
  });

  it("the machine switched to authorization first and restarted: the kiosk's open screen follows at once", async () => {
    const s = (stack = await mdbStack({ vmc: { style: 'always-idle' }, mdb: { session: 'auto' } }));
    await s.waitFor(() => s.pty.vmc.state === 'enabled', { what: 'the reader enabled' });
    // The kiosk's screen: the state stream it keeps open.
    const screen = new AbortController();
    let heard = '';
    const events = await fetch(`${s.svc.localUrl}/api/events`, { signal: screen.signal });
    const reader = events.body!.getReader();
    void (async () => {
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) return;
        heard += new TextDecoder().decode(value);
      }
    })();
    try {
      await s.waitFor(() => heard.includes('"selection":"machine"'), { what: 'the screen saying choose on the machine' });
      const mark = heard.length;
      // The operator turns always idle off in the service menu; the machine restarts and reports it.
      s.pty.vmc.options.style = 'authorization-first';
      s.pty.vmc.powerCycleMachine();
      await s.waitFor(() => heard.slice(mark).includes('"selection":"kiosk"'), {
        timeoutMs: 20_000,
        what: 'the screen taking orders itself',
      });
      expect(await selection(s)).toBe('kiosk');
    } finally {
      screen.abort();
    }
  });

  it('always idle off: the customer pays on the kiosk first and the paid credit starts the session', async () => {
    const s = (stack = await mdbStack({ vmc: { style: 'authorization-first' }, mdb: { session: 'auto' } }));
    const setup = await setupReported(s);
    expect(setup.inForce).toBe('authorization-first');
    expect(await selection(s)).toBe('kiosk');
    await sellOnKiosk(s);
    expect(s.alarms().filter((a) => a.name === 'mdb_setup_mismatch')).toEqual([]);
  });
});

describe('the selftest on an MDB machine', () => {
  let pty: VmcOnPty | null = null;
  afterEach(async () => {
    await pty?.stop();
    pty = null;
  });

  async function serialLine(vmc: Parameters<typeof startVmcOnPty>[0], session: string) {
    pty = await startVmcOnPty(vmc);
    const device = await deviceConfig({
      device: { catalog: [{ slot: '12', name: 'Chips', price: 2800 }] },
      actuator: { kind: 'serial', serial: { path: pty.gatewayPath, baudRate: 115_200, profile: 'mdb', mdb: { session } } },
    });
    const { report } = await selftestFor(device.path);
    return byName(report.checks).serial!;
  }

  it('says which session styles the machine supports and which is configured', async () => {
    const line = await serialLine({ style: 'always-idle' }, 'always-idle');
    expect(line.status).toBe('PASS');
    expect(line.detail).toMatch(
      /MDB reader enabled on .*; the machine: level 3, always idle on \(options 0x20\): both session styles; configured: always-idle/,
    );
  });

  it('fails with the one refusal line when the configured style is one the machine does not support', async () => {
    const line = await serialLine({ style: 'authorization-first' }, 'always-idle');
    expect(line.status).toBe('FAIL');
    expect(line.detail).toMatch(
      /^MDB setup refused: actuator\.serial\.mdb\.session is always-idle, the machine reports level 3, always idle off/,
    );
  });
});
