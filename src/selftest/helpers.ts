import { execFile } from 'node:child_process';
import type { CheckResult, Exec } from './types.js';

export const pass = (name: string, detail: string): CheckResult => ({ name, status: 'PASS', detail, hint: '' });
export const warn = (name: string, detail: string, hint: string): CheckResult => ({ name, status: 'WARN', detail, hint });
export const fail = (name: string, detail: string, hint: string): CheckResult => ({ name, status: 'FAIL', detail, hint });

/** One line: the table has no room for stack traces or multi-line library messages. */
export function oneLine(text: string, max = 240): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function describeError(err: unknown): string {
  return oneLine(err instanceof Error ? err.message : String(err));
}

/**
 * Runs a check with an upper bound: a check that hangs (a blackholed host, a stuck device) becomes
 * one FAIL line instead of a selftest that never ends. A check that throws is a FAIL too.
 */
export async function bounded(
  name: string,
  ms: number,
  hint: string,
  run: () => Promise<CheckResult | CheckResult[]>,
): Promise<CheckResult[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<CheckResult[]>((resolve) => {
    timer = setTimeout(() => resolve([fail(name, `no result within ${Math.round(ms / 100) / 10} s`, hint)]), ms);
  });
  try {
    const result = await Promise.race([run().then((r) => (Array.isArray(r) ? r : [r])), timeout]);
    return result;
  } catch (err) {
    return [fail(name, `check failed: ${describeError(err)}`, hint)];
  } finally {
    clearTimeout(timer);
  }
}

export const defaultExec: Exec = (command, args, timeoutMs) =>
  new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (!err) return resolve({ code: 0, stdout });
      // The first line of stderr says why ("System has not been booted with systemd…"); the rest is noise.
      const why = oneLine((stderr ?? '').split('\n').find((line) => line.trim()) ?? err.message, 120);
      const code = (err as { code?: unknown }).code;
      resolve({ code: typeof code === 'number' ? code : null, stdout: stdout ?? '', error: why });
    });
  });

export type Probe =
  | { kind: 'answered'; status: number; body: string; ms: number }
  /** Nothing listens there (ECONNREFUSED): the service is not running. */
  | { kind: 'refused' }
  | { kind: 'error'; message: string };

/** A GET that never throws and never waits longer than `timeoutMs`. */
export async function probe(fetchFn: typeof fetch, url: string, timeoutMs: number, init: RequestInit = {}): Promise<Probe> {
  const started = Date.now();
  try {
    const response = await fetchFn(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    const body = await response.text();
    return { kind: 'answered', status: response.status, body, ms: Date.now() - started };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    if (cause?.code === 'ECONNREFUSED') return { kind: 'refused' };
    if ((err as Error).name === 'TimeoutError') return { kind: 'error', message: `no answer within ${timeoutMs} ms` };
    return { kind: 'error', message: describeError(cause ?? err) };
  }
}

/** A listener bound to every address is reached on loopback. */
export function listenerUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}
