import type { FastifyRequest } from 'fastify';
import type { RegisterAnswer, RegisterCallRecord, RegisterRoute, SimRegister } from './register-mount.js';
import { createRegisterFaults, type RegisterFaults } from './register-faults.js';
import { toCents } from './ebarimt-checks.js';
import { SimHttpError, checkObjectBody } from './request-checks.js';
import { WK, WebkassaError, createWebkassaState, type Cashbox, type HeldCheck, type WebkassaSimOptions } from './webkassa-state.js';

export interface WebkassaSimRecords {
  cashboxes: Array<{
    uniqueNumber: string;
    activated: boolean;
    offlineSince: number | null;
    shift: Cashbox['shift'];
    checks: Array<Omit<HeldCheck, 'body'>>;
  }>;
  calls: RegisterCallRecord[];
}

export interface WebkassaSimulator extends SimRegister {
  readonly name: 'webkassa';
  records(): WebkassaSimRecords;
  state(): Array<{ uniqueNumber: string; activated: boolean; offlineSince: number | null; shift: Cashbox['shift'] }>;
  readonly service: ReturnType<typeof createWebkassaState>;
}

type Obj = Record<string, unknown>;
const PAYMENT_TYPES = [0, 1, 4];

/**
 * A Webkassa-like register: POST /api/v4/Authorize, /api/v4/Check, /api/v4/ZReport,
 * /api/v4/Cashboxes, /api-history/v4/Ticket/GetTicketByExternalCheckNumber. Requests for one
 * cashbox must come one after another: one that arrives while another is in work is refused
 * (error -1). Admin: /__sim/webkassa/{faults,records,state}; state takes `cashbox` (default the
 * first), `activated`, `offline`, `offlineSince` (ms), `shiftOpenedAt` (ms), `expireTokens`.
 */
