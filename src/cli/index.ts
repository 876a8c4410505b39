import { parseArgs } from 'node:util';
import { SettingsError } from '../settings/index.js';
import { InstanceLockedError } from '../store/index.js';
import { PortInUseError } from '../util/http-listener.js';
import { VendgateError } from '../util/errors.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';

export { type CliIo, EXIT } from './io.js';

const USAGE = `usage: vendgate <command> [options]

  start [--config FILE]                       run the gateway (npm start)
  relay [--config FILE]                       fleet mode: one webhook endpoint for a whole fleet, carried
                                              by the broker (default $VENDGATE_RELAY_CONFIG, /etc/vendgate/relay.yaml)
  orders [--state S] [--json] [--limit N]     list orders, newest first
  resolve ORDER --vended|--not-vended         settle an uncertain vend (not vended → refund)
  migrate [--config FILE]                     apply pending database migrations (update.sh)
  replay [--since ISO]                        re-run stored webhook events (GET + observe); default: last 24 h
  reconcile [--since ISO] [--json]            paid invoices without a vend or refund here, vends without
                                              a paid invoice there; exit 1 when any (default: last 24 h)
  selftest [--json] [--actuate [--yes]] [--expect-service]
                                              check everything on site; exit 0 only when nothing FAILs
                                              (--actuate: one test vend after you type yes; --yes for scripts)
  export [--from ISO] [--to ISO]              orders created in [from, to) as CSV, for accounting
  stock [--json]                              every slot: price, counted stock, sold out, jammed
  refill SLOT COUNT                           set the items now in a slot (after filling it)
  clear-jam SLOT                              put a jammed slot back in sale (after fixing it)
  catalog [--json] | --apply FILE | --rollback
                                              the catalog in use; apply a document (JSON/YAML); back one version
  simulate --provider gerege|qutpay [--port N] [--webhook-url URL] [--faults JSON]
                                              run the payment provider simulator alone
  simulate-machine --path TTY [--profile line|mdb] [--baud N] [--fail-slots A2,B1] [--fail-rate P]
                   [--silent-slots A1] [--vend-delay-ms N] [--session-timeout-ms N] [--auto-vend ITEM:AMOUNT:MS]
                                              play a serial vending machine / MDB board on a pty (development)

  --config FILE  defaults to $VENDGATE_CONFIG, then /etc/vendgate/config.yaml, then the demo config
Exit codes: 0 ok, 1 runtime failure, 64 usage, 75 another vendgate runs on this database, 78 bad configuration (or a port in use).`;

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  state: { type: 'string' },
  json: { type: 'boolean' },
  limit: { type: 'string' },
  vended: { type: 'boolean' },
  'not-vended': { type: 'boolean' },
  provider: { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  'webhook-url': { type: 'string' },
  path: { type: 'string' },
  profile: { type: 'string' },
  baud: { type: 'string' },
  'fail-slots': { type: 'string' },
  'fail-rate': { type: 'string' },
  'silent-slots': { type: 'string' },
  'vend-delay-ms': { type: 'string' },
  'session-timeout-ms': { type: 'string' },
  'auto-vend': { type: 'string' },
  faults: { type: 'string' },
  seed: { type: 'string' },
  since: { type: 'string' },
  actuate: { type: 'boolean' },
  yes: { type: 'boolean' },
  'expect-service': { type: 'boolean' },
  from: { type: 'string' },
  to: { type: 'string' },
  apply: { type: 'string' },
  rollback: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * Runs one subcommand and returns the exit code. Never exits the process itself. Each subcommand is
 * loaded when it runs, so the service never carries the simulator's or the selftest's code.
 */
export async function runCli(argv: string[], io: CliIo, extra: { crashPoint?: (name: string) => void } = {}): Promise<number> {
  try {
    const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    const [command, ...rest] = positionals;
    if (values.help || !command) {
      print(command ? io.stdout : io.stderr, USAGE);
      return command || values.help ? EXIT.OK : EXIT.USAGE;
    }
    switch (command) {
      case 'start': return await (await import('./start.js')).startCommand({ config: values.config }, io, extra);
      case 'relay': return await (await import('./relay.js')).relayCommand({ config: values.config }, io);
      case 'orders': return await (await import('./orders.js')).ordersCommand({ config: values.config, state: values.state, json: values.json, limit: values.limit }, io);
      case 'resolve': return await (await import('./orders.js')).resolveCommand({ config: values.config, order: rest[0], vended: values.vended, notVended: values['not-vended'] }, io);
      case 'replay': return await (await import('./replay.js')).replayCommand({ config: values.config, since: values.since }, io);
      case 'reconcile': return await (await import('./reconcile.js')).reconcileCommand({ config: values.config, since: values.since, json: values.json }, io);
      case 'selftest': return await (await import('./selftest.js')).selftestCommand({ config: values.config, json: values.json, actuate: values.actuate, yes: values.yes, expectService: values['expect-service'] }, io);
      case 'export': return await (await import('./export.js')).exportCommand({ config: values.config, from: values.from, to: values.to }, io);
      case 'stock': return (await import('./catalog.js')).stockCommand({ config: values.config, json: values.json }, io);
      case 'refill': return (await import('./catalog.js')).refillCommand({ config: values.config, slot: rest[0], count: rest[1] }, io);
      case 'clear-jam': return (await import('./catalog.js')).clearJamCommand({ config: values.config, slot: rest[0] }, io);
      case 'catalog': return (await import('./catalog.js')).catalogCommand({ config: values.config, json: values.json, apply: values.apply, rollback: values.rollback }, io);
      case 'migrate': return await (await import('./migrate.js')).migrateCommand({ config: values.config }, io);
      case 'simulate-machine': return await (await import('./simulate-machine.js')).simulateMachineCommand({
        path: values.path, profile: values.profile, baud: values.baud, failSlots: values['fail-slots'], failRate: values['fail-rate'],
        silentSlots: values['silent-slots'], vendDelayMs: values['vend-delay-ms'], sessionTimeoutMs: values['session-timeout-ms'], autoVend: values['auto-vend'],
      }, io, io.stdin ?? process.stdin);
      case 'simulate': return await (await import('./simulate.js')).simulateCommand({ provider: values.provider, port: values.port, host: values.host, webhookUrl: values['webhook-url'], faults: values.faults, seed: values.seed }, io);
      default: throw new UsageError(`unknown command "${command}"\n\n${USAGE}`);
    }
  } catch (err) {
    if (err instanceof SettingsError || err instanceof PortInUseError) {
      print(io.stderr, `vendgate: ${err.message}`);
      return EXIT.CONFIG;
    }
    if (err instanceof InstanceLockedError) {
      print(io.stderr, `vendgate: ${err.code}: ${err.message}`);
      return EXIT.ALREADY_RUNNING;
    }
    if (err instanceof UsageError || (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) {
      print(io.stderr, `vendgate: ${err.message}`);
      return EXIT.USAGE;
    }
    if (err instanceof VendgateError) {
      print(io.stderr, `vendgate: ${err.code}: ${err.message}`);
      return EXIT.FAILURE;
    }
    print(io.stderr, `vendgate: unexpected error: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    return EXIT.FAILURE;
  }
}
