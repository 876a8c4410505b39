import { createServer } from 'node:net';
import { afterEach } from 'vitest';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../../src/simulator/index.js';
import type { ReceiptLine, ReceiptRequest } from '../../../src/fiscal/types.js';

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A started simulator (the registers are served beside the provider), stopped after the test. */
export async function startRegisters(options: Omit<SimulatorOptions, 'provider'> = {}): Promise<Simulator> {
  const sim = createSimulator({ provider: 'qutpay', expirySweepMs: 0, ...options });
  cleanups.push(() => sim.stop());
  await sim.start();
  return sim;
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
