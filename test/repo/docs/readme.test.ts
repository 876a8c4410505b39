import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../../src/app.js';
import { silentLogger } from '../../../src/util/logger.js';
import { testSettings } from '../../helpers/core.js';
import { SYSTEM_TEST_GLOBS } from '../../suites.js';
import { waitFor } from '../../helpers/wait.js';
import { appsPerTest } from '../../helpers/app.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const README = readFileSync(join(REPO, 'README.md'), 'utf8');

/** The pages a reader follows links between: the README, docs/, and the two house documents. */
function pages(): string[] {
  const docs = readdirSync(join(REPO, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', 'ARCHITECTURE.md', 'CONTRIBUTING.md', ...docs];
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

describe('the README is a way in, and every link stays inside the repository', () => {
  it('is at most 400 lines and has the sections a newcomer and a technician look for', () => {
    expect(README.split('\n').length).toBeLessThanOrEqual(400);
    for (const section of ['## Try it (two commands)', '## Install on a Raspberry Pi', '## Operate', '## Troubleshoot'])
      expect(README).toContain(section);
  });

  it('every relative link of README.md, docs/ and the house documents names a file (and heading) that exists', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      const text = readFileSync(join(REPO, page), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue; // http:, https:, mailto:
        const [file, anchor] = target!.split('#') as [string, string | undefined];
        const path = file === '' ? join(REPO, page) : resolve(dirname(join(REPO, page)), file);
        if (!path.startsWith(`${REPO}/`) || !existsSync(path)) {
          broken.push(`${page}: ${target} (no such file in the repository)`);
          continue;
        }
        if (anchor && path.endsWith('.md')) {
          const headings = [...readFileSync(path, 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]!));
          if (!headings.includes(anchor)) broken.push(`${page}: ${target} (no such heading)`);
        }
      }
      if (/\.\.\/shared\//.test(text)) broken.push(`${page}: refers to ../shared/, which a clone does not have`);
    }
    expect(broken).toEqual([]);
  });
});

/** Test files outside e2e that need root or system packages: mounts, libfaketime, the FUSE power-cut file system, Mosquitto. */
function systemTestFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(REPO, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (path !== 'test/techniques/e2e' && path !== 'test/repo') walk(path);
      } else if (
        entry.name.endsWith('.test.ts') &&
        /helpers\/mounts|power-cut-fs|fleet\/mosquitto|faketime/.test(readFileSync(join(REPO, path), 'utf8'))
      ) {
        found.push(path);
      }
    }
  };
  walk('test');
  return found;
}

/** Whether a test file is one of SYSTEM_TEST_GLOBS (a folder's every test file, or one exact path). */
function inSystemSuite(file: string): boolean {
  const anyTest = '**/*.test.ts';
  return SYSTEM_TEST_GLOBS.some((glob) => (glob.endsWith(anyTest) ? file.startsWith(glob.slice(0, -anyTest.length)) : file === glob));
}

describe("the README's test commands say what they need", () => {
  it('every test that needs root or system packages runs with the e2e suite, not `npm test`, and the README names it there', () => {
    const files = systemTestFiles();
    expect(files.length).toBeGreaterThan(0);
    expect(
      files.filter((file) => !inSystemSuite(file)),
      'in `npm test`, which the README says needs Node.js only',
    ).toEqual([]);
    const tryIt = README.slice(README.indexOf('## Try it'), README.indexOf('\n## ', README.indexOf('## Try it') + 1));
    expect(tryIt).toMatch(/npm ci && npm test +# .*Node\.js only/);
    expect(tryIt).toContain('scripts/install-test-deps.sh && sudo npm run test:e2e');
    const unnamed = files.filter((file) => !tryIt.includes(file) && !tryIt.includes(dirname(file)));
    expect(unnamed, 'the README names each such test (or its folder)').toEqual([]);
  });
});

describe("the README's demo example is what the product answers", () => {
  const newApp = appsPerTest();

  it('an order answers the fields the README shows, its reference has the shape shown, and the pay URL pays it', async () => {
    const example = /^# → 201 (\{.*)$/m.exec(README);
    expect(example, 'the README shows the answer to POST /api/orders').not.toBeNull();
    const shownKeys = [...example![1]!.matchAll(/"(\w+)":/g)].map((m) => m[1]);
    expect(shownKeys.length).toBeGreaterThan(3);

    let dir = '';
    const app = newApp((path) => createApp(testSettings((dir = path)), { logger: silentLogger() }));
    const { localUrl } = await app.start();
    const res = await fetch(`${localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slot: 'A1' }),
    });
    expect(res.status).toBe(201);
    const answer = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(answer)).toEqual(expect.arrayContaining(shownKeys));
    // The README writes the reference as "<device>-<db>-<order>-<nonce>".
    expect(/"reference":"demo-001-<db>-1-<nonce>"/.test(example![1]!)).toBe(true);
    expect(answer.reference).toMatch(new RegExp(`^vm-test-[0-9a-f]+-${String(answer.orderId)}-[0-9a-f]+$`));
    expect(answer.state).toBe('awaiting_payment');

    // "curl -s -XPOST <payUrl>" is what the phone's pay page does.
    expect(README).toContain('curl -s -XPOST http://127.0.0.1:8080/sandbox/pay/sb_…');
    const payUrl = String(answer.payUrl).replace('http://127.0.0.1:8080', localUrl);
    const paid = await fetch(payUrl, { method: 'POST' });
    expect(paid.ok).toBe(true);
    const ctx = app.context();
    await waitFor(() => ctx.orders.get(Number(answer.orderId))?.state === 'vended', { what: 'the demo order vended' });
    const actuations = readFileSync(join(dir, 'actuations.jsonl'), 'utf8').trim().split('\n');
    expect(actuations).toHaveLength(1);
  });
});
