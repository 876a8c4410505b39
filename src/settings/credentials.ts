import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * systemd's LoadCredential: the unit hands the secrets file to the service in
 * `$CREDENTIALS_DIRECTORY/<name>` (readable by the service alone, on a non-swappable mount), and
 * the service reads it itself. Unlike EnvironmentFile, the secrets never enter the process
 * environment, so no child process (systemd-notify, gpioset) inherits them.
 *
 * Returns the environment with every `VENDGATE_*` line of that file over it (the file wins), and
 * the names taken from it. No credentials directory, or no such file: the environment as it is.
 */
export function withCredentials(env: NodeJS.ProcessEnv, name: string): { env: NodeJS.ProcessEnv; fromCredentials: string[] } {
  const dir = env.CREDENTIALS_DIRECTORY;
  if (!dir) return { env, fromCredentials: [] };
  let text: string;
  try {
    text = readFileSync(join(dir, name), 'utf8');
  } catch {
    return { env, fromCredentials: [] };
  }
  const values = parseSecretsText(text);
  return { env: { ...env, ...Object.fromEntries(values) }, fromCredentials: [...values.keys()] };
}

/**
 * The `VENDGATE_*=value` lines of a secrets file (systemd's EnvironmentFile syntax: `#` comments,
 * an optional `export `, a value optionally in matching quotes), in file order; the last line of a
 * name wins.
 */
export function parseSecretsText(text: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?(VENDGATE_[A-Z0-9_]+)=(.*)$/.exec(line);
    const [, name, rawValue] = match ?? [];
    if (name === undefined || rawValue === undefined) continue;
    const quoted = rawValue.length >= 2 && (rawValue[0] === '"' || rawValue[0] === "'") && rawValue.at(-1) === rawValue[0];
    values.set(name, quoted ? rawValue.slice(1, -1) : rawValue);
  }
  return values;
}
