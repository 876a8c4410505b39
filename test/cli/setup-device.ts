import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const REPO = new URL('../../', import.meta.url).pathname;
const MAIN = join(REPO, 'dist/main.js');

/** The starter configuration the package writes on a new device. */
export const STARTER = join(REPO, 'config/examples/sandbox.yaml');

/** `vendgate setup --config <config> --no-apply`, the compiled command, with `answers` typed one a line on its standard input. */
export function runSetup(config: string, answers: string[]) {
  return spawnSync(process.execPath, [MAIN, 'setup', '--config', config, '--no-apply'], {
    input: `${answers.join('\n')}\n`,
    encoding: 'utf8',
    env: { PATH: process.env.PATH },
  });
}

/**
 * A new device in `dir` as `apt install` leaves it: config.yaml (the starter configuration, or
 * `starter`) and a secrets.env holding one comment, both 0640. `setup(answers)` runs `vendgate
 * setup` on it; `files()` reads both files back.
 */
export function starterDevice(dir: string, starter = readFileSync(STARTER, 'utf8')) {
  const config = join(dir, 'config.yaml');
  const secrets = join(dir, 'secrets.env');
  writeFileSync(config, starter, { mode: 0o640 });
  writeFileSync(secrets, '# secrets of this device\n', { mode: 0o640 });
  return {
    config,
    secrets,
    setup: (answers: string[]) => runSetup(config, answers),
    files: () => ({ config: readFileSync(config, 'utf8'), secrets: readFileSync(secrets, 'utf8') }),
  };
}
