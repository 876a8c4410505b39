/**
 * The import-boundary check itself: on a copy of the tree it passes, and each kind of break — a
 * "never" of ARCHITECTURE.md, a library outside its folder, a new circle between folders — fails it,
 * naming the rule. (Run by `npm test`; `npm run check:boundaries` runs it on the real tree in CI.)
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp.js';

const root = new URL('../..', import.meta.url).pathname;
const dir = tempDir('vendgate-boundaries-');

function runCheck(): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(dir.path, 'scripts/check-boundaries.mjs')],
      { cwd: dir.path, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, output: `${stdout}${stderr}` });
      },
    );
  });
}

beforeAll(() => {
  for (const path of ['src', 'tsconfig.json', 'package.json', '.dependency-cruiser.cjs', '.dependency-cruiser-known-violations.json']) {
    cpSync(join(root, path), join(dir.path, path), { recursive: true });
  }
  mkdirSync(join(dir.path, 'scripts'));
  cpSync(join(root, 'scripts/check-boundaries.mjs'), join(dir.path, 'scripts/check-boundaries.mjs'));
  symlinkSync(join(root, 'node_modules'), join(dir.path, 'node_modules'));
});
afterAll(() => dir.cleanup());

describe('import-boundary check', () => {
  it('passes on the tree as it is', async () => {
    const { code, output } = await runCheck();
    expect(output).toContain('no circle between folders');
    expect(code).toBe(0);
  }, 120_000);

  it('fails, naming each rule, when hardware imports the ledger, the money path imports mqtt, the simulator borrows an adapter, and outbox/ and orders/ import each other', async () => {
    writeFileSync(
      join(dir.path, 'src/hardware/probe.ts'),
      "import type { Ledger } from '../ledger/index.js';\nexport type Probe = Ledger;\n",
    );
    writeFileSync(join(dir.path, 'src/vend/probe.ts'), "import '../mqtt/index.js';\n");
    writeFileSync(join(dir.path, 'src/simulator/probe.ts'), "import '../payments/index.js';\nimport 'serialport';\n");
    writeFileSync(join(dir.path, 'src/outbox/probe.ts'), "import '../orders/index.js';\n");
    const { code, output } = await runCheck();
    expect(code).toBe(1);
    expect(output).toMatch(/hardware-knows-no-money: src\/hardware\/probe\.ts → src\/ledger\/index\.ts/);
    expect(output).toMatch(/money-path-never-waits-on-the-broker: src\/vend\/probe\.ts → src\/mqtt\/index\.ts/);
    expect(output).toMatch(/simulator-shares-nothing-with-payments: src\/simulator\/probe\.ts/);
    expect(output).toMatch(/gpio-and-serial-only-in-hardware: src\/simulator\/probe\.ts/);
    expect(output).toMatch(/folder-circular: .*src\/(orders|outbox).*src\/(orders|outbox)/);
    expect(output).toContain('src/outbox/probe.ts -> src/orders/index.ts');
  }, 120_000);
});
