import type { Logger } from '../../util/logger.js';
import { ErrorCodes, VendgateError, errorMessage } from '../../util/errors.js';

/** A serialport binding (the real one, or @serialport/binding-mock in tests). */
export type SerialBinding = object;

export interface SerialConnectionOptions {
  path: string;
  baudRate: number;
  /** Injected in tests; default: serialport's native binding. */
  binding?: SerialBinding;
  reconnectMaxMs: number;
  logger: Logger;
}

/** Thrown by write() when the line is down: nothing left this process. */
export class SerialLineDownError extends VendgateError {
  constructor(path: string) {
    super(ErrorCodes.HARDWARE, `serial line ${path} is down: nothing was sent`);
    this.name = 'SerialLineDownError';
  }
}

export interface SerialConnection {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly up: boolean;
  /** Why the line is down (for health and events). */
  readonly detail: string;
  /** Writes and drains. Throws SerialLineDownError if the line was down before writing. */
  write(text: string): Promise<void>;
  /** Resolves true once the line is up, false after `ms` (or at stop). */
  waitUntilUp(ms: number): Promise<boolean>;
  onLine(listener: (line: string) => void): () => void;
  onState(listener: (up: boolean, detail: string) => void): () => void;
}

const FIRST_RETRY_MS = 250;
/** Longest run of bytes without a line feed kept for the parser. */
const MAX_LINE_BYTES = 4_096;

interface PortLike {
  open(callback: (err: Error | null) => void): void;
  close(callback?: (err: Error | null) => void): void;
  write(data: string, callback: (err: Error | null | undefined) => void): boolean;
  drain(callback: (err: Error | null) => void): void;
  pipe<T extends NodeJS.WritableStream>(destination: T): T;
  unpipe(destination?: NodeJS.WritableStream): void;
  on(event: 'close', listener: (err: (Error & { disconnected?: boolean }) | null) => void): void;
  on(event: 'error', listener: (err: Error) => void): void;
  on(event: 'data', listener: (chunk: Buffer) => void): void;
  removeAllListeners(): void;
  readonly isOpen: boolean;
}

async function loadSerialModules(): Promise<{
  SerialPort: new (options: object) => PortLike;
  ReadlineParser: new (options: object) => NodeJS.ReadWriteStream;
}> {
  try {
    const [serialport, readline] = await Promise.all([import('serialport'), import('@serialport/parser-readline')]);
    return {
      SerialPort: serialport.SerialPort as unknown as new (options: object) => PortLike,
      ReadlineParser: readline.ReadlineParser as unknown as new (options: object) => NodeJS.ReadWriteStream,
    };
  } catch (err) {
    throw new VendgateError(
      ErrorCodes.HARDWARE,
      `the serialport package could not be loaded (${errorMessage(err)}): reinstall with npm ci and check that @serialport/bindings-cpp built`,
      { cause: err },
    );
  }
}

/**
 * One serial device, kept open: a data listener is always attached (a vanished USB device is only
 * noticed while reading), and an unexpected close reopens with backoff until stop().
 */
