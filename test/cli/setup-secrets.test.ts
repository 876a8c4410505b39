import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseSecretsText } from '../../src/settings/credentials.js';
import { tempDir } from '../helpers/temp.js';

/**
 * `vendgate setup` writes secrets.env as data the service reads back exactly: a hostile value
 * (shell syntax) is stored and read literally, and a value the service would read differently
 * (its enclosing quotes dropped) is refused with nothing changed. (Answers are trimmed as typed.)
 */
const REPO = new URL('../../', import.meta.url).pathname;
const STARTER = join(REPO, 'config/examples/sandbox.yaml');

describe('vendgate setup and secrets.env', () => {
  let dir: ReturnType<typeof tempDir> | null = null;
  afterEach(() => {
    dir?.cleanup();
    dir = null;
  });

  function setup(clientSecret: string) {
    dir = tempDir();
    const config = join(dir.path, 'config.yaml');
    const secrets = join(dir.path, 'secrets.env');
    writeFileSync(config, readFileSync(STARTER, 'utf8'), { mode: 0o640 });
    writeFileSync(secrets, '# secrets of this device\n', { mode: 0o640 });
    // …, the tunnel (none), the operator's broker (none), the service menu's PIN (none).
    const answers = ['gerege', 'vm-014', 'no', 'https://api.gerege.example', 'vm-014-test', clientSecret, 'whsec_value_1', '', 'none', ''];
    const result = spawnSync(process.execPath, [join(REPO, 'dist/main.js'), 'setup', '--config', config, '--no-apply'], {
      input: `${answers.join('\n')}\n`,
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    });
    return { result, secrets: () => readFileSync(secrets, 'utf8'), dir: dir.path };
  }

  it('stores a value full of shell syntax exactly as typed, and the service reads it back as data', () => {
    const hostile = '$(touch /tmp/vendgate-pwned)`id`;x';
    const run = setup(hostile);
    expect(run.result.stderr).toBe('');
    expect(run.result.status).toBe(0);
    expect(parseSecretsText(run.secrets()).get('VENDGATE_PROVIDER_CLIENT_SECRET')).toBe(hostile);
  });

  for (const [what, value, message] of [
    ['enclosing double quotes', '"cs_quoted"', /enclosed in quotes would lose them/],
    ['enclosing single quotes', "'cs_quoted'", /enclosed in quotes would lose them/],
  ] as const) {
    it(`refuses a secret with ${what} (the service would read another value), nothing changed`, () => {
      const run = setup(value);
      expect(run.result.status).not.toBe(0);
      expect(run.result.stderr).toMatch(message);
      expect(run.result.stderr).toContain('nothing was changed');
      expect(run.secrets()).toBe('# secrets of this device\n');
      expect(existsSync(join(run.dir, 'config.yaml.before-setup'))).toBe(false);
    });
  }
});
