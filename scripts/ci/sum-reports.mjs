// Sums vitest JSON reports into one closing line, "tests: N passed, N failed" (and skipped, if any),
// with a line per report before it. Exits 1 when a report is missing, unreadable or ran no test.
//   node scripts/ci/sum-reports.mjs report.json...
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const files = process.argv.slice(2);
if (files.length === 0 || files.includes('--help')) {
  process.stderr.write('usage: node scripts/ci/sum-reports.mjs report.json...\n');
  process.exit(files.length === 0 ? 64 : 0);
}
let passed = 0;
let failed = 0;
let skipped = 0;
let broken = false;
for (const file of files) {
  try {
    const report = JSON.parse(readFileSync(file, 'utf8'));
    const skippedHere = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
    console.log(
      `${basename(file, '.json')}: ${report.numPassedTests} passed, ${report.numFailedTests} failed in ${report.numTotalTestSuites} files`,
    );
    if (report.numTotalTests === 0) broken = true;
    passed += report.numPassedTests;
    failed += report.numFailedTests;
    skipped += skippedHere;
  } catch (error) {
    console.log(`${file}: no report (${error instanceof Error ? error.message : String(error)})`);
    broken = true;
  }
}
console.log(`tests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || broken ? 1 : 0);
