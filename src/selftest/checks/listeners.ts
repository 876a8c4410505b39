import type { Settings } from '../../settings/index.js';
import type { CheckResult, Exec } from '../types.js';
import { fail, listenerUrl, pass, probe, warn, type Probe } from '../helpers.js';
import { movePortAdvice } from '../../util/free-port.js';

/** What the selftest found out about the service before the other checks run. */
export interface ServiceState {
  running: boolean;
  /** How we know, for the details ("local listener answered", "systemd: active", …). */
  how: string;
  /** True inside the service itself (MQTT cmd/selftest). */
  inProcess: boolean;
  expected: boolean;
  localUrl: string | null;
  webhookUrl: string | null;
  local: Probe | null;
  webhook: Probe | null;
}

const PROBE_TIMEOUT_MS = 1_500;
const UNIT = 'vendgate';

/**
 * Asks the listeners (over HTTP, never by binding their ports) and systemd whether the service is
 * running. The selftest runs beside the service: it must not take its ports, serial port or pins.
 */
export async function detectService(
  settings: Readonly<Settings>,
  deps: { fetch: typeof fetch; exec: Exec },
  options: {
    urls?: { local?: string; webhook?: string };
    inProcess: boolean;
    expectService: boolean;
    probeTimeoutMs?: number;
  },
): Promise<ServiceState> {
  const { local: localConf, webhook: webhookConf } = settings.http;
  // Port 0 means "any free port": only the service knows which one it got.
  const localUrl = options.urls?.local ?? (localConf.port === 0 ? null : listenerUrl(localConf.host, localConf.port));
  const webhookUrl = options.urls?.webhook ?? (webhookConf.port === 0 ? null : listenerUrl(webhookConf.host, webhookConf.port));
  const timeoutMs = options.probeTimeoutMs ?? PROBE_TIMEOUT_MS;
  const [local, webhook, systemd] = await Promise.all([
    localUrl ? probe(deps.fetch, `${localUrl}/healthz`, timeoutMs) : Promise.resolve(null),
    webhookUrl ? probe(deps.fetch, `${webhookUrl}/webhooks/health`, timeoutMs) : Promise.resolve(null),
    options.inProcess ? Promise.resolve(null) : deps.exec('systemctl', ['is-active', UNIT], timeoutMs),
  ]);
  const systemdActive = systemd?.code === 0 && systemd.stdout.trim() === 'active';
  let how = 'not running';
  if (options.inProcess) how = 'selftest runs inside the service';
  else if (local?.kind === 'answered') how = 'local listener answered';
  else if (webhook?.kind === 'answered') how = 'webhook listener answered';
  else if (systemdActive) how = `systemd: ${UNIT} is active`;
  return {
    running: how !== 'not running',
    how,
    inProcess: options.inProcess,
    expected: options.expectService,
    localUrl,
    webhookUrl,
    local,
    webhook,
  };
}

const NOT_RUNNING_HINT =
  'start it: sudo systemctl start vendgate (or npm start for the demo); journalctl -u vendgate -n 50 says why it stopped';

/** The line for a listener that refused: the service is simply off (WARN), or it should be on (FAIL). */
function refused(name: string, service: ServiceState, what: string, port: number | string): CheckResult {
  if (service.running) {
    return fail(
      name,
      `the service is running (${service.how}) but nothing listens on port ${port}`,
      `journalctl -u vendgate -n 50 shows why the ${what} did not start (port taken? sudo ss -ltnp 'sport = :${port}')`,
    );
  }
  if (service.expected) return fail(name, 'service not running', NOT_RUNNING_HINT);
  return warn(name, 'service not running', NOT_RUNNING_HINT);
}

function portOf(url: string): string {
  return new URL(url).port || '80';
}

/** The two listeners: the check's name, the path asked, what it is, its port's setting, who needs that port fixed. */
const LISTENERS = {
  webhook: {
    name: 'webhook.listener',
    path: '/webhooks/health',
    what: 'webhook listener',
    setting: 'http.webhook.port',
    needs: 'the tunnel',
  },
  local: { name: 'local.listener', path: '/healthz', what: 'local listener', setting: 'http.local.port', needs: 'the kiosk page' },
} as const;

type Listener = (typeof LISTENERS)[keyof typeof LISTENERS] & { url: string | null; probe: Probe | null };

type Answered = Extract<Probe, { kind: 'answered' }>;

/**
 * The lines both listener checks share: a port only the service knows, nobody listening, no answer.
 * Otherwise the answer and the port, for the listener's own reading of it.
 */
function answered(service: ServiceState, l: Listener): CheckResult | { answer: Answered; url: string; port: string } {
  if (!l.url || !l.probe) {
    return warn(
      l.name,
      `${l.setting} is 0 (any free port): cannot be probed from outside the service`,
      `give the ${l.what} a fixed port; ${l.needs} needs one`,
    );
  }
  const port = portOf(l.url);
  if (l.probe.kind === 'refused') return refused(l.name, service, l.what, port);
  if (l.probe.kind === 'error')
    return fail(
      l.name,
      `${l.url}${l.path}: ${l.probe.message}`,
      'the listener accepts connections but does not answer: journalctl -u vendgate -n 50',
    );
  return { answer: l.probe, url: l.url, port };
}

/** The port answered, but not as vendgate's listener does. */
function notOurs(l: Listener, url: string, port: string, status: number): CheckResult {
  return fail(
    l.name,
    `${url}${l.path} answered HTTP ${status}: not vendgate's ${l.what}`,
    `another program holds port ${port} (sudo ss -ltnp 'sport = :${port}'): stop it, or ${movePortAdvice(l.setting, Number(port), null)} and run the selftest with the same option`,
  );
}

/** `GET /webhooks/health` on the webhook listener (the one the tunnel forwards to). */
export function webhookListenerCheck(service: ServiceState): CheckResult {
  const l: Listener = { ...LISTENERS.webhook, url: service.webhookUrl, probe: service.webhook };
  const seen = answered(service, l);
  if (!('answer' in seen)) return seen;
  const { answer, url, port } = seen;
  if (answer.status >= 200 && answer.status < 300) return pass(l.name, `${url}${l.path} answered in ${answer.ms} ms`);
  return notOurs(l, url, port, answer.status);
}

/** `GET /healthz` on the local listener: the service's own view (provider reachable, taking orders). */
export function localListenerCheck(service: ServiceState): CheckResult {
  const l: Listener = { ...LISTENERS.local, url: service.localUrl, probe: service.local };
  const seen = answered(service, l);
  if (!('answer' in seen)) return seen;
  const { answer, url, port } = seen;
  const health = parseHealth(answer.body);
  if (answer.status === 200) return pass(l.name, `${url}${l.path} answered in ${answer.ms} ms${health ? `: ${health}` : ''}`);
  if (answer.status === 503 && health !== null) {
    return fail(
      l.name,
      `the service reports a problem: ${health}`,
      'the lines above name the cause (provider, out of service by an input or over MQTT)',
    );
  }
  return notOurs(l, url, port, answer.status);
}

/** `{ok, checks: {provider: {ok, detail}, …}}` → "provider: reachable; service: taking orders". */
function parseHealth(body: string): string | null {
  try {
    const parsed = JSON.parse(body) as { checks?: Record<string, { ok?: boolean; detail?: string }> };
    if (!parsed.checks || typeof parsed.checks !== 'object') return null;
    return Object.entries(parsed.checks)
      .map(([key, c]) => `${key}: ${c.detail ?? (c.ok ? 'ok' : 'not ok')}`)
      .join('; ');
  } catch {
    return null;
  }
}
