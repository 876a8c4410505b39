import { readlinkSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fakePi, type FakePi } from '../../repo/scripts/fake-system.js';

/**
 * A power cut at any step of an update leaves a release that starts. update.sh dies by
 * SIGKILL at each of its steps (VENDGATE_TEST_CRASH_AT, its fault-injection points), the service goes
 * down with it as in a real cut, then the device boots: the release `current` points at must start and
 * pass its selftest, and running the update again must finish it.
 */
const POINTS = [
  'copy-unfinished',
  'after-copy',
  'after-stop',
  'after-backup',
  'after-switch',
  'after-units',
  'after-migrate',
  'after-start',
] as const;

let pi: FakePi | null = null;
afterEach(async () => {
  await pi?.cleanup();
  pi = null;
});

const current = (p: FakePi) => basename(readlinkSync(join(p.root, 'opt/vendgate/current')));

describe('update.sh and a power cut', () => {
  for (const point of POINTS) {
    it(
      `cut ${point}: the device boots into a whole release that passes its selftest, and the update can be run again`,
      { timeout: 180_000 },
      async () => {
        pi = await fakePi();
        expect((await pi.run('install-pi.sh', ['--example', 'test-device'], pi.source('1.0.0'))).code).toBe(0);
        const before = current(pi);
        const next = pi.source('1.1.0');

        const cut = await pi.run('update.sh', [next], next, { VENDGATE_TEST_CRASH_AT: point });
        expect(cut.signal).toBe('SIGKILL');
        pi.powerCut();

        // Boot: systemd starts the enabled unit on whatever `current` is.
        const now = current(pi);
        expect([before, expect.stringMatching(/^1\.1\.0-\d{8}T\d{6}Z$/)]).toContainEqual(now);
        // Only whole releases have a plain name; a half-copied one is still a dot directory.
        for (const name of readdirSync(join(pi.root, 'opt/vendgate/releases')).filter((n) => !n.startsWith('.')))
          expect(pi.exists(`opt/vendgate/releases/${name}/dist/vendgate.js`)).toBe(true);
        const boot = await pi.exec('systemctl', ['start', 'vendgate.service']);
        expect(boot.code, pi.read('vendgate-service.log')).toBe(0);
        const selftest = await pi.exec(join(pi.root, 'usr/local/bin/vendgate'), ['selftest', '--expect-service']);
        expect(selftest.stdout).toMatch(/OK: nothing failed/);
        expect(selftest.code).toBe(0);

        const again = await pi.run('update.sh', [next], next);
        expect(again.stderr).not.toMatch(/error/);
        expect(again.code).toBe(0);
        expect(current(pi)).toMatch(/^1\.1\.0-/);
        expect(again.stdout).toMatch(/OK: nothing failed/);
      },
    );
  }
});
