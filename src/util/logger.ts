import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/** Paths pino removes from every log line: credentials, webhook secrets, signature headers. */
export const REDACT_PATHS = [
  'secret', 'secrets', 'password', 'apiKey', 'clientSecret', 'token', 'accessToken', 'authorization',
  '*.secret', '*.secrets', '*.password', '*.apiKey', '*.clientSecret', '*.webhookSecrets', '*.token',
  '*.accessToken', '*.authorization', '*.Authorization',
  'headers.authorization', 'headers["x-api-key"]', 'headers["gerege-signature"]', 'headers["x-qutpay-signature"]',
  'req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["gerege-signature"]',
  'req.headers["x-qutpay-signature"]',
  'settings.provider.clientSecret', 'settings.provider.apiKey', 'settings.provider.webhookSecrets',
  'settings.mqtt.password',
];

/** The one root logger. Modules take `logger.child({ module: '…' })`. JSON to stdout (journald keeps it). */
export function createLogger(options: { level?: LevelWithSilent; destination?: NodeJS.WritableStream } = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: 'vendgate' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? process.stdout,
  );
}

/** A logger that writes nothing, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
