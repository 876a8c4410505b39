import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator } from '../../src/simulator/index.js';
import { freePort, orderState, paidOrder, postJson, startService, type Service } from '../helpers/service.js';

/**
 * dist/vendgate.js (scripts/bundle.mjs) is what the systemd units and the installed `vendgate`
 * command start; the rest of the suite runs dist/main.js. These tests run the bundle itself: the
 * files it finds by path (migrations, the kiosk page, the sandbox's assets, package.json, the build
 * info) are found from one file, and an order goes from QR to vend through it.
 */
const BUNDLE = new URL('../../dist/vendgate.js', import.meta.url).pathname;
const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

let svc: Service | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
});

/** The files `file` loads before its first line runs: its static imports of our chunks, transitively. */
function staticallyLoaded(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  for (const [, chunk] of readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*"(\.\/vendgate-[\w-]+\.js)"/g))
    staticallyLoaded(join(dirname(file), chunk!), seen);
  return seen;
}

/** The files esbuild put in the bundle, from every chunk's source map (ours as ../src/…, packages as ../node_modules/…). */
function bundledSources(): string[] {
  const dist = dirname(BUNDLE);
  return readdirSync(dist)
    .filter((name) => /^vendgate.*\.js\.map$/.test(name))
    .flatMap((name) => (JSON.parse(readFileSync(join(dist, name), 'utf8')) as { sources: string[] }).sources);
}

