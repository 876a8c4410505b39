import { readFileSync, statSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const LOCAL_IMPORT = /(?:from|import\()\s*['"]\.\/([^'"/]+)\.js['"]/g;

/**
 * A test file's size counted with the modules it imports from its own folder (`./world.js`,
 * `./fake-system.js`: a folder's harness), each once.
 */
export function harnessWeight(file: string, seen = new Set<string>()): number {
  if (seen.has(file)) return 0;
  seen.add(file);
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch {
    return 0;
  }
  let weight = statSync(file).size;
  for (const match of source.matchAll(LOCAL_IMPORT)) weight += harnessWeight(resolve(dirname(file), `${match[1]}.ts`), seen);
  return weight;
}

/**
 * The order test files start in. When every file has a duration from an earlier run (vitest's
 * cache), vitest's own order: failed first, then longest first. On a fresh clone (CI) there are
 * none, and vitest would start the largest file first: a file that is small because its work lives
 * in a harness beside it (the money path's property test per capture mode, the update scripts'
 * tests) would start last and leave one worker alone with it at the end of the run. So the size
 * counts that harness (`harnessWeight`).
 */
export default class HarnessWeightSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const timed = files.every((f) => this.ctx.cache.getFileTestResults(`${f.project.name}:${relative(root, f.moduleId)}`));
    if (timed) return super.sort(files);
    const weight = new Map(files.map((f) => [f.moduleId, harnessWeight(f.moduleId)]));
    return [...files].sort((a, b) => (weight.get(b.moduleId) ?? 0) - (weight.get(a.moduleId) ?? 0));
  }
}
