import { parseArgs } from 'node:util';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';
import { closest, COMMANDS, commandUsage, optionNamesOf, usage } from './usage.js';
import { versionLine } from '../version.js';

export { type CliIo, EXIT } from './io.js';

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
  lan: { type: 'boolean' },
  'local-port': { type: 'string' },
  'webhook-port': { type: 'string' },
  'broker-port': { type: 'string' },
  record: { type: 'boolean' },
  apply: { type: 'string' },
  rollback: { type: 'boolean' },
  key: { type: 'string' },
  'key-id': { type: 'string' },
  'db-id': { type: 'string' },
  device: { type: 'string' },
  'device-key': { type: 'string' },
  body: { type: 'string' },
  ttl: { type: 'string' },
  'request-id': { type: 'string' },
  out: { type: 'string' },
  'timeout-ms': { type: 'string' },
  secrets: { type: 'string' },
  'no-apply': { type: 'boolean' },
  issued: { type: 'boolean' },
  'not-issued': { type: 'boolean' },
  'register-id': { type: 'string' },
  'register-date': { type: 'string' },
  return: { type: 'boolean' },
  reset: { type: 'boolean' },
  'after-restore': { type: 'boolean' },
  read: { type: 'string' },
  by: { type: 'string' },
  fill: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
} as const;

/**
 * Runs one subcommand and returns the exit code. Never exits the process itself. Each subcommand is
 * loaded when it runs, so the service never carries the simulator's or the selftest's code.
 */
