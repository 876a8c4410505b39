import { runMachineSimulator } from '../hardware/index.js';
import { createLogger } from '../util/logger.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';

export interface SimulateMachineOptions {
  path?: string;
  profile?: string;
  baud?: string;
  failSlots?: string;
  failRate?: string;
  silentSlots?: string;
  vendDelayMs?: string;
  sessionTimeoutMs?: string;
  autoVend?: string;
}

function number(value: string | undefined, flag: string, check: (n: number) => boolean): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || !check(n)) throw new UsageError(`${flag} got "${value}"`);
  return n;
}

const list = (value: string | undefined) =>
  value
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * `vendgate simulate-machine --path TTY [--profile line|mdb] …`: plays a vending machine (line
 * protocol) or an MDB board with its VMC on one end of a pty pair, so the serial flow runs on a laptop:
 *   socat -d -d pty,raw,echo=0,link=/tmp/vm-machine pty,raw,echo=0,link=/tmp/vm-gateway
 * Type `select <item> <amount>`, `reset` or `garbage` on stdin.
 */
export async function simulateMachineCommand(options: SimulateMachineOptions, io: CliIo, stdin: NodeJS.ReadableStream): Promise<number> {
  if (!options.path) throw new UsageError('--path is required: one end of a pty pair, e.g. /tmp/vm-machine');
  const profile = options.profile ?? 'line';
  if (profile !== 'line' && profile !== 'mdb') throw new UsageError('--profile must be line or mdb');
  let autoVend: { item: string; amount: string; intervalMs: number } | undefined;
  if (options.autoVend) {
    const [item, amount, interval] = options.autoVend.split(':');
    if (!item || !amount || !/^\d+(\.\d+)?$/.test(amount) || !Number.isInteger(Number(interval))) {
      throw new UsageError('--auto-vend takes ITEM:AMOUNT:INTERVAL_MS, e.g. 12:1.50:5000');
    }
    autoVend = { item, amount, intervalMs: Number(interval) };
  }
  const logger = createLogger({ level: 'info', destination: io.stdout });
  const machine = await runMachineSimulator({
    path: options.path,
    profile,
    baudRate: number(options.baud, '--baud', (n) => Number.isInteger(n) && n > 0),
    failSlots: list(options.failSlots),
    failProbability: number(options.failRate, '--fail-rate (0 to 1)', (n) => n >= 0 && n <= 1),
    silentSlots: list(options.silentSlots),
    vendDelayMs: number(options.vendDelayMs, '--vend-delay-ms', (n) => n >= 0),
    sessionTimeoutMs: number(options.sessionTimeoutMs, '--session-timeout-ms', (n) => n > 0),
    autoVend,
    input: stdin,
    logger,
  });
  print(io.stderr, `simulated ${profile} machine on ${options.path}; type "select <item> <amount>", "reset" or "garbage"`);
  await io.stopSignal;
  await machine.stop();
  return EXIT.OK;
}
