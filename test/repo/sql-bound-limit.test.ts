/**
 * No SQL in src/ binds a bare `LIMIT ?` (or `OFFSET ?`): SQLite compiles such a statement again every
 * time the parameter is bound, which better-sqlite3 does on every call, so a cached statement
 * (store/open.ts, `prepared()`) would be parsed and planned anew on each run. `LIMIT CAST(? AS
 * INTEGER)` binds the same number without that.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '../..');
const SRC = join(REPO, 'src');
const sourceFiles = () =>
  readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.(ts|sql)$/.test(name))
    .map((name) => join(SRC, name));

/** SQL is written in capitals here; comments (which may name the rule) are not SQL. */
const BARE = /\b(LIMIT|OFFSET)\s+\?/g;
const COMMENT = /^\s*(\*|\/\/|\/\*)/;

describe('row limits in SQL', () => {
  it('are bound as CAST(? AS INTEGER), never as a bare ?', () => {
    const found = sourceFiles().flatMap((path) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .filter((line) => !COMMENT.test(line))
        .flatMap((line) => [...line.matchAll(BARE)].map((m) => `${relative(REPO, path)}: ${m[0]}`)),
    );
    expect(found).toEqual([]);
  });

  it('the rule sees a bare limit where there is one', () => {
    expect('SELECT * FROM outbox ORDER BY seq LIMIT ?'.match(BARE)).toEqual(['LIMIT ?']);
    expect('SELECT * FROM outbox ORDER BY seq LIMIT CAST(? AS INTEGER)'.match(BARE)).toBeNull();
  });
});
