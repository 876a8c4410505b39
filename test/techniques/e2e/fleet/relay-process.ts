/** `node dist/main.js relay` as a child process: a relay replica, killed and restarted by the fleet tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort, jsonLines, keepOutput } from '../../../helpers/service.js';
import { waitFor } from '../../../helpers/wait.js';

const MAIN = new URL('../../../../dist/main.js', import.meta.url).pathname;
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export interface RelayProcess {
  readonly port: number;
  readonly running: boolean;
  logs(): Record<string, any>[];
  start(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function relayProcess(options: {
  dir: string;
  name: string;
  config: Record<string, unknown>;
  env: Record<string, string>;
}): Promise<RelayProcess> {
  const port = await freePort();
  const configPath = join(options.dir, `${options.name}.yaml`);
  const config = { ...options.config, relay: { ...(options.config.relay as object), id: options.name, host: '127.0.0.1', port } };
  writeFileSync(configPath, stringify(config));
  const lines: string[] = [];
  let child: ChildProcess | null = null;
  let exit: Promise<void> = Promise.resolve();
  let stderr = '';
  const handle: RelayProcess = {
    port,
    get running() {
      return child !== null;
    },
    logs: () => jsonLines(lines),
    async start() {
      if (child) return;
      const proc = spawn(process.execPath, [MAIN, 'relay', '--config', configPath], {
        env: { ...process.env, ...options.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = proc;
      live.add(proc);
      keepOutput(proc, lines, (text) => {
        stderr += text;
      });
      exit = new Promise((resolve) =>
        proc.once('exit', () => {
          live.delete(proc);
          if (child === proc) child = null;
          resolve();
        }),
      );
      await waitFor(
        async () => {
          if (!child) throw new Error(`relay ${options.name} exited:\n${stderr}\n${lines.join('\n')}`);
          const health = await fetch(`http://127.0.0.1:${port}/webhooks/health`).catch(() => null);
          return health?.status === 200;
        },
        { timeoutMs: 20_000, what: `relay ${options.name} healthy` },
      );
    },
    async kill(signal = 'SIGKILL') {
      const running = child;
      if (!running) return;
      running.kill(signal);
      await exit;
    },
  };
  return handle;
}
