import { inspect } from 'node:util';
import { readFileSync, statSync, openSync, readSync, closeSync, existsSync } from 'node:fs';
import { createHmac, randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';

/** Shared helpers of the benchmarks: percentiles, process memory, the sim actuator log, the machine. */

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function percentiles(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => (sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]);
  const round = (v) => (v === null ? null : Math.round(v * 1000) / 1000);
  return {
    n: sorted.length,
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    max: round(sorted.at(-1) ?? null),
    min: round(sorted[0] ?? null),
  };
}

export const median = (values) => percentiles(values).p50;

/** Resident set size of a process, from /proc (Linux): what the kernel really holds for it. */
export function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return Math.round((kb / 1024) * 10) / 10;
}

export function machine() {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model ?? 'unknown',
    cpus: cpu.length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
}

/** Follows the sim actuator's JSON-lines log by reading only what was appended since the last call. */
export function followSimLog(path) {
  let offset = 0;
  let rest = '';
  return function newLines() {
    if (!existsSync(path)) return [];
    const size = statSync(path).size;
    if (size <= offset) return [];
    const buffer = Buffer.alloc(size - offset);
    const fd = openSync(path, 'r');
    try {
      readSync(fd, buffer, 0, buffer.length, offset);
    } finally {
      closeSync(fd);
    }
    offset = size;
    const text = rest + buffer.toString('utf8');
    const lines = text.split('\n');
    rest = lines.pop();
    return lines.filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
  };
}

export async function postJson(url, body = {}) {
  // The local API takes state changes as JSON only: {} when there is nothing to say.
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

export async function getJson(url) {
  const response = await fetch(url, { signal: AbortSignal.timeout(15_000) });
  return { status: response.status, body: await response.json() };
}

/**
 * The benches' wait, the same as the test suite's (test/helpers/wait.ts), in plain JS for the scripts:
 * asks `predicate` until truthy and returns that value; a throw counts as not yet; the timeout names
 * `what` (a string, or a function asked then) and the last value or error seen.
 */
export async function waitFor(predicate, { timeoutMs = 30_000, intervalMs = 5, what = 'a condition' } = {}) {
  const deadline = performance.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await predicate();
      if (value) return value;
      last = { value };
    } catch (error) {
      last = { error };
    }
    if (performance.now() > deadline) {
      const named = typeof what === 'function' ? what() : what;
      const seen =
        last === undefined
          ? ''
          : 'error' in last
            ? `; last error: ${String(last.error)}`
            : `; last value: ${inspect(last.value, { depth: 4 })}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${named}${seen}`);
    }
    await sleep(intervalMs);
  }
}

/** Waits until `url` answers (any status) and returns its body text; fails at once if `child` exits first. */
export async function waitUntilUp(url, child, what, timeoutMs = 20_000) {
  const answer = await waitFor(
    async () => {
      if (child.exitCode !== null || child.signalCode !== null) return { exited: child.exitCode ?? child.signalCode };
      const response = await fetch(url);
      return { text: await response.text() };
    },
    { timeoutMs, intervalMs: 50, what: `${what} to come up at ${url}` },
  );
  if ('exited' in answer) throw new Error(`${what} exited with ${answer.exited}`);
  return answer.text;
}

/** A result row: the figure, its value, the target beside it, and whether it is met (null: no target). */
export function row(figure, value, target = '', ok = null, detail = undefined) {
  return { figure, value, target, ok, ...(detail === undefined ? {} : { detail }) };
}

/** The webhook secret the benchmarks give the service (VENDGATE_WEBHOOK_SECRETS) and sign with. */
export const BENCH_WEBHOOK_SECRET = 'bench-webhook-secret';

/** A sandbox event (the shape the demo provider sends) for an invoice of another device, signed now. */
export function signedRequest(request) {
  const id = `evt_${randomBytes(12).toString('hex')}`;
  const body = JSON.stringify({
    id,
    object: 'event',
    type: 'invoice.paid',
    livemode: false,
    created: Math.floor(Date.now() / 1000),
    data: {
      object: { id: `sb_${randomBytes(8).toString('hex')}`, status: 'paid', amount: 1500, currency: 'MNT', reference: 'other-device-x-1' },
    },
  });
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', BENCH_WEBHOOK_SECRET).update(`${t}.`).update(body).digest('hex');
  request.body = body;
  request.headers = {
    ...request.headers,
    'content-type': 'application/json',
    'sandbox-signature': `t=${t},v1=${v1}`,
    'sandbox-event-id': id,
  };
  return request;
}

/** Pays `invoiceId` at a provider simulator and returns the `payment_intent.succeeded` event it recorded for it (null if none). */
export async function payAndSucceededEvent(sim, invoiceId) {
  await sim.pay(invoiceId);
  // lastEvent, not records(): records() copies everything the simulator saw, and once an order over a
  // run of 1,500 orders that copy grew the simulator's collections (and the service's wait on its GET)
  // with the run's length.
  return sim.lastEvent((e) => e.type === 'payment_intent.succeeded' && e.data?.object?.id === invoiceId);
}
