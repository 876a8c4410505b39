import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { Exec } from '../../src/selftest/index.js';
import { byName, deviceConfig, fakeExec, selftestFor } from './harness.js';

const EXAMPLE = new URL('../../systemd/cloudflared.yml.example', import.meta.url).pathname;

/**
 * cloudflared's `tunnel --config F ingress validate|rule URL`, as documented: rules in order, the
 * first whose hostname (when given) and path regex (when given) match wins; validate refuses rules
 * whose last entry is not a catch-all. Every other command behaves as fakeExec().
 */
function fakeCloudflared(options: { installed?: boolean } = {}): Exec & { calls: string[] } {
  const base = fakeExec();
  const exec = (async (command: string, args: string[], timeoutMs: number) => {
    if (command !== 'cloudflared') return base(command, args, timeoutMs);
    base.calls.push([command, ...args].join(' '));
    if (options.installed === false) return { code: null, stdout: '', error: 'spawn cloudflared ENOENT' };
    if (args[0] === '--version') return { code: 0, stdout: 'cloudflared version 2026.11.0\n' };
    const [, , file, , verb, url] = args;
    const config = parse(readFileSync(file!, 'utf8')) as { ingress?: { hostname?: string; path?: string; service: string }[] };
    const rules = config.ingress ?? [];
    const last = rules.at(-1);
    if (!last || last.hostname || last.path)
      return {
        code: 1,
        stdout: '',
        error: 'The last ingress rule must match all URLs (i.e. it should not have a hostname or path filter)',
      };
    if (verb === 'validate') return { code: 0, stdout: 'Validating rules from ' + file + '\nOK\n' };
    const target = new URL(url!);
    const index = rules.findIndex(
      (r) => (!r.hostname || r.hostname === target.hostname) && (!r.path || new RegExp(r.path).test(target.pathname)),
    );
    const rule = rules[index]!;
    return {
      code: 0,
      stdout: `Using rules from ${file}\nMatched rule #${index}\n${rule.hostname ? `\thostname: ${rule.hostname}\n` : ''}${rule.path ? `\tpath: ${rule.path}\n` : ''}\tservice: ${rule.service}\n`,
    };
  }) as Exec & { calls: string[] };
  exec.calls = base.calls;
  return exec;
}

/** A device with the example rules, its webhook port and host name filled in; `edit` changes the YAML text. */
async function deviceWithRules(edit: (yaml: string) => string = (y) => y) {
  const device = await deviceConfig({ http: { webhook: { port: 8787, publicUrl: 'https://pay-vm-001.example.com' } } });
  const rulesPath = join(device.dir, 'cloudflared.yml');
  writeFileSync(rulesPath, edit(readFileSync(EXAMPLE, 'utf8')));
  return { device, rulesPath };
}

describe('selftest: the tunnel rules, as cloudflared reads them', () => {
  it('PASS for the shipped example: /webhooks/ reaches the webhook listener, the kiosk, API and metrics do not', async () => {
    const { device, rulesPath } = await deviceWithRules();
    const exec = fakeCloudflared();
    const { report } = await selftestFor(device.path, {}, { exec, tunnelConfigPath: rulesPath });
    const line = byName(report.checks)['tunnel.ingress']!;
    expect(line.status, line.detail).toBe('PASS');
    expect(exec.calls).toContain(`cloudflared tunnel --config ${rulesPath} ingress validate`);
    expect(exec.calls).toContain(`cloudflared tunnel --config ${rulesPath} ingress rule https://pay-vm-001.example.com/webhooks/sandbox`);
    expect(exec.calls).toContain(`cloudflared tunnel --config ${rulesPath} ingress rule https://pay-vm-001.example.com/api/state`);
  });

  it('FAIL when the tunnel forwards everything to the local listener', async () => {
    const { device, rulesPath } = await deviceWithRules((yaml) =>
      yaml.replace('    path: ^/webhooks/\n    service: http://127.0.0.1:8787', '    service: http://127.0.0.1:8080'),
    );
    const { report } = await selftestFor(device.path, {}, { exec: fakeCloudflared(), tunnelConfigPath: rulesPath });
    const line = byName(report.checks)['tunnel.ingress']!;
    expect(line.status).toBe('FAIL');
    expect(line.detail).toContain('not the webhook listener http://127.0.0.1:8787');
    expect(line.hint).toContain('http_status:404');
  });

  for (const { when, removed, detail } of [
    {
      when: 'when a path other than /webhooks/ reaches a listener (no path filter on the webhook rule)',
      removed: '    path: ^/webhooks/\n',
      detail: 'https://pay-vm-001.example.com/ goes to http://127.0.0.1:8787',
    },
    {
      when: "with cloudflared's own words when it rejects the rules",
      removed: '  - service: http_status:404\n',
      detail: 'The last ingress rule must match all URLs',
    },
  ]) {
    it(`FAIL ${when}`, async () => {
      const { device, rulesPath } = await deviceWithRules((yaml) => yaml.replace(removed, ''));
      const { report } = await selftestFor(device.path, {}, { exec: fakeCloudflared(), tunnelConfigPath: rulesPath });
      expect(byName(report.checks)['tunnel.ingress']).toMatchObject({ status: 'FAIL', detail: expect.stringContaining(detail) });
    });
  }

  it('no line where cloudflared is not installed', async () => {
    const { device, rulesPath } = await deviceWithRules();
    const { report } = await selftestFor(device.path, {}, { exec: fakeCloudflared({ installed: false }), tunnelConfigPath: rulesPath });
    expect(byName(report.checks)['tunnel.ingress']).toBeUndefined();
  });
});
