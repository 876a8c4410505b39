import { describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../src/store/index.js';
import { createOutbox } from '../../src/outbox/index.js';
import { systemClock } from '../../src/util/index.js';
import { restartableBroker, uniqueId } from '../helpers/broker.js';
import { broker, onCleanup, parseEvents, tempDatabase, watching } from './harness.js';
import { clearRetainedUnder, retainedNow } from './watch.js';

const CHILD = fileURLToPath(new URL('./fixtures/gateway-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Child {
  process: ChildProcess;
  /** Resolves with the first stdout JSON line that has `key`. */
  line<T = unknown>(key: string, timeoutMs?: number): Promise<T>;
  kill(): Promise<void>;
}

function startChild(config: Record<string, unknown>): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(config)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  let stderr = '';
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buffered.slice(0, newline)) as Record<string, unknown>);
      buffered = buffered.slice(newline + 1);
    }
    for (const waiter of [...waiters]) waiter();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  onCleanup(kill);
  return {
    process: child,
    kill,
    line<T>(key: string, timeoutMs = 15_000) {
      return new Promise<T>((resolve, reject) => {
        const check = () => {
          const found = lines.find((l) => key in l);
          if (found) {
            cleanup();
            resolve(found[key] as T);
          }
        };
        const onExit = () => {
          cleanup();
          reject(new Error(`child exited before printing ${key}: ${stderr}`));
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`child did not print ${key} in time: ${stderr}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
          child.off('exit', onExit);
        };
        waiters.add(check);
        child.once('exit', onExit);
        check();
      });
    },
  };
}

/** A broker, a device identity of its own on it, and a database file (closed again) for the child to open. */
async function gatewaySetup() {
  const { url } = await broker();
  const prefix = uniqueId('vgt');
  const deviceId = uniqueId('dev');
  if (process.env.MQTT_TEST_URL) onCleanup(() => clearRetainedUnder(process.env.MQTT_TEST_URL!, `${prefix}/#`));
  const { path: dbPath, db } = tempDatabase();
  db.close();
  return { url, prefix, deviceId, base: `${prefix}/${deviceId}`, dbPath };
}

describe('the gateway process dying', () => {
  it('events committed but unsent when the gateway is SIGKILLed are published after it restarts, in order, once each', async () => {
    const { url, prefix, deviceId, base, dbPath } = await gatewaySetup();
    // The first run cannot reach any broker: a port nobody listens on.
    const gone = await restartableBroker();
    await gone.stop();

    const first = startChild({ dbPath, url: gone.url, prefix, deviceId, write: 25 });
    const written = await first.line<string[]>('written');
    await first.kill();

    const events = await watching(url, [`${base}/events`]);
    const second = startChild({ dbPath, url, prefix, deviceId });
    await events.until(() => events.messages.length >= 25, { timeoutMs: 20_000, what: 'the 25 events after the restart' });
    expect(parseEvents(events.messages).map((e) => e.id)).toEqual(written);
    await second.kill();
  });

  it('the last will marks the device offline (retained) when the gateway is SIGKILLed', async () => {
    const { url, prefix, deviceId, base, dbPath } = await gatewaySetup();
    const status = await watching(url, [`${base}/status`]);

    const child = startChild({ dbPath, url, prefix, deviceId });
    await status.next(`${base}/status`, (m) => m.payload === 'online', 20_000);
    await child.kill();
    await status.next(`${base}/status`, (m) => m.payload === 'offline', 20_000);
    expect((await retainedNow(url, `${base}/#`)).get(`${base}/status`)).toBe('offline');
  });

  it('a SIGKILL in the middle of a stream of events loses none: after the restart every seq arrives, in order', async () => {
    const { url, prefix, deviceId, base, dbPath } = await gatewaySetup();
    const events = await watching(url, [`${base}/events`]);

    const first = startChild({ dbPath, url, prefix, deviceId, streamEveryMs: 2 });
    await events.until(() => events.messages.length >= 100, { timeoutMs: 20_000, what: '100 streamed events' });
    await first.kill();

    // What the dead process committed: everything received plus whatever is still in its outbox.
    const check = openDatabase(dbPath);
    const pending = createOutbox({ db: check, clock: systemClock, deviceId }).pending(1_000_000);
    check.close();
    const lastSeq = Math.max(...parseEvents(events.messages).map((e) => e.seq), ...pending.map((r) => r.seq));

    const second = startChild({ dbPath, url, prefix, deviceId });
    await events.until(() => parseEvents(events.messages).some((e) => e.seq === lastSeq), { timeoutMs: 20_000, what: `seq ${lastSeq}` });
    const firstSeen: number[] = [];
    for (const event of parseEvents(events.messages)) if (!firstSeen.includes(event.seq)) firstSeen.push(event.seq);
    expect(firstSeen).toEqual(Array.from({ length: lastSeq }, (_, i) => i + 1));
    await second.kill();
  });
});
