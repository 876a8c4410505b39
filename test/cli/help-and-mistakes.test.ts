import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands.js';
import { ORDER_STATES } from '../../src/orders/index.js';
import { loadSettings } from '../../src/settings/index.js';
import { run } from './cli-io.js';

describe('help, version and the mistakes people type', () => {
  it('`help` and `version` are commands, and `help <command>` is `<command> --help`', async () => {
    const help = await run(['help']);
    expect(help.code).toBe(0);
    for (const name of Object.keys(COMMANDS)) expect(help.stdout).toContain(`  ${name} `);
    const version = await run(['version']);
    expect(version).toMatchObject({ code: 0, stderr: '' });
    expect(version.stdout).toMatch(/^vendgate \d+\.\d+\.\d+ \(commit .+, node v\d+/);
    for (const name of Object.keys(COMMANDS)) {
      const viaHelp = await run(['help', name]);
      const viaFlag = await run([name, '--help']);
      expect(viaHelp.code, name).toBe(0);
      expect(viaHelp.stdout, name).toBe(viaFlag.stdout);
    }
  });

  it("every command's help lists each of its options with what it does, and orders lists every state", async () => {
    for (const [name, { options = [] }] of Object.entries(COMMANDS)) {
      const { stdout } = await run(['help', name]);
      for (const [flag, about] of options) {
        expect(stdout, `${name} ${flag}`).toContain(`  ${flag}  `);
        expect(stdout, `${name} ${flag}`).toContain(about);
      }
    }
    const orders = await run(['help', 'orders']);
    for (const state of ORDER_STATES) expect(orders.stdout).toContain(state);
    const start = await run(['start', '--help']);
    for (const flag of ['--local-port N', '--webhook-port N', '--broker-port N', '$VENDGATE_LOCAL_PORT'])
      expect(start.stdout).toContain(flag);
  });

  it('an unknown command or option gets our message with "did you mean", exit 64, nothing of the parser', async () => {
    const command = await run(['ordrs']);
    expect(command.code).toBe(64);
    expect(command.stderr).toBe('vendgate: unknown command "ordrs"; did you mean "orders"? (vendgate help lists every command)\n');

    const option = await run(['orders', '--stat', 'paid']);
    expect(option.code).toBe(64);
    expect(option.stderr).toBe(
      'vendgate: unknown option --stat for "orders"; did you mean --state? (vendgate help orders lists its options)\n',
    );

    const bogus = await run(['orders', '--bogus']);
    expect(bogus.code).toBe(64);
    expect(bogus.stderr).toBe('vendgate: unknown option --bogus for "orders" (vendgate help orders lists its options)\n');
    expect(bogus.stderr).not.toMatch(/ERR_PARSE_ARGS|Unknown option|To specify a positional/);

    // An option that exists, but for another command.
    const elsewhere = await run(['start', '--json']);
    expect(elsewhere.stderr).toContain('unknown option --json for "start"');

    const missing = await run(['orders', '--state']);
    expect(missing).toMatchObject({ code: 64, stderr: 'vendgate: --state needs a value (vendgate help orders says which)\n' });

    const unknownTopic = await run(['help', 'sefltest']);
    expect(unknownTopic.code).toBe(64);
    expect(unknownTopic.stderr).toContain('did you mean "selftest"?');
  });
});

describe('settings files a person gets wrong', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-config-errors-'));

  it('a missing file names the file and the example to copy', () => {
    const path = join(dir, 'nope.yaml');
    expect(() => loadSettings({ path, env: {} })).toThrow(
      /nope\.yaml:\n  there is no such file\. Start from an example: sudo cp \S+\/config\/examples\/sandbox\.yaml \S+nope\.yaml/,
    );
  });

  it('broken YAML shows the line with a caret under the spot, never an empty "column 1:"', () => {
    const path = join(dir, 'broken.yaml');
    writeFileSync(path, 'device:\n  id: x\n  mode: [vending\nprovider: {}\n');
    let message = '';
    try {
      loadSettings({ path, env: {} });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/not valid YAML at line \d+, column \d+: /);
    expect(message).not.toMatch(/column \d+:\s*$/m);
    const lines = message.split('\n');
    const caret = lines.findIndex((line) => /^\s+\|\s*\^$/.test(line));
    expect(caret, message).toBeGreaterThan(0);
    expect(lines[caret - 1]).toMatch(/^\s+\d+ \| /);
  });

  it('the demo ports move from the command line or the environment; the flag wins; a bad value is a settings error', () => {
    const env = { VENDGATE_LOCAL_PORT: '18181', VENDGATE_WEBHOOK_PORT: '18787' };
    const loaded = loadSettings({ env, ports: { local: '18282', broker: '18883' } });
    expect(loaded.settings.http.local.port).toBe(18282);
    expect(loaded.settings.http.webhook.port).toBe(18787);
    expect(loaded.settings.mqtt.embeddedPort).toBe(18883);
    expect(loaded.environment).toEqual(expect.arrayContaining(['--local-port', 'VENDGATE_WEBHOOK_PORT', '--broker-port']));
    expect(() => loadSettings({ env: {}, ports: { local: 'eighty' } })).toThrow(
      /http\.local\.port: --local-port is "eighty", not a port number/,
    );
  });
});
