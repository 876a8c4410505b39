import type { FastifyRequest } from 'fastify';
import type { SimulatorRecords } from './types.js';
import type { ApiResult, ApiRoute, SimContext } from './context.js';
import { headerValue } from './context.js';

type CreateCall = SimulatorRecords['createCalls'][number];

/**
 * What both provider backends keep the same way: every create call in `records.createCalls` (with
 * the answer a lostResponse fault dropped), every read in `records.getCalls`, and the faulty
 * provider whose reads of one object answer with another (`answerReadsWith`).
 */
export function createBackendRecords(ctx: SimContext) {
  /** answerReadsWith: GET of the key answers with the value's object. */
  const readSwaps = new Map<string, string>();

  function recordCreate(idempotencyKey: string | null, outcome: CreateCall['outcome'], invoiceId?: string): CreateCall {
    const call: CreateCall = { idempotencyKey, at: ctx.clock.now(), outcome, ...(invoiceId ? { invoiceId } : {}) };
    ctx.records.createCalls.push(call);
    return call;
  }

  return {
    recordCreate,

    /** The answer to a create call; if a lostResponse fault drops it, the call is recorded as committed but lost. */
    created(call: CreateCall, status: number, body: unknown): ApiResult {
      const onLost = () => {
        call.committed = call.outcome as CreateCall['committed'];
        call.outcome = 'fault:lostResponse';
      };
      return { status, body, onLost };
    },

    /** Runs `fn`; when it throws (a bad key or body), the create call is recorded as `invalid` first. */
    orInvalid<T>(idempotencyKey: string | null, fn: () => T): T {
      try {
        return fn();
      } catch (err) {
        recordCreate(idempotencyKey, 'invalid');
        throw err;
      }
    },

    /** The create route: a fault that answers instead of the handler is a create call too. */
    createRoute(url: string, handler: ApiRoute['handler']): ApiRoute {
      return {
        method: 'POST',
        url,
        handler,
        onRejected: (fault, request) => {
          recordCreate(headerValue(request, 'idempotency-key') ?? null, `fault:${fault}`);
        },
      };
    },

    /** The read route: authorised, recorded, and answered with the swapped object where one is set. */
    readRoute(url: string, authorise: (request: FastifyRequest) => void, answer: (id: string) => unknown): ApiRoute {
      return {
        method: 'GET',
        url,
        handler: (request) => {
          authorise(request);
          const id = (request.params as { id: string }).id;
          ctx.records.getCalls.push({ id, at: ctx.clock.now() });
          return { status: 200, body: answer(readSwaps.get(id) ?? id) };
        },
      };
    },

    answerReadsWith(id: string, otherId: string | null): void {
      if (otherId === null) readSwaps.delete(id);
      else readSwaps.set(id, otherId);
    },
  };
}
