/**
 * ARCHITECTURE.md's "Who owns which table" held against the SQL in src/: every statement that names
 * a table outside the folder that owns it (a read or a write) stands in that table's row, so the
 * rule and its exceptions cannot drift apart again.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '../../..');
const SRC = join(REPO, 'src');

interface Row {
  tables: string[];
  owner: string;
  /** The text of the row's other columns, where the files allowed to cross are named. */
  named: string;
}

function rows(): Row[] {
  const text = readFileSync(join(REPO, 'ARCHITECTURE.md'), 'utf8');
  const section = text.slice(text.indexOf('## Who owns which table'));
  const table = section.slice(0, section.indexOf('\n## '));
  return table
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [first = '', owner = '', ...rest] = line.split(' | ').map((cell) => cell.replace(/^\| /, ''));
      return {
        tables: [...first.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!),
        owner: owner.match(/`([a-z-]+)\//)?.[1] ?? '',
        named: rest.join(' | '),
      };
    });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'migrations' ? [] : sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/**
 * Where `file` (src/<folder>/...) is named in a row: by its path below src/, its file name, or its
 * whole folder (`selftest/`). `store/retention.ts` reads and deletes every table by design (the text
 * above the table says so) and is named nowhere.
 */
function isNamed(row: Row, file: string): boolean {
  const below = relative(SRC, file);
  if (below === 'store/retention.ts') return true;
  const base = below.split('/').at(-1)!;
  const folder = below.split('/')[0]!;
  return [below, `\`${base}\``, ` ${base}`, `\`${folder}/\``].some((name) => row.named.includes(name));
}

describe('who owns which table (ARCHITECTURE.md)', () => {
  const table = rows();

  it('names an owner folder for every table the migrations create', () => {
    const created = new Set<string>();
    for (const name of readdirSync(join(SRC, 'store/migrations')).filter((n) => n.endsWith('.sql'))) {
      for (const m of readFileSync(join(SRC, 'store/migrations', name), 'utf8').matchAll(/CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)/g))
        created.add(m[1]!);
    }
    const documented = new Map(table.flatMap((row) => row.tables.map((t) => [t, row.owner] as const)));
    expect([...created].filter((t) => !documented.get(t)).sort()).toEqual([]);
  });

  it('lists in its row every file outside the owner folder whose SQL names the table', () => {
    const owners = new Map(table.flatMap((row) => row.tables.map((t) => [t, row] as const)));
    const unlisted: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const folder = relative(SRC, file).split('/')[0];
      const source = readFileSync(file, 'utf8');
      for (const m of source.matchAll(/\b(?:FROM|JOIN|INTO|UPDATE)\s+([a-z_]+)\b/g)) {
        const row = owners.get(m[1]!);
        if (!row || row.owner === folder || isNamed(row, file)) continue;
        unlisted.push(`${relative(REPO, file)}: ${m[0]}`);
      }
    }
    expect([...new Set(unlisted)]).toEqual([]);
  });
});
