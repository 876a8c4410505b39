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
