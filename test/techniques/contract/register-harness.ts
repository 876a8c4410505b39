import { createServer } from 'node:net';
import { cleanupList } from '../../helpers/cleanup.js';
import { createSimulator, WEBKASSA_SIM_DEFAULTS, type Simulator, type SimulatorOptions } from '../../../src/simulator/index.js';
import type { ReceiptLine, ReceiptRequest } from '../../../src/fiscal/types.js';
import { createEbarimtRegister, type EbarimtOptions } from '../../../src/fiscal/ebarimt/index.js';
import { createWebkassaRegister, type WebkassaOptions } from '../../../src/fiscal/webkassa/index.js';
import { silentLogger, systemClock } from '../../../src/util/index.js';

const onCleanup = cleanupList();

/** A started simulator (the registers are served beside the provider), stopped after the test. */
export async function startRegisters(options: Omit<SimulatorOptions, 'provider'> = {}): Promise<Simulator> {
  const sim = createSimulator({ provider: 'qutpay', expirySweepMs: 0, ...options });
  onCleanup(() => sim.stop());
  await sim.start();
  return sim;
}

/** The eBarimt adapter for the simulated PosAPI at `url` (its merchant, VAT and city tax), 15 s a call unless told otherwise. */
export function simEbarimtRegister(url: string, overrides: Partial<EbarimtOptions> = {}) {
  return createEbarimtRegister({
    baseUrl: url,
    merchantTin: '10000000001',
    posNo: '10020030',
    branchNo: '001',
    districtCode: '2501',
    registration: { vatPayer: true, cityTax: true },
    timeoutMs: 15_000,
    logger: silentLogger(),
    clock: systemClock,
    ...overrides,
  });
}

/** The Webkassa adapter for the simulated Webkassa at `url` (its API key, cashier login, cashbox), 15 s a call unless told otherwise. */
export function simWebkassaRegister(url: string, overrides: Partial<WebkassaOptions> = {}) {
  const D = WEBKASSA_SIM_DEFAULTS;
  return createWebkassaRegister({
    baseUrl: url,
    apiKey: D.apiKey,
    login: D.login,
    password: D.password,
    cashboxUniqueNumber: D.cashbox.uniqueNumber,
    vatPayer: true,
    timeoutMs: 15_000,
    logger: silentLogger(),
    clock: systemClock,
    ...overrides,
  });
}

/** A session token from the simulated Webkassa, logged in as its cashier (what a token set beforehand is). */
export async function webkassaSessionToken(sim: Simulator): Promise<string> {
  const D = WEBKASSA_SIM_DEFAULTS;
  const answer = await fetch(`${sim.url}/api/v4/Authorize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': D.apiKey },
    body: JSON.stringify({ Login: D.login, Password: D.password }),
  });
  return ((await answer.json()) as { Data: { Token: string } }).Data.Token;
}

/** A URL on which nothing listens: connecting is refused. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

let counter = 0;

/** A sale as the fiscal worker hands it to a register: one 2,800 drink unless told otherwise. */
export function saleRequest(overrides: Partial<ReceiptRequest> & { lines?: ReceiptLine[] } = {}): ReceiptRequest {
  counter += 1;
  const lines = overrides.lines ?? [{ name: 'Cola 0.5 l', classificationCode: '2441100', unit: null, quantity: 1, unitPrice: 2800 }];
  return {
    key: `rcpt-${process.pid}-${counter}-${Date.now()}`,
    orderId: `ord-${counter}`,
    saleDate: new Date().toISOString().slice(0, 10),
    soldAt: Date.now(),
    total: lines.reduce((sum, line) => sum + Math.round(line.quantity * line.unitPrice), 0),
    currency: 'MNT',
    payment: { provider: 'qutpay', invoiceId: `inv-${counter}` },
    ...overrides,
    lines,
  };
}
