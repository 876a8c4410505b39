// dist/vendgate.js: the compiled service and the pure-JavaScript dependencies, the file the systemd
// units and the installed `vendgate` command start, with each lazily imported part (a subcommand,
// the embedded broker, qrcode, the watchdog) in its own dist/vendgate-*.js chunk beside it. Node's module
// loader otherwise resolves, stats, reads and links ~980 files at every start (ajv 101, zod 99,
// yaml 84, semver 52, …): spawn → ready 733 → 545 ms on the build machine, idle RSS 88 → 79 MB
// (docs/benchmarks.md). The last step of `npm run build` before the stamp; dist/main.js stays the
// unbundled entry (tests, debugging).
//   node scripts/bundle.mjs
//
// Left out of the bundle, loaded from node_modules as before:
// - native addons (serialport, onoff; SQLite's better_sqlite3.node, below): a .node file cannot be bundled;
// - pino-pretty: loaded only for a person at a terminal (src/util/logger.ts).
// pino is in the bundle: vendgate's loggers write to a stream in-process and never start pino's
// transports (the worker threads, from files resolved at run time, that kept it out before). Loaded
// from node_modules it was ~40 files resolved, stat'ed and read at every start, cold from the SD card
// after a power cut (docs/benchmarks.md, eighth round).
// Every `import.meta.url` in dist/ is rewritten to the URL its own file had, so the paths the code
// builds from it (migrations, the kiosk page, config/default.yaml, package.json) stay the same.
import { readdir, readFile, rm } from 'node:fs/promises';
import { relative } from 'node:path';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const dist = `${root}dist/`;

const EXTERNAL = ['serialport', '@serialport/*', 'onoff', 'pino-pretty'];

/**
 * Our code's static imports of Node's built-ins and of the packages left outside the bundle become
 * require() calls (through the banner's `require`, as the CommonJS libraries in the bundle already
 * reach them): `import { createServer } from 'node:http'` → `const { createServer } =
 * require('node:http')`, `import { SerialPort } from 'serialport'` → `const { SerialPort } =
 * require('serialport')`. An ES import of a built-in makes Node build its ES module facade, which
 * reads every export of the module once, and on Node 22 some of them load a module of their own when
 * read: `http.WebSocket` and its kin load undici (and with it http2 and the web streams), `util.diff`
 * assert's diff and stderr's colours, `fs.ReadStream` the file streams; an ES import of a CommonJS
 * package has its source scanned for export names first. Tens of ms of CPU at each start
 * (docs/benchmarks.md). Each name is read once where the import stood (tsc keeps imports at the top,
 * as written), as the facade reads it once, and a default import of CommonJS is its module.exports
 * either way: each name means what it meant. Named and default imports are the forms src/ writes;
 * any other (a namespace import) stops the build rather than be bundled differently. Dynamic
 * imports stay imports: they load later, when their feature is used.
 */
const REQUIRED = new RegExp(`^(?:node:.+|${EXTERNAL.map((name) => name.replace(/[./]/g, (c) => `\\${c}`).replace('*', '.+')).join('|')})$`);
function importsAsRequire(source, file = '') {
  return source.replace(/\bimport\s*([^'";]*?)\s*from\s*(['"])([^'"]+)\2;?/g, (statement, clause, _quote, specifier) => {
    if (!REQUIRED.test(specifier)) return statement;
    const [, whole, named] = /^(?:([\w$]+)\s*,?\s*)?(?:\{([^}]*)\})?$/.exec(clause.trim()) ?? [];
    if (whole === undefined && named === undefined)
      throw new Error(`${file}: ${statement}: only named and default imports are bundled as require() (scripts/bundle.mjs)`);
    const names = (named ?? '')
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean)
      .map((part) => part.replace(/\s+as\s+/, ': '));
    const target = whole ?? `{ ${names.join(', ')} }`;
    const rest = whole !== undefined && names.length > 0 ? ` const { ${names.join(', ')} } = ${whole};` : '';
    // As many lines as the import had: the source map's lines stay where they were.
    return `const ${target} = require(${JSON.stringify(specifier)});${rest}${'\n'.repeat(statement.split('\n').length - 1)}`;
  });
}

/**
 * Our files as esbuild reads them: dist/kiosk/server.js's `import.meta.url` becomes
 * `new URL("./kiosk/server.js", import.meta.url).href`, and built-ins and external packages are required (above).
 */
