import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cleanup } from '../helpers/cleanup.js';
import { waitFor } from '../helpers/wait.js';
import { httpFetch, IDLE_CONNECTION_MS } from '../../src/util/http-fetch.js';

/**
 * util/http-fetch.ts against real servers on loopback sockets: what the provider clients read of
 * fetch (status, headers, text, the timeout, fetch's errors), on node:http with kept-alive connections.
 */
const TLS = (name: string) => readFileSync(fileURLToPath(new URL(`../mqtt/fixtures/tls/${name}`, import.meta.url)));

interface Heard {
  method: string;
  headers: IncomingMessage['headers'];
  body: string;
  socket: Socket;
}

describe('httpFetch', () => {
  const defer = cleanup();

  async function serve(handle: (req: IncomingMessage, res: ServerResponse, heard: Heard) => void, server: Server = createServer()) {
    const heard: Heard[] = [];
    const sockets = new Set<Socket>();
    server.on('connection', (socket: Socket) => sockets.add(socket));
    server.on('secureConnection', (socket: Socket) => sockets.add(socket));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const one = { method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), socket: req.socket };
        heard.push(one);
        handle(req, res, one);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    defer(server, (s) => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => s.close(resolve));
    });
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, heard, sockets };
  }

  it('sends the method, headers and body with its length, and hands back the status, the headers and the text', async () => {
    const { url, heard } = await serve((_req, res) => {
      res.setHeader('date', 'Sun, 06 Dec 2026 16:00:00 GMT');
      res.setHeader('x-list', ['a', 'b']);
      res.writeHead(201, { 'content-type': 'application/json' }).end('\ufeff{"id":"inv_1","name":"Сүү"}');
    });
    const body = '{"amount":1500,"note":"ус"}';
    const answer = await httpFetch(`${url}/v2/invoice?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
      body,
    });
    expect(answer.status).toBe(201);
    expect(answer.headers.get('Content-Type')).toBe('application/json');
    expect(answer.headers.get('x-list')).toBe('a, b');
    expect(answer.headers.get('retry-after')).toBeNull();
    expect(Date.parse(answer.headers.get('date')!)).toBe(Date.UTC(2026, 11, 6, 16));
    // As fetch's text(): UTF-8, a byte order mark dropped.
    expect(JSON.parse(await answer.text())).toEqual({ id: 'inv_1', name: 'Сүү' });
    expect(heard).toHaveLength(1);
    const [request] = heard;
    expect(request).toMatchObject({ method: 'POST', body });
    // Its length in bytes (UTF-8), not in characters.
    expect(Buffer.byteLength(body)).toBe(body.length + 2);
    expect(request?.headers).toMatchObject({ 'content-type': 'application/json', authorization: 'Bearer t', 'content-length': '29' });
    expect(request?.headers['transfer-encoding']).toBeUndefined();
  });

  it('keeps the connection for the next call, and lets it go once it has been idle for a while', async () => {
    const { url, heard, sockets } = await serve((_req, res) => res.end('ok'));
    for (let i = 0; i < 3; i += 1) expect(await (await httpFetch(`${url}/poll`, { method: 'GET' })).text()).toBe('ok');
    expect(heard).toHaveLength(3);
    expect(sockets.size).toBe(1);
    const [socket] = sockets;
    if (!socket) throw new Error('no connection was made');
    const closedAt = once(socket, 'close').then(() => Date.now());
    const idleSince = Date.now();
    // The device closes it, not the server: the next call never meets a connection the server dropped.
    expect((await closedAt) - idleSince).toBeGreaterThanOrEqual(IDLE_CONNECTION_MS - 100);
  });

  it('waits for an answer slower than the idle time of a kept connection, up to its own signal', async () => {
    const { url } = await serve((_req, res) => setTimeout(() => res.end('{"id":"inv_2"}'), IDLE_CONNECTION_MS + 500));
    const answer = await httpFetch(`${url}/v2/invoice`, {
      method: 'POST',
      body: '{}',
      signal: AbortSignal.timeout(IDLE_CONNECTION_MS * 3),
    });
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('{"id":"inv_2"}');
  });

  it('hands back a redirect as it came, without following it', async () => {
    const { url, heard } = await serve((_req, res) => res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end());
    const answer = await httpFetch(`${url}/v2/invoice`, { method: 'POST', body: '{}', redirect: 'manual' });
    expect(answer.status).toBe(302);
    expect(answer.headers.get('location')).toBe('http://127.0.0.1:1/elsewhere');
    expect(await answer.text()).toBe('');
    expect(heard).toHaveLength(1);
  });

  it("rejects with the signal's TimeoutError when no answer comes in time", async () => {
    const { url, heard } = await serve(() => {});
    const started = Date.now();
    const error = await httpFetch(`${url}/slow`, { method: 'GET', signal: AbortSignal.timeout(150) }).catch((err: unknown) => err);
    expect(error).toMatchObject({ name: 'TimeoutError' });
    expect(Date.now() - started).toBeLessThan(5_000);
    await waitFor(() => heard[0]?.socket.destroyed === true, { what: 'the connection of the call that timed out closed' });
  });

  it('times out an answer whose body stalls halfway, under the same signal', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"id":');
    });
    const answer = await httpFetch(`${url}/stall`, { method: 'GET', signal: AbortSignal.timeout(300) });
    expect(answer.status).toBe(200);
    await expect(answer.text()).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it("rejects with fetch's TypeError and Node's error as its cause when nothing listens", async () => {
    const { url } = await serve(() => {});
    const { port } = new URL(url);
    const closed = await new Promise<string>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const free = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(`http://127.0.0.1:${free}`));
      });
    });
    expect(port).not.toBe(new URL(closed).port);
    const error = (await httpFetch(`${closed}/`, { method: 'GET' }).catch((err: unknown) => err)) as TypeError;
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe('fetch failed');
    expect(error.cause).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('rejects the text of an answer whose connection is cut before its end', async () => {
    const { url } = await serve((req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('{"id":', () => req.socket.destroy());
    });
    const answer = await httpFetch(`${url}/cut`, { method: 'GET' });
    const error = (await answer.text().catch((err: unknown) => err)) as TypeError;
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe('fetch failed');
  });

  it('refuses an https server whose certificate no authority it trusts has signed, before sending anything', async () => {
    const { url, heard } = await serve(() => {}, createHttpsServer({ key: TLS('server.key'), cert: TLS('server.pem') }));
    const error = (await httpFetch(url.replace('http:', 'https:'), { method: 'POST', body: '{}' }).catch(
      (err: unknown) => err,
    )) as TypeError;
    expect(error).toBeInstanceOf(TypeError);
    expect(String((error.cause as { code?: string }).code)).toMatch(/CERT|SIGNATURE|ISSUER/);
    expect(heard).toEqual([]);
  });

  it('rejects an URL that is not http: or https: without a request', async () => {
    const error = (await httpFetch('ftp://127.0.0.1/x', { method: 'GET' }).catch((err: unknown) => err)) as TypeError;
    expect(error).toBeInstanceOf(TypeError);
    expect(String((error.cause as Error).message)).toContain('ftp:');
  });
});
