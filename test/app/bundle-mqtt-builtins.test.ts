import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { Aedes } from 'aedes';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, stop } from '../helpers/cleanup.js';
import { serviceOnBroker } from '../helpers/on-broker.js';
import { orderState, postJson, startService } from '../helpers/service.js';
import { decodeQrSvg } from '../kiosk/qr-svg.js';

/**
 * What a device on a plain `mqtt://` broker (Mosquitto on its LAN) loads of Node for its MQTT
 * link: the one-file build the unit starts (dist/vendgate.js), on the real broker (127.0.0.1:1883 or
 * MQTT_TEST_URL), with a preload that writes Node's own list of the modules it loaded as the
 * process exits. mqtt.js requires all its transports at the first connect, and in the bundle the
 * WebSocket and TLS ones are required only by a connection of theirs (scripts/bundle.mjs); the
 * telemetry reads the disk and the temperature with node:fs's callbacks, not node:fs/promises.
 * Before: ~2.8 MB more RSS on Node 22 (docs/benchmarks.md, sixth round).
 */
const BUNDLE = new URL('../../dist/vendgate.js', import.meta.url).pathname;
const TLS = (name: string) => fileURLToPath(new URL(`../mqtt/fixtures/tls/${name}`, import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'vendgate-builtins-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A preload that writes, as the process exits, Node's list of the modules it loaded (built-ins as
 * `NativeModule <name>`) and every CommonJS file in its require cache; NODE_OPTIONS for it.
 */
function recordModules(name: string): { env: Record<string, string>; read: () => { loaded: string[]; files: string[] } } {
  const preload = join(dir, `${name}.cjs`);
  const out = join(dir, `${name}.json`);
  writeFileSync(
    preload,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify({ loaded: process.moduleLoadList, files: Object.keys(require.cache) })));\n`,
  );
  return {
    env: { NODE_OPTIONS: `--require ${preload}` },
    read: () => JSON.parse(readFileSync(out, 'utf8')) as { loaded: string[]; files: string[] },
  };
}
const TRANSPORTS_AND_FS_PROMISES = /^NativeModule (?:tls|_tls_wrap|https|zlib|fs\/promises)$/;

describe('the bundle on a plain mqtt:// broker', () => {
  const defer = cleanup();

  it(
    "connects, publishes its telemetry and loads neither mqtt.js's WebSocket and TLS transports (ws, Node's tls, https, zlib) nor node:fs/promises",
    { timeout: 60_000 },
    async () => {
      const { env, read } = recordModules('plain');
      const { svc, watcher, base } = await serviceOnBroker(defer, 'lean', {}, { main: BUNDLE, env });
      // Published at each connect, after the readings of the disk and the temperature.
      const telemetry = await watcher.next(`${base}/telemetry`, () => true, 30_000);
      expect(JSON.parse(String(telemetry.payload))).toMatchObject({ disk: { freeBytes: expect.any(Number) } });
      await svc.stop();

      const { loaded } = read();
      expect(loaded).toContain('NativeModule net');
      expect(loaded.filter((name) => TRANSPORTS_AND_FS_PROMISES.test(name))).toEqual([]);
    },
  );

  it('still connects to an mqtts:// broker: the TLS transport is required by its first connection', { timeout: 60_000 }, async () => {
    const aedes = await Aedes.createBroker({});
    const admitted: string[] = [];
    aedes.on('clientReady', (client) => admitted.push(client.id));
    const server = createTlsServer({ key: readFileSync(TLS('server.key')), cert: readFileSync(TLS('server.pem')) }, (socket) =>
      aedes.handle(socket),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    defer(server, (s) => new Promise<void>((resolve) => aedes.close(() => s.close(() => resolve()))));
    const { env, read } = recordModules('tls');
    const svc = defer(
      await startService({
        main: BUNDLE,
        env,
        config: { mqtt: { url: `mqtts://localhost:${(server.address() as AddressInfo).port}`, caPath: TLS('ca.pem') } },
      }),
      stop,
    );
    await svc.waitFor(() => svc.logs().some((line) => line.msg === 'MQTT connected'), { what: 'the TLS connection' });
    expect(admitted).toHaveLength(1);
    await svc.stop();
    expect(read().loaded).toContain('NativeModule tls');
  });
});

/**
 * What the first sale loads: qrcode's index would bring its PNG renderer (pngjs, and Node's zlib),
 * Node's fetch would bring undici (web streams, http2, tls, zlib): together ~8 MB more RSS on Node 22
 * after the orders (docs/benchmarks.md, seventh round). The QR is drawn by qrcode's encoder and SVG
 * renderer alone, and the calls go through util/http-fetch.ts (node:http).
 *
 * And what it reads from node_modules: the bundle holds every pure-JavaScript dependency the service
 * runs, pino and better-sqlite3's JavaScript included, and loads from node_modules only the SQLite
 * addon, required where its build puts it. Before, pino, better-sqlite3 and `bindings` were ~60
 * files resolved, stat'ed and read at each start, cold from the SD card after a power cut, with
 * Node's worker modules for pino's transports, which vendgate never starts (docs/benchmarks.md,
 * eighth round).
 */
const FETCH_AND_PNG = /^NativeModule (?:zlib|http2|tls|internal\/deps\/undici\/undici)$/;

describe("the bundle's first sale", () => {
  const defer = cleanup();

  it(
    "draws the order's QR as an SVG, delivers the sandbox's webhook and vends, loading neither Node's fetch (undici, http2, tls) nor zlib, nor Node's worker threads, nor anything from node_modules but the SQLite addon",
    { timeout: 60_000 },
    async () => {
      const { env, read } = recordModules('first-sale');
      const svc = defer(await startService({ main: BUNDLE, env }), stop);
      const created = await postJson(`${svc.localUrl}/api/orders`, { slot: 'A1' });
      expect(created.status).toBe(201);
      const order = (await created.json()) as { orderId: number; invoiceId: string; payUrl: string; qrSvg: string };
      expect(decodeQrSvg(order.qrSvg)).toBe(order.payUrl);
      expect((await postJson(`${svc.localUrl}/sandbox/pay/${order.invoiceId}`)).status).toBe(204);
      await svc.waitFor(async () => (await orderState(svc.localUrl, order.orderId)) === 'vended', { what: 'the paid order vended' });
      // The sandbox's webhook came to the service's own listener over HTTP, as a provider's would.
      await svc.waitFor(() => svc.logs().some((line) => line.msg === 'webhook accepted'), { what: "the sandbox's webhook accepted" });
      await svc.stop();

      // pino, bundled, wrote the service's lines.
      expect(svc.logs().some((line) => line.msg === 'vendgate ready')).toBe(true);

      const { loaded, files } = read();
      expect(loaded).toContain('NativeModule net');
      expect(loaded.filter((name) => FETCH_AND_PNG.test(name))).toEqual([]);
      expect(loaded.filter((name) => /^NativeModule (?:worker_threads|internal\/worker)$/.test(name))).toEqual([]);
      expect(files.filter((file) => file.includes('/node_modules/'))).toEqual([
        join(fileURLToPath(new URL('../../node_modules/', import.meta.url)), 'better-sqlite3/build/Release/better_sqlite3.node'),
      ]);
    },
  );
});
