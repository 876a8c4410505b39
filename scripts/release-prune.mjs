// Keeps in a release's node_modules only what dist/vendgate.js loads at run time: the packages that
// scripts/bundle.mjs leaves out of the bundle (native addons and pino-pretty) and everything
// they depend on, found as Node resolves them. The rest (fastify, zod, mqtt, … : inside the bundle
// already) is removed. Used by scripts/release.sh; the release tests run the pruned tree.
//   node scripts/release-prune.mjs <release directory>
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const release = process.argv[2];
if (!release || !existsSync(join(release, 'node_modules'))) {
  console.error('usage: node scripts/release-prune.mjs <release directory with node_modules>');
  process.exit(2);
}
// What the bundle imports from node_modules (scripts/bundle.mjs, EXTERNAL): the direct dependencies
// among them that the code names.
const ROOTS = ['better-sqlite3', 'serialport', '@serialport/parser-readline', 'onoff', 'pino-pretty'];
// For installing or compiling the addons (release.sh has built them): nothing requires these at run time.
const BUILD_ONLY = new Set(['nan', 'node-addon-api', 'prebuild-install']);

/** The directory `name` resolves to when required from package directory `from` (Node's lookup). */
function resolvePackage(from, name) {
  for (let dir = from; dir.startsWith(release); dir = dirname(dir)) {
    const candidate = dir.endsWith('/node_modules') ? join(dir, name) : join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === release) break;
  }
  return null;
}

const keep = new Set();
const pending = ROOTS.map((name) => ({ from: release, name, optional: false }));
while (pending.length > 0) {
  const { from, name, optional } = pending.pop();
  if (BUILD_ONLY.has(name)) continue;
  const dir = resolvePackage(from, name);
  if (dir === null) {
    if (optional) continue;
    console.error(`release-prune: ${name} (needed by ${relative(release, from) || 'the bundle'}) is not installed`);
    process.exit(1);
  }
  if (keep.has(dir)) continue;
  keep.add(dir);
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  for (const dep of Object.keys(pkg.dependencies ?? {})) pending.push({ from: dir, name: dep, optional: false });
  for (const dep of Object.keys(pkg.optionalDependencies ?? {})) pending.push({ from: dir, name: dep, optional: true });
  for (const dep of Object.keys(pkg.peerDependencies ?? {})) pending.push({ from: dir, name: dep, optional: true });
}

let removed = 0;
/** Every package directory directly in a node_modules directory, scoped ones included. */
function packagesIn(modules) {
  return readdirSync(modules).flatMap((entry) => {
    const path = join(modules, entry);
    if (entry.startsWith('.')) return [{ path, junk: true }];
    if (!statSync(path).isDirectory()) return [];
    if (entry.startsWith('@')) return readdirSync(path).map((scoped) => ({ path: join(path, scoped), junk: false }));
    return [{ path, junk: false }];
  });
}
function prune(modules) {
  for (const { path, junk } of packagesIn(modules)) {
    if (!junk && keep.has(path)) {
      if (existsSync(join(path, 'node_modules'))) prune(join(path, 'node_modules'));
      continue;
    }
    rmSync(path, { recursive: true, force: true });
    if (!junk) removed += 1;
  }
  for (const entry of readdirSync(modules)) {
    const path = join(modules, entry);
    if (entry.startsWith('@') && readdirSync(path).length === 0) rmSync(path, { recursive: true });
  }
}
prune(join(release, 'node_modules'));
console.log(`    node_modules: kept ${keep.size} packages the bundle loads at run time, removed ${removed}`);
