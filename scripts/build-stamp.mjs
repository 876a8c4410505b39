// The fingerprint of what dist/ was built from, so that no test runs an old build.
//   node scripts/build-stamp.mjs          writes dist/.source-hash (the last step of `npm run build`)
//   node scripts/build-stamp.mjs --check  exits 0 when dist/ was built from the src/ of now, 1 if not
// A hash of the contents, not modification times: a checkout or a `touch` does not count as a change,
// an edit that is undone does not either.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const stampPath = join(root, 'dist', '.source-hash');

function files(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : [path];
    });
}

export function sourceHash() {
  const hash = createHash('sha256');
  for (const path of [
    ...files(join(root, 'src')),
    join(root, 'tsconfig.json'),
    join(root, 'scripts', 'copy-assets.mjs'),
    join(root, 'scripts', 'bundle.mjs'),
  ]) {
    hash.update(relative(root, path)).update('\0').update(readFileSync(path)).update('\0');
  }
  return hash.digest('hex');
}

if (process.argv.includes('--check')) {
  const built = existsSync(stampPath) ? readFileSync(stampPath, 'utf8').trim() : null;
  const now = sourceHash();
  if (built === now) process.exit(0);
  console.error(
    built ? 'dist/ was built from other sources than src/ has now' : 'dist/ has no build stamp (never built with `npm run build`)',
  );
  process.exit(1);
} else {
  writeFileSync(stampPath, sourceHash() + '\n');
}
