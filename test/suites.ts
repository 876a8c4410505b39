/**
 * Which test files make up `npm run test:unit`: every test outside test/techniques/e2e/ that starts no child
 * process and no browser. Decided from the imports, not from a hand-kept list, so that a new test
 * lands in the right part by itself: a test file is a "service" test when it, or a test helper it
 * imports (followed through test/ and scripts/, not src/), imports node:child_process or playwright-core.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Tests that start no process but wait on real timeouts by design (a listener's header and idle
 * timeouts, measured on real sockets): they run in the full suite, not in the quick one.
 */
export const REAL_TIME_TEST_FILES = ['test/techniques/fuzz/slow-partial.test.ts'];

/**
 * Tests that need root and system packages (scripts/install-test-deps.sh) beyond Node: real mounts
 * (a tmpfs, ext4 on a loop device) and libfaketime under test/storage/, our FUSE file system under
 * test/techniques/power-cut/, two bridged Mosquitto brokers in route-theft. They run with the e2e
 * suite (`npm run test:e2e`), so that `npm ci && npm test` needs nothing but Node on a fresh machine.
 */
/**
 * Files that need a module graph, and a process, of their own (the unit and full suites share one
 * per worker otherwise, and the unit suite's workers are threads of one process): one replaces a
 * module (`vi.mock`), one checks a process-wide cache of a library that any earlier MQTT client in
 * the worker would fill, one counts the process's own file descriptors, sockets and handles (a
 * socket another worker thread opens meanwhile would read as a leak).
 */
export const ISOLATED_TEST_FILES = [
  'test/hardware/onoff-missing.test.ts',
  'test/mqtt/write-cache.test.ts',
  'test/app/failed-start.test.ts',
];

export const SYSTEM_TEST_GLOBS = [
  'test/storage/**/*.test.ts',
  'test/techniques/power-cut/**/*.test.ts',
  'test/fleet-relay/route-theft.test.ts',
];

const SPAWNS = /from ['"](node:)?child_process['"]|from ['"]playwright-core['"]|import\(['"](node:)?child_process['"]\)/;
const LOCAL_IMPORT = /(?:from|import\()\s*['"](\.{1,2}\/[^'"]+)['"]/g;

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Test files (relative to root, e.g. `test/store/open.test.ts`) that start a process or a browser. */
export function serviceTestFiles(root: string): string[] {
  const testDir = join(root, 'test');
  const followed = [testDir + '/', join(root, 'scripts') + '/'];
  const spawns = new Map<string, boolean>();
  function reaches(file: string, seen: Set<string>): boolean {
    const known = spawns.get(file);
    if (known !== undefined) return known;
    if (seen.has(file)) return false;
    seen.add(file);
    let source: string;
    try {
      source = readFileSync(file, 'utf8');
    } catch {
      return false;
    }
    let result = SPAWNS.test(source);
    for (const match of source.matchAll(LOCAL_IMPORT)) {
      if (result) break;
      const target = resolve(dirname(file), match[1]!.replace(/\.js$/, '.ts'));
      if (followed.some((dir) => target.startsWith(dir))) result = reaches(target, seen);
    }
    spawns.set(file, result);
    return result;
  }
  return testFiles(testDir)
    .filter((file) => !file.startsWith(join(testDir, 'techniques', 'e2e') + '/'))
    .filter((file) => reaches(file, new Set()))
    .map((file) => relative(root, file));
}

/**
 * What can change with the Node version, run again on each supported LTS line by CI
 * (`npm run test:node-line`, scripts/ci/node-lts.sh) after the whole suite passed on the checkout's
 * Node: the native modules (better-sqlite3 under the store, serialport under the hardware), the
 * bundle and the built service (start, sd_notify, SIGTERM, a SIGKILL at each step of the payment
 * path), and node:crypto and node:http under the webhook signatures. The rest is plain TypeScript
 * over those, which does not change with the Node line.
 */
export const NODE_LINE_GLOBS = [
  'test/store/**/*.test.ts',
  'test/app/**/*.test.ts',
  'test/hardware/**/*.test.ts',
  'test/techniques/crash/**/*.test.ts',
  'test/repo/systemd/**/*.test.ts',
  'test/cli/version-help.test.ts',
  'test/cli/start-logs.test.ts',
  'test/payments/**/*.test.ts',
  'test/channels/webhook-verify-first.test.ts',
];
