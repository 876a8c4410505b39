import { describe, expect, it } from 'vitest';
import { createFakeKioskDeps } from '../fakes/kiosk-deps.js';
import { connect } from 'node:net';
import { STOP_GRACE_MS } from '../../src/kiosk/connections.js';
import { kioskForInject, openEventStream, startKiosk } from './harness.js';
import { waitFor } from '../helpers/wait.js';

describe('GET /api/events (SSE)', () => {
  it('sends the current state on connect, then every pushed change, in order', async () => {
    const deps = createFakeKioskDeps();
    const { url } = await startKiosk(deps);
    const stream = await openEventStream(`${url}/api/events`);
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(stream.response.headers.get('content-security-policy')).toContain("default-src 'self'");
    await waitFor(() => stream.events.length === 1, { what: 'the initial state' });
    expect(stream.events[0]!.event).toBe('state');
    expect(JSON.parse(stream.events[0]!.data)).toMatchObject({ phase: 'idle', deviceId: 'vm-test-1', qrSvg: null });

    await waitFor(() => deps.listenerCount() === 1, { what: 'the subscription' });
    deps.setState({ phase: 'vending' });
    deps.setState({ phase: 'vended' });
    await waitFor(() => stream.events.length === 3, { what: 'two pushed changes' });
    expect(stream.events.map((e) => JSON.parse(e.data).phase)).toEqual(['idle', 'vending', 'vended']);
    await stream.close();
  });

  it('carries the QR of the order awaiting payment, rendered before a later change is sent', async () => {
    const deps = createFakeKioskDeps();
    const { url } = await startKiosk(deps);
    const stream = await openEventStream(`${url}/api/events`);
    await waitFor(() => deps.listenerCount() === 1, { what: 'the subscription' });
    const created = await deps.orders.create({ slot: 'A1', source: 'kiosk' });
    deps.setState({ phase: 'awaiting_payment', order: deps.orderTable.get(created.orderId)! });
    deps.setState({ phase: 'paid' });
    await waitFor(() => stream.events.length === 3, { what: 'both changes' });
    const [, paying, paid] = stream.events.map((e) => JSON.parse(e.data));
    expect(paying.phase).toBe('awaiting_payment');
    expect(paying.qrSvg).toMatch(/^<svg/);
    expect(paid.phase).toBe('paid');
    await stream.close();
  });

  it('sends a ping comment on the keep-alive interval', async () => {
    const { url } = await startKiosk(createFakeKioskDeps(), { ssePingMs: 20 });
    const stream = await openEventStream(`${url}/api/events`);
    await waitFor(() => stream.comments.includes(': ping'), { what: 'a ping' });
    await stream.close();
  });

  it('unsubscribes from state changes when the client goes away', async () => {
    const deps = createFakeKioskDeps();
    const { url } = await startKiosk(deps);
    const first = await openEventStream(`${url}/api/events`);
    const second = await openEventStream(`${url}/api/events`);
    await waitFor(() => deps.listenerCount() === 2, { what: 'two subscriptions' });
    await first.close();
    await waitFor(() => deps.listenerCount() === 1, { what: 'the closed stream to unsubscribe' });
    deps.setState({ phase: 'vending' });
    await waitFor(() => second.events.length === 2, { what: 'the change on the open stream' });
    await second.close();
    await waitFor(() => deps.listenerCount() === 0, { what: 'every subscription gone' });
  });

  it('ends open streams on stop() so stopping never hangs, and unsubscribes them', async () => {
    const deps = createFakeKioskDeps();
    const { server, url } = await startKiosk(deps);
    const stream = await openEventStream(`${url}/api/events`);
    await waitFor(() => stream.events.length === 1 && deps.listenerCount() === 1, { what: 'the stream to open' });
    await server.stop();
    await waitFor(() => stream.ended(), { what: 'the stream to end' });
    expect(deps.listenerCount()).toBe(0);
  });
});

describe('stopping the listener', () => {
  it('does not wait for a connection that never carried a request (browser preconnect)', async () => {
    const { server, port } = await startKiosk(createFakeKioskDeps());
    const spare = connect(port, '127.0.0.1');
    await new Promise((resolve) => spare.once('connect', resolve));
    let closedByServer = false;
    spare.once('close', () => {
      closedByServer = true;
    });
    const started = Date.now();
    await server.stop();
    expect(Date.now() - started).toBeLessThan(STOP_GRACE_MS);
    await waitFor(() => closedByServer, { what: 'the spare connection to be closed' });
  });

  it('lets a request in flight finish before closing its connection', async () => {
    const deps = createFakeKioskDeps();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const inner = deps.createImpl;
    deps.createImpl = async (input) => {
      await gate;
      return inner(input);
    };
    const { server, url } = await startKiosk(deps);
    const pending = fetch(`${url}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"slot":"A1"}',
    });
    await waitFor(() => deps.calls.create.length === 1, { what: 'the request to reach the order service' });
    const stopping = server.stop();
    release();
    expect((await pending).status).toBe(201);
    await stopping;
  });
});

describe('GET /api/events without a reader', () => {
  it('answers HEAD with 404 instead of opening a stream nobody reads', async () => {
    const deps = createFakeKioskDeps();
    const res = await kioskForInject(deps).inject({ method: 'HEAD', url: '/api/events' });
    expect(res.statusCode).toBe(404);
    expect(deps.listenerCount()).toBe(0);
  });
});
