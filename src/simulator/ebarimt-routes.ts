import type { FastifyRequest } from 'fastify';
import type { RegisterAnswer, RegisterCallRecord, RegisterRoute, SimRegister } from './register-mount.js';
import { createRegisterFaults, type RegisterFaults } from './register-faults.js';
import { checkReceiptBody } from './ebarimt-checks.js';
import { createEbarimtState, type EbarimtSimOptions } from './ebarimt-state.js';
import { SimHttpError, checkObjectBody } from './request-checks.js';

export interface EbarimtSimRecords {
  receipts: ReturnType<ReturnType<typeof createEbarimtState>['receipts']>;
  calls: RegisterCallRecord[];
}

export interface EbarimtSimulator extends SimRegister {
  readonly name: 'ebarimt';
  records(): EbarimtSimRecords;
  state(): ReturnType<ReturnType<typeof createEbarimtState>['view']>;
  /** The daemon's own state (activation, lotteries, queue), for tests; configure() is its admin route. */
  readonly daemon: ReturnType<typeof createEbarimtState>;
}

/**
 * A PosAPI 3.x daemon on the simulator's socket: POST/DELETE /rest/receipt, GET /rest/info,
 * GET /rest/sendData, with errors in its shape `{ status: "ERROR", message }`. Admin:
 * /__sim/ebarimt/{faults,records,state}; state takes `activated`, `lotteries`, `taxSystemReachable`
 * and `lastSentAt` (ms, or null).
 */
export function createEbarimtSimulator(
  clock: { now(): number },
  options: EbarimtSimOptions & { faults?: Partial<RegisterFaults> } = {},
): EbarimtSimulator {
  const daemon = createEbarimtState(clock, options);
  const faults = createRegisterFaults(options.faults);
  const calls: RegisterCallRecord[] = [];

  function issue(request: FastifyRequest): RegisterAnswer {
    daemon.requireActivated();
    const checked = checkReceiptBody(request.body, daemon.merchant);
    const receipt = daemon.issue(checked, request.body);
    const body = request.body as Record<string, unknown>;
    const subReceipts = (body.receipts as Array<Record<string, unknown>>).map((sub, i) => ({
      ...sub,
      id: `${receipt.id.slice(0, 30)}9${String(i + 1).padStart(2, '0')}`,
    }));
    return {
      status: 200,
      body: {
        ...body,
        id: receipt.id,
        version: '3.2.0-sim',
        posId: daemon.info().posId,
        status: 'SUCCESS',
        message: '',
        qrData: receipt.qrData,
        lottery: receipt.lottery,
        date: receipt.date,
        easy: false,
        receipts: subReceipts,
      },
    };
  }

  function returnReceipt(request: FastifyRequest): RegisterAnswer {
    daemon.requireActivated();
    if (request.body === undefined || request.body === null)
      throw new SimHttpError(400, 'ERROR', 'id: required (the body names the receipt)');
    const body = checkObjectBody(request.body, ['id', 'date']);
    const problems: string[] = [];
    if (typeof body.id !== 'string' || !/^\d{33}$/.test(body.id)) problems.push('id: the 33-digit receipt id is required');
    if (typeof body.date !== 'string' || !/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(body.date))
      problems.push('date: required, "yyyy-MM-dd HH:mm:ss"');
    if (problems.length > 0) throw new SimHttpError(400, 'ERROR', problems.join('; '));
    daemon.returnReceipt(body.id as string, body.date as string);
    return { status: 200, body: undefined };
  }

  const routes: RegisterRoute[] = [
    { method: 'POST', url: '/rest/receipt', handler: issue },
    { method: 'DELETE', url: '/rest/receipt', handler: returnReceipt },
    { method: 'GET', url: '/rest/info', handler: () => ({ status: 200, body: daemon.info() }) },
    {
      method: 'GET',
      url: '/rest/sendData',
      handler: () => {
        daemon.sendData();
        return { status: 200, body: {} };
      },
    },
  ];

  return {
    name: 'ebarimt',
    daemon,
    routes: () => routes,
    errorAnswer: (status, message) => ({ status, body: { status: 'ERROR', message } }),
    faults,
    calls,
    records: () => ({ receipts: daemon.receipts(), calls: structuredClone(calls) }),
    state: () => daemon.view(),
    configure(input) {
      const body = checkObjectBody(input, ['activated', 'lotteries', 'taxSystemReachable', 'lastSentAt']);
      const problems: string[] = [];
      for (const key of ['activated', 'taxSystemReachable'] as const)
        if (body[key] !== undefined && typeof body[key] !== 'boolean') problems.push(`${key}: must be true or false`);
      if (body.lotteries !== undefined && (!Number.isSafeInteger(body.lotteries) || (body.lotteries as number) < 0))
        problems.push('lotteries: must be a whole number ≥ 0');
      if (body.lastSentAt !== undefined && body.lastSentAt !== null && !Number.isSafeInteger(body.lastSentAt))
        problems.push('lastSentAt: must be ms since epoch or null');
      if (problems.length > 0) throw new SimHttpError(400, 'invalid_request', problems.join('; '));
      daemon.configure(body as Parameters<typeof daemon.configure>[0]);
      return daemon.view();
    },
  };
}
