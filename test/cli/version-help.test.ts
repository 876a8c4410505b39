import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands.js';
import { run } from './cli-io.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

describe('vendgate --version and --help', () => {
  it('--version prints the release, the commit it was built from and the Node running it, on stdout', () => {
    const out = execFileSync(process.execPath, [MAIN, '--version'], { encoding: 'utf8' });
    const built = JSON.parse(readFileSync(new URL('../../dist/build-info.json', import.meta.url), 'utf8')) as { commit: string };
    expect(built.commit).toMatch(/^([0-9a-f]{12}(-dirty)?|unknown)$/);
    expect(out).toBe(`vendgate ${PACKAGE_VERSION} (commit ${built.commit}, node ${process.version})\n`);
  });

  it('--help goes to stdout with exit 0 and lists every command; no command at all is a usage error on stderr', async () => {
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.stderr).toBe('');
    for (const name of Object.keys(COMMANDS)) expect(help.stdout).toContain(`  ${name} `);
    expect(help.stdout).toContain('--version');

    const none = await run([]);
    expect(none.code).toBe(64);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain('usage: vendgate <command>');
  });

  it('<command> --help shows that command alone', async () => {
    for (const name of Object.keys(COMMANDS)) {
      const { code, stdout } = await run([name, '--help']);
      expect(code, name).toBe(0);
      expect(stdout.split('\n')[0], name).toBe(`usage: vendgate ${COMMANDS[name]!.usage.replace(/\n\s+/g, ' ')}`);
      for (const other of Object.keys(COMMANDS).filter((o) => o !== name && !o.startsWith(`${name}-`) && !name.startsWith(o))) {
        expect(stdout, `${name} --help mentions ${other}`).not.toContain(`vendgate ${other}`);
      }
    }
    const unknown = await run(['frobnicate', '--help']);
    expect(unknown.code).toBe(64);
  });

  it("start --lan is the sandbox demo's: on a real provider it is a usage error that names why", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vendgate-lan-'));
    const path = join(dir, 'config.yaml');
    writeFileSync(
      path,
      stringify({
        device: { id: 'lan-test', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
        provider: { name: 'qutpay', baseUrl: 'https://api.example.com' },
        storage: { path: join(dir, 'vendgate.db') },
        mqtt: { url: '' },
      }),
    );
    const result = await run(['start', '--lan', '--config', path], {
      env: { VENDGATE_PROVIDER_API_KEY: 'qp_test_x', VENDGATE_WEBHOOK_SECRETS: 'whsec_x' },
    });
    expect(result.code).toBe(64);
    expect(result.stderr).toContain('--lan is for the sandbox demo; provider qutpay shows its own pay page');
    expect(existsSync(join(dir, 'vendgate.db'))).toBe(false);
  });
});
