import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';

/**
 * The kiosk page's few files (HTML, one script, one stylesheet, the translations: ~25 KB), read once
 * at start and served from memory under their own paths. Hand-written instead of @fastify/static:
 * that plugin and its dependencies cost ~6 MB of resident memory on a device whose whole budget is
 * 70 MB (scripts/bench/resources.mjs), for a directory that never changes while the service runs.
 */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

function filesUnder(root: string, dir = root): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(root, path) : [relative(root, path).split(sep).join('/')];
  });
}

/** GET (and HEAD) for every file under `root`, and `/` for its index.html. Anything else falls to the 404 handler. */
export function registerStaticFiles(app: FastifyInstance, root: string): void {
  for (const file of filesUnder(root)) {
    const type = CONTENT_TYPES[extname(file)];
    if (!type) continue;
    const body = readFileSync(join(root, file));
    const send = (_request: FastifyRequest, reply: FastifyReply) =>
      reply
        // The kiosk browser must pick up a new page after an update without a cache flush.
        .header('cache-control', 'no-cache')
        .type(type)
        .send(body);
    app.get(`/${file}`, send);
    if (file === 'index.html') app.get('/', send);
  }
}
