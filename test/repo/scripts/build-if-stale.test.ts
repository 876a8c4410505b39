import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = new URL('../../../', import.meta.url).pathname;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A tiny project laid out like vendgate, with the real build scripts and the real TypeScript. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-build-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'scripts'));
  mkdirSync(join(dir, 'src/kiosk'), { recursive: true });
  for (const script of ['build-if-stale.mjs', 'copy-assets.mjs', 'bundle.mjs'])
    cpSync(join(ROOT, 'scripts', script), join(dir, 'scripts', script));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"name":"tiny","version":"1.2.3","type":"module"}\n');
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', outDir: 'dist', rootDir: 'src', types: [] },
      include: ['src/**/*.ts'],
    }),
  );
  writeFileSync(join(dir, 'src/main.ts'), 'export const answer: number = 41;\n');
  writeFileSync(join(dir, 'src/kiosk/index.html'), '<p>one</p>\n');
  return dir;
}

/** Runs the staleness check in `dir` and returns what it told the person (stderr). */
function buildIfStale(dir: string): string {
  const result = spawnSync(process.execPath, [join(dir, 'scripts/build-if-stale.mjs')], { cwd: dir, encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  return result.stderr;
}

describe('npm start builds only what changed', () => {
  it('package.json: npm start, selftest and simulate go through the staleness check, not a full tsc run', () => {
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    for (const name of ['start', 'selftest', 'simulate'])
      expect(scripts[name], name).toMatch(/^node scripts\/build-if-stale\.mjs && node dist\/vendgate\.js /);
  });

  it('compiles when there is no dist, skips tsc when nothing changed, and recompiles after an edit or a new asset', () => {
    const dir = project();
    expect(buildIfStale(dir)).toContain('no build yet: compiling');
    expect(readFileSync(join(dir, 'dist/main.js'), 'utf8')).toContain('41');
    expect(readFileSync(join(dir, 'dist/vendgate.js'), 'utf8')).toContain('41');
    expect(readFileSync(join(dir, 'dist/kiosk/index.html'), 'utf8')).toContain('one');
    const builtAt = statSync(join(dir, 'dist/main.js')).mtimeMs;

    expect(buildIfStale(dir)).toContain('dist/ is up to date');
    expect(statSync(join(dir, 'dist/main.js')).mtimeMs).toBe(builtAt);
    expect(JSON.parse(readFileSync(join(dir, 'dist/build-info.json'), 'utf8'))).toHaveProperty('commit');

    writeFileSync(join(dir, 'src/main.ts'), 'export const answer: number = 42;\n');
    expect(buildIfStale(dir)).toContain('sources changed');
    expect(readFileSync(join(dir, 'dist/main.js'), 'utf8')).toContain('42');
    expect(readFileSync(join(dir, 'dist/vendgate.js'), 'utf8')).toContain('42');

    writeFileSync(join(dir, 'src/kiosk/index.html'), '<p>two!</p>\n');
    expect(buildIfStale(dir)).toContain('sources changed');
    expect(readFileSync(join(dir, 'dist/kiosk/index.html'), 'utf8')).toContain('two!');
    expect(buildIfStale(dir)).toContain('dist/ is up to date');
  }, 180_000); // three real tsc runs: minutes on a loaded machine
});
