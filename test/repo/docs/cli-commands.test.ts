import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../../src/cli/commands.js';
import { optionNamesOf } from '../../../src/cli/usage.js';

/**
 * Every `vendgate <command> --option` (and `npm start -- --option`, `npm run selftest -- --option`)
 * the README and docs/ show in code exists in the command line: a technician copies these.
 */
const REPO = new URL('../../../', import.meta.url).pathname;
const FILES = [
  'README.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The code of a markdown text: fenced blocks line by line, and inline code spans. */
function codeLines(text: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced) lines.push(line);
    else for (const m of line.matchAll(/`([^`]+)`/g)) lines.push(m[1]!);
  }
  return lines;
}

interface Use {
  file: string;
  command: string;
  options: string[];
  line: string;
}

function usesIn(file: string): Use[] {
  const uses: Use[] = [];
  for (const line of codeLines(readFileSync(join(REPO, file), 'utf8'))) {
    const forms: [RegExp, (m: RegExpMatchArray) => string][] = [
      [/(?:^|[;&|(]\s*|\$\s+|sudo\s+(?:-u\s+\S+\s+)?)vendgate\s+([a-z][a-z-]*)([^|;&#)]*)/g, (m) => m[1]!],
      [/npm start\s+--\s+([^|;&#)]*)/g, () => 'start'],
      [/npm run selftest\s+--\s+([^|;&#)]*)/g, () => 'selftest'],
    ];
    for (const [pattern, commandOf] of forms) {
      for (const m of line.matchAll(pattern)) {
        const rest = pattern.source.includes('vendgate') ? m[2]! : m[1]!;
        const options = [...rest.matchAll(/(?:^|\s)--([a-z][a-z-]*)/g)].map((o) => o[1]!);
        uses.push({ file, command: commandOf(m), options, line: line.trim() });
      }
    }
  }
  return uses;
}

describe('the commands the docs show exist', () => {
  const uses = FILES.flatMap(usesIn);

  it('finds the commands the docs show (the check looks at something)', () => {
    expect(uses.length).toBeGreaterThan(20);
    expect(uses.some((u) => u.command === 'selftest')).toBe(true);
  });

  it('every `vendgate <command>` in the README and docs/ is a command of the CLI, and each of its options is one of that command', () => {
    const problems: string[] = [];
    for (const use of uses) {
      if (!(use.command in COMMANDS) && !['help', 'version'].includes(use.command)) {
        problems.push(`${use.file}: "vendgate ${use.command}" is no command (${use.line})`);
        continue;
      }
      const allowed = optionNamesOf(use.command) ?? ['help'];
      for (const option of use.options) {
        if (!allowed.includes(option) && option !== 'version')
          problems.push(`${use.file}: vendgate ${use.command} has no --${option} (${use.line})`);
      }
    }
    expect(problems).toEqual([]);
  });
});