export function createSerialConnection(options: SerialConnectionOptions): SerialConnection {
  const log = options.logger;
  const lineListeners = new Set<(line: string) => void>();
  const stateListeners = new Set<(up: boolean, detail: string) => void>();
  let port: PortLike | null = null;
  let parser: NodeJS.ReadWriteStream | null = null;
  let up = false;
  let detail = 'not started';
  let running = false;
  let retryMs = FIRST_RETRY_MS;
  let retryTimer: ReturnType<typeof setTimeout> | null = null;
  let modules: Awaited<ReturnType<typeof loadSerialModules>> | null = null;

  function setState(nextUp: boolean, nextDetail: string): void {
    const changed = nextUp !== up || nextDetail !== detail;
    up = nextUp;
    detail = nextDetail;
    if (!changed) return;
    for (const listener of [...stateListeners]) listener(up, detail);
  }

  function scheduleReopen(): void {
    if (!running || retryTimer) return;
    const wait = retryMs;
    retryMs = Math.min(retryMs * 2, options.reconnectMaxMs);
    log.debug({ path: options.path, waitMs: wait }, 'serial reopen scheduled');
    retryTimer = setTimeout(() => {
      retryTimer = null;
      open();
    }, wait);
  }

  function open(): void {
    if (!running || !modules) return;
    const { SerialPort, ReadlineParser } = modules;
    const settings: Record<string, unknown> = { path: options.path, baudRate: options.baudRate, autoOpen: false };
    if (options.binding) settings.binding = options.binding;
    const candidate = new SerialPort(settings);
    candidate.on('error', (err) => log.warn({ err, path: options.path }, 'serial port error'));
    candidate.open((err) => {
      if (err) {
        candidate.removeAllListeners();
        setState(
          false,
          `cannot open ${options.path}: ${err.message} — check the cable, actuator.serial.path (ls /dev/serial/by-id/) and that the user is in the dialout group`,
        );
        log.warn({ path: options.path, err: err.message }, 'serial open failed');
        scheduleReopen();
        return;
      }
      if (!running) {
        candidate.close();
        return;
      }
      port = candidate;
      retryMs = FIRST_RETRY_MS;
      let sinceLineEnd = 0;
      const attachParser = () => {
        parser = candidate.pipe(new ReadlineParser({ delimiter: '\n' }));
        parser.on('data', (raw: string) => {
          sinceLineEnd = 0;
          const line = raw.replace(/\r+$/, '').replace(/^\r+/, '');
          if (line.length === 0) return;
          for (const listener of [...lineListeners]) listener(line);
        });
      };
      attachParser();
      // The parser buffers until a line feed: a wrong baud rate or CR-only line ends would grow it forever.
      candidate.on('data', (chunk: Buffer) => {
        sinceLineEnd += chunk.length;
        if (sinceLineEnd <= MAX_LINE_BYTES || port !== candidate) return;
        log.warn(
          { path: options.path, bytes: sinceLineEnd },
          'no line feed from the machine: bytes dropped (check baudRate and that lines end with \\n)',
        );
        sinceLineEnd = 0;
        if (parser) candidate.unpipe(parser);
        attachParser();
      });
      candidate.on('close', (closeErr) => {
        if (port === candidate) {
          port = null;
          if (parser) candidate.unpipe(parser);
          parser = null;
        }
        if (!running) return;
        const why = closeErr?.disconnected ? 'device disconnected' : 'port closed';
        log.warn({ path: options.path, err: closeErr?.message }, 'serial line lost');
        setState(false, `${why}: ${options.path} — check the cable; reopening with backoff`);
        scheduleReopen();
      });
      log.info({ path: options.path, baudRate: options.baudRate }, 'serial line up');
      setState(true, `${options.path} open at ${options.baudRate} baud`);
    });
  }

  return {
    get up() {
      return up;
    },
    get detail() {
      return detail;
    },
    async start() {
      if (running) return;
      modules ??= await loadSerialModules();
      running = true;
      retryMs = FIRST_RETRY_MS;
      open();
    },
    async stop() {
      running = false;
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = null;
      const current = port;
      port = null;
      if (current?.isOpen) {
        await new Promise<void>((resolve) => current.close(() => resolve()));
      }
      current?.removeAllListeners();
      setState(false, 'stopped');
    },
    async write(text) {
      const current = port;
      if (!up || !current) throw new SerialLineDownError(options.path);
      await new Promise<void>((resolve, reject) => {
        current.write(text, (err) => {
          if (err) return reject(err);
          // drain: handed to the OS, so "written" means it left this process.
          current.drain((drainErr) => (drainErr ? reject(drainErr) : resolve()));
        });
      });
    },
    waitUntilUp(ms) {
      if (up) return Promise.resolve(true);
      if (!running) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => finish(false), ms);
        const off = this.onState((nowUp, why) => {
          if (nowUp) finish(true);
          else if (why === 'stopped') finish(false);
        });
        function finish(result: boolean) {
          clearTimeout(timer);
          off();
          resolve(result);
        }
      });
    },
    onLine(listener) {
      lineListeners.add(listener);
      return () => {
        lineListeners.delete(listener);
      };
    },
    onState(listener) {
      stateListeners.add(listener);
      return () => {
        stateListeners.delete(listener);
      };
    },
  };
}
