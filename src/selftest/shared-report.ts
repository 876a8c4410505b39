import { basename } from 'node:path';
import type { SelftestReport } from './types.js';

/**
 * The selftest report as it goes onto the broker (`cmd/selftest/result`, the retained `selftest`
 * topic), where every account that may read the device's topics sees it. An operator needs which
 * check passed or failed and what to do; the file paths, listener ports and provider URLs of the
 * device are a map for whoever else reads there, so they are replaced by placeholders. The full
 * report stays on the device: `vendgate selftest` and the stored result (meta.selftest_last).
 */
export function sharedReport(report: SelftestReport): SelftestReport {
  return {
    ...report,
    config: {
      source: report.config.source.startsWith('(') ? report.config.source : basename(report.config.source),
      environment: report.config.environment,
      deviceId: report.config.deviceId,
    },
    checks: report.checks.map((check) => ({ ...check, detail: redactShared(check.detail), hint: redactShared(check.hint) })),
  };
}

const URL_PATTERN = /\b[a-z][a-z0-9+.-]*:\/\/[^\s'"`<>)\]]*[^\s'"`<>)\].,:;]/gi;
const ADDRESS_PATTERN = /\b((?:\d{1,3}\.){3}\d{1,3}|localhost|\[[0-9a-f:]+\])(?::\d{1,5})?\b/gi;
const PORT_PATTERN = /\b(port|sport =) :?\d{1,5}\b/gi;
// An absolute path: after the start, a space, a quote, a bracket or `=`, a `/` and path characters.
const PATH_PATTERN = /(^|[\s'"`(=[])\/(?:[\w.@+-]+\/?)+/g;

/** One line of a check with URLs, addresses, ports and absolute paths replaced. */
export function redactShared(text: string): string {
  return text
    .replace(URL_PATTERN, '<url>')
    .replace(ADDRESS_PATTERN, '<address>')
    .replace(PORT_PATTERN, '$1 <port>')
    .replace(PATH_PATTERN, '$1<path>');
}
