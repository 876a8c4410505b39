import fc from 'fast-check';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSettings } from '../../../src/settings/index.js';
import { createManualClock } from '../../../src/util/clock.js';
import { DEFAULT_BODY_LIMIT_BYTES } from '../../../src/kiosk/server.js';
import { testSettings } from '../../helpers/core.js';
import { tempDir } from '../../helpers/temp.js';
import { requestArbitrary, type FuzzRequest } from './http.js';
import { startFuzzTarget, type FuzzTarget } from './target.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * The fuzz's random requests again, now delivered the hostile way over raw sockets: in pieces with
 * pauses, or cut off part-way and left hanging. Whatever arrives, the listener answers 2xx or 4xx
 * (408 for one it gave up waiting for) or closes without an answer, closes every connection by
 * itself within its timeouts, and a request that was refused or never completed writes nothing.
 */
const RUNS = Number(process.env.FUZZ_SLOW_RUNS ?? 15);
const limits = { headersTimeoutMs: 1_000, requestTimeoutMs: 1_500, idleTimeoutMs: 2_000, keepAliveTimeoutMs: 500 };

const delivery = fc.record({
  /** Fraction of the bytes sent before the client stops (and waits); null: all of them. */
  cutAt: fc.option(fc.double({ min: 0, max: 0.999, noNaN: true }), { nil: null }),
  chunks: fc.integer({ min: 1, max: 4 }),
  pauseMs: fc.integer({ min: 0, max: 150 }),
});

function raw(req: FuzzRequest, host: string, fill: (path: string) => string): Buffer {
  const headers = { ...req.headers, host, ...(req.body ? { 'content-length': String(req.body.length) } : {}) };
  const head = `${req.method} ${fill(req.path)} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n')}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), req.body ?? Buffer.alloc(0)]);
}

/** Sends `bytes` as told and waits until the SERVER closes the connection; returns the status seen, if any. */
async function deliver(
  base: string,
  bytes: Buffer,
  how: { cutAt: number | null; chunks: number; pauseMs: number },
): Promise<{ status: number | null; complete: boolean }> {
  const { hostname, port } = new URL(base);
  const socket = connect({ host: hostname, port: Number(port) });
  const received: Buffer[] = [];
  let closed = false;
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  socket.on('error', () => {});
  socket.on('close', () => {
    closed = true;
  });
  const end = how.cutAt === null ? bytes.length : Math.floor(bytes.length * how.cutAt);
  const step = Math.max(1, Math.ceil(end / how.chunks));
  for (let at = 0; at < end && !closed; at += step) {
    socket.write(bytes.subarray(at, Math.min(end, at + step)));
    if (how.pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, how.pauseMs));
  }
  // Never closed by us: the listener must end it (answer + keep-alive timeout, or its request timeout).
  await waitFor(() => closed, { timeoutMs: 20_000, what: 'the listener to close the connection' });
  const text = Buffer.concat(received).toString('latin1');
  const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
  return { status: match ? Number(match[1]) : null, complete: how.cutAt === null };
}

describe('HTTP fuzz of both listeners: slow and partial requests', () => {
  const dir = tempDir('vendgate-fuzz-slow-');
  const base = testSettings(dir.path);
  const settings = parseSettings({
    ...base,
    http: { local: { ...base.http.local, ...limits }, webhook: { ...base.http.webhook, ...limits } },
  });
  let target: FuzzTarget;

  beforeAll(async () => {
    target = await startFuzzTarget(settings, dir.path, createManualClock());
  });
  afterAll(async () => {
    await target?.stop();
    dir.cleanup();
  });

  async function probe(url: string, req: FuzzRequest, how: { cutAt: number | null; chunks: number; pauseMs: number }): Promise<void> {
    const before = target.versions();
    const { status, complete } = await deliver(url, raw(req, new URL(url).host, target.fill), how);
    const what = `${req.method} ${req.path} ${JSON.stringify(how)} body ${req.body?.length ?? 0} B → ${status}`;
    if (status !== null) expect(status < 500 && (status < 300 || status >= 400), what).toBe(true);
    if (!complete || status === null || status >= 400)
      expect(target.versions(), `an incomplete or refused request wrote: ${what}`).toBe(before);
  }

  it('the local listener', async () => {
    await fc.assert(
      fc.asyncProperty(requestArbitrary('local', DEFAULT_BODY_LIMIT_BYTES), delivery, (req, how) => probe(target.localUrl, req, how)),
      { numRuns: RUNS },
    );
  }, 300_000);

  it('the webhook listener', async () => {
    await fc.assert(
      fc.asyncProperty(requestArbitrary('webhook', settings.http.webhook.bodyLimitBytes), delivery, (req, how) =>
        probe(target.webhookUrl, req, how),
      ),
      { numRuns: RUNS },
    );
  }, 300_000);
});
