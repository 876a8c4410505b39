import { createInterface } from 'node:readline';
import type { Logger } from '../util/logger.js';
import { ErrorCodes, VendgateError, errorMessage } from '../util/errors.js';
import type { SerialBinding } from './serial/connection.js';

/**
 * `vendgate simulate-machine`: a vending machine on the other end of a serial line, for development
 * and e2e tests with a socat pty pair. It plays either a line-protocol machine or an MDB board plus
 * its vending machine controller (VMC). It is the independent counterpart of the serial profiles,
 * written from HARDWARE.md, so it shares no code with them.
 */
export interface MachineSimulatorOptions {
  /** The serial device to play the machine on (a socat pty end, e.g. /tmp/vendgate-machine). */
  path: string;
  profile: 'line' | 'mdb';
  baudRate?: number;
  logger: Logger;
  /** Tests: a serialport binding (default: the native one). */
  binding?: SerialBinding;
  /** Slots (line) or items (mdb) whose vend fails: `ERR <slot> JAM` / `c,ERR,VEND 3`. */
  failSlots?: string[];
  /** Chance (0–1) that any vend fails. */
  failProbability?: number;
  /** Line: slots that vend but never answer (exercises the `unknown` outcome and the status command). */
  silentSlots?: string[];
  /** Dispensing time before the answer. Default 50 ms. */
  vendDelayMs?: number;
  /** MDB: the VMC gives up on an unapproved vend request after this long (back to ENABLED). */
  sessionTimeoutMs?: number;
  /** MDB: asks for `item` at `amount` (decimal text) every intervalMs while enabled and idle. */
  autoVend?: { item: string; amount: string; intervalMs: number };
  /** Operator lines: `select <item> <amount>`, `reset`, `garbage` (the CLI passes process.stdin). */
  input?: NodeJS.ReadableStream;
  random?: () => number;
}

export interface SimulatedVend {
  slot: string;
  ok: boolean;
  /** false for a silent slot: it vended but said nothing. */
  answered: boolean;
}

export interface MachineSimulator {
  /** Every vend the machine performed or refused, in order: the physical truth of the simulation. */
  readonly vends: readonly SimulatedVend[];
  /** Every line received from the gateway. */
  readonly received: readonly string[];
  /** MDB: whether the gateway enabled the reader, and the SETCONF lines it sent since the last reset. */
  readonly enabled: boolean;
  readonly setconf: readonly string[];
  /** MDB: the customer selects `item` priced `amount` (decimal text such as "1.50"). */
  select(item: string, amount: string): void;
  /** MDB: the VMC resets the reader (it forgets enable and settings). */
  reset(): void;
  /** Sends a line that means nothing (for garbage-handling demos). */
  garbage(): void;
  stop(): Promise<void>;
}

interface PortLike {
  write(data: string): boolean;
  close(callback?: (err: Error | null) => void): void;
  readonly isOpen: boolean;
  pipe<T extends NodeJS.WritableStream>(destination: T): T;
  on(event: 'error', listener: (err: Error) => void): void;
}

async function openPort(options: MachineSimulatorOptions): Promise<{ port: PortLike; lines: NodeJS.ReadableStream }> {
  const [{ SerialPort }, { ReadlineParser }] = await Promise.all([import('serialport'), import('@serialport/parser-readline')]);
  const settings: Record<string, unknown> = { path: options.path, baudRate: options.baudRate ?? 9_600, autoOpen: false };
  if (options.binding) settings.binding = options.binding;
  const port = new SerialPort(settings as never) as unknown as PortLike & { open(cb: (err: Error | null) => void): void };
  await new Promise<void>((resolve, reject) =>
    port.open((err) =>
      err
        ? reject(
            new VendgateError(
              ErrorCodes.HARDWARE,
              `machine simulator cannot open ${options.path}: ${err.message} — start the pty pair first (socat -d -d pty,raw,echo=0,link=A pty,raw,echo=0,link=B)`,
              { cause: err },
            ),
          )
        : resolve(),
    ),
  );
  port.on('error', (err) => options.logger.warn({ err: errorMessage(err) }, 'machine simulator port error'));
  return { port, lines: port.pipe(new ReadlineParser({ delimiter: '\n' })) };
}

