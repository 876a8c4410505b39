import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../util/index.js';
import type { Random } from './random.js';
import { drawRegisterFault, registerFaultProblems, type DrawnRegisterFault, type RegisterFaults } from './register-faults.js';
import { SimHttpError } from './request-checks.js';

/** An answer of a simulated register; `body` undefined is an empty body. */
export interface RegisterAnswer {
  status: number;
  body: unknown;
}

export interface RegisterRoute {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  /** Validates and commits in one synchronous step: the state is in memory, each call is atomic. */
  handler(request: FastifyRequest): RegisterAnswer;
  /** On arrival, before any latency: refuse at once (a busy cashbox), or hold something until the answer. */
  enter?(request: FastifyRequest): { refuse: RegisterAnswer } | { release(): void };
}

export interface RegisterCallRecord {
  method: string;
  path: string;
  at: number;
  status: number | 'timeout' | 'lost';
  fault?: string;
}

/** What the simulator mounts for one fiscal register (see ebarimt-routes.ts, webkassa-routes.ts). */
export interface SimRegister {
  readonly name: 'ebarimt' | 'webkassa';
  routes(): RegisterRoute[];
  /** An error in the register's own words and shape. */
  errorAnswer(status: number, message: string): RegisterAnswer;
  faults: { get(): RegisterFaults; set(partial: Partial<RegisterFaults>): void };
  /** Appended to by the mount for every API call. */
  calls: RegisterCallRecord[];
  /** A copy of everything the register holds and heard. */
  records(): unknown;
  /** POST /__sim/<name>/state: validated (SimHttpError 400 naming every problem, nothing changed), applied, answered with state(). */
  configure(input: unknown): unknown;
  state(): unknown;
}

export interface MountDeps {
  clock: { now(): number };
  faultRandom: Random;
  logger: Logger;
  heldSockets: Set<Socket>;
}

/**
 * Mounts a register's API routes behind its own faults, and /__sim/<name>/{faults,records,state}.
 * In an encapsulated context, so its errors (malformed JSON included) answer in the register's
 * shape, not the payment provider's.
 */
export function mountRegister(app: FastifyInstance, register: SimRegister, deps: MountDeps): void {
  void app.register(async (child) => {
    child.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
      const status = err instanceof SimHttpError ? err.status : (err.statusCode ?? 500);
      if (status >= 500) deps.logger.error({ err, path: pathOf(request) }, 'simulated register route failed');
      const answer = register.errorAnswer(status, status >= 500 ? 'internal simulator error' : err.message);
      return reply.code(answer.status).send(answer.body);
    });

    for (const route of register.routes()) {
      child.route({
        method: route.method,
        url: route.url,
        config: { register: true },
        handler: (request, reply) => serve(route, request, reply),
      });
    }

    const admin = `/__sim/${register.name}`;
    child.get(`${admin}/faults`, async () => register.faults.get());
    child.post(`${admin}/faults`, async (request) => {
      const problems = registerFaultProblems(request.body);
      if (problems.length > 0) throw new SimHttpError(400, 'invalid_request', problems.join('; '));
      register.faults.set(request.body as Partial<RegisterFaults>);
      return register.faults.get();
    });
    child.get(`${admin}/records`, async () => register.records());
    child.get(`${admin}/state`, async () => register.state());
    child.post(`${admin}/state`, async (request) => register.configure(request.body ?? {}));
  });

  async function serve(route: RegisterRoute, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const record = (status: RegisterCallRecord['status'], fault?: string) =>
      register.calls.push({ method: request.method, path: pathOf(request), at: deps.clock.now(), status, ...(fault ? { fault } : {}) });
    const faults = register.faults.get();
    const drawn = drawRegisterFault(faults, deps.faultRandom);
    if (drawn === 'outage') {
      record(503, 'outage');
      const answer = register.errorAnswer(503, 'the register is not running (simulated outage)');
      return reply.code(503).header('retry-after', '5').send(answer.body);
    }
    const entered = route.enter?.(request);
    if (entered && 'refuse' in entered) {
      record(entered.refuse.status, 'busy');
      return reply.code(entered.refuse.status).send(entered.refuse.body);
    }
    let outcome: Awaited<ReturnType<typeof work>>;
    try {
      outcome = await work(route, request, drawn, faults.latencyMs);
    } finally {
      if (entered && 'release' in entered) entered.release();
    }
    if (outcome.kind === 'hold') {
      record('timeout', drawn ?? undefined);
      return holdUnanswered(request, reply);
    }
    if (outcome.kind === 'drop') {
      // Committed; only the answer is lost, as when a connection drops mid-response.
      record('lost', 'lostAfterCommit');
      reply.hijack();
      request.raw.socket.destroy();
      return reply;
    }
    const { answer } = outcome;
    record(answer.status, drawn === 'serverError' ? drawn : undefined);
    reply.code(answer.status);
    return answer.body === undefined ? reply.send() : reply.send(answer.body);
  }

  /** Waits the latency, then commits (or not, as the drawn fault says): what to answer. */
  async function work(route: RegisterRoute, request: FastifyRequest, drawn: DrawnRegisterFault, latencyMs: number) {
    if (latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, latencyMs));
    if (drawn === 'timeoutBeforeCommit') return { kind: 'hold' as const };
    if (drawn === 'serverError') return { kind: 'answer' as const, answer: register.errorAnswer(500, 'simulated server error') };
    let answer: RegisterAnswer;
    try {
      answer = route.handler(request);
    } catch (err) {
      if (!(err instanceof SimHttpError)) throw err;
      answer = register.errorAnswer(err.status, err.message);
    }
    if (drawn === 'timeoutAfterCommit') return { kind: 'hold' as const };
    return drawn === 'lostAfterCommit' ? { kind: 'drop' as const } : { kind: 'answer' as const, answer };
  }

  function holdUnanswered(request: FastifyRequest, reply: FastifyReply): FastifyReply {
    reply.hijack();
    const socket = request.raw.socket;
    deps.heldSockets.add(socket);
    socket.once('close', () => deps.heldSockets.delete(socket));
    return reply;
  }
}

function pathOf(request: FastifyRequest): string {
  const index = request.url.indexOf('?');
  return index < 0 ? request.url : request.url.slice(0, index);
}
