import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseSecretsText } from '../../src/settings/credentials.js';
import { cleanup } from '../helpers/cleanup.js';
import { tempDir } from '../helpers/temp.js';
import { starterDevice } from './setup-device.js';

/**
 * `vendgate setup` writes secrets.env as data the service reads back exactly: a hostile value
 * (shell syntax) is stored and read literally, and a value the service would read differently
 * (its enclosing quotes dropped) is refused with nothing changed. (Answers are trimmed as typed.)
 */
describe('vendgate setup and secrets.env', () => {
  const defer = cleanup();

  function setup(clientSecret: string) {
    const device = starterDevice(defer(tempDir(), (d) => d.cleanup()).path);
    // …, the tunnel (none), the operator's broker (none), the service menu's PIN (none).
    const answers = ['gerege', 'vm-014', 'no', 'https://api.gerege.example', 'vm-014-test', clientSecret, 'whsec_value_1', '', 'none', ''];
    const result = device.setup(answers);
    return { result, secrets: () => device.files().secrets, config: device.config };
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
      expect(existsSync(`${run.config}.before-setup`)).toBe(false);
    });
  }
});
