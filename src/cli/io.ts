/** What a subcommand may touch of the process. main.ts supplies the real one; tests a fake. */
export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  /** Resolves when the process is asked to stop (SIGTERM/SIGINT). */
  stopSignal: Promise<string>;
  /** Tells systemd (Type=notify) about readiness, stopping and watchdog pings; no-op elsewhere. */
  notify: (state: 'READY=1' | 'STOPPING=1' | 'WATCHDOG=1' | string) => void;
  isTty: boolean;
  /** Operator input for interactive commands (simulate-machine, selftest --actuate). */
  stdin?: NodeJS.ReadableStream;
}

/** Exit codes: 0 ok, 1 runtime failure, 78 bad configuration (systemd does not restart on it). */
export const EXIT = { OK: 0, FAILURE: 1, USAGE: 64, ALREADY_RUNNING: 75, CONFIG: 78 } as const;

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export function print(stream: NodeJS.WritableStream, text: string): void {
  stream.write(text.endsWith('\n') ? text : `${text}\n`);
}

/**
 * A long-running command once it is ready: tells systemd READY=1, waits for SIGTERM/SIGINT, tells
 * it STOPPING=1, stops, and answers the exit code.
 */
export async function serveUntilStopped(
  io: CliIo,
  logger: { info(fields: object, message: string): void },
  stop: () => Promise<void>,
): Promise<number> {
  io.notify('READY=1');
  const signal = await io.stopSignal;
  logger.info({ signal }, 'stop requested');
  io.notify('STOPPING=1');
  await stop();
  return EXIT.OK;
}
