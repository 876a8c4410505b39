/**
 * The operators' MQTT contract, written from the code's own tables: the events and their payloads
 * (src/outbox/events.ts), the answers of the commands (src/mqtt/command-results.ts) and the payloads
 * of `state`, `telemetry` and `alarms/<name>` (src/mqtt/topic-payloads.ts), into the MQTT
 * section of docs/reference.md and docs/mqtt-events.schema.json (JSON Schema 2020-12, for operators'
 * tools). test/repo/docs/mqtt-contract.test.ts fails when the committed files differ from this output.
 *
 *   npm run docs:mqtt            # writes both files
 *   npx tsx scripts/mqtt-contract.ts --check   # exits 1 when either is stale
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { EVENTS, type EventType } from '../src/outbox/events.js';
import { COMMAND_RESULTS, commandAnswer } from '../src/mqtt/command-results.js';
import { TOPIC_PAYLOADS } from '../src/mqtt/topic-payloads.js';

const REPO = resolve(import.meta.dirname, '..');
export const REFERENCE_PATH = 'docs/reference.md';
export const SCHEMA_PATH = 'docs/mqtt-events.schema.json';
const START =
  '<!-- mqtt-contract:start (written by scripts/mqtt-contract.ts from src/outbox/events.ts, src/mqtt/command-results.ts and src/mqtt/topic-payloads.ts; do not edit) -->';
const END = '<!-- mqtt-contract:end -->';

type Json = { [key: string]: unknown };

/** What every event carries before its own payload (outbox.ts writes it, the publisher adds `seq`). */
const envelope = (type: string) => ({
  seq: z.number().int().describe('monotonic per device: order and gaps'),
  id: z.string().describe('unique per event: consumers dedupe by it (QoS 1 may deliver twice)'),
  type: z.literal(type),
  at: z.string().describe('ISO time the event was written'),
  deviceId: z.string(),
});

/** An integer's bounds are JavaScript's safe range: true of every JSON number a device writes, and noise here. */
const SAFE_BOUNDS = new Set([Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]);

function jsonSchema(schema: z.ZodType): Json {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    target: 'draft-2020-12',
    override: ({ jsonSchema: node }) => {
      if (node.type === 'integer' && SAFE_BOUNDS.has(node.minimum ?? 0) && SAFE_BOUNDS.has(node.maximum ?? 0)) {
        delete node.minimum;
        delete node.maximum;
      }
    },
  }) as Json;
  return rest;
}

const eventNames = Object.keys(EVENTS) as EventType[];
const commandNames = Object.keys(COMMAND_RESULTS) as (keyof typeof COMMAND_RESULTS)[];
const topicNames = Object.keys(TOPIC_PAYLOADS) as (keyof typeof TOPIC_PAYLOADS)[];

/** docs/mqtt-events.schema.json: validates one message on `events`/`dex`; the answers and the other topics under $defs. */
export function renderSchema(): string {
  const events: Record<string, Json> = {};
  for (const name of eventNames) {
    const { topic, schema } = EVENTS[name];
    const full = z.object({ ...envelope(name), ...schema.shape }).describe(schema.description ?? name);
    events[name] = { 'x-topic': `<prefix>/<deviceId>/${topic}`, ...jsonSchema(full) };
  }
  const answers: Record<string, Json> = {};
  for (const name of commandNames)
    answers[name] = { 'x-topic': `<prefix>/<deviceId>/cmd/${name}/result`, ...jsonSchema(commandAnswer(COMMAND_RESULTS[name])) };
  const topics: Record<string, Json> = {};
  for (const name of topicNames) {
    const { topic, retained, schema } = TOPIC_PAYLOADS[name];
    topics[name] = { 'x-topic': `<prefix>/<deviceId>/${topic}`, 'x-retained': retained, ...jsonSchema(schema) };
  }
  const document = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'vendgate MQTT events and command answers',
    description:
      'One message on <prefix>/<deviceId>/events (or dex) validates against exactly one event, told apart by `type`. The answer of a command is $defs/answers/<command>; the payloads of state, telemetry and alarms/<name> are $defs/topics/<name>. Written by scripts/mqtt-contract.ts from the code; new fields may appear (additional properties are allowed), none is renamed or removed without a release note.',
    oneOf: eventNames.map((name) => ({ $ref: `#/$defs/events/${name}` })),
    $defs: { events, answers, topics },
  };
  return `${JSON.stringify(document, null, 2)}\n`;
}

