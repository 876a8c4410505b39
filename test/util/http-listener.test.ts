import { afterEach, describe, expect, it } from 'vitest';
import { bindListener, LOCAL_LISTENER_DEFAULTS, PortInUseError, type BoundListener } from '../../src/util/http-listener.js';

describe('bound listener', () => {
  const open: BoundListener[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()));
  });
  const bind = async (port = 0) => {
    const listener = await bindListener({ host: '127.0.0.1', port, portSetting: 'http.local.port' }, LOCAL_LISTENER_DEFAULTS);
    open.push(listener);
    return listener;
  };

  it('answers 503 VG_ERR_STARTING with Retry-After until it serves, then hands requests to the handler', async () => {
    const listener = await bind();
    const early = await fetch(`${listener.url}/healthz`);
    expect(early.status).toBe(503);
    expect(early.headers.get('retry-after')).toBe('1');
    expect(((await early.json()) as { error: { code: string } }).error.code).toBe('VG_ERR_STARTING');
    listener.serve((_request, response) => {
      response.end('served');
    });
    expect(await (await fetch(`${listener.url}/healthz`)).text()).toBe('served');
  });

  it('a port in use is a PortInUseError naming the port, the setting and how to find the other program', async () => {
    const first = await bind();
    const err = await bind(first.port).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PortInUseError);
    expect((err as Error).message).toContain(`http.local.port: port ${first.port}`);
    expect((err as Error).message).toContain(`ss -ltnp 'sport = :${first.port}'`);
  });
});