const ours = {
  name: 'ours',
  setup(b) {
    // dist/ has no node_modules of its own: this is our code only (esbuild's filters are Go regexps).
    const filter = new RegExp(`^${dist.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*\\.js$`);
    b.onLoad({ filter }, async ({ path }) => {
      let source = await readFile(path, 'utf8');
      source = source.replaceAll('import.meta.url', `new URL(${JSON.stringify(`./${relative(dist, path)}`)}, import.meta.url).href`);
      return { contents: importsAsRequire(source, relative(root, path)), loader: 'js' };
    });
  },
};

/**
 * fastify's lib/server.js requires node:https and node:http2 as it is loaded, for the `https` and
 * `http2` options, which vendgate never sets (our listeners are plain HTTP, src/util/http-listener.ts):
 * http2 alone, with tls and https under it, is ~30 ms of CPU at every start on Node 22
 * (docs/benchmarks.md). Here each is required at its first use instead. The build stops if those
 * lines change with a fastify upgrade, rather than quietly loading them again.
 */
const FASTIFY_SERVER_EAGER = "const https = require('node:https')\nconst http2 = require('node:http2')\n";
const fastifyServerLazy = {
  name: 'fastify-server-lazy-https-http2',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]server\.js$/ }, async ({ path }) => {
      const source = await readFile(path, 'utf8');
      if (!source.includes(FASTIFY_SERVER_EAGER))
        throw new Error(
          `${path} no longer starts with the requires of node:https and node:http2 that scripts/bundle.mjs makes lazy: look again`,
        );
      // The same module objects, reached through a proxy that requires them at the first property read.
      const lazy = (id) => `new Proxy({}, { get: (_, key) => require(${JSON.stringify(id)})[key] })`;
      return {
        contents: source.replace(FASTIFY_SERVER_EAGER, `const https = ${lazy('node:https')}\nconst http2 = ${lazy('node:http2')}\n`),
        loader: 'js',
      };
    });
  },
};

/**
 * mqtt.js fills its table of transports at the first connect, and in Node it requires them all:
 * the WebSocket one (the `ws` package, and Node's https and zlib under it) and the TLS one (Node's
 * tls) even for an `mqtt://` broker. Here the `ws`, `wss`, `ssl`/`tls` and `mqtts` entries require
 * their module when a connection of theirs is built, so a device on a plain TCP broker (Mosquitto on
 * the LAN, the demo's embedded broker) never evaluates them: −2.8 MB of RSS on Node 22 with
 * Mosquitto (docs/benchmarks.md, sixth round). An `mqtts://` or `ws://` URL still loads them, at its
 * first connect. The build stops if those lines change with an mqtt.js upgrade.
 */
const MQTT_EAGER_TRANSPORTS = [
  "protocols.ws = require('./ws').streamBuilder;",
  "protocols.wss = require('./ws').streamBuilder;",
  "protocols.ssl = require('./tls').default;",
  "protocols.mqtts = require('./tls').default;",
];
const mqttTransportsLazy = {
  name: 'mqtt-transports-lazy',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]mqtt[\\/]build[\\/]lib[\\/]connect[\\/]index\.js$/ }, async ({ path }) => {
      let source = await readFile(path, 'utf8');
      for (const line of MQTT_EAGER_TRANSPORTS) {
        if (source.split(line).length !== 2)
          throw new Error(`${path} no longer holds "${line}" once, which scripts/bundle.mjs makes lazy: look again`);
        // `protocols.ws = require('./ws').streamBuilder;` → `protocols.ws = (client, opts) => require('./ws').streamBuilder(client, opts);`
        const [, name, call] = /^protocols\.(\w+) = (.+);$/.exec(line);
        source = source.replace(line, `protocols.${name} = (client, opts) => ${call}(client, opts);`);
      }
      return { contents: source, loader: 'js' };
    });
  },
};

/**
 * pino in-process. vendgate's loggers write to a stream of their own (src/util/logger.ts) and never
 * start one of pino's transports (`pino.transport()`, the `transport` option: a worker thread each,
 * from files found at run time, which a bundle cannot hold), so:
 * - pino's lib/transport.js is a function that refuses with a clear message; `thread-stream` and
 *   the transports' worker files are not in the bundle;
 * - pino's tools required `worker_threads` at load for one flag, read when pino builds its own
 *   destination (a SonicBoom on a file descriptor, never here): the flag is read where it is used,
 *   and a start does not load Node's worker modules for it.
 * The build stops if those lines change with a pino upgrade.
 */
