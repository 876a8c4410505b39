// The import-boundary check (`npm run check:boundaries`, run by .ci/run).
// 1. dependency-cruiser with .dependency-cruiser.cjs: ARCHITECTURE.md's "nevers", libraries in their own
//    folder, module-level circles. Violations that exist today are in
//    .dependency-cruiser-known-violations.json; a new one fails.
// 2. Circles between folders (top-level folders of src/, and the loose files at its top). dependency-cruiser's folder scope cannot take a baseline, so this
//    script builds the folder graph from its JSON output, takes out the edges listed in KNOWN_DEBT
//    below (each one is also in ARCHITECTURE.md, "Debt"), and fails on any circle that is left.
import { execFileSync } from 'node:child_process';

/** Folder → folder imports that close a circle today. Remove a line when its import is gone. */
const KNOWN_DEBT = new Map([]);

/** The unit of the folder graph: a top-level folder of src/ (its sub-folders are part of it); a loose file at the top of src/ is a unit of its own. */
function unitOf(path) {
  const parts = path.split('/');
  return parts.length === 2 ? path : `${parts[0]}/${parts[1]}`;
}

const root = new URL('..', import.meta.url).pathname;
const depcruise = [root + 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs', 'src', '--config', '.dependency-cruiser.cjs'];

let failed = false;
try {
  execFileSync(process.execPath, [...depcruise, '--ignore-known', '.dependency-cruiser-known-violations.json', '--output-type', 'err'], {
    cwd: root,
    stdio: 'inherit',
  });
} catch {
  failed = true;
}

const result = JSON.parse(
  execFileSync(process.execPath, [...depcruise, '--output-type', 'json'], { cwd: root, maxBuffer: 64 * 1024 * 1024 }).toString(),
);
const graph = new Map();
const evidence = new Map();
for (const module of result.modules) {
  if (!module.source.startsWith('src/')) continue;
  const from = unitOf(module.source);
  if (!graph.has(from)) graph.set(from, new Set());
  for (const dependency of module.dependencies) {
    if (!dependency.resolved.startsWith('src/')) continue;
    const to = unitOf(dependency.resolved);
    if (to === from) continue;
    const edge = `${from} -> ${to}`;
    if (!evidence.has(edge)) evidence.set(edge, []);
    evidence.get(edge).push(`${module.source} -> ${dependency.resolved}`);
    if (KNOWN_DEBT.has(edge)) continue;
    graph.get(from).add(to);
    if (!graph.has(to)) graph.set(to, new Set());
  }
}

// Strongly connected components (Tarjan): every component of more than one folder is a circle.
let index = 0;
const stack = [];
const onStack = new Set();
const order = new Map();
const low = new Map();
const circles = [];
function visit(folder) {
  order.set(folder, index);
  low.set(folder, index++);
  stack.push(folder);
  onStack.add(folder);
  for (const next of graph.get(folder)) {
    if (!order.has(next)) {
      visit(next);
      low.set(folder, Math.min(low.get(folder), low.get(next)));
    } else if (onStack.has(next)) low.set(folder, Math.min(low.get(folder), order.get(next)));
  }
  if (low.get(folder) === order.get(folder)) {
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== folder);
    if (component.length > 1) circles.push(component);
  }
}
for (const folder of graph.keys()) if (!order.has(folder)) visit(folder);

for (const circle of circles) {
  failed = true;
  console.error(`\n  error folder-circular: ${circle.join(', ')} import each other:`);
  for (const from of circle) {
    for (const to of circle) {
      for (const line of evidence.get(`${from} -> ${to}`) ?? []) console.error(`      ${line}`);
    }
  }
}
for (const [edge, why] of KNOWN_DEBT) {
  if (evidence.has(edge)) console.log(`  known debt (ARCHITECTURE.md): ${edge}: ${why}`);
  else {
    failed = true;
    console.error(
      `\n  error: ${edge} is listed as known debt but no longer exists: remove it from KNOWN_DEBT in scripts/check-boundaries.mjs and from ARCHITECTURE.md`,
    );
  }
}
console.log(circles.length ? `\nx ${circles.length} circle(s) between folders` : '\n✔ no circle between folders (beyond the known debt)');
process.exit(failed ? 1 : 0);
