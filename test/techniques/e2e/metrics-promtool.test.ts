import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { sandboxOrder, startService, waitVended, type Service } from '../../helpers/service.js';

// Needs promtool (Debian package prometheus), installed by scripts/install-test-deps.sh.
const TEXTFILE_UNIT = new URL('../../../systemd/vendgate-metrics-textfile.service', import.meta.url).pathname;
const services: Service[] = [];
afterEach(async () => {
  for (const svc of services.splice(0)) await svc.stop();
});

function promtool(text: string): { status: number | null; output: string } {
  const result = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

describe('/metrics under promtool', () => {
  it('promtool check metrics finds nothing to lint, before and after a vend', async () => {
    const svc = await startService();
    services.push(svc);
    const before = promtool(await (await fetch(`${svc.localUrl}/metrics`)).text());
    expect(before.output).toBe('');
    expect(before.status).toBe(0);

    const created = await sandboxOrder(svc);
    await fetch(created.payUrl, { method: 'POST' });
    await waitVended(svc.localUrl, created.orderId);
    const after = promtool(await (await fetch(`${svc.localUrl}/metrics`)).text());
    expect(after.output).toBe('');
    expect(after.status).toBe(0);
  });

  it('what the textfile unit writes for node_exporter passes promtool and carries no process_ or nodejs_ series', async () => {
    const svc = await startService();
    services.push(svc);
    const pattern = /grep -v -E "([^"]+)"/.exec(readFileSync(TEXTFILE_UNIT, 'utf8'))![1]!;
    const filter = new RegExp(pattern);
    const textfile = (await (await fetch(`${svc.localUrl}/metrics`)).text())
      .split('\n')
      .filter((line) => !filter.test(line))
      .join('\n');
    expect(textfile).not.toMatch(/^(# (HELP|TYPE) )?(process|nodejs)_/m);
    expect(textfile).toContain('vendgate_build_info{');
    const checked = promtool(textfile);
    expect(checked.output).toBe('');
    expect(checked.status).toBe(0);
  });
});
