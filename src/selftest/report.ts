import type { CheckStatus, SelftestReport } from './types.js';

const COLORS: Record<CheckStatus, string> = { PASS: '\u001b[32m', WARN: '\u001b[33m', FAIL: '\u001b[31;1m' };
const RESET = '\u001b[0m';

/**
 * The table for a person at the machine: one line per check, and under every WARN and FAIL the
 * hint saying what to do. Colour only on a terminal (journald and pipes get plain text).
 */
export function formatReport(report: SelftestReport, options: { color?: boolean; notes?: string[] } = {}): string {
  const paint = (status: CheckStatus) => (options.color ? `${COLORS[status]}${status}${RESET}` : status);
  const width = Math.max(5, ...report.checks.map((c) => c.name.length));
  const lines = [
    `vendgate selftest — device ${report.config.deviceId ?? '(unknown)'} — ${report.startedAt}`,
    '',
    `${'STATUS'}  ${'CHECK'.padEnd(width)}  DETAIL`,
  ];
  for (const check of report.checks) {
    lines.push(`${paint(check.status)}    ${check.name.padEnd(width)}  ${check.detail}`);
    if (check.status !== 'PASS' && check.hint) lines.push(`        ${''.padEnd(width)}  → ${check.hint}`);
  }
  const count = (status: CheckStatus) => report.checks.filter((c) => c.status === status).length;
  const seconds = (report.durationMs / 1000).toFixed(1);
  lines.push(
    '',
    `${count('PASS')} PASS, ${count('WARN')} WARN, ${count('FAIL')} FAIL in ${seconds} s — ${report.ok ? 'OK: nothing failed' : 'NOT OK: fix the FAIL lines'}`,
  );
  for (const note of options.notes ?? []) lines.push(note);
  return `${lines.join('\n')}\n`;
}

/** The `--json` document: the report itself, stable field order, one trailing newline. */
export function formatReportJson(report: SelftestReport): string {
  const ordered: SelftestReport = {
    version: report.version,
    ok: report.ok,
    startedAt: report.startedAt,
    durationMs: report.durationMs,
    config: { source: report.config.source, environment: report.config.environment, deviceId: report.config.deviceId },
    checks: report.checks.map((c) => ({ name: c.name, status: c.status, detail: c.detail, hint: c.hint })),
  };
  return `${JSON.stringify(ordered, null, 2)}\n`;
}
