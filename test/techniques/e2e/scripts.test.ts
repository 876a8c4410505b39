import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../helpers/temp.js';

const REPO = new URL('../../../', import.meta.url).pathname;
// Debian's shellcheck; scripts/install-test-deps.sh installs it.
const SHELLCHECK = spawnSync('shellcheck', ['--version'], { encoding: 'utf8' });

function shellcheck(paths: string[]): { status: number | null; output: string } {
  const result = spawnSync('shellcheck', ['--external-sources', '--severity=style', ...paths], { cwd: REPO, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** Every shell script in scripts/ (by shebang), not just the two we know of today. */
function shellScripts(): string[] {
  const dir = join(REPO, 'scripts');
  return readdirSync(dir)
    .filter((name) => statSync(join(dir, name)).isFile())
    .filter((name) => name.endsWith('.sh') || /^#!.*\b(ba)?sh\b/.test(readFileSync(join(dir, name), 'utf8').split('\n')[0] ?? ''))
    .map((name) => join('scripts', name));
}

describe('shell scripts', () => {
  it('shellcheck is installed (scripts/install-test-deps.sh)', () => {
    expect(SHELLCHECK.status, 'shellcheck is missing: run scripts/install-test-deps.sh (Debian package shellcheck)').toBe(0);
  });

  it('install-pi.sh, update.sh and every other script in scripts/ pass shellcheck with no finding at all', () => {
    const scripts = shellScripts();
    expect(scripts).toEqual(expect.arrayContaining(['scripts/install-pi.sh', 'scripts/update.sh']));
    const { status, output } = shellcheck(scripts);
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it('the `vendgate` command install-pi.sh writes on the device passes shellcheck too', () => {
    const dir = tempDir('vendgate-cli-');
    try {
      // Sourcing install-pi.sh defines its functions without running it.
      const write = spawnSync('bash', ['-c', '. scripts/install-pi.sh && NODE_BIN=/usr/bin/node && install -d "$BIN_DIR" && write_cli'], {
        cwd: REPO,
        env: { ...process.env, VENDGATE_ROOT: dir.path },
        encoding: 'utf8',
      });
      expect(write.stderr).toBe('');
      const cli = join(dir.path, 'usr/local/bin/vendgate');
      expect(readFileSync(cli, 'utf8')).toContain('/opt/vendgate/current/dist/vendgate.js');
      const { status, output } = shellcheck([cli]);
      expect(output).toBe('');
      expect(status).toBe(0);
    } finally {
      dir.cleanup();
    }
  });

  it('shellcheck does flag a mistake (so the tests above mean something)', () => {
    const dir = tempDir('vendgate-sc-');
    try {
      const bad = join(dir.path, 'bad.sh');
      spawnSync('bash', ['-c', `printf '#!/bin/sh\\nrm -rf $1/*\\n' > ${bad}`]);
      const { status, output } = shellcheck([bad]);
      expect(status).not.toBe(0);
      expect(output).toMatch(/SC2115|SC2086/);
    } finally {
      dir.cleanup();
    }
  });
});