export function createWebkassaSimulator(
  clock: { now(): number },
  options: WebkassaSimOptions & { faults?: Partial<RegisterFaults> } = {},
): WebkassaSimulator {
  const service = createWebkassaState(clock, options);
  const faults = createRegisterFaults(options.faults);
  const calls: RegisterCallRecord[] = [];
  const errors = (code: number, text: string): RegisterAnswer => ({ status: 200, body: { Errors: [{ Code: code, Text: text }] } });

  /** Runs a handler in Webkassa's words: a WebkassaError becomes its Errors answer. */
  const wk =
    (handler: (body: Obj) => unknown) =>
    (request: FastifyRequest): RegisterAnswer => {
      try {
        if (service.apiKey !== null && apiKeyOf(request) !== service.apiKey)
          throw new WebkassaError(WK.NOT_AUTHORIZED, 'a valid x-api-key header is required');
        const body = request.body;
        if (typeof body !== 'object' || body === null || Array.isArray(body))
          throw new WebkassaError(WK.VALIDATION, 'the body must be a JSON object');
        return { status: 200, body: { Data: handler(body as Obj) } };
      } catch (err) {
        if (err instanceof WebkassaError) return errors(err.code, err.message);
        throw err;
      }
    };

  function checkData(cashbox: Cashbox, check: HeldCheck) {
    const total = (check.totalCents / 100).toFixed(2);
    const t = check.dateTime.replace(/^(\d{2})\.(\d{2})\.(\d{4}) (\d{2}):(\d{2}):(\d{2})$/, '$3$2$1T$4$5$6');
    return {
      CheckNumber: check.checkNumber,
      DateTime: check.dateTime,
      OfflineMode: check.offline,
      CashboxOfflineMode: cashbox.offlineSince !== null,
      Cashbox: {
        UniqueNumber: cashbox.uniqueNumber,
        RegistrationNumber: cashbox.registrationNumber,
        IdentityNumber: cashbox.identityNumber,
        Address: 'simulated',
      },
      CheckOrderNumber: check.orderNumber,
      ShiftNumber: check.shiftNumber,
      EmployeeName: service.login,
      Total: check.totalCents / 100,
      TicketUrl: `https://ofd.example/sim/ticket?i=${check.checkNumber}&f=${cashbox.registrationNumber}&s=${total}&t=${t}`,
      TicketPrintUrl: `https://ofd.example/sim/print/${check.checkNumber}`,
    };
  }

  function check(request: FastifyRequest): RegisterAnswer {
    return wk((b) => {
      service.requireToken(b.Token);
      const cashbox = service.cashbox(b.CashboxUniqueNumber);
      service.requireActivated(cashbox);
      const ext = b.ExternalCheckNumber;
      if (typeof ext !== 'string' || ext.length < 1 || ext.length > 50)
        throw new WebkassaError(WK.VALIDATION, 'ExternalCheckNumber: 1 to 50 characters are required');
      const prior = cashbox.checks.get(ext);
      if (prior) throw new DuplicateCheck(checkData(cashbox, prior));
      const { operationType, totalCents, returns } = validateCheck(b, cashbox);
      service.admitCheck(cashbox);
      return checkData(cashbox, service.commitCheck(cashbox, { externalCheckNumber: ext, operationType, totalCents, returns, body: b }));
    })(request);
  }

  function validateCheck(b: Obj, cashbox: Cashbox): { operationType: 2 | 3; totalCents: number; returns: HeldCheck | null } {
    const problems: string[] = [];
    const operationType = b.OperationType;
    if (operationType !== 2 && operationType !== 3) problems.push('OperationType: 2 (sale) or 3 (sale return)');
    let total = 0;
    const positions = b.Positions;
    if (!Array.isArray(positions) || positions.length === 0) problems.push('Positions: at least one position is required');
    else
      positions.forEach((p: unknown, i) => {
        const at = `Positions[${i}].`;
        if (typeof p !== 'object' || p === null) return problems.push(`Positions[${i}]: must be an object`);
        const pos = p as Obj;
        if (typeof pos.PositionName !== 'string' || pos.PositionName.trim() === '') problems.push(`${at}PositionName: required`);
        if (typeof pos.Count !== 'number' || !(pos.Count > 0)) problems.push(`${at}Count: must be above 0`);
        const price = toCents(pos.Price);
        if (price === null || price === 0) problems.push(`${at}Price: a positive amount with at most 2 decimals`);
        if (!Number.isInteger(pos.UnitCode)) problems.push(`${at}UnitCode: required (796 is a piece)`);
        const amount = typeof pos.Count === 'number' && price !== null ? Math.round(pos.Count * price) : 0;
        const tax = toCents(pos.Tax ?? 0);
        if (pos.TaxType === 100) {
          if (!service.vatPayer) problems.push(`${at}TaxType: the organisation is not a VAT payer (use 0)`);
          if (pos.TaxPercent !== service.vatPercent) problems.push(`${at}TaxPercent: must be ${service.vatPercent}`);
          const want = Math.round((amount * service.vatPercent) / (100 + service.vatPercent));
          if (tax === null || Math.abs(tax - want) > 1) problems.push(`${at}Tax: VAT inside the amount must be ${(want / 100).toFixed(2)}`);
        } else if (pos.TaxType === 0) {
          if (tax !== 0) problems.push(`${at}Tax: must be 0 without VAT`);
        } else problems.push(`${at}TaxType: 0 (no VAT) or 100 (VAT)`);
        total += amount;
      });
    const payments = b.Payments;
    let paid = 0;
    if (!Array.isArray(payments) || payments.length === 0) problems.push('Payments: at least one payment is required');
    else
      payments.forEach((p: unknown, i) => {
        const pay = (p ?? {}) as Obj;
        if (!PAYMENT_TYPES.includes(pay.PaymentType as number))
          problems.push(`Payments[${i}].PaymentType: one of ${PAYMENT_TYPES.join(', ')}`);
        const sum = toCents(pay.Sum);
        if (sum === null || sum === 0) problems.push(`Payments[${i}].Sum: a positive amount with at most 2 decimals`);
        paid += sum ?? 0;
      });
    const change = toCents(b.Change ?? 0);
    if (change === null) problems.push('Change: a non-negative amount');
    if (Array.isArray(payments) && Array.isArray(positions) && paid - (change ?? 0) !== total)
      problems.push(`Payments: the sums less Change must be the positions' total ${(total / 100).toFixed(2)}`);

    let returns: HeldCheck | null = null;
    if (operationType === 3) {
      const basis = b.ReturnBasisDetails as Obj | undefined;
      if (typeof basis !== 'object' || basis === null)
        problems.push('ReturnBasisDetails: a return names its sale (CheckNumber, DateTime, Total, RegistrationNumber, IsOffline)');
      else {
        const sale = service.findByCheckNumber(cashbox, basis.CheckNumber);
        if (!sale || sale.operationType !== 2)
          problems.push(`ReturnBasisDetails.CheckNumber: no sale ${String(basis.CheckNumber)} on this cashbox`);
        else {
          if (basis.RegistrationNumber !== cashbox.registrationNumber)
            problems.push('ReturnBasisDetails.RegistrationNumber: not the registration number of the sale');
          if (basis.DateTime !== sale.dateTime) problems.push(`ReturnBasisDetails.DateTime: must be the sale's ${sale.dateTime}`);
          if (toCents(basis.Total) !== sale.totalCents) problems.push('ReturnBasisDetails.Total: must be the sale total');
          if (basis.IsOffline !== sale.offline) problems.push('ReturnBasisDetails.IsOffline: must say whether the sale was taken offline');
          if (sale.returnedBy !== null) problems.push(`the sale ${sale.checkNumber} is already returned by ${sale.returnedBy}`);
          if (total !== sale.totalCents) problems.push('a return here is a full return: its total must be the sale total');
          returns = sale;
        }
      }
    }
    if (problems.length > 0) throw new WebkassaError(WK.VALIDATION, problems.join('; '));
    return { operationType: operationType as 2 | 3, totalCents: total, returns };
  }

  const routes: RegisterRoute[] = [
    {
      method: 'POST',
      url: '/api/v4/Authorize',
      handler: wk((b) => ({ Token: service.authorize(b.Login, b.Password) })),
    },
    {
      method: 'POST',
      url: '/api/v4/Check',
      handler: (request) => {
        try {
          return check(request);
        } catch (err) {
          if (err instanceof DuplicateCheck)
            return { status: 200, body: { Data: err.data, Errors: [{ Code: WK.DUPLICATE_EXTERNAL_NUMBER, Text: err.message }] } };
          throw err;
        }
      },
      enter: (request) => {
        const cashbox = service.all().find((c) => c.uniqueNumber === (request.body as Obj | undefined)?.CashboxUniqueNumber);
        if (!cashbox) return { release: () => undefined };
        if (cashbox.busy)
          return {
            refuse: errors(WK.UNKNOWN, 'the cashbox is busy with another request: send requests for one cashbox one after another'),
          };
        cashbox.busy = true;
        return { release: () => (cashbox.busy = false) };
      },
    },
    {
      method: 'POST',
      url: '/api-history/v4/Ticket/GetTicketByExternalCheckNumber',
      handler: wk((b) => {
        service.requireToken(b.Token);
        const cashbox = service.cashbox(b.CashboxUniqueNumber);
        const found = typeof b.ExternalCheckNumber === 'string' ? cashbox.checks.get(b.ExternalCheckNumber) : undefined;
        if (!found) throw new WebkassaError(WK.CHECK_NOT_FOUND, `no check with ExternalCheckNumber ${String(b.ExternalCheckNumber)}`);
        return checkData(cashbox, found);
      }),
    },
    {
      method: 'POST',
      url: '/api/v4/ZReport',
      handler: wk((b) => {
        service.requireToken(b.Token);
        const cashbox = service.cashbox(b.CashboxUniqueNumber ?? b.cashboxUniqueNumber);
        service.requireActivated(cashbox);
        return service.zReport(cashbox);
      }),
    },
    {
      method: 'POST',
      url: '/api/v4/Cashboxes',
      handler: wk((b) => {
        service.requireToken(b.Token);
        return {
          List: service.all().map((c) => ({
            UniqueNumber: c.uniqueNumber,
            RegistrationNumber: c.registrationNumber,
            IdentificationNumber: c.identityNumber,
            Name: `Cashbox ${c.identityNumber}`,
            IsActive: c.activated,
            IsOffline: c.offlineSince !== null,
          })),
        };
      }),
    },
  ];

  return {
    name: 'webkassa',
    service,
    routes: () => routes,
    errorAnswer: (status, message) => ({ status, body: { Errors: [{ Code: WK.UNKNOWN, Text: message }] } }),
    faults,
    calls,
    records: () => ({
      cashboxes: service.all().map((c) => ({
        uniqueNumber: c.uniqueNumber,
        activated: c.activated,
        offlineSince: c.offlineSince,
        shift: c.shift ? { ...c.shift } : null,
        checks: [...c.checks.values()].map(({ body: _body, ...rest }) => ({ ...rest })),
      })),
      calls: structuredClone(calls),
    }),
    state: () =>
      service.all().map((c) => ({ uniqueNumber: c.uniqueNumber, activated: c.activated, offlineSince: c.offlineSince, shift: c.shift })),
    configure(input) {
      const body = checkObjectBody(input, ['cashbox', 'activated', 'offline', 'offlineSince', 'shiftOpenedAt', 'expireTokens']);
      const problems: string[] = [];
      const cashbox = body.cashbox === undefined ? service.all()[0] : service.all().find((c) => c.uniqueNumber === body.cashbox);
      if (!cashbox) problems.push(`cashbox: no cashbox ${String(body.cashbox)}`);
      for (const key of ['activated', 'offline', 'expireTokens'] as const)
        if (body[key] !== undefined && typeof body[key] !== 'boolean') problems.push(`${key}: must be true or false`);
      for (const key of ['offlineSince', 'shiftOpenedAt'] as const)
        if (body[key] !== undefined && !Number.isSafeInteger(body[key])) problems.push(`${key}: must be ms since epoch`);
      if (body.shiftOpenedAt !== undefined && cashbox && !cashbox.shift) problems.push('shiftOpenedAt: the cashbox has no open shift');
      if (problems.length > 0 || !cashbox) throw new SimHttpError(400, 'invalid_request', problems.join('; '));
      const box = cashbox;
      if (body.activated !== undefined) box.activated = body.activated as boolean;
      if (body.offline !== undefined || body.offlineSince !== undefined)
        service.setOffline(box, (body.offline as boolean | undefined) ?? true, body.offlineSince as number | undefined);
      if (body.shiftOpenedAt !== undefined && box.shift) box.shift.openedAt = body.shiftOpenedAt as number;
      if (body.expireTokens === true) service.expireTokens();
      return this.state();
    },
  };
}

/** A duplicate ExternalCheckNumber: error 14 with the check already held. */
class DuplicateCheck extends Error {
  constructor(readonly data: unknown) {
    super('a check with this ExternalCheckNumber already exists: it is returned');
  }
}

/** The x-api-key header (sent once). */
function apiKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers['x-api-key'];
  return Array.isArray(value) ? value[0] : value;
}
