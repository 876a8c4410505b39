import { parseArgs } from 'node:util';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';
import { closest, commandNamed, commandUsage, optionNamesOf, usage } from './usage.js';
import { COMMANDS, optionOf, SHORT_OPTIONS, type CliExtra, type CommandArgs, type OptionHelp } from './commands.js';
import { versionLine } from '../version.js';

export { type CliIo, EXIT } from './io.js';

type ParseOptions = Record<string, { type: 'string' | 'boolean'; short?: string }>;

/** The parser's view of a list of options (a flag with a placeholder takes a string), with --help and --version. */
function parseOptionsOf(options: readonly OptionHelp[]): ParseOptions {
  const config: ParseOptions = {};
  for (const name of ['help', 'version']) config[name] = { type: 'boolean', short: SHORT_OPTIONS[name] };
  for (const option of options) {
    const { name, takesValue } = optionOf(option);
    const short = SHORT_OPTIONS[name];
    config[name] = { type: takesValue ? 'string' : 'boolean', ...(short ? { short } : {}) };
  }
  return config;
}

/** Every option of every command: what a line without a known command is read with. */
const ALL_OPTIONS = parseOptionsOf(Object.values(COMMANDS).flatMap((spec) => spec.options));

/**
 * Runs one subcommand and returns the exit code. Never exits the process itself. Each subcommand is
 * loaded when it runs, so the service never carries the simulator's or the selftest's code.
 */
export async function runCli(argv: string[], io: CliIo, extra: CliExtra = {}): Promise<number> {
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
      if (!commandNamed(topic)) throw new UsageError(unknownCommand(topic));
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
    const spec = commandNamed(command);
    if (!spec?.run) throw new UsageError(unknownCommand(command));
    return await spec.run({ values, rest }, io, extra);
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
 * gets our message with a suggestion instead of the parser's; then parsed strictly for their values,
 * with that command's options alone (a line without a known command: every command's).
 */
function parseCommandLine(argv: string[]): {
  values: CommandArgs['values'] & { help?: boolean; version?: boolean };
  positionals: string[];
  command: string | undefined;
} {
  const loose = parseArgs({ args: argv, options: ALL_OPTIONS, allowPositionals: true, strict: false, tokens: true });
  const command = loose.positionals[0];
  const spec = command === undefined ? undefined : commandNamed(command);
  const known = command === undefined ? null : optionNamesOf(command);
  const allowed = known ?? Object.keys(ALL_OPTIONS);
  for (const token of loose.tokens) {
    if (token.kind !== 'option' || token.name === 'version' || allowed.includes(token.name)) continue;
    const near = closest(token.name, allowed);
    const forWhom = known ? ` for "${command}"` : '';
    const where = known ? `vendgate help ${command} lists its options` : 'vendgate help lists the commands';
    throw new UsageError(`unknown option ${token.rawName}${forWhom}${near ? `; did you mean --${near}?` : ''} (${where})`);
  }
  try {
    const options = spec ? parseOptionsOf(spec.options) : ALL_OPTIONS;
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    return { values, positionals, command };
  } catch (err) {
    if (!(err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) throw err;
    const missing = /^Option '(-\w, )?(--[\w-]+) <value>' argument missing/.exec(err.message);
    const extra = /^Option '(-\w, )?(--[\w-]+)' does not take an argument/.exec(err.message);
    const help = spec ? `vendgate help ${command}` : 'vendgate help';
    if (missing) throw new UsageError(`${missing[2]} needs a value (${help} says which)`);
    if (extra) throw new UsageError(`${extra[2]} takes no value: write it alone (${help})`);
    throw new UsageError(`${err.message} (${help})`);
  }
}
