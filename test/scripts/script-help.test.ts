import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = new URL('../..', import.meta.url).pathname;

/** Every shell script a person runs: scripts/*.sh and scripts/ci/*.sh. */
function shellScripts(): string[] {
  return ['scripts', 'scripts/ci'].flatMap((dir) =>
    readdirSync(join(REPO, dir))
      .filter((name) => name.endsWith('.sh'))
      .map((name) => `${dir}/${name}`),
  );
}

describe('the scripts a technician or a developer runs answer --help', () => {
  it('each one prints what it does on stdout with exit 0, and changes nothing', () => {
    const scripts = shellScripts();
    expect(scripts.length).toBeGreaterThanOrEqual(4);
    const before = execFileSync('git', ['status', '--porcelain'], { cwd: REPO, encoding: 'utf8' });
    for (const script of scripts) {
      const result = spawnSync('bash', [join(REPO, script), '--help'], {
        encoding: 'utf8',
        timeout: 30_000,
        env: { ...process.env, PATH: process.env.PATH },
      });
      expect(result.status, `${script} --help: ${result.stderr}`).toBe(0);
      expect(result.stdout.trim().split('\n').length, script).toBeGreaterThan(1);
      expect(result.stdout, script).not.toMatch(/error|no such/i);
    }
    expect(execFileSync('git', ['status', '--porcelain'], { cwd: REPO, encoding: 'utf8' })).toBe(before);
  });
});
