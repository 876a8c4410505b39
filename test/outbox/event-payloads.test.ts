/**
 * The payload table of src/outbox/events.ts is what the money path really writes: a sale, a failed
 * vend and its refund run on a real SQLite file, and every event row the outbox holds then is read
 * with its schema, strictly (a field the table does not name fails). The answers of the commands
 * (src/mqtt/command-results.ts) are held to the domain types they come from, at compile time.
 */
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { buildCore, runnerAnswering, type Core } from '../helpers/core.js';
import { EVENTS, type EventPayloads, type EventType } from '../../src/outbox/events.js';
import { type CommandResults, type DeviceStateSummary, type UnverifiedSummary } from '../../src/mqtt/index.js';
import { COMMAND_RESULTS } from '../../src/mqtt/command-results.js';
import { createRefundWorker } from '../../src/vend/index.js';
import { orderView } from '../../src/orders/view.js';
import type { SlotView } from '../../src/catalog/slots.js';
import type { Catalog } from '../../src/catalog/index.js';
import type { VendOutcome } from '../../src/hardware/index.js';
import type { SettleAnswer } from '../../src/ledger/settle.js';
import type { DexHeader } from '../../src/dex/index.js';

/** An intersection as one object type (expectTypeOf tells `A & B` from the same fields written out). */
type Flat<T> = { [K in keyof T]: T[K] };

let core: Core | null = null;
afterEach(() => {
  core?.close();
  core = null;
});

const envelope = { seq: z.number().int(), id: z.string(), type: z.string(), at: z.string(), deviceId: z.string() };

/** Every event row in the outbox, each checked against its own schema; returns the names seen. */
function readEvents(c: Core): EventType[] {
  const rows = c.db.prepare("SELECT seq, payload FROM outbox WHERE kind = 'event' ORDER BY seq").all() as {
    seq: number;
    payload: string;
  }[];
  return rows.map((row) => {
    const body = { seq: row.seq, ...(JSON.parse(row.payload) as { type: EventType }) };
    expect(Object.keys(EVENTS), `seq ${row.seq}`).toContain(body.type);
    const schema = z.object({ ...envelope, ...EVENTS[body.type].schema.shape }).strict();
    const checked = schema.safeParse(body);
    expect(checked.error?.issues ?? [], `${body.type}: ${JSON.stringify(body)}`).toEqual([]);
    return body.type;
  });
}

describe('the events the money path writes are the ones the table describes', () => {
  it('a sale, a failed vend and its refund write only events whose payloads match their schemas exactly', async () => {
    core = buildCore();
    const c = core;
    const sold = await c.orders.create({ source: 'kiosk', slot: 'A1' });
    c.fake.set(sold.invoice_id!, 'paid');
    await c.observe(sold.invoice_id!);
    await runnerAnswering(c, { result: 'vended' }).run();
    const jammed = await c.orders.create({ source: 'kiosk', slot: 'A2' });
    c.fake.set(jammed.invoice_id!, 'paid');
    await c.observe(jammed.invoice_id!);
    await runnerAnswering(c, { result: 'failed', reason: 'motor stalled', slotFault: true }).run();
    const refunds = createRefundWorker(
      {
        db: c.db,
        clock: c.clock,
        logger: c.logger,
        outbox: c.outbox,
        orderRepository: c.orderRepository,
        provider: c.fake.provider,
        ledger: c.ledger,
      },
      { checkIntervalMs: 1_000, unknownAlarmMs: 60_000 },
    );
    await refunds.run();

    const seen = readEvents(c);
    for (const name of ['order.created', 'invoice.created', 'payment.observed', 'vend.queued', 'vend.started', 'vend.succeeded'] as const)
      expect(seen).toContain(name);
    for (const name of ['vend.failed', 'refund.requested', 'refund.succeeded'] as const) expect(seen).toContain(name);

    // The order as resolve and refund answer it over MQTT.
    const view = orderView(c.orderRepository.get(jammed.id)!, []);
    expect(COMMAND_RESULTS.refund.strict().safeParse(view).error?.issues ?? []).toEqual([]);
  });
});

describe('the typed answers and payloads are the domain types they come from', () => {
  it('compiles only while each schema equals the type the code answers with (checked by tsc)', () => {
    expectTypeOf<ReturnType<typeof orderView>>().toEqualTypeOf<CommandResults['resolve']>();
    expectTypeOf<SlotView>().toEqualTypeOf<CommandResults['refill']>();
    expectTypeOf<Flat<SlotView & { wasJammed: boolean }>>().toEqualTypeOf<CommandResults['clear_jam']>();
    expectTypeOf<VendOutcome>().toEqualTypeOf<CommandResults['test_vend']>();
    expectTypeOf<SettleAnswer>().toEqualTypeOf<CommandResults['settle']>();
    expectTypeOf<ReturnType<Catalog['apply']>>().toEqualTypeOf<CommandResults['catalog']>();
    expectTypeOf<ReturnType<Catalog['rollback']>>().toEqualTypeOf<CommandResults['catalog_rollback']>();
    expectTypeOf<DeviceStateSummary>().toEqualTypeOf<CommandResults['out_of_service']>();
    expectTypeOf<UnverifiedSummary>().toEqualTypeOf<EventPayloads['command.unverified_summary']>();
    expectTypeOf<Flat<DexHeader & { dex: string; resent?: { at: string; by: string } }>>().toEqualTypeOf<EventPayloads['dex.read']>();
    expect(Object.keys(COMMAND_RESULTS)).toContain('resolve');
  });
});
