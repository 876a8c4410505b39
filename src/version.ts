import { readFileSync } from 'node:fs';

/** Which release this is: package.json's version, the commit it was built from, the Node running it. */
export interface BuildInfo {
  version: string;
  /** Short git commit of the build (scripts/copy-assets.mjs writes dist/build-info.json), or "unknown". */
  commit: string;
  node: string;
}

function readJson(url: URL): Record<string, unknown> | null {
  try {
    return JSON.parse(readFileSync(url, 'utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
}

let cached: BuildInfo | null = null;

/** Read once: dist/version.js and src/version.ts both sit one level below package.json. */
export function buildInfo(): BuildInfo {
  if (cached) return cached;
  const pkg = readJson(new URL('../package.json', import.meta.url));
  const built = readJson(new URL('./build-info.json', import.meta.url)) ?? readJson(new URL('../dist/build-info.json', import.meta.url));
  cached = {
    version: typeof pkg?.version === 'string' ? pkg.version : 'unknown',
    commit: typeof built?.commit === 'string' && built.commit ? built.commit : 'unknown',
    node: process.version,
  };
  return cached;
}

/** One line for `vendgate --version` and the start-up log. */
export function versionLine(info: BuildInfo = buildInfo()): string {
  return `vendgate ${info.version} (commit ${info.commit}, node ${info.node})`;
}
