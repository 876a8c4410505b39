import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../../src/util/index.js';

/** A real pino logger whose JSON lines the test can read. */
export function captureLogger(): { logger: Logger; entries(): Record<string, unknown>[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      callback();
    },
  });
  return {
    logger: createLogger({ level: 'debug', destination }),
    entries: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}
