/**
 * The operators' MQTT contract in the docs is written from the code's tables (src/outbox/events.ts,
 * src/mqtt/command-results.ts, src/mqtt/topic-payloads.ts) by scripts/mqtt-contract.ts: the committed docs/reference.md section
 * and docs/mqtt-events.schema.json must be exactly what those tables say now.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REFERENCE_PATH, SCHEMA_PATH, renderReference, renderSchema } from '../../../scripts/mqtt-contract.js';
import { EVENTS } from '../../../src/outbox/events.js';
import { COMMAND_NAMES } from '../../../src/mqtt/index.js';
import { COMMAND_RESULTS } from '../../../src/mqtt/command-results.js';
import { TOPIC_PAYLOADS } from '../../../src/mqtt/topic-payloads.js';

const REPO = resolve(import.meta.dirname, '../../..');
const read = (path: string): string => readFileSync(join(REPO, path), 'utf8');
const STALE = 'stale: run `npm run docs:mqtt` and commit the result';

describe('the MQTT contract in the docs is the one the code has', () => {
  it(`docs/reference.md's MQTT section lists every event with its payload and every command's answer (${STALE})`, () => {
    const reference = read(REFERENCE_PATH);
    expect(renderReference(reference), STALE).toBe(reference);
    for (const name of Object.keys(EVENTS)) expect(reference).toContain(`| \`${name}\` |`);
    for (const name of COMMAND_NAMES) expect(reference).toContain(`| \`${name}\` |`);
    for (const { topic } of Object.values(TOPIC_PAYLOADS)) expect(reference).toContain(`| \`${topic}\` |`);
  });

  it(`docs/mqtt-events.schema.json is the JSON Schema of exactly those events and answers (${STALE})`, () => {
    const committed = read(SCHEMA_PATH);
    expect(renderSchema(), STALE).toBe(committed);
    const schema = JSON.parse(committed) as { $defs: { events: object; answers: object; topics: object }; oneOf: unknown[] };
    expect(Object.keys(schema.$defs.events).sort()).toEqual(Object.keys(EVENTS).sort());
    expect(Object.keys(schema.$defs.answers).sort()).toEqual([...COMMAND_NAMES].sort());
    expect(Object.keys(schema.$defs.topics).sort()).toEqual(['alarm', 'catalog', 'selftest', 'state', 'telemetry']);
    expect(schema.oneOf).toHaveLength(Object.keys(EVENTS).length);
  });

  it('every command the device answers has its typed result', () => {
    expect(Object.keys(COMMAND_RESULTS).sort()).toEqual([...COMMAND_NAMES].sort());
  });
});
