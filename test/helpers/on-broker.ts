import { randomBytes } from 'node:crypto';
import { startService, type Service, type ServiceOptions } from './service.js';
import { watch, type Watcher } from '../mqtt/watch.js';
import { closeWatcher, stop, type Defer } from './cleanup.js';

/** The shared test broker: Mosquitto at 127.0.0.1:1883, or MQTT_TEST_URL. */
export const BROKER = process.env.MQTT_TEST_URL ?? 'mqtt://127.0.0.1:1883';

export interface OnBroker {
  svc: Service;
  /** Subscribed to everything under `base` since before the service started. */
  watcher: Watcher;
  deviceId: string;
  prefix: string;
  /** `<prefix>/<deviceId>`. */
  base: string;
}

/**
 * The compiled service under a fresh device id and topic prefix (`tag` names the test), a watcher on
 * all its topics, and the device online. Both are closed after the test through `defer`.
 * `settings` are merged into the service's settings; its `mqtt` part into the broker settings.
 */
export async function serviceOnBroker(
  defer: Defer,
  tag: string,
  settings: Record<string, unknown> & { mqtt?: Record<string, unknown> } = {},
  options: Omit<ServiceOptions, 'config'> = {},
): Promise<OnBroker> {
  const deviceId = `${tag}-${randomBytes(4).toString('hex')}`;
  const prefix = `vg${tag}${randomBytes(3).toString('hex')}`;
  const base = `${prefix}/${deviceId}`;
  const watcher = defer(await watch(BROKER, [`${base}/#`]), closeWatcher);
  const config = { ...settings, device: { id: deviceId }, mqtt: { url: BROKER, prefix, ...settings.mqtt } };
  const svc = defer(await startService({ ...options, config }), stop);
  await watcher.next(`${base}/status`, (m) => m.payload === 'online', 30_000);
  return { svc, watcher, deviceId, prefix, base };
}

/** Publishes `payload` on `<base>/cmd/<name>` and returns the first result after it with this request id. */
export async function commandResult<R = any>(
  on: Pick<OnBroker, 'watcher' | 'base'>,
  name: string,
  payload: string,
  requestId: string,
): Promise<R> {
  const { watcher, base } = on;
  const mine = () => watcher.on(`${base}/cmd/${name}/result`).filter((m) => JSON.parse(m.payload).requestId === requestId);
  const before = mine().length;
  await watcher.publish(`${base}/cmd/${name}`, payload);
  await watcher.until(() => mine().length > before, { timeoutMs: 60_000, what: `the result of ${requestId}` });
  return JSON.parse(mine()[before]?.payload ?? 'null') as R;
}

/**
 * Kills the service with `signal`, runs `meanwhile` (the device is down), starts it again on the same
 * directory, and waits for its next "online".
 */
export async function restartOnline(
  on: Pick<OnBroker, 'svc' | 'watcher' | 'base'>,
  signal: NodeJS.Signals = 'SIGKILL',
  meanwhile: () => void = () => {},
): Promise<void> {
  const { svc, watcher, base } = on;
  await svc.kill(signal);
  meanwhile();
  const online = watcher.on(`${base}/status`).length;
  await svc.restart();
  await watcher.until(
    () =>
      watcher
        .on(`${base}/status`)
        .slice(online)
        .some((m) => m.payload === 'online'),
    { what: 'online again' },
  );
}
