import { PassThrough, Writable } from 'node:stream';
import { runCli, type CliIo } from '../../src/cli/index.js';

/** A CliIo that records what a command prints; `stdin` is what a confirmation prompt reads. */
export function fakeIo(options: { env?: NodeJS.ProcessEnv; stdin?: NodeJS.ReadableStream & { isTTY?: boolean } } = {}) {
  let out = '';
  let err = '';
  const io: CliIo & { stdin?: NodeJS.ReadableStream & { isTTY?: boolean } } = {
    stdout: new Writable({
      write(chunk, _enc, cb) {
        out += chunk.toString();
        cb();
      },
    }),
    stderr: new Writable({
      write(chunk, _enc, cb) {
        err += chunk.toString();
        cb();
      },
    }),
    env: options.env ?? {},
    stopSignal: new Promise(() => {}),
    notify: () => {},
    isTty: false,
    ...(options.stdin ? { stdin: options.stdin } : {}),
  };
  return { io, stdout: () => out, stderr: () => err };
}

/** A terminal on which a person will type `answer` (or nothing: the stream just ends). */
export function terminal(answer: string | null): PassThrough & { isTTY: boolean } {
  const stream = Object.assign(new PassThrough(), { isTTY: true });
  if (answer === null) stream.end();
  else stream.end(`${answer}\n`);
  return stream;
}

/** Not a terminal (a pipe, cron, systemd): nobody can answer. */
export function pipe(): PassThrough & { isTTY: boolean } {
  return Object.assign(new PassThrough(), { isTTY: false });
}

export async function run(argv: string[], options: Parameters<typeof fakeIo>[0] = {}) {
  const io = fakeIo(options);
  const code = await runCli(argv, io.io);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}