export async function runMachineSimulator(options: MachineSimulatorOptions): Promise<MachineSimulator> {
  const log = options.logger.child({ module: 'machine-simulator', profile: options.profile });
  const random = options.random ?? Math.random;
  const vendDelayMs = options.vendDelayMs ?? 50;
  const failSlots = new Set(options.failSlots ?? []);
  const silentSlots = new Set(options.silentSlots ?? []);
  const { port, lines } = await openPort(options);
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const vends: SimulatedVend[] = [];
  const received: string[] = [];
  let enabled = false;
  let setconf: string[] = [];
  let session: { item: string; amount: string; timer?: ReturnType<typeof setTimeout> } | null = null;
  let stopped = false;

  const send = (line: string) => {
    if (stopped || !port.isOpen) return;
    log.debug({ line }, 'machine says');
    port.write(`${line}\r\n`);
  };
  const later = (ms: number, run: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      run();
    }, ms);
    timers.add(timer);
    return timer;
  };
  const fails = (slot: string) => failSlots.has(slot) || random() < (options.failProbability ?? 0);

  // ---- line protocol: VEND <slot> [reference] → OK <slot> | ERR <slot> JAM; STATUS → DONE/FAILED <slot> | NONE
  function onLineCommand(line: string): void {
    const [verb, slot] = line.trim().split(/\s+/);
    if (verb === 'VEND' && slot) {
      later(vendDelayMs, () => {
        const ok = !fails(slot);
        const answered = !silentSlots.has(slot);
        vends.push({ slot, ok, answered });
        log.info({ slot, ok, answered }, 'machine vend');
        if (answered) send(ok ? `OK ${slot}` : `ERR ${slot} JAM`);
      });
    } else if (verb === 'STATUS') {
      const last = vends.at(-1);
      send(last ? `${last.ok ? 'DONE' : 'FAILED'} ${last.slot}` : 'NONE');
    } else {
      send('ERR UNKNOWN_COMMAND');
    }
  }

  // ---- MDB board + VMC: upper-case commands in, lower-case `c,` lines out
  function endSession(): void {
    if (session?.timer) clearTimeout(session.timer);
    session = null;
  }
  function reset(): void {
    endSession();
    enabled = false;
    setconf = [];
    send('c,STATUS,INACTIVE');
  }
  function select(item: string, amount: string): void {
    if (!enabled) return log.warn({ item }, 'reader not enabled: the machine ignores the selection');
    if (session) return log.warn({ item }, 'a vend session is already open');
    session = { item, amount };
    if (options.sessionTimeoutMs) {
      session.timer = later(options.sessionTimeoutMs, () => {
        endSession();
        send('c,STATUS,ENABLED');
      });
    }
    send(`c,STATUS,VEND,${amount},${item}`);
  }
  function onMdbCommand(line: string): void {
    const command = line.trim();
    if (command === 'C,1') {
      enabled = true;
      send('c,STATUS,ENABLED');
      return;
    }
    if (command === 'C,0') {
      enabled = false;
      endSession();
      send('c,STATUS,DISABLED');
      return;
    }
    if (command.startsWith('C,SETCONF,')) {
      setconf.push(command);
      send('c,SET,OK');
      return;
    }
    if (command === 'C,STOP') {
      if (!session) return reset(); // out of sequence: the VMC resets the reader
      endSession();
      send('c,STATUS,ENABLED');
      return;
    }
    const approval = /^C,VEND,(.+)$/.exec(command);
    if (approval) {
      const current = session;
      if (!current || approval[1] !== current.amount) return reset();
      if (current.timer) clearTimeout(current.timer);
      later(vendDelayMs, () => {
        const ok = !fails(current.item);
        vends.push({ slot: current.item, ok, answered: true });
        log.info({ item: current.item, ok }, 'machine vend');
        session = null;
        if (ok) {
          send('c,VEND,SUCCESS');
          send('c,STATUS,IDLE');
        } else send('c,ERR,VEND 3');
        send('c,STATUS,ENABLED');
      });
      return;
    }
    send('c,ERR,UNKNOWN COMMAND');
  }

  lines.on('data', (raw: string) => {
    const line = raw.replace(/\r/g, '');
    if (!line) return;
    received.push(line);
    log.debug({ line }, 'machine heard');
    if (options.profile === 'line') onLineCommand(line);
    else onMdbCommand(line);
  });

  let autoVend: ReturnType<typeof setInterval> | null = null;
  if (options.autoVend && options.profile === 'mdb') {
    const { item, amount, intervalMs } = options.autoVend;
    autoVend = setInterval(() => {
      if (enabled && !session) select(item, amount);
    }, intervalMs);
  }

  const operator = options.input ? createInterface({ input: options.input }) : null;
  operator?.on('line', (text) => {
    const [verb, a, b] = text.trim().split(/\s+/);
    if (verb === 'select' && a && b) select(a, b);
    else if (verb === 'reset') reset();
    else if (verb === 'garbage') send('#?garbage\u0007 line');
    else if (verb) log.warn({ text }, 'operator commands: select <item> <amount> | reset | garbage');
  });

  log.info({ path: options.path }, 'machine simulator ready');
  return {
    vends,
    received,
    get enabled() {
      return enabled;
    },
    get setconf() {
      return setconf;
    },
    select,
    reset,
    garbage: () => send('#?garbage\u0007 line'),
    async stop() {
      if (stopped) return;
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      if (autoVend) clearInterval(autoVend);
      operator?.close();
      endSession();
      if (port.isOpen) await new Promise<void>((resolve) => port.close(() => resolve()));
    },
  };
}
