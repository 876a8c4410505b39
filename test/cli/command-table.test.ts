import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { COMMANDS, optionOf } from '../../src/cli/commands.js';
import { run } from './cli-io.js';

/** The one table of the command line (src/cli/commands.ts): what the help, the parser and the did-you-mean read. */
describe('the table of commands', () => {
  it('an option name means one thing everywhere: it takes a value in every command or in none', () => {
    const takes = new Map<string, { takesValue: boolean; where: string }>();
    const conflicts: string[] = [];
    for (const [name, spec] of Object.entries(COMMANDS)) {
      for (const option of spec.options) {
        const { name: flag, takesValue } = optionOf(option);
        const seen = takes.get(flag);
        if (seen && seen.takesValue !== takesValue) conflicts.push(`--${flag}: ${seen.where} and ${name} disagree`);
        takes.set(flag, { takesValue, where: name });
      }
    }
    expect(takes.size).toBeGreaterThan(40);
    expect(conflicts).toEqual([]);
  });

  it('loads no command: its only static imports are types, and every command but help and version has a handler', () => {
    const source = readFileSync(new URL('../../src/cli/commands.ts', import.meta.url), 'utf8');
    const imports = [...source.matchAll(/^import .*$/gm)].map((m) => m[0]);
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.filter((line) => !line.startsWith('import type '))).toEqual([]);
    const without = Object.entries(COMMANDS)
      .filter(([, spec]) => !spec.run)
      .map(([name]) => name);
    expect(without.sort()).toEqual(['help', 'version']);
  });

  it('a value the parser reads for a switch, or no value for an option that takes one, is refused with the command named', async () => {
    const switchWithValue = await run(['orders', '--json=yes']);
    expect(switchWithValue).toMatchObject({ code: 64, stderr: 'vendgate: --json takes no value: write it alone (vendgate help orders)\n' });
    const valueMissing = await run(['visit', '--by']);
    expect(valueMissing).toMatchObject({ code: 64, stderr: 'vendgate: --by needs a value (vendgate help visit says which)\n' });
  });

  it('a word that only an object inherits (constructor, toString) is no command', async () => {
    for (const word of ['constructor', 'toString', '__proto__']) {
      const { code, stderr } = await run([word]);
      expect(code, word).toBe(64);
      expect(stderr, word).toContain(`unknown command "${word}"`);
    }
  });
});
