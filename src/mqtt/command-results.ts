/**
 * What each command answers on `cmd/<name>/result` when it ran (`{ requestId, ok: true, result }`):
 * one zod schema per command, the contract with operators' tools. `DeviceControl` (types.ts) returns
 * these types, the handler's table (commands.ts) is checked against them, and docs/reference.md and
 * docs/mqtt-events.schema.json are written from them (scripts/mqtt-contract.ts; a test holds the
 * committed files to this table). test/mqtt/command-results.test.ts holds the domain types the
 * answers come from (the order view, a slot, a vend outcome…) to these schemas.
 */
import * as z from 'zod';
import { ORDER_STATES } from '../orders/index.js';
import { ANSWER_SIGNATURE_FIELD } from './answer-key.js';
import { DEVICE_STATE } from './topic-payloads.js';

const iso = z.string().describe('ISO time');

const orderView = z
  .object({
    orderId: z.number().int(),
    reference: z.string(),
    state: z.enum(ORDER_STATES),
    source: z.string(),
    slot: z.string().nullable(),
    itemName: z.string(),
    amount: z.number().int().describe("in the currency's smallest unit"),
    currency: z.string(),
    provider: z.string(),
    invoiceId: z.string().nullable(),
    payUrl: z.string().nullable(),
    appLinks: z.array(z.object({ name: z.string(), link: z.string() })).describe("the provider's bank-app deep links (QPay), as stored"),
    expiresAt: iso.nullable(),
    createdAt: iso,
    paidAt: iso.nullable(),
    vendedAt: iso.nullable(),
    refundedAt: iso.nullable(),
    errorCode: z.string().nullable(),
    history: z.array(z.object({ at: iso, from: z.string().nullable(), to: z.string(), reason: z.string() })),
  })
  .describe('the order after the command, with its history');

const slotView = z.object({
  slot: z.string(),
  stock: z.number().int().nullable().describe('counted stock; null until first refilled'),
  jammed: z.boolean(),
  jammedAt: iso.nullable(),
  jamReason: z.string().nullable(),
  consecutiveFailures: z.number().int(),
});

const vendOutcome = z
  .union([
    z.object({ result: z.literal('vended'), detail: z.string().optional() }),
    z.object({ result: z.literal('failed'), reason: z.string(), slotFault: z.literal(true).optional() }),
    z.object({ result: z.literal('not_passed'), detail: z.string().optional() }),
    z.object({ result: z.literal('unknown'), detail: z.string() }),
  ])
  .describe("the test actuation's outcome (no money)");

const pair = z.object({ count: z.number().int(), value: z.number().int() });
/** An audit read as a command answers it; the DEX file itself goes out on the `dex` topic. */
const dexRead = z.object({
  read: z.number().int().describe("the read's sequence number"),
  kind: z.enum(['read', 'reset', 'visit']),
  at: iso,
  by: z.string(),
  paid: z.object({ init: pair, reset: pair }),
  refundsAfterDelivery: z.object({ init: pair, reset: pair }),
  afterRestore: z.object({ lastRead: z.number().int(), paidCount: z.number().int(), paidValue: z.number().int() }).optional(),
  topic: z.literal('dex').describe('where the file went'),
});

export const COMMAND_RESULTS = {
  ping: z.object({ pong: z.literal(true), at: iso }),
  out_of_service: DEVICE_STATE,
  selftest: z.object({
    ok: z.boolean(),
    report: z.unknown().describe("the selftest report (docs/selftest.md), without the device's paths, ports and URLs"),
    shared: z.literal(true).optional().describe('the answer of a selftest that was running or had just run'),
  }),
  resolve: orderView,
  refund: orderView,
  settle: z.object({
    case: z.string(),
    outcome: z.enum(['refund', 'goods-went-out', 'not-ours', 'checked']),
    state: z.enum(['done', 'unknown']).describe('unknown: a refund whose outcome the provider cannot say yet'),
    detail: z.string(),
    again: z.boolean().describe('settled before: nothing was done again'),
  }),
  test_vend: vendOutcome,
  catalog: z.object({ version: z.string(), previousVersion: z.string(), changed: z.boolean() }),
  catalog_rollback: z.object({ version: z.string(), rolledBack: z.string() }),
  refill: slotView,
  clear_jam: slotView.extend({ wasJammed: z.boolean() }),
  dex: dexRead
    .extend({
      resent: z.literal(true).optional().describe('read `read` again, as it was sent'),
      shared: z.literal(true).optional().describe('the answer of a read taken within the last 10 s'),
    })
    .describe("the read's header"),
  visit: z
    .object({
      visit: z.number().int(),
      at: iso,
      by: z.string(),
      fills: z.record(z.string(), z.number().int()).describe('slot → count'),
      dex: dexRead.describe('the reset read taken with it'),
    })
    .describe('the visit recorded'),
} as const;

/** The `result` of each command that ran, by name. */
export type CommandResults = { [N in keyof typeof COMMAND_RESULTS]: z.output<(typeof COMMAND_RESULTS)[N]> };

const signature = z
  .string()
  .optional()
  .describe("the device's ed25519 signature of the answer (docs/security.md); absent only with an in-memory database");

/** Every answer on `cmd/<name>/result`: the outcome, or every problem with a stable code. */
export const commandAnswer = (result: z.ZodType) =>
  z.union([
    z.object({
      requestId: z.union([z.string(), z.number().int()]).nullable(),
      ok: z.literal(true),
      result,
      replay: z.literal(true).optional().describe('answered from the record: it did not run again'),
      [ANSWER_SIGNATURE_FIELD]: signature,
    }),
    z.object({
      requestId: z.union([z.string(), z.number().int()]).nullable(),
      ok: z.literal(false),
      error: z.object({
        code: z.string().describe('VG_ERR_* (docs/errors.md)'),
        message: z.string(),
        details: z.record(z.string(), z.unknown()).optional(),
      }),
      replay: z.literal(true).optional(),
      [ANSWER_SIGNATURE_FIELD]: signature,
    }),
  ]);
