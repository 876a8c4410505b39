import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startService } from '../../helpers/service.js';
import { tempDir } from '../../helpers/temp.js';

/**
 * A `systemd-notify` that appends what it was told to a file: main.ts spawns it for every
 * notification (Node has no datagram sockets), so the PATH decides which one runs.
 */
function fakeSystemdNotify(options: { slowReady?: boolean } = {}) {
  const dir = tempDir('vendgate-notify-');
  const log = join(dir.path, 'notify.log');
  const bin = join(dir.path, 'bin');
  const script = join(bin, 'systemd-notify');
  mkdirSync(bin);
  // slowReady: READY=1 takes a second to send, so a STOPPING=1 spawned meanwhile would overtake it.
  const slow = options.slowReady ? `[ "$1" = "READY=1" ] && sleep 1\n` : '';
  writeFileSync(script, `#!/bin/sh\n${slow}echo "$*" >> "${log}"\n`);
  chmodSync(script, 0o755);
  return {
    env: { PATH: `${bin}:${process.env.PATH}`, NOTIFY_SOCKET: join(dir.path, 'notify.sock'), WATCHDOG_USEC: '300000' },
    sent: (): string[] => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []),
    cleanup: dir.cleanup,
  };
}

describe('systemd notify (Type=notify, WatchdogSec=)', () => {
  it('READY=1 after start-up, WATCHDOG=1 while healthy, STOPPING=1 on SIGTERM and no ping after it', async () => {
    const notify = fakeSystemdNotify();
    const svc = await startService({ env: notify.env });
    try {
      await svc.waitFor(() => notify.sent().filter((s) => s === 'WATCHDOG=1').length >= 3, { what: 'three watchdog pings' });
      expect(notify.sent()[0]).toBe('READY=1');

      await svc.kill('SIGTERM');
      const sent = notify.sent();
      const stopping = sent.indexOf('STOPPING=1');
      expect(stopping).toBeGreaterThan(0);
      // A ping spawned just before STOPPING=1 may land just after it; none may come later than that.
      expect(sent.slice(stopping + 1).filter((s) => s === 'WATCHDOG=1').length).toBeLessThanOrEqual(1);
    } finally {
      await svc.stop();
      notify.cleanup();
    }
  });

  it('the pings stop when the database file disappears from under the service (systemd then restarts it)', async () => {
    const notify = fakeSystemdNotify();
    const svc = await startService({ env: notify.env });
    try {
      await svc.waitFor(() => notify.sent().includes('WATCHDOG=1'), { what: 'the first watchdog ping' });
      renameSync(svc.dbPath, `${svc.dbPath}.moved`);
      const unhealthy = () =>
        svc
          .stderr()
          .split('\n')
          .filter((line) => line.includes('watchdog: not pinging systemd')).length;
      // A ping already spawned before the first failed tick may still land; count from the second.
      await svc.waitFor(() => unhealthy() >= 2, { what: 'two unhealthy ticks' });
      const before = notify.sent().length;
      await svc.waitFor(() => unhealthy() >= 7, { what: 'five more unhealthy ticks' });
      expect(notify.sent().length).toBe(before);
      expect(svc.stderr()).toMatch(/watchdog: not pinging systemd: .*vendgate\.db/);

      renameSync(`${svc.dbPath}.moved`, svc.dbPath);
      await svc.waitFor(() => notify.sent().length > before, { what: 'pings to resume' });
    } finally {
      await svc.stop();
      notify.cleanup();
    }
  });

  it('notifications reach systemd in the order they were made, and all of them before the process exits', async () => {
    const notify = fakeSystemdNotify({ slowReady: true });
    try {
      const svc = await startService({ env: { ...notify.env, WATCHDOG_USEC: '' } });
      await svc.stop();
      expect(notify.sent()).toEqual(['READY=1', 'STOPPING=1']);
    } finally {
      notify.cleanup();
    }
  });

  it('without WATCHDOG_USEC nothing pings, and without NOTIFY_SOCKET nothing is sent at all', async () => {
    const notify = fakeSystemdNotify();
    const quiet = await startService({ env: { ...notify.env, WATCHDOG_USEC: '' } });
    await quiet.stop();
    expect(notify.sent()).toEqual(['READY=1', 'STOPPING=1']);

    const plain = fakeSystemdNotify();
    const none = await startService({ env: { ...plain.env, NOTIFY_SOCKET: '' } });
    await none.stop();
    expect(plain.sent()).toEqual([]);
    notify.cleanup();
    plain.cleanup();
  });
});
