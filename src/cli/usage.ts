/** The help and the "did you mean", both read from the table of commands (commands.ts). */
import { COMMANDS, optionOf, type CommandSpec } from './commands.js';

const FOOTER = `  --config FILE  defaults to $VENDGATE_CONFIG, then /etc/vendgate/config.yaml, then the demo config
  --version      print the release, its commit and the Node.js running it
Exit codes: 0 ok, 1 runtime failure, 64 usage, 74 the storage (damaged database, full disk, card gone read-only),
75 another vendgate runs on this database, 78 bad configuration (or a port in use).`;

const COLUMN = 46;

function entry([, { usage, about }]: [string, CommandSpec]): string {
  const aboutLines = about.split('\n');
  const pad = (text: string) => ' '.repeat(COLUMN) + text;
  // A short usage line takes the description beside it; a long one puts it underneath.
  if (!usage.includes('\n') && usage.length + 2 < COLUMN - 1) {
    return [`  ${usage.padEnd(COLUMN - 2)}${aboutLines[0]}`, ...aboutLines.slice(1).map(pad)].join('\n');
  }
  return [...usage.split('\n').map((line) => `  ${line}`), ...aboutLines.map(pad)].join('\n');
}

/** `vendgate help`: every command. */
export function usage(): string {
  return `usage: vendgate <command> [options]\n\n${Object.entries(COMMANDS).map(entry).join('\n')}\n\n${FOOTER}\n\`vendgate help <command>\` shows one command with its options.`;
}

/** `vendgate help <command>` and `vendgate <command> --help`: that command with its options. */
export async function commandUsage(name: string): Promise<string> {
  const { usage: line, about, options = [], values } = commandNamed(name) ?? { usage: name, about: 'not a command' };
  const width = Math.max(0, ...options.map(([flag]) => flag.length));
  const list = options.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`).join('\n');
  const optionsPart = options.length > 0 ? `\n\noptions:\n${list}${values ? `\n\n${await values()}` : ''}` : '';
  return `usage: vendgate ${line.replace(/\n\s+/g, ' ')}\n\n${about.replace(/\n/g, ' ')}${optionsPart}\n\nExit codes: 0 ok, 1 runtime failure, 64 usage, 74 the storage (damaged database, full disk, card gone read-only), 75 another vendgate runs on this database, 78 bad configuration (or a port in use).`;
}

/** The command of that name in the table (never an inherited property such as `constructor`). */
export function commandNamed(name: string): CommandSpec | undefined {
  return Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
}

/** The long options a command accepts (its listed flags, and --help). Null: no such command. */
export function optionNamesOf(name: string): string[] | null {
  const spec = commandNamed(name);
  if (!spec) return null;
  return ['help', ...spec.options.map((option) => optionOf(option).name)];
}

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  // One row of the edit table at a time: row[j] is the distance between a[0, i) and b[0, j).
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next.push(Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)));
    }
    row = next;
  }
  return row[b.length] ?? 0;
}

/** The closest of `candidates` to `word`, when it is close enough to be a slip of the keyboard. */
export function closest(word: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = candidate.startsWith(word) && word.length >= 3 ? 0.5 : distance(word, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best !== null && bestDistance <= Math.max(1, Math.floor(word.length / 3)) ? best : null;
}
