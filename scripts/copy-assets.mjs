// Copies the non-TypeScript files the service reads at run time (SQL migrations, the kiosk page,
// translations) from src/ to dist/, keeping their paths. `tsc` only emits .js.
import { cpSync, readdirSync, statSync, mkdirSync } from 'node:fs';
import { join, dirname, extname, relative } from 'node:path';

const ASSET_EXTENSIONS = new Set(['.sql', '.html', '.css', '.js', '.json', '.svg', '.png', '.ico', '.woff2']);
const root = new URL('..', import.meta.url).pathname;
const src = join(root, 'src');
const dist = join(root, 'dist');

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (ASSET_EXTENSIONS.has(extname(name))) {
      const target = join(dist, relative(src, path));
      mkdirSync(dirname(target), { recursive: true });
      cpSync(path, target);
    }
  }
}
walk(src);

// dist/build-info.json: the commit this build came from, for `vendgate --version`, telemetry,
// Home Assistant and vendgate_build_info. update.sh passes VENDGATE_BUILD_COMMIT when it builds a
// copy of the tree that has no .git.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
function gitCommit() {
  try {
    const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short=12', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return dirty ? `${commit}-dirty` : commit;
  } catch {
    return 'unknown';
  }
}
mkdirSync(dist, { recursive: true });
writeFileSync(join(dist, 'build-info.json'), `${JSON.stringify({ commit: process.env.VENDGATE_BUILD_COMMIT || gitCommit() })}\n`);
