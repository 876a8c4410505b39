import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { seededRandom, startGeregeStack, type GeregeStack } from './stack.js';

/**
 * 1,000 randomly corrupted deliveries to the real service's webhook listener: every one is refused
 * with a 4xx and not one row is written. Signed here with our own HMAC (not the service's code).
 */
const REQUESTS = 1_000;
const CONCURRENCY = 16;
const SEED = Number(process.env.FUZZ_SEED ?? 11);

const KINDS = [
  'flipped signature',
  'wrong secret',
  'truncated body',
  'changed byte',
  'wrong content type',
  'huge body',
  'old timestamp',
  'future timestamp',
  'missing signature',
  'garbage signature',
  'signed non-JSON',
  'signed non-event',
  'event id header mismatch',
  'empty body',
] as const;
type Kind = (typeof KINDS)[number];

function sign(secret: string, tSec: number, body: Buffer): string {
  return `t=${tSec},v1=${createHmac('sha256', secret).update(`${tSec}.`).update(body).digest('hex')}`;
}

let stack: GeregeStack | null = null;
afterEach(async () => {
  await stack?.stop();
  stack = null;
});

describe('webhook listener under hostile input', () => {
  it(`answers 4xx to ${REQUESTS} randomly corrupted requests and writes no row`, async () => {
    const s = (stack = await startGeregeStack());
    const secret = s.sim.info().webhookSecret;
    const random = seededRandom(SEED);
    const url = `${s.svc.webhookUrl}/webhooks/gerege`;
    const nowSec = () => Math.floor(Date.now() / 1000);
    let counter = 0;

    function validEvent(): Buffer {
      counter += 1;
      return Buffer.from(
        JSON.stringify({
          id: `evt_fuzz_${counter}`,
          object: 'event',
          type: 'payment_intent.succeeded',
          livemode: false,
          created: nowSec(),
          data: {
            object: {
              id: `pi_fuzz_${counter}`,
              object: 'payment_intent',
              status: 'succeeded',
              amount: 1500,
              currency: 'MNT',
              reference: 'chaos-001-x-1',
            },
          },
        }),
      );
    }

    function corrupt(kind: Kind): { body: Buffer; headers: Record<string, string> } {
      const body = validEvent();
      const id = JSON.parse(body.toString()).id as string;
      const good = { 'content-type': 'application/json', 'gerege-event-id': id, 'gerege-signature': sign(secret, nowSec(), body) };
      switch (kind) {
        case 'flipped signature': {
          const header = good['gerege-signature'];
          const at = header.indexOf('v1=') + 3 + random.int(64);
          const flipped = header[at] === '0' ? '1' : '0';
          return { body, headers: { ...good, 'gerege-signature': header.slice(0, at) + flipped + header.slice(at + 1) } };
        }
        case 'wrong secret':
          return { body, headers: { ...good, 'gerege-signature': sign(`${secret}x`, nowSec(), body) } };
        case 'truncated body':
          return { body: body.subarray(0, 1 + random.int(body.length - 1)), headers: good };
        case 'changed byte': {
          const changed = Buffer.from(body);
          const at = random.int(changed.length);
          changed[at] = (changed[at]! + 1 + random.int(254)) % 256;
          return { body: changed, headers: good };
        }
        case 'wrong content type': {
          const type = random.pick([
            'text/plain',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
            'application/xml',
            'application/octet-stream',
            'text/json',
            '',
          ]);
          const headers: Record<string, string> = { ...good };
          if (type === '') delete headers['content-type'];
          else headers['content-type'] = type;
          return { body, headers };
        }
        case 'huge body': {
          const padded = Buffer.from(
            body.toString().replace('"object":"event"', `"object":"event","pad":"${'x'.repeat(65_536 + random.int(200_000))}"`),
          );
          return { body: padded, headers: { ...good, 'gerege-signature': sign(secret, nowSec(), padded) } };
        }
        case 'old timestamp': {
          const t = nowSec() - 301 - random.int(86_400);
          return { body, headers: { ...good, 'gerege-signature': sign(secret, t, body) } };
        }
        case 'future timestamp': {
          const t = nowSec() + 301 + random.int(86_400);
          return { body, headers: { ...good, 'gerege-signature': sign(secret, t, body) } };
        }
        case 'missing signature': {
          const headers: Record<string, string> = { ...good };
          delete headers['gerege-signature'];
          return { body, headers };
        }
        case 'garbage signature': {
          const junk = Array.from({ length: 1 + random.int(120) }, () => String.fromCharCode(33 + random.int(94))).join('');
          return { body, headers: { ...good, 'gerege-signature': junk } };
        }
        case 'signed non-JSON': {
          const junk = Buffer.from(body.toString().slice(0, random.int(body.length)) + '}{');
          return { body: junk, headers: { ...good, 'gerege-signature': sign(secret, nowSec(), junk) } };
        }
        case 'signed non-event': {
          const other = Buffer.from(
            JSON.stringify(
              random.pick([{}, [], 'evt', 42, { id: 7, type: 'x' }, { id: 'evt_1' }, { type: 'payment_intent.succeeded' }, null]),
            ),
          );
          return { body: other, headers: { ...good, 'gerege-signature': sign(secret, nowSec(), other) } };
        }
        case 'event id header mismatch':
          return { body, headers: { ...good, 'gerege-event-id': `${id}_other` } };
        case 'empty body':
          return { body: Buffer.alloc(0), headers: { ...good, 'gerege-signature': sign(secret, nowSec(), Buffer.alloc(0)) } };
      }
    }

    const statuses = new Map<string, number>();
    const unexpected: string[] = [];
    let next = 0;
    const lane = async () => {
      while (next < REQUESTS) {
        const index = next++;
        const kind = KINDS[index % KINDS.length]!;
        const { body, headers } = corrupt(kind);
        const response = await fetch(url, { method: 'POST', headers, body });
        await response.arrayBuffer();
        statuses.set(`${kind} → ${response.status}`, (statuses.get(`${kind} → ${response.status}`) ?? 0) + 1);
        if (response.status < 400 || response.status >= 500) unexpected.push(`${kind}: ${response.status}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, lane));

    expect(unexpected).toEqual([]);
    expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBe(REQUESTS);
    expect(s.query('SELECT count(*) AS n FROM webhook_events')[0]!.n).toBe(0);
    for (const line of s.svc.logs()) expect(JSON.stringify(line)).not.toContain(secret);

    // Still serving: one valid delivery after the storm is stored.
    const body = validEvent();
    const id = JSON.parse(body.toString()).id as string;
    const ok = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'gerege-event-id': id, 'gerege-signature': sign(secret, nowSec(), body) },
      body,
    });
    expect(ok.status).toBe(200);
    expect(s.query('SELECT event_id FROM webhook_events')).toEqual([{ event_id: id }]);
    console.info(JSON.stringify(Object.fromEntries([...statuses.entries()].sort())));
  }, 120_000);
});