/** A field's type in words, from its JSON schema. */
function typeOf(node: Json): string {
  if ('const' in node) return `\`${JSON.stringify(node.const)}\``;
  if (Array.isArray(node.enum)) return node.enum.map((value) => `\`${String(value)}\``).join(' \\| ');
  if (Array.isArray(node.anyOf)) return (node.anyOf as Json[]).map(typeOf).join(' or ');
  switch (node.type) {
    case 'array':
      return `list of ${typeOf(node.items as Json)}`;
    case 'object': {
      const properties = node.properties as Record<string, Json> | undefined;
      if (properties) return `{ ${fields(node)} }`;
      const values = node.additionalProperties as Json | undefined;
      return `map of string → ${values ? typeOf(values) : 'any'}`;
    }
    case undefined:
      return 'any JSON';
    default:
      return Array.isArray(node.type) ? node.type.join(' or ') : String(node.type);
  }
}

/** `name` type, … for each property (`?` after an optional one). */
function fields(node: Json): string {
  const properties = (node.properties ?? {}) as Record<string, Json>;
  const required = new Set((node.required ?? []) as string[]);
  return Object.entries(properties)
    .map(([key, child]) => `\`${key}\`${required.has(key) ? '' : '?'} ${typeOf(child)}`)
    .join(', ');
}

/** The MQTT section of docs/reference.md, between its markers. */
export function renderSection(): string {
  const lines = [
    START,
    '## MQTT events and command answers',
    '',
    `Every message on \`<prefix>/<device.id>/events\` is one JSON object: \`seq\` (monotonic per device: order and gaps), \`id\` (dedupe by it: QoS 1 may deliver twice), \`type\`, \`at\`, \`deviceId\`, then the payload below. An audit read goes to \`dex\` instead. \`?\` marks a field that may be absent; amounts are in the currency's smallest unit, times ISO. The same, as JSON Schema for tools: [mqtt-events.schema.json](mqtt-events.schema.json). ${eventNames.length} events:`,
    '',
    '| event | when | payload |',
    '|---|---|---|',
  ];
  for (const name of eventNames) {
    const { topic, schema } = EVENTS[name];
    const node = jsonSchema(schema);
    const when = `${schema.description ?? ''}${topic === 'events' ? '' : ` (topic \`${topic}\`)`}`;
    lines.push(`| \`${name}\` | ${when} | ${fields(node)} |`);
  }
  lines.push(
    '',
    "A command answers on `cmd/<name>/result` with `{ requestId, ok: true, result }` or `{ requestId, ok: false, error: { code, message, details? } }` (codes: [errors.md](errors.md)), `replay: true` when it was answered from the record without running again, and the device's signature `deviceSignature` ([security.md](security.md#answers-are-signed-by-the-device)). `result` per command:",
    '',
    '| command | `result` |',
    '|---|---|',
  );
  for (const name of commandNames) {
    const schema = COMMAND_RESULTS[name];
    const node = jsonSchema(schema);
    const what = schema.description ? `${schema.description}: ` : '';
    const shape = Array.isArray(node.anyOf)
      ? (node.anyOf as Json[]).map((branch) => `{ ${fields(branch)} }`).join(' or ')
      : node.properties
        ? fields(node)
        : typeOf(node);
    lines.push(`| \`${name}\` | ${what}${shape} |`);
  }
  lines.push(
    '',
    'The other topics an operator reads (`status` is the bare text `online` or `offline`, retained: the last will says `offline`):',
    '',
    '| topic | retained | payload |',
    '|---|---|---|',
  );
  for (const name of topicNames) {
    const { topic, retained, schema } = TOPIC_PAYLOADS[name];
    const what = schema.description ? `${schema.description}: ` : '';
    const extra = schema.def.catchall ? ', and more fields' : '';
    lines.push(`| \`${topic}\` | ${retained ? 'yes' : 'no'} | ${what}${fields(jsonSchema(schema))}${extra} |`);
  }
  lines.push(END);
  return lines.join('\n');
}

/** docs/reference.md with its MQTT section as the code says (appended when it has none yet). */
export function renderReference(current: string): string {
  const start = current.indexOf(START.slice(0, START.indexOf(' (')));
  const end = current.indexOf(END);
  if (start === -1 || end === -1) return `${current.trimEnd()}\n\n${renderSection()}\n`;
  return `${current.slice(0, start)}${renderSection()}${current.slice(end + END.length)}`;
}

function main(): void {
  const check = process.argv.includes('--check');
  const targets = [
    { path: REFERENCE_PATH, text: renderReference(readFileSync(join(REPO, REFERENCE_PATH), 'utf8')) },
    { path: SCHEMA_PATH, text: renderSchema() },
  ];
  let stale = false;
  for (const { path, text } of targets) {
    let before = '';
    try {
      before = readFileSync(join(REPO, path), 'utf8');
    } catch {
      // not written yet
    }
    if (before === text) continue;
    stale = true;
    if (check) console.error(`${path} is stale: run npm run docs:mqtt`);
    else writeFileSync(join(REPO, path), text);
  }
  if (check && stale) process.exit(1);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) main();
