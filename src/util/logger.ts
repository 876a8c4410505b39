import { fstatSync } from 'node:fs';
import { pino, type Logger, type LevelWithSilent, type DestinationStream } from 'pino';

export type { Logger };

/** Header names that carry a signature or a MAC (lower case), registered by the providers' webhook table. */
const secretHeaders = new Set<string>();

/**
 * Adds header names whose values never reach a log line, at any depth. Called by payments/webhooks.ts
 * (the one home of each provider's header names) when it is loaded; every logger redacts them from then on.
 */
export function registerSecretHeaders(names: readonly string[]): void {
  for (const name of names) secretHeaders.add(name.toLowerCase());
}

/**
 * How log lines are written. `json`: one JSON object per line, level as a name. `journal`: the same
 * with a `<N>` syslog priority in front, which journald strips and files the line under (so
 * `journalctl -p warning` finds the warnings). `pretty`: pino-pretty, for a person at a terminal.
 */
export type LogFormat = 'json' | 'journal' | 'pretty';

/** syslog priorities (sd-daemon.h): fatal → crit, error → err, warn → warning, info → info, debug/trace → debug. */
export const JOURNAL_PRIORITY: Record<string, number> = { fatal: 2, error: 3, warn: 4, info: 6, debug: 7, trace: 7 };

/**
 * journal when systemd connected our stdout to journald (JOURNAL_STREAM names that stream's
 * device:inode; a child that inherited the variable but writes elsewhere does not match), pretty
 * when stdout is a terminal, JSON otherwise (a pipe, a file, a test).
 */
export function pickLogFormat(env: NodeJS.ProcessEnv, stdout: NodeJS.WritableStream): LogFormat {
  const fd = (stdout as { fd?: unknown }).fd;
  if (env.JOURNAL_STREAM) {
    if (typeof fd !== 'number') return 'journal';
    try {
      const stat = fstatSync(fd);
      if (env.JOURNAL_STREAM === `${stat.dev}:${stat.ino}`) return 'journal';
    } catch {
      /* not a file descriptor we can inspect: fall through */
    }
  }
  return (stdout as { isTTY?: boolean }).isTTY ? 'pretty' : 'json';
}

/** The `<N>` prefix for a JSON line whose first key is the level name (our level formatter puts it first). */
export function journalLine(line: string): string {
  const match = /^\{"level":"(\w+)"/.exec(line);
  return `<${JOURNAL_PRIORITY[match?.[1] ?? 'info'] ?? 6}>${line}`;
}

interface LoggerOptions {
  level?: LevelWithSilent;
  destination?: NodeJS.WritableStream;
  format?: Exclude<LogFormat, 'pretty'>;
}

/**
 * Keys whose values never reach a log line, at any depth and whatever the object (a log call's
 * fields, a child logger's bindings, a settings dump, a provider's error body): credentials, webhook
 * secrets and tokens by name, and the providers' signature headers (registerSecretHeaders). The one
 * redaction: pino's own path-based `redact` is not used, since its wildcard paths ran a redacting
 * stringifier over every top-level field of every line (the payment path's own log lines included)
 * for names this already censors.
 */
const SECRET_KEY =
  /^(secrets?|passwords?|passwd|api[-_]?key|client[-_]?secret|webhook[-_]?secrets|(access|refresh|id)?[-_]?token|authorization|proxy-authorization|cookie|set-cookie|private[-_]?key(pem)?|x-api-key)$/i;

function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) || secretHeaders.has(key.toLowerCase());
}
/** `scheme://user:password@` (or `scheme://token@`) inside any text. */
const URL_CREDENTIALS = /([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'\\]+@/gi;
const CENSOR = '[redacted]';

/** Credentials inside URLs in `text` replaced: `mqtts://[redacted]@broker:8883`. */
export function redactUrlCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, `$1${CENSOR}@`);
}

/**
 * A copy of a log object with every secret-named key censored at any depth, and credentials inside
 * URLs in every string. Errors are serialized first (as pino's err serializer does) so their
 * message, stack and own fields are covered too. Other objects (Buffers, dates) pass unchanged.
 */
export function redactDeep(value: unknown, seen: WeakSet<object> = new WeakSet(), depth = 0): unknown {
  if (typeof value === 'string') return redactUrlCredentials(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth > 32) return '[too deep]';
  if (seen.has(value)) return '[circular]';
  if (value instanceof Error) {
    seen.add(value);
    return redactDeep(pino.stdSerializers.err(value), seen, depth + 1);
  }
  if (Array.isArray(value)) {
    seen.add(value);
    return value.map((item) => redactDeep(item, seen, depth + 1));
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  seen.add(value);
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = isSecretKey(key) ? CENSOR : redactDeep(item, seen, depth + 1);
  return out;
}

function baseOptions(level: LevelWithSilent | undefined) {
  return {
    level: level ?? 'info',
    base: { service: 'vendgate' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
}

/**
 * Secrets at any depth in a log call's fields (formatters.log), and credentials in URLs anywhere in
 * the line, the message included (streamWrite). A child logger's bindings are redacted as the child
 * is made (`redactingChildren`: pino applies no formatter to them).
 */
const redaction = {
  log: (object: Record<string, unknown>) => redactDeep(object) as Record<string, unknown>,
  line: redactUrlCredentials,
};

/** Every child of `logger`, and theirs, gets its bindings redacted once, when it is made. */
export function redactingChildren(logger: Logger): Logger {
  const child = logger.child;
  logger.child = function (this: Logger, bindings: Record<string, unknown>, options?: unknown) {
    return child.call(this, redactDeep(bindings) as Record<string, unknown>, options as never);
  } as Logger['child'];
  return logger;
}

/** The redaction options of the service's loggers, for a pino made elsewhere (a test's captured logger). */
export const LOG_REDACTION = { formatters: { log: redaction.log }, hooks: { streamWrite: redaction.line } };

/** The one root logger. Modules take `logger.child({ module: '…' })`. JSON to stdout (journald keeps it). */
export function createLogger(options: LoggerOptions = {}): Logger {
  return redactingChildren(
    pino(
      {
        ...baseOptions(options.level),
        formatters: { level: (label: string) => ({ level: label }), log: redaction.log },
        hooks: { streamWrite: options.format === 'journal' ? (line: string) => journalLine(redaction.line(line)) : redaction.line },
      },
      options.destination ?? process.stdout,
    ),
  );
}

/**
 * The service's logger in the format `pickLogFormat` chose. pino-pretty is loaded only for a
 * terminal, and in-process as a plain stream (no worker-thread transport: a Zero 2 W has no memory
 * for a second V8 isolate). If it is missing (an install without it), the lines stay JSON.
 */
export async function createServiceLogger(options: {
  level?: LevelWithSilent;
  destination: NodeJS.WritableStream;
  format: LogFormat;
}): Promise<Logger> {
  if (options.format !== 'pretty') return createLogger(options as LoggerOptions);
  let pretty: (opts: Record<string, unknown>) => DestinationStream;
  try {
    pretty = (await import('pino-pretty')).default as unknown as typeof pretty;
  } catch {
    return createLogger({ level: options.level, destination: options.destination });
  }
  const stream = pretty({
    destination: options.destination,
    sync: true,
    colorize: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,service',
  });
  return redactingChildren(pino({ ...baseOptions(options.level), ...LOG_REDACTION }, stream));
}

/** A logger that writes nothing, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
