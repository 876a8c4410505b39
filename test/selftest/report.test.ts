import { describe, expect, it } from 'vitest';
import { formatReport, formatReportJson, type SelftestReport } from '../../src/selftest/index.js';

const REPORT: SelftestReport = {
  version: 1,
  ok: false,
  startedAt: '2026-11-29T12:00:00.000Z',
  durationMs: 1234,
  config: { source: '/etc/vendgate/config.yaml', environment: ['VENDGATE_PROVIDER_API_KEY'], deviceId: 'vm-001' },
  checks: [
    { name: 'settings', status: 'PASS', detail: 'ok', hint: '' },
    { name: 'provider', status: 'FAIL', detail: 'qutpay unreachable', hint: 'check the network' },
    { name: 'mqtt', status: 'WARN', detail: 'embedded broker not running', hint: 'start the service' },
  ],
};

describe('selftest report', () => {
  it('the table has one line per check, the hint under each WARN and FAIL, and a verdict', () => {
    const text = formatReport(REPORT, { notes: ['result stored'] });
    expect(text.split('\n')).toEqual([
      'vendgate selftest — device vm-001 — 2026-11-29T12:00:00.000Z',
      '',
      'STATUS  CHECK     DETAIL',
      'PASS    settings  ok',
      'FAIL    provider  qutpay unreachable',
      '                  → check the network',
      'WARN    mqtt      embedded broker not running',
      '                  → start the service',
      '',
      '1 PASS, 1 WARN, 1 FAIL in 1.2 s — NOT OK: fix the FAIL lines',
      'result stored',
      '',
    ]);
  });

  it('colours the status only when asked (a terminal), never the rest', () => {
    expect(formatReport(REPORT)).not.toContain('\u001b[');
    expect(formatReport(REPORT, { color: true })).toContain('\u001b[31;1mFAIL\u001b[0m    provider  qutpay unreachable');
  });

  it('--json keeps the documented field order whatever order the object was built in', () => {
    const shuffled = {
      checks: REPORT.checks.map((c) => ({ hint: c.hint, detail: c.detail, status: c.status, name: c.name })),
      config: REPORT.config,
      durationMs: 1234,
      startedAt: REPORT.startedAt,
      ok: false,
      version: 1,
    } as SelftestReport;
    const json = formatReportJson(shuffled);
    expect(json).toBe(formatReportJson(REPORT));
    expect(Object.keys(JSON.parse(json))).toEqual(['version', 'ok', 'startedAt', 'durationMs', 'config', 'checks']);
    expect(json.endsWith('}\n')).toBe(true);
  });
});
