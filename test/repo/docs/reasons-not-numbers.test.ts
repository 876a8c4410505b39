/**
 * Tests, code and docs state the behaviour they are about, not the number of the issue that asked
 * for it: an issue number means nothing to the reader of a failing test or of a fresh clone.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '../../..');
const ISSUE_NUMBER = /\bissues? ?#?\d+\b|\(#\d+\)|\bsee #\d+/i;

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

describe('reasons, not issue numbers', () => {
  it('no file under src/, test/, scripts/ or docs/ (nor the top-level docs) cites an issue by number', () => {
    const files = [
      ...['src', 'test', 'scripts', 'docs'].flatMap((dir) => walk(join(REPO, dir))),
      ...readdirSync(REPO).filter((f) => f.endsWith('.md')),
    ]
      .map((file) => file.replace(`${REPO}/`, ''))
      .filter((file) => /\.(ts|mjs|js|md|sh)$/.test(file));
    const citing = files.flatMap((file) =>
      readFileSync(join(REPO, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (ISSUE_NUMBER.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(citing).toEqual([]);
  });
});