describe('dist/vendgate.js, the one-file build', () => {
  it('answers --version from what the entry loads statically, under 8 KB of our code: not the CLI table, not child_process', () => {
    const files = [...staticallyLoaded(BUNDLE)];
    const loaded = files.map((file) => readFileSync(file, 'utf8')).join('\n');
    expect(loaded).toContain('--version');
    // The CLI's table of commands and its usage text, and node:child_process (systemd-notify), load after it.
    expect(loaded).not.toContain('usage: vendgate');
    expect(loaded).not.toMatch(/(?:from\s*|require\()"node:child_process"/);
    expect(files.reduce((sum, file) => sum + statSync(file).size, 0)).toBeLessThan(8 * 1024);
  });

  it('loads at start only what every command needs: fastify, zod, mqtt, the broker and SQLite wait for the command that uses them', () => {
    const loaded = [...staticallyLoaded(BUNDLE)].map((file) => readFileSync(file, 'utf8')).join('\n');
    // Markers each library's own code carries: fastify's error codes, zod's error class, the mqtt
    // client's class, aedes, the SQLite addon's package name.
    for (const marker of ['FST_ERR_', 'ZodError', 'MqttClient', 'Aedes', 'better-sqlite3'])
      expect(loaded.includes(marker), `${marker} is loaded before the command is known`).toBe(false);
    // … and they are in the build, behind the commands that import them.
    const all = execFileSync('sh', ['-c', `cat "${dirname(BUNDLE)}"/vendgate*.js`], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    for (const marker of ['FST_ERR_', 'ZodError', 'MqttClient', 'Aedes', 'better-sqlite3']) expect(all).toContain(marker);
  });

  it('`start` loads the selftest, the simulated machine and the sandboxes only when they are used (a selftest asked for, actuator.kind sim, fiscal.register sandbox, provider.name sandbox)', () => {
    const chunk = readdirSync(dirname(BUNDLE)).find((name) => /^vendgate-start-[\w]+\.js$/.test(name));
    expect(chunk, 'the start command is a chunk of its own').toBeDefined();
    const loaded = [...staticallyLoaded(BUNDLE), ...staticallyLoaded(join(dirname(BUNDLE), chunk!))]
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    const all = execFileSync('sh', ['-c', `cat "${dirname(BUNDLE)}"/vendgate*.js`], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    // A message only each module's own code carries: the selftest's checks (selftest/checks/slots.ts), the machine
    // simulator of `vendgate simulate-machine`, the sim actuator, the sandbox fiscal register, the sandbox payment provider.
    for (const marker of [
      'no slot out of sale',
      'machine simulator port error',
      'simulated motor jam',
      'sandbox register: busy',
      'event needs id and type',
    ]) {
      expect(loaded.includes(marker), `"${marker}" is loaded by every start`).toBe(false);
      expect(all, `"${marker}" is in the build`).toContain(marker);
    }
  });

  it("`start` loads the adapter `provider.name` names and no other: each real adapter and its wire schemas are a chunk that createProvider's import() reaches", () => {
    const dir = dirname(BUNDLE);
    const start = readdirSync(dir).find((name) => /^vendgate-start-[\w]+\.js$/.test(name));
    const files = [...new Set([...staticallyLoaded(BUNDLE), ...staticallyLoaded(join(dir, start!))])];
    const sourcesOf = (file: string) => (JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] }).sources;
    const adapterFiles = /src\/payments\/(?:gerege|qutpay|qpay|kaspi)\/(?:adapter|wire|token|status)\.ts$/;
    // Every start evaluated all four before (the index re-exported them): ~130 zod schemas resident on every device.
    expect(files.flatMap(sourcesOf).filter((source) => adapterFiles.test(source))).toEqual([]);
    // … and each is in the build, in a chunk of its own that no start loads statically.
    const adapterChunks = readdirSync(dir)
      .filter((name) => /^vendgate.*\.js$/.test(name))
      .filter((name) => sourcesOf(join(dir, name)).some((source) => /src\/payments\/\w+\/adapter\.ts$/.test(source)));
    for (const provider of ['gerege', 'qutpay', 'qpay', 'kaspi'])
      expect(
        bundledSources().filter((source) => source.endsWith(`src/payments/${provider}/adapter.ts`)),
        provider,
      ).toHaveLength(1);
    expect(adapterChunks.length).toBeGreaterThan(0);
    for (const chunk of adapterChunks) expect(files.map((file) => basename(file))).not.toContain(chunk);
  });

  it('`start` loads the actuator `actuator.kind` names and no other: the relay, its GPIO outputs and the serial and MDB drivers are reached by import()', () => {
    const dir = dirname(BUNDLE);
    const start = readdirSync(dir).find((name) => /^vendgate-start-[\w]+\.js$/.test(name));
    const files = [...new Set([...staticallyLoaded(BUNDLE), ...staticallyLoaded(join(dir, start!))])];
    const sourcesOf = (file: string) => (JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] }).sources;
    const kindFiles = /src\/hardware\/(?:relay|gpio\/gpioset|gpio\/output|serial\/[\w-]+)\.ts$/;
    expect(files.flatMap(sourcesOf).filter((source) => kindFiles.test(source))).toEqual([]);
    // … and they are in the build.
    for (const file of ['relay', 'gpio/gpioset', 'gpio/output', 'serial/connection', 'serial/line-profile', 'serial/mdb-profile'])
      expect(
        bundledSources().filter((source) => source.endsWith(`src/hardware/${file}.ts`)),
        file,
      ).toHaveLength(1);
  });

  it("`start` reaches Node's built-ins and the packages outside the bundle through require(), and fastify's https and http2 only when used: ES facades, the scan of CommonJS for export names and http2 cost tens of ms at every start", () => {
    const dir = dirname(BUNDLE);
    const start = readdirSync(dir).find((name) => /^vendgate-start-[\w]+\.js$/.test(name));
    const loaded = [...staticallyLoaded(BUNDLE), ...staticallyLoaded(join(dir, start!))]
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    // An ES import of a built-in makes Node read every export, and on Node 22 some of them load
    // undici, assert's diff or the file streams (scripts/bundle.mjs, importsAsRequire).
    expect(loaded).not.toMatch(/(?:from|import)\s*"(?:node:|pino|better-sqlite3)/);
    expect(loaded).toContain('require("node:http")');
    // pino and better-sqlite3's JavaScript are bundled; SQLite's addon is required where its build puts it, not found by `bindings`.
    expect(loaded).toContain('require("better-sqlite3/build/Release/better_sqlite3.node")');
    expect(loaded).not.toMatch(/require\("(?:pino|better-sqlite3|bindings)"\)/);
    // fastify's lib/server.js: both still there, behind a first use that vendgate's settings never make.
    expect(loaded).toContain('http2=new Proxy(');
    expect(loaded).not.toMatch(/require\("node:(?:http2|https)"\)(?!\[key\])/);
  });

  it('`start` loads the embedded broker (aedes) only through the dynamic import that mqtt.url: embedded reaches', () => {
    const dir = dirname(BUNDLE);
    const start = readdirSync(dir).find((name) => /^vendgate-start-[\w]+\.js$/.test(name));
    const aedes = readdirSync(dir).find((name) => /^vendgate-aedes-[\w]+\.js$/.test(name));
    expect(start, 'the start command is a chunk of its own').toBeDefined();
    expect(aedes, 'aedes is a chunk of its own').toBeDefined();
    const files = [...new Set([...staticallyLoaded(BUNDLE), ...staticallyLoaded(join(dir, start!))])];
    expect(files.map((file) => basename(file))).not.toContain(aedes);
    const loaded = files.map((file) => readFileSync(file, 'utf8')).join('\n');
    // aedes's own code (the $SYS topic it announces subscriptions on) is in its chunk, not in start's graph …
    expect(readFileSync(join(dir, aedes!), 'utf8')).toContain('/new/subscribes');
    expect(loaded.includes('/new/subscribes'), "aedes's code is loaded by every start").toBe(false);
    // … which reaches it only through startEmbeddedBroker's `await import('aedes')` (src/mqtt/service.ts
    // calls that only for mqtt.url: embedded).
    expect(loaded).toContain(`import("./${aedes!}")`);
  });

  it("carries no code the service never runs: zod's other languages, fastify's JSON-schema compilers and inject(), mqtt.js's SOCKS proxy and browser timers, a second copy of Node's streams", () => {
    // V8 keeps the source text of every file it loads resident and preparses it at each start
    // (docs/benchmarks.md): what is in a loaded chunk costs memory whether it runs or not.
    const sources = bundledSources();
    const dist = dirname(BUNDLE);
    const packages = (re: RegExp) => sources.filter((source) => re.test(source));
    // `import { z } from 'zod'` made esbuild keep all of zod's ~40 locales (the namespace object
    // z.locales); src/ imports `* as z`, and only the English messages it configures are here.
    expect(packages(/node_modules\/zod\/v4\/locales\/(?!en\.js$|index\.js$)/)).toEqual([]);
    expect(packages(/node_modules\/zod\/v4\/locales\/en\.js$/)).toHaveLength(1);
    for (const gone of [
      'ajv',
      'ajv-formats',
      'fast-uri',
      'light-my-request',
      '@fastify/ajv-compiler',
      '@fastify/fast-json-stringify-compiler',
      'readable-stream',
      'abort-controller',
      'socks',
      'ip-address',
      'smart-buffer',
      'worker-timers',
      '@babel/runtime',
      // pino's transports (a worker thread each): vendgate writes its logs in-process.
      'thread-stream',
    ])
      expect(
        sources.filter((source) => source.includes(`node_modules/${gone}/`)),
        gone,
      ).toEqual([]);
    // Stand-ins that say what is missing if anything calls them.
    const chunks = readdirSync(dist)
      .filter((name) => /^vendgate.*\.js$/.test(name))
      .map((name) => readFileSync(join(dist, name), 'utf8'))
      .join('\n');
    expect(chunks).toContain("@fastify/ajv-compiler is not in vendgate's bundle");
    expect(chunks).toContain("light-my-request is not in vendgate's bundle");
    expect(chunks).toContain("pino.transport is not in vendgate's bundle");
    expect(chunks).toMatch(/require\("node:stream"\)/);
  });

  it("leaves out the events' table of schemas (src/outbox/events.ts): the service needs only its types, and the alarm payload lives apart", () => {
    // Over a hundred zod schemas, resident for the process's life once evaluated: re-exported from the
    // outbox's index, they were evaluated by everything that imports the outbox (the money path).
    const sources = bundledSources();
    expect(sources.filter((source) => source.endsWith('src/outbox/events.ts'))).toEqual([]);
    expect(sources.filter((source) => source.endsWith('src/outbox/alarm-payload.ts'))).toHaveLength(1);
    expect(sources.filter((source) => source.endsWith('src/outbox/outbox.ts'))).toHaveLength(1);
  });

  it('keeps the source names of functions and classes without a runtime helper: stack traces and logged error types read as the source does', () => {
    const dist = dirname(BUNDLE);
    const chunks = readdirSync(dist)
      .filter((name) => /^vendgate.*\.js$/.test(name))
      .map((name) => readFileSync(join(dist, name), 'utf8'))
      .join('\n');
    expect(chunks).toContain('function versionLine(');
    expect(chunks).toMatch(/class SettingsError\b|\bSettingsError=class\b/);
    expect(chunks).toContain('function resolveConfigPath(');
    // esbuild's keepNames helper (Object.defineProperty(fn, "name") per function at evaluation) is not there.
    expect(chunks).not.toMatch(/__name\(/);
  });

  it('is built with the rest of dist/ and names the same version and commit as dist/main.js', () => {
    const version = (entry: string) => execFileSync(process.execPath, [entry, '--version'], { encoding: 'utf8' });
    expect(version(BUNDLE)).toBe(version(MAIN));
    // A copy of the tree without .git (CI's Node 22 and 24 runs) says "commit unknown", a dirty
    // tree "<commit>-dirty": whatever it is, both entries say the same.
    expect(version(BUNDLE)).toMatch(/^vendgate \d+\.\d+\.\d+ \(commit \S+, node v\d+/);
  });

  it("connects to its MQTT broker (mqtt.js is loaded by the first attempt, through the bundle's module interop)", async () => {
    const port = await freePort();
    svc = await startService({ main: BUNDLE, config: { mqtt: { url: 'embedded', embeddedPort: port } } });
    await svc.waitFor(() => svc!.logs().some((line) => line.msg === 'MQTT connected'), { what: 'the MQTT connection' });
    expect(svc.stderr()).not.toMatch(/unhandled rejection/);
  });

  it("mqtt.js logs its packets through `debug` only when DEBUG asks for it: otherwise the bundle's loggers do nothing (the real one built an array per call, ~70 KB an order)", async () => {
    const quiet = await startService({ main: BUNDLE, config: { mqtt: { url: 'embedded', embeddedPort: await freePort() } } });
    try {
      await quiet.waitFor(() => quiet.logs().some((line) => line.msg === 'MQTT connected'), { what: 'the MQTT connection' });
      expect(quiet.stderr()).not.toContain('mqttjs:client');
    } finally {
      await quiet.stop();
    }
    svc = await startService({
      main: BUNDLE,
      config: { mqtt: { url: 'embedded', embeddedPort: await freePort() } },
      env: { DEBUG: 'mqttjs:client' },
    });
    await svc.waitFor(() => svc!.stderr().includes('mqttjs:client'), { what: "mqtt.js's debug lines on stderr" });
    const all = readdirSync(dirname(BUNDLE))
      .filter((name) => /^vendgate.*\.js$/.test(name))
      .map((name) => readFileSync(join(dirname(BUNDLE), name), 'utf8'))
      .join('\n');
    expect(all).toMatch(/process\.env\.DEBUG\?require_\w+\(\)/);
  });

  it('with a real provider (Gerege, at the simulator over HTTP) loads its adapter when it starts and vends a paid order once', async () => {
    const webhookPort = await freePort();
    const sim = createSimulator({ provider: 'gerege', seed: 7, webhookUrl: `http://127.0.0.1:${webhookPort}/webhooks/gerege` });
    const { url } = await sim.start();
    try {
      const info = sim.info();
      svc = await startService({
        main: BUNDLE,
        webhookPort,
        config: { device: { id: 'bundle-gerege' }, provider: { name: 'gerege', baseUrl: url, clientId: info.clientId } },
        env: { VENDGATE_PROVIDER_CLIENT_SECRET: info.clientSecret!, VENDGATE_WEBHOOK_SECRETS: info.webhookSecret },
      });
      const created = await postJson(`${svc.localUrl}/api/orders`, { slot: 'A1' });
      expect(created.status).toBe(201);
      const order = (await created.json()) as { orderId: number; invoiceId: string };
      expect(sim.records().invoices.map((invoice) => invoice.id)).toEqual([order.invoiceId]);
      await sim.pay(order.invoiceId);
      await svc.waitFor(async () => (await orderState(svc!.localUrl, order.orderId)) === 'vended', { what: 'the order to be vended' });
      expect(svc.readSimLog()).toEqual([expect.objectContaining({ orderId: order.orderId, slot: 'A1' })]);
      expect(svc.stderr()).not.toMatch(/unhandled rejection/);
    } finally {
      await svc?.stop();
      svc = null;
      await sim.stop();
    }
  });

  it('creates its database, serves the kiosk page and the sandbox, and vends a paid order once', async () => {
    svc = await startService({ main: BUNDLE });
    const page = await fetch(`${svc.localUrl}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');
    expect((await fetch(`${svc.localUrl}/sandbox/assets/pay.js`)).status).toBe(200);

    const order = await paidOrder(svc.localUrl, 'A1');
    await svc.waitFor(async () => (await orderState(svc!.localUrl, order.orderId)) === 'vended', { what: 'the order to be vended' });
    expect(svc.readSimLog()).toEqual([expect.objectContaining({ orderId: order.orderId, slot: 'A1' })]);
  });
});