const PINO_WORKER_FLAG = [
  ["const { isMainThread } = require('worker_threads')\n", ''],
  ['if (!opts.sync && isMainThread) {', "if (!opts.sync && require('worker_threads').isMainThread) {"],
];
const pinoInProcess = {
  name: 'pino-in-process',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]pino[\\/]lib[\\/]transport\.js$/ }, async ({ path }) => {
      if (!/^module\.exports = transport$/m.test(await readFile(path, 'utf8')))
        throw new Error(`${path} no longer exports \`transport\` alone, which scripts/bundle.mjs replaces: look again`);
      return {
        contents: `module.exports = function transport() { ${refuse('pino.transport', 'vendgate starts no pino transport')} };`,
        loader: 'js',
      };
    });
    b.onLoad({ filter: /[\\/]node_modules[\\/]pino[\\/]lib[\\/]tools\.js$/ }, async ({ path }) => {
      let source = await readFile(path, 'utf8');
      for (const [line, lazy] of PINO_WORKER_FLAG) {
        if (source.split(line).length !== 2)
          throw new Error(`${path} no longer holds "${line.trim()}" once, which scripts/bundle.mjs makes lazy: look again`);
        source = source.replace(line, lazy);
      }
      if (source.split('isMainThread').length !== 2)
        throw new Error(`${path} reads isMainThread elsewhere too, which scripts/bundle.mjs makes lazy: look again`);
      return { contents: source, loader: 'js' };
    });
  },
};

/**
 * better-sqlite3's JavaScript is in the bundle; its addon is not (a .node file cannot be). The package
 * finds the addon through `bindings`, which tries a dozen places in turn from the caller's stack;
 * here it is required where better-sqlite3's own build puts it (`npm ci`, scripts/release.sh and
 * scripts/ci/node-lts.sh all build it there), resolved from dist/ as any package is. With pino
 * bundled too, a start reads nothing from node_modules but that one file (docs/benchmarks.md,
 * eighth round). The build stops if the line changes with an upgrade.
 */
const SQLITE_ADDON = 'better-sqlite3/build/Release/better_sqlite3.node';
const sqliteAddonDirect = {
  name: 'sqlite-addon-direct',
  setup(b) {
    b.onResolve({ filter: /^better-sqlite3\/build\/Release\/better_sqlite3\.node$/ }, ({ path }) => ({ path, external: true }));
    b.onLoad({ filter: /[\\/]node_modules[\\/]better-sqlite3[\\/]lib[\\/]database\.js$/ }, async ({ path }) => {
      const source = await readFile(path, 'utf8');
      const line = "require('bindings')('better_sqlite3.node')";
      if (source.split(line).length !== 2)
        throw new Error(`${path} no longer holds "${line}" once, which scripts/bundle.mjs replaces: look again`);
      return { contents: source.replace(line, `require(${JSON.stringify(SQLITE_ADDON)})`), loader: 'js' };
    });
  },
};

// The chunks of an earlier build have other hashes: removed, so dist/ holds exactly one build's files.
for (const name of await readdir(dist)) if (/^vendgate(-.+)?\.js(\.map)?$/.test(name)) await rm(`${dist}${name}`);

/**
 * What libraries require at load for features vendgate never uses, replaced in the bundle by a
 * stand-in of the same shape that says so if it is ever called. Unused, these were never run, but
 * they were evaluated, and V8 keeps the source text of every loaded file resident and preparses it
 * at each start (docs/benchmarks.md).
 * - `@fastify/ajv-compiler`, `@fastify/fast-json-stringify-compiler`: fastify's default JSON-schema
 *   compilers (ajv, ajv-formats, fast-uri, fast-json-stringify: ~400 KB). Every vendgate listener
 *   passes its own refusing factories (src/util/fastify-schemas.ts); fastify may still call the
 *   factories (the simulator's listener keeps its defaults), and a route with a schema would fail.
 * - `light-my-request`: `fastify.inject()`, which only tests use, against dist/, not the bundle.
 * - `socks` (with ip-address and smart-buffer): mqtt.js's `socksProxy` option, which
 *   src/mqtt/connection.ts never sets.
 * - `worker-timers`: mqtt.js's timers for browsers and web workers (`timerVariant: 'worker'`, never
 *   set; in Node it takes the native ones).
 */
const refuse = (id, what) => `throw new Error(${JSON.stringify(`${id} is not in vendgate's bundle (scripts/bundle.mjs): ${what}`)})`;
const refusingCompilers = (id) =>
  `module.exports = function notBundled() { return function compile() { ${refuse(id, 'no vendgate listener declares a JSON schema')} } };`;