export async function runCli(argv: string[], io: CliIo, extra: { crashPoint?: (name: string) => void } = {}): Promise<number> {
  try {
    const { values, positionals, command } = parseCommandLine(argv);
    const [, ...rest] = positionals;
    // Asked-for help goes to stdout (`vendgate help | less`); a missing command is a usage error.
    if (command === 'help' || values.help) {
      const topic = command === 'help' ? (rest[0] ?? (values.help ? 'help' : undefined)) : command;
      if (topic === undefined) {
        print(io.stdout, usage());
        return EXIT.OK;
      }
      if (!(topic in COMMANDS)) throw new UsageError(unknownCommand(topic));
      print(io.stdout, await commandUsage(topic));
      return EXIT.OK;
    }
    if (values.version || command === 'version') {
      print(io.stdout, versionLine());
      return EXIT.OK;
    }
    if (!command) {
      print(io.stderr, usage());
      return EXIT.USAGE;
    }
    switch (command) {
      case 'start':
        return await (
          await import('./start.js')
        ).startCommand(
          {
            config: values.config,
            lan: values.lan,
            provider: values.provider,
            ports: { local: values['local-port'], webhook: values['webhook-port'], broker: values['broker-port'] },
          },
          io,
          extra,
        );
      case 'relay':
        return await (await import('./relay.js')).relayCommand({ config: values.config }, io);
      case 'orders':
        return (await import('./orders.js')).ordersCommand(
          { config: values.config, state: values.state, json: values.json, limit: values.limit },
          io,
        );
      case 'resolve':
        return (await import('./orders.js')).resolveCommand(
          { config: values.config, order: rest[0], vended: values.vended, notVended: values['not-vended'] },
          io,
        );
      case 'settle':
        return await (
          await import('./settle.js')
        ).settleCommand({ config: values.config, case: rest[0], outcome: rest[1], json: values.json }, io);
      case 'receipt':
        return (await import('./orders.js')).receiptCommand(
          {
            config: values.config,
            order: rest[0],
            issued: values.issued,
            notIssued: values['not-issued'],
            registerId: values['register-id'],
            registerDate: values['register-date'],
            return: values.return,
          },
          io,
        );
      case 'replay':
        return await (await import('./replay.js')).replayCommand({ config: values.config, since: values.since }, io);
      case 'reconcile':
        return await (
          await import('./reconcile.js')
        ).reconcileCommand({ config: values.config, since: values.since, json: values.json }, io);
      case 'selftest':
        return await (
          await import('./selftest.js')
        ).selftestCommand(
          {
            config: values.config,
            json: values.json,
            actuate: values.actuate,
            yes: values.yes,
            expectService: values['expect-service'],
            record: values.record,
            ports: { local: values['local-port'], webhook: values['webhook-port'], broker: values['broker-port'] },
          },
          io,
        );
      case 'export':
        return await (await import('./export.js')).exportCommand({ config: values.config, from: values.from, to: values.to }, io);
      case 'dex':
        return (await import('./dex.js')).dexCommand(
          { config: values.config, reset: values.reset, out: values.out, read: values.read, afterRestore: values['after-restore'] },
          io,
        );
      case 'visit':
        return (await import('./dex.js')).visitCommand({ config: values.config, by: values.by, fill: values.fill, out: values.out }, io);
      case 'picklist':
        return (await import('./dex.js')).picklistCommand({ config: values.config, json: values.json }, io);
      case 'stock':
        return (await import('./catalog.js')).stockCommand({ config: values.config, json: values.json }, io);
      case 'refill':
        return (await import('./catalog.js')).refillCommand({ config: values.config, slot: rest[0], count: rest[1] }, io);
      case 'clear-jam':
        return (await import('./catalog.js')).clearJamCommand({ config: values.config, slot: rest[0] }, io);
      case 'catalog':
        return (await import('./catalog.js')).catalogCommand(
          { config: values.config, json: values.json, apply: values.apply, rollback: values.rollback },
          io,
        );
      case 'migrate':
        return (await import('./migrate.js')).migrateCommand({ config: values.config }, io);
      case 'command':
        return await (
          await import('./command.js')
        ).commandCommand(
          {
            action: rest[0],
            name: rest[1],
            config: values.config,
            key: values.key,
            keyId: values['key-id'],
            dbId: values['db-id'],
            device: values.device,
            deviceKey: values['device-key'],
            body: values.body,
            ttl: values.ttl,
            requestId: values['request-id'],
            out: values.out,
            timeoutMs: values['timeout-ms'],
          },
          io,
        );
      case 'setup':
        return await (
          await import('./setup.js')
        ).setupCommand({ config: values.config, secrets: values.secrets, noApply: values['no-apply'] }, io);
      case 'doctor':
        return (await import('./doctor.js')).doctorCommand({ config: values.config, json: values.json }, io);
      case 'db':
        return (await import('./db.js')).dbCommand(
          { action: rest[0], file: rest[1], config: values.config, to: values.to, yes: values.yes, json: values.json },
          io,
        );
      case 'simulate-machine':
        return await (
          await import('./simulate-machine.js')
        ).simulateMachineCommand(
          {
            path: values.path,
            profile: values.profile,
            baud: values.baud,
            failSlots: values['fail-slots'],
            failRate: values['fail-rate'],
            silentSlots: values['silent-slots'],
            vendDelayMs: values['vend-delay-ms'],
            sessionTimeoutMs: values['session-timeout-ms'],
            autoVend: values['auto-vend'],
          },
          io,
          io.stdin ?? process.stdin,
        );
      case 'simulate':
        return await (
          await import('./simulate.js')
        ).simulateCommand(
          {
            provider: values.provider,
            port: values.port,
            host: values.host,
            webhookUrl: values['webhook-url'],
            faults: values.faults,
            seed: values.seed,
          },
          io,
        );
      default:
        throw new UsageError(unknownCommand(command));
    }
  } catch (err) {
    // By code, not by class: this file loads before any subcommand, and the classes' modules bring
    // zod (settings) and the SQLite addon (store) with them — `vendgate --version` needs neither.
    if (err instanceof VendgateError && (err.code === ErrorCodes.CONFIG_INVALID || err.code === ErrorCodes.PORT_IN_USE)) {
      print(io.stderr, `vendgate: ${err.message}`);
      return EXIT.CONFIG;
    }
    if (err instanceof VendgateError && err.code === ErrorCodes.ALREADY_RUNNING) {
      print(io.stderr, `vendgate: ${err.code}: ${err.message}`);
      return EXIT.ALREADY_RUNNING;
    }
    if (err instanceof UsageError) {
      print(io.stderr, `vendgate: ${err.message}`);
      return EXIT.USAGE;
    }
    if (err instanceof VendgateError) {
      print(io.stderr, `vendgate: ${err.code}: ${err.message}`);
      return EXIT.FAILURE;
    }
    print(io.stderr, `vendgate: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return EXIT.FAILURE;
  }
}

function unknownCommand(name: string): string {
  const near = closest(name, Object.keys(COMMANDS));
  return `unknown command "${name}"${near ? `; did you mean "${near}"?` : ''} (vendgate help lists every command)`;
}

/**
 * The command and its options. Options are checked against the command's own list first, so a slip
 * gets our message with a suggestion instead of the parser's; then parsed strictly for their values.
 */
function parseCommandLine(argv: string[]) {
  const loose = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: false, tokens: true });
  const command = loose.positionals[0];
  const known = command && command in COMMANDS ? optionNamesOf(command) : null;
  const allowed = known ?? Object.keys(OPTIONS);
  for (const token of loose.tokens) {
    if (token.kind !== 'option' || token.name === 'version' || allowed.includes(token.name)) continue;
    const near = closest(token.name, allowed);
    const forWhom = known ? ` for "${command}"` : '';
    const where = known ? `vendgate help ${command} lists its options` : 'vendgate help lists the commands';
    throw new UsageError(`unknown option ${token.rawName}${forWhom}${near ? `; did you mean --${near}?` : ''} (${where})`);
  }
  try {
    const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    return { values, positionals, command };
  } catch (err) {
    if (!(err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) throw err;
    const missing = /^Option '(-\w, )?(--[\w-]+) <value>' argument missing/.exec(err.message);
    const extra = /^Option '(-\w, )?(--[\w-]+)' does not take an argument/.exec(err.message);
    const help = command && command in COMMANDS ? `vendgate help ${command}` : 'vendgate help';
    if (missing) throw new UsageError(`${missing[2]} needs a value (${help} says which)`);
    if (extra) throw new UsageError(`${extra[2]} takes no value: write it alone (${help})`);
    throw new UsageError(`${err.message} (${help})`);
  }
}
