import { execFile } from 'node:child_process';
import type { Service } from '../helpers/service.js';
import { readRows } from '../helpers/database.js';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

export interface Answer {
  status: number;
  body: any;
}

export async function post(url: string, body: unknown): Promise<Answer> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json().catch(() => null) };
}

export async function get(url: string): Promise<any> {
  return (await fetch(url)).json();
}

/** `slot`'s row of /api/slots: its stock and jam state. */
export const slotState = async (svc: Service, slot: string) =>
  (await get(`${svc.localUrl}/api/slots`)).slots.find((s: { slot: string }) => s.slot === slot);

/** `slot` as the screen offers it (/api/state's catalog): available, or why not. */
export const offered = async (svc: Service, slot: string) =>
  (await get(`${svc.localUrl}/api/state`)).catalog.find((c: { slot: string }) => c.slot === slot);

/** A customer picks a slot on the local API. */
export const order = (svc: Service, slot: string) => post(`${svc.localUrl}/api/orders`, { slot });

/** The customer's phone pays the sandbox invoice (the pay page's button posts to the same URL). */
export async function pay(payUrl: string): Promise<void> {
  const res = await fetch(payUrl, { method: 'POST' });
  if (res.status >= 400) throw new Error(`paying ${payUrl} answered ${res.status}: ${await res.text()}`);
}

/** Waits until the order reaches `state` (through the local API). */
export async function orderReaches(svc: Service, orderId: number, state: string, timeoutMs = 15_000): Promise<any> {
  return svc.waitFor(
    async () => {
      const view = await get(`${svc.localUrl}/api/orders/${orderId}`);
      return view.state === state && view;
    },
    { timeoutMs, what: `order ${orderId} to be ${state}` },
  );
}

/** `vendgate <args> --config <the service's config>` as its own process, as a technician runs it. */
export function cli(svc: Service, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args, '--config', svc.configPath], { encoding: 'utf8' }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** Reads the service's database beside it (read-only, as an operator would). */
export function query<T = any>(svc: Service, sql: string, ...params: unknown[]): T[] {
  return readRows<T>(svc.dbPath, sql, ...params);
}