const NOT_IN_THE_BUNDLE = {
  '@fastify/ajv-compiler': refusingCompilers,
  '@fastify/fast-json-stringify-compiler': refusingCompilers,
  'light-my-request': (id) => `module.exports = function inject() { ${refuse(id, 'fastify.inject() is for tests')} };`,
  socks: (id) => `exports.SocksClient = class SocksClient { constructor() { ${refuse(id, 'vendgate sets no MQTT socksProxy')} } };`,
  'worker-timers': (id) =>
    `exports.setInterval = function setInterval() { ${refuse(id, "mqtt.js takes Node's own timers")} };\nexports.clearInterval = exports.setInterval;`,
};
const unusedOut = {
  name: 'unused-out',
  setup(b) {
    const filter = new RegExp(
      `^(?:${Object.keys(NOT_IN_THE_BUNDLE)
        .map((id) => id.replace(/[./-]/g, (c) => `\\${c}`))
        .join('|')})$`,
    );
    b.onResolve({ filter }, ({ path }) => ({ path, namespace: 'vendgate-not-bundled' }));
    b.onLoad({ filter: /.*/, namespace: 'vendgate-not-bundled' }, ({ path }) => ({
      contents: NOT_IN_THE_BUNDLE[path](path),
      loader: 'js',
    }));
  },
};

/**
 * `debug`, through which mqtt.js and mqtt-packet log each packet: its logger takes `(...args)`, so
 * every call builds an array even when no DEBUG namespace is on, ~70 KB per order (a tenth of what an
 * order allocates: scripts/bench/allocations.mjs). In the bundle `require("debug")` gives loggers that
 * do nothing, unless DEBUG is set when the process starts: then the real package, as before.
 */
const debugOffUnlessAsked = {
  name: 'debug-off-unless-asked',
  setup(b) {
    b.onResolve({ filter: /^debug$/ }, () => ({ path: 'debug', namespace: 'vendgate-debug' }));
    b.onLoad({ filter: /.*/, namespace: 'vendgate-debug' }, () => ({
      resolveDir: root,
      loader: 'js',
      contents: `
        function createDebug(namespace) {
          const debug = function debug() {};
          debug.namespace = namespace;
          debug.enabled = false;
          debug.log = function log() {};
          debug.extend = (name, delimiter) => createDebug(namespace + (delimiter === undefined ? ':' : delimiter) + name);
          debug.destroy = function destroy() {};
          return debug;
        }
        createDebug.enable = function enable() {};
        createDebug.disable = function disable() { return ''; };
        createDebug.enabled = function enabled() { return false; };
        module.exports = process.env.DEBUG ? require('debug/src/index.js') : createDebug;
      `,
    }));
  },
};

/**
 * readable-stream, which mqtt.js and bl (mqtt-packet's, aedes') require, is a copy of Node's own
 * streams published for browsers, with polyfills of process, events and AbortController under it:
 * ~120 KB evaluated at every start for classes Node has already loaded (net and http are built on
 * them). In the bundle it is Node's `stream`: the version 4 the lock file holds is Node 18's stream
 * code, and Duplex, Readable, Writable and Transform are what those libraries take from it.
 */
const readableStreamIsNodes = {
  name: 'readable-stream-is-node-stream',
  setup(b) {
    b.onResolve({ filter: /^readable-stream$/ }, () => ({ path: 'node:stream', external: true }));
  },
};

await build({
  entryPoints: { vendgate: `${dist}main.js` },
  outdir: dist,
  // Each `await import()` of a subcommand (and of what only some settings need) is its own file,
  // loaded when it runs: `vendgate --version` evaluates neither fastify nor zod nor the broker.
  splitting: true,
  chunkNames: 'vendgate-[name]-[hash]',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: EXTERNAL,
  // CommonJS dependencies call require() for Node's built-ins; an ES module has none of its own.
  banner: { js: "import { createRequire as __vendgateRequire } from 'node:module'; const require = __vendgateRequire(import.meta.url);" },
  // White space and syntax minified: fewer bytes to read and parse at each start, and less resident
  // (V8 keeps the source text to compile functions lazily). Names are not: stack traces, profiles and
  // the `type` of a logged error keep the functions' and classes' own names (esbuild adds a digit
  // where two modules' top-level names meet) without esbuild's keepNames, which calls
  // Object.defineProperty(fn, 'name') for every function as its module is evaluated: ~40 ms of CPU
  // at each start on this machine (docs/benchmarks.md), for the same resident memory.
  // dist/vendgate.js.map maps lines back. `node scripts/bundle.mjs --readable` writes it unminified.
  minifyWhitespace: !process.argv.includes('--readable'),
  minifySyntax: !process.argv.includes('--readable'),
  minifyIdentifiers: false,
  sourcemap: 'linked',
  plugins: [
    ours,
    sqliteAddonDirect,
    fastifyServerLazy,
    mqttTransportsLazy,
    pinoInProcess,
    unusedOut,
    readableStreamIsNodes,
    debugOffUnlessAsked,
  ],
  logLevel: 'warning',
  legalComments: 'none',
});
