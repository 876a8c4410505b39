import type { Settings } from '../../settings/index.js';
import type { Db } from '../../store/index.js';
import type { CheckResult } from '../types.js';
import { describeError, fail, pass, probe, warn } from '../helpers.js';
import { signedTestEvent } from '../test-event.js';
import { providerWebhooks } from '../../payments/index.js';
import type { ServiceState } from './listeners.js';

const TUNNEL_HINT =
  'is the tunnel up? systemctl status vendgate-tunnel; journalctl -u vendgate-tunnel -n 50; the hostname must resolve to the tunnel';
const INGRESS_HINT =
  'the tunnel must forward only ^/webhooks/ to the webhook listener (http://127.0.0.1:<http.webhook.port>) and end with http_status:404 (systemd/cloudflared.yml.example)';

/**
 * Sends a signed test event to the public URL and looks for it in this device's inbox: proof that a
 * provider's webhook would arrive here, through the tunnel, and pass verification. Also makes sure
 * the tunnel does not expose the local API.
 */
export async function checkTunnel(
  settings: Readonly<Settings>,
  deps: { fetch: typeof fetch; db: Db | null; now: () => number },
  service: ServiceState,
  timeoutMs: number,
): Promise<CheckResult | null> {
  const name = 'webhook.tunnel';
  // Kaspi QR sends no webhooks: its payments are polled through the fleet relay (the provider check proves that path).
  if (settings.provider.name === 'kaspi') return null;
  const publicUrl = settings.http.webhook.publicUrl;
  if (!publicUrl) {
    // The sandbox delivers its webhooks inside the process: there is no tunnel to test.
    if (settings.provider.name === 'sandbox') return null;
    return warn(
      name,
      'http.webhook.publicUrl is not set: the round trip through the tunnel is not tested',
      "set http.webhook.publicUrl to the tunnel's public address; until webhooks arrive the device learns of payments by polling only",
    );
  }
  const base = publicUrl.replace(/\/+$/, '');
  // A provider that signs nothing (QPay): its selftest callback is marked with the client secret instead.
  const secret =
    providerWebhooks(settings.provider.name)?.signed === false
      ? (settings.provider.clientSecret ?? '')
      : (settings.provider.webhookSecrets[0] ?? 'sandbox-webhook-secret');
  const event = signedTestEvent(settings.provider.name, { secret, livemode: settings.device.livemode, nowMs: deps.now() });
  const url = `${base}${event.path}`;
  const started = Date.now();
  let status: number;
  try {
    const response = await deps.fetch(url, {
      method: 'POST',
      headers: event.headers,
      body: new Uint8Array(event.body),
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    status = response.status;
    await response.arrayBuffer();
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    return fail(
      name,
      `${url}: ${(err as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : describeError(cause ?? err)}`,
      TUNNEL_HINT,
    );
  }
  const rttMs = Date.now() - started;
  if (status >= 200 && status < 300) {
    const exposed = await exposesLocalApi(deps.fetch, base, timeoutMs);
    if (exposed) return fail(name, `the tunnel also exposes the local API (${exposed})`, INGRESS_HINT);
    if (!deps.db) return pass(name, `signed test event accepted through ${base} in ${rttMs} ms (inbox not checked: no database)`);
    const arrived = deps.db.prepare('SELECT 1 FROM webhook_events WHERE event_id = ?').get(event.eventId) !== undefined;
    if (arrived) return pass(name, `signed test event came back through ${base} into this device's inbox in ${rttMs} ms`);
    return warn(
      name,
      `${base} accepted the test event in ${rttMs} ms but it is not in this device's inbox`,
      "the public URL (or the tunnel) leads to another device: check http.webhook.publicUrl and the tunnel's hostname",
    );
  }
  if (status === 400) {
    return fail(name, `${url} answered 400: the listener refused the test event's signature`, signatureHint(settings.provider.name));
  }
  if (status === 404 || status === 405)
    return fail(name, `${url} answered ${status}: the tunnel does not route ${event.path} to this listener`, INGRESS_HINT);
  if (status >= 500 && !service.running && !service.expected) {
    return warn(name, `the tunnel answered ${status}: service not running`, 'start it: sudo systemctl start vendgate');
  }
  if (status >= 500) return fail(name, `${url} answered ${status}: the tunnel cannot reach the webhook listener`, INGRESS_HINT);
  return fail(name, `${url} answered ${status}`, TUNNEL_HINT);
}

/** A tunnel that forwards everything would put the kiosk API on the internet. */
async function exposesLocalApi(fetchFn: typeof fetch, base: string, timeoutMs: number): Promise<string | null> {
  for (const path of ['/api/state', '/healthz']) {
    const answer = await probe(fetchFn, `${base}${path}`, timeoutMs);
    if (answer.kind === 'answered' && answer.status >= 200 && answer.status < 300) return `${path} answered ${answer.status}`;
  }
  return null;
}

/** What a refused test event points to: other secrets, or a tunnel that drops the provider's own headers. */
function signatureHint(provider: string): string {
  const restart =
    'the running service has other webhook secrets than this configuration: sudo systemctl restart vendgate after editing /etc/vendgate/secrets.env';
  const knowledge = providerWebhooks(provider);
  const headers = knowledge?.signed ? knowledge.headers : [];
  return headers.length === 0 ? restart : `${restart}; or the tunnel drops the ${headers.join(', ')} header(s) the listener reads`;
}
