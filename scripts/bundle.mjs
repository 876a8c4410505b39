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
// - native addons (better-sqlite3, serialport, onoff): a .node file cannot be bundled;
// - pino and pino-pretty: pino's transports start worker threads from files it resolves at run time.
// Every `import.meta.url` in dist/ is rewritten to the URL its own file had, so the paths the code
// builds from it (migrations, the kiosk page, config/default.yaml, package.json) stay the same.
import { readdir, readFile, rm } from 'node:fs/promises';
import { relative } from 'node:path';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const dist = `${root}dist/`;

const EXTERNAL = ['better-sqlite3', 'serialport', '@serialport/*', 'onoff', 'pino', 'pino-pretty'];

/** dist/kiosk/server.js's `import.meta.url` becomes `new URL("./kiosk/server.js", import.meta.url).href`. */
const ownUrl = {
  name: 'own-import-meta-url',
  setup(b) {
    // dist/ has no node_modules of its own: this is our code only (esbuild's filters are Go regexps).
    const ours = new RegExp(`^${dist.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*\\.js$`);
    b.onLoad({ filter: ours }, async ({ path }) => {
      const source = await readFile(path, 'utf8');
      if (!source.includes('import.meta.url')) return undefined;
      const own = `new URL(${JSON.stringify(`./${relative(dist, path)}`)}, import.meta.url).href`;
      return { contents: source.replaceAll('import.meta.url', own), loader: 'js' };
    });
  },
};

// The chunks of an earlier build have other hashes: removed, so dist/ holds exactly one build's files.
for (const name of await readdir(dist)) if (/^vendgate(-.+)?\.js(\.map)?$/.test(name)) await rm(`${dist}${name}`);

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
  plugins: [ownUrl],
  logLevel: 'warning',
  legalComments: 'none',
});
