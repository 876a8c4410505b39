// `npm start` on a built checkout: compile only when something tsc or copy-assets reads changed
// since the last build, and then incrementally (dist/.tsbuildinfo). A full tsc run costs ~15 s and
// ~380 MB on a Pi; a check of file sizes and times costs milliseconds.
//   node scripts/build-if-stale.mjs [--quiet]
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const dist = join(root, 'dist');
const stampPath = join(dist, '.build-stamp');
const quiet = process.argv.includes('--quiet');
const say = (text) => {
  if (!quiet) process.stderr.write(`${text}\n`);
};

/** What a build reads: the sources and assets under src/, and the files that decide how they compile. */
function inputs() {
  const files = ['tsconfig.json', 'package.json', 'scripts/copy-assets.mjs', 'scripts/bundle.mjs']
    .map((f) => join(root, f))
    .filter(existsSync);
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.push(path);
    }
  };
  walk(join(root, 'src'));
  return files.sort();
}

/** Path, size and modification time of every input: any edit, added or deleted file changes it. */
function fingerprint() {
  const hash = createHash('sha256');
  for (const file of inputs()) {
    const stat = statSync(file);
    hash.update(`${relative(root, file)}\0${stat.size}\0${stat.mtimeMs}\n`);
  }
  return hash.digest('hex');
}

const current = fingerprint();
const previous = existsSync(stampPath) ? readFileSync(stampPath, 'utf8').trim() : '';
if (previous === current && existsSync(join(dist, 'main.js')) && existsSync(join(dist, 'vendgate.js'))) {
  say('dist/ is up to date (nothing under src/ changed since the last build)');
  // The commit may have moved without a source change: refresh dist/build-info.json (milliseconds).
  execFileSync(process.execPath, [join(root, 'scripts/copy-assets.mjs')], { stdio: 'inherit' });
} else {
  say(existsSync(join(dist, 'main.js')) ? 'sources changed: compiling what changed (tsc --incremental)' : 'no build yet: compiling (tsc)');
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  execFileSync(
    process.execPath,
    [tsc, '-p', join(root, 'tsconfig.json'), '--incremental', '--tsBuildInfoFile', join(dist, '.tsbuildinfo')],
    { stdio: 'inherit', cwd: root },
  );
  execFileSync(process.execPath, [join(root, 'scripts/copy-assets.mjs')], { stdio: 'inherit' });
  execFileSync(process.execPath, [join(root, 'scripts/bundle.mjs')], { stdio: 'inherit' });
  writeFileSync(stampPath, `${current}\n`);
}
