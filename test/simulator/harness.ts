import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cleanupList } from '../helpers/cleanup.js';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/index.js';

const onCleanup = cleanupList();

/** A started simulator, stopped after the test. */
export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  const sim = createSimulator(options);
  onCleanup(() => sim.stop());
  await sim.start();
  return sim;
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on a real socket; answers with `status(n)` for the n-th request (1-based). */
export async function startReceiver(status: (n: number, received: Received) => number = () => 200) {
  const received: Received[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(entry);
      response.statusCode = status(received.length, entry);
      response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    received,
    bodies: () => received.map((r) => JSON.parse(r.body) as Record<string, any>),
  };
}

export interface Answer {
  status: number;
  headers: Headers;
  json: any;
}

async function call(url: string, init: RequestInit): Promise<Answer> {
  const response = await fetch(url, init);
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined };
}

/** A tiny Gerege client for tests: get a token, then call with bearer auth. */
export async function geregeClient(sim: Simulator, credentials = { id: 'sim-client', secret: 'sim-secret' }) {
  const tokenAnswer = await requestToken(sim, credentials.id, credentials.secret);
  if (tokenAnswer.status !== 200) throw new Error(`token: ${tokenAnswer.status}`);
  let token: string = tokenAnswer.json.access_token;
  return {
    get token() {
      return token;
    },
    set token(value: string) {
      token = value;
    },
    get: (path: string) => call(`${sim.url}${path}`, { headers: { authorization: `Bearer ${token}` } }),
    post: (path: string, body?: unknown, key?: string) =>
      call(`${sim.url}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(key === undefined ? {} : { 'idempotency-key': key }),
        },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      }),
  };
}

export function requestToken(sim: Simulator, id: string, secret: string, form = 'grant_type=client_credentials'): Promise<Answer> {
  return call(`${sim.url}/oauth2/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: form,
  });
}

/** A tiny QutPay client for tests. */
export function qutpayClient(sim: Simulator, apiKey = 'qp_test_simulator') {
  return {
    get: (path: string) => call(`${sim.url}${path}`, { headers: { 'x-api-key': apiKey } }),
    post: (path: string, body?: unknown, key?: string) =>
      call(`${sim.url}${path}`, {
        method: 'POST',
        headers: {
          'x-api-key': apiKey,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(key === undefined ? {} : { 'idempotency-key': key }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
  };
}

export const intentBody = (overrides: Record<string, unknown> = {}) => ({
  amount: 1500,
  currency: 'MNT',
  reference: 'vm-001-42',
  description: 'Cola',
  capture_method: 'automatic',
  expires_in: 120,
  ...overrides,
});

export const invoiceBody = (overrides: Record<string, unknown> = {}) => ({
  amount: 2500,
  description: 'Turnstile fare',
  externalOrderId: 'vm-001-42',
  ...overrides,
});
