import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { settingsSchema } from '../../src/settings/index.js';
import { cleanup, stop } from '../helpers/cleanup.js';
import { startService } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The settings are checked once per start, by a schema of ~800 zod schemas (~2 MB of V8's heap with
 * their closures on Node 22). As module constants they stayed resident for the life of the process; now each check
 * builds the schema and nothing keeps it after (src/settings/schema.ts).
 */
const REPO = new URL('../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'vendgate-settings-heap-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** How many objects of each class name the heap snapshot holds (V8's .heapsnapshot format: nodes in flat rows). */
function objectsByName(file: string): Map<string, number> {
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const [type, name] = [fields.indexOf('type'), fields.indexOf('name')];
  const objectType = snapshot.snapshot.meta.node_types[0].indexOf('object');
  const counts = new Map<string, number>();
  for (let at = 0; at < snapshot.nodes.length; at += fields.length) {
    if (snapshot.nodes[at + type] !== objectType) continue;
    const key = snapshot.strings[snapshot.nodes[at + name]!]!;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** The zod schemas (objects with a `_zod`) reachable from `root`, each once. */
function zodSchemasIn(root: unknown): number {
  const seen = new Set<object>();
  let schemas = 0;
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object' || seen.has(value)) return;
    seen.add(value);
    if ('_zod' in value) schemas += 1;
    for (const key of Object.keys(value)) visit((value as Record<string, unknown>)[key]);
  };
  visit(root);
  return schemas;
}

describe('the settings schema after a start', () => {
  const defer = cleanup();

  it(
    'is not resident: the running service holds a fraction of the zod schemas one settings check builds',
    { timeout: 90_000 },
    async () => {
      // One settings schema, counted in this process; in a heap snapshot each zod schema is an `Internals` object (its `_zod`).
      const oneCheck = zodSchemasIn(settingsSchema());
      expect(oneCheck).toBeGreaterThan(500);

      const service = defer(
        await startService({
          main: join(REPO, 'dist', 'vendgate.js'),
          node: [process.execPath, `--diagnostic-dir=${dir}`, '--heapsnapshot-signal=SIGUSR2'],
        }),
        stop,
      );
      // Any full collection after ready lets the schema go; the snapshot itself starts with one.
      if (service.pid === null) throw new Error('the service has no pid');
      process.kill(service.pid, 'SIGUSR2');
      const counts = await waitFor(
        () => {
          const name = readdirSync(dir).find((entry) => entry.endsWith('.heapsnapshot'));
          if (!name) return null;
          try {
            return objectsByName(join(dir, name));
          } catch {
            return null; // still being written
          }
        },
        { timeoutMs: 60_000, what: 'the heap snapshot' },
      );
      const resident = counts.get('Internals') ?? 0;
      // The service's own schemas (wire formats, MQTT commands, the API) stay: a few hundred, fewer
      // than one settings schema alone (with it resident: 1,129 against 249 on Node 22).
      expect(resident).toBeGreaterThan(0);
      expect(resident, `zod schemas resident in the running service (one settings schema is ${oneCheck})`).toBeLessThan(oneCheck);
    },
  );
});
