import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock, silentLogger } from '../../src/util/index.js';
import { createProviderHttpClient } from '../../src/payments/http.js';
import { COUNTER_METRICS, createHistogram } from '../../src/metrics/index.js';
import { orderOn, startService, type Service } from '../helpers/service.js';
import { recordingSleep, startFakeProviderServer, type FakeProviderServer } from '../payments/fake-provider-server.js';

const SRC = new URL('../../src/', import.meta.url).pathname;
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const services: Service[] = [];
let server: FakeProviderServer | undefined;
afterEach(async () => {
  for (const svc of services.splice(0)) await svc.stop();
  await server?.stop();
  server = undefined;
});

/** `name{labels} value` lines as a map (comments left out). */
function samples(text: string): Map<string, number> {
  const map = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    map.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return map;
}

/** The exposition format's rules a scraper relies on: one TYPE per family, before its samples; counters end in _total. */
function checkExposition(text: string): void {
  const types = new Map<string, string>();
  for (const line of text.split('\n').filter(Boolean)) {
    const type = /^# TYPE (\S+) (counter|gauge|histogram)$/.exec(line);
    if (type) {
      expect(types.has(type[1]!), `TYPE ${type[1]} twice`).toBe(false);
      types.set(type[1]!, type[2]!);
      if (type[2] === 'counter') expect(type[1]).toMatch(/_total$/);
      continue;
    }
    if (line.startsWith('#')) continue;
    const name = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)![1]!;
    const family = [...types.keys()].find(
      (f) => name === f || (types.get(f) === 'histogram' && /^(.*)_(bucket|sum|count)$/.exec(name)?.[1] === f),
    );
    expect(family, `${name} has no TYPE before it`).toBeDefined();
  }
}

async function scrape(svc: Service): Promise<string> {
  const res = await fetch(`${svc.localUrl}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

describe('/metrics', () => {
  it('from the first scrape: build info, every counter at 0, process metrics, both histograms; no catch-all events counter', async () => {
    const svc = await startService();
    services.push(svc);
    const text = await scrape(svc);
    checkExposition(text);
    const s = samples(text);

    expect(
      s.get(
        `vendgate_build_info{version="${PACKAGE_VERSION}",commit="${JSON.parse(readFileSync(new URL('../../dist/build-info.json', import.meta.url), 'utf8')).commit}",node="${process.version}"}`,
      ),
    ).toBe(1);
    for (const spec of Object.values(COUNTER_METRICS)) {
      const labels = spec.labels
        ? `{${Object.entries(spec.labels)
            .map(([k, v]) => `${k}="${v}"`)
            .join(',')}}`
        : '';
      expect(s.get(`${spec.metric}${labels}`), `${spec.metric}${labels}`).toBe(0);
    }
    expect(s.get('vendgate_paid_to_actuation_seconds_count{result="vended"}')).toBe(0);
    expect(s.get('vendgate_provider_request_duration_seconds_count{provider="sandbox",method="POST",outcome="ok"}')).toBe(0);
    const start = s.get('process_start_time_seconds')!;
    expect(Math.abs(start - Date.now() / 1000)).toBeLessThan(3_600);
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'process_open_fds', 'nodejs_heap_size_used_bytes'])
      expect(s.get(name), name).toBeGreaterThan(0);
    expect(text).not.toContain('vendgate_events_total');
    expect(text).not.toContain('uptime_seconds');
  });

  it('a paid and vended order shows in the counters and in the paid → actuation histogram', async () => {
    const svc = await startService();
    services.push(svc);
    const created = await orderOn(svc.localUrl);
    expect((await fetch(created.payUrl, { method: 'POST' })).status).toBe(204);
    await svc.waitFor(async () => samples(await scrape(svc)).get('vendgate_paid_to_actuation_seconds_count{result="vended"}') === 1, {
      timeoutMs: 15_000,
      what: 'the vend in the histogram',
    });
    const s = samples(await scrape(svc));
    expect(s.get('vendgate_orders_created_total')).toBe(1);
    expect(s.get('vendgate_orders_paid_total')).toBe(1);
    expect(s.get('vendgate_vends_total{result="succeeded"}')).toBe(1);
    expect(s.get('vendgate_paid_to_actuation_seconds_bucket{result="vended",le="+Inf"}')).toBe(1);
    expect(s.get('vendgate_paid_to_actuation_seconds_sum{result="vended"}')).toBeGreaterThan(0);
    expect(s.get('vendgate_orders{state="vended"}')).toBe(1);
  });

  it('every counter the money path keeps (outbox.count) has its Prometheus name', () => {
    const named = new Set<string>();
    const scan = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) scan(path);
        else if (entry.name.endsWith('.ts'))
          for (const m of readFileSync(path, 'utf8').matchAll(/\b(?:count|addCounter\.run)\('([a-z_]+)'/g)) named.add(m[1]!);
      }
    };
    scan(SRC);
    expect(named.size).toBeGreaterThan(5);
    for (const name of named) expect(COUNTER_METRICS[name], name).toBeDefined();
  });

  it('provider calls are timed per attempt, by method and outcome', async () => {
    server = await startFakeProviderServer((_request, index) =>
      index === 0 ? { status: 503, json: {} } : { status: 201, json: { id: 'pi_1' } },
    );
    const clock = createManualClock();
    const seen: { method: string; outcome: string; seconds: number }[] = [];
    const client = createProviderHttpClient(
      {
        clock,
        logger: silentLogger(),
        sleep: recordingSleep(clock).sleep,
        random: () => 0.5,
        observeRequest: (sample) => seen.push(sample),
      },
      { provider: 'test', baseUrl: server.url, requestTimeoutMs: 2_000, createDeadlineMs: 20_000 },
    );
    await client.request({ method: 'POST', path: '/payment-intents', headers: { 'idempotency-key': 'k' }, json: {}, retry: 'create' });
    expect(seen.map((s) => [s.method, s.outcome])).toEqual([
      ['POST', 'error'],
      ['POST', 'ok'],
    ]);
    for (const sample of seen) expect(sample.seconds).toBeGreaterThan(0);
  });

  it('a histogram counts cumulatively, with +Inf, _sum and _count', () => {
    const h = createHistogram({ name: 'x_seconds', help: 'x.', buckets: [0.1, 1] });
    h.observe({}, 0.05);
    h.observe({}, 0.5);
    h.observe({}, 5);
    expect(h.render()).toEqual([
      '# HELP x_seconds x.',
      '# TYPE x_seconds histogram',
      'x_seconds_bucket{le="0.1"} 1',
      'x_seconds_bucket{le="1"} 2',
      'x_seconds_bucket{le="+Inf"} 3',
      'x_seconds_sum 5.55',
      'x_seconds_count 3',
    ]);
  });
});
