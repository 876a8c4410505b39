import type { Settings } from '../../settings/index.js';
import { createProvider, ProviderError, type PaymentProvider } from '../../payments/index.js';
import { createSandboxProvider, sandboxDbPath } from '../../payments/sandbox/index.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import type { CheckResult, Exec } from '../types.js';
import { describeError, fail, pass, warn } from '../helpers.js';

export interface ProviderCheck {
  result: CheckResult;
  /** The provider's clock (its HTTP Date header) and ours when the answer came, for the clock check. */
  serverDate?: { theirs: number; ours: number };
}

const CREDENTIALS_HINT: Record<string, string> = {
  gerege:
    'check provider.clientId and VENDGATE_PROVIDER_CLIENT_SECRET in /etc/vendgate/secrets.env (test and live credentials are separate), then sudo systemctl restart vendgate',
  qutpay:
    'check VENDGATE_PROVIDER_API_KEY in /etc/vendgate/secrets.env (qp_test_… for tests, qp_live_… for real money), then sudo systemctl restart vendgate',
  qpay: 'check provider.clientId, provider.invoiceCode and VENDGATE_PROVIDER_CLIENT_SECRET in /etc/vendgate/secrets.env (QPay gives sandbox and production credentials separately), then sudo systemctl restart vendgate',
  kaspi:
    "check VENDGATE_PROVIDER_CLIENT_SECRET in /etc/vendgate/secrets.env against this device's entry (device.id) in the relay's kaspi-devices.json, then sudo systemctl restart vendgate",
  sandbox: 'the sandbox needs no credentials',
};

/**
 * Builds the provider exactly as the app does (createProvider; the sandbox with the same file) and
 * asks it to prove its credentials with a read. Never creates an invoice.
 */
export async function checkProvider(
  settings: Readonly<Settings>,
  deps: { clock: Clock; logger: Logger; fetch?: typeof fetch; provider?: PaymentProvider },
): Promise<ProviderCheck> {
  const name = 'provider';
  const conf = settings.provider;
  const keyProblem = liveKeyMismatch(settings);
  if (keyProblem) return { result: fail(name, keyProblem, CREDENTIALS_HINT.qutpay!) };

  let provider = deps.provider;
  let close = () => {};
  if (!provider && conf.name === 'sandbox') {
    // The same construction as app.ts: the sandbox keeps its invoices next to the database.
    const sandbox = createSandboxProvider(
      { clock: deps.clock, logger: deps.logger },
      {
        dbPath: sandboxDbPath(settings.storage.path),
        payUrl: (id) => `/sandbox/pay/${id}`,
        webhookSecret: conf.webhookSecrets[0] ?? 'sandbox-webhook-secret',
      },
    );
    provider = sandbox.provider;
    close = () => sandbox.close();
  }
  provider ??= await createProvider({ clock: deps.clock, logger: deps.logger, ...(deps.fetch ? { fetch: deps.fetch } : {}) }, settings);
  const where = conf.name === 'sandbox' ? 'sandbox' : `${conf.name} at ${conf.baseUrl}`;
  try {
    const started = Date.now();
    const answer = await provider.checkCredentials();
    const ours = deps.clock.now();
    const mode = settings.device.livemode ? 'live' : 'test';
    return {
      result: pass(name, `${where}: ${answer.detail} in ${Date.now() - started} ms (${mode} mode)`),
      ...(answer.serverDate !== undefined && conf.name !== 'sandbox' ? { serverDate: { theirs: answer.serverDate, ours } } : {}),
    };
  } catch (err) {
    return { result: providerFailure(err, where, conf.name) };
  } finally {
    close();
  }
}

function providerFailure(err: unknown, where: string, providerName: string): CheckResult {
  const name = 'provider';
  if (!(err instanceof ProviderError)) return fail(name, `${where}: ${describeError(err)}`, 'journalctl -u vendgate -n 50 may say more');
  switch (err.kind) {
    case 'network':
    case 'timeout':
      return fail(
        name,
        `${where} unreachable: ${describeError(err)}`,
        'check the network (ping 1.1.1.1), DNS and provider.baseUrl; for a simulator: is `vendgate simulate` running?',
      );
    case 'auth':
      return fail(name, `${where} refused the credentials: ${describeError(err)}`, CREDENTIALS_HINT[providerName] ?? '');
    case 'server':
    case 'rate_limited':
      if (providerName === 'kaspi' && (err.providerCode === 'kaspi_unreachable' || err.providerCode === 'kaspi_access_refused'))
        return fail(
          name,
          `${where}: the relay answered, but Kaspi did not take its call: ${describeError(err)}`,
          "on the relay's server: its address must be on Kaspi's whitelist and relay.kaspi.certFile/keyFile the certificate Kaspi issued (journalctl -u vendgate-relay)",
        );
      return fail(
        name,
        `${where} answered with an error: ${describeError(err)}`,
        'the provider has trouble: check its status page; the device keeps retrying',
      );
    default:
      return fail(name, `${where}: ${describeError(err)}`, 'check provider.baseUrl: it must be the API root, not the dashboard');
  }
}

/** QutPay says test or live in the key itself: a live key on a test device (or the reverse) is a mistake. */
function liveKeyMismatch(settings: Readonly<Settings>): string | null {
  const key = settings.provider.apiKey;
  if (settings.provider.name !== 'qutpay' || !key) return null;
  if (settings.device.livemode && key.startsWith('qp_test_'))
    return 'device.livemode is true but VENDGATE_PROVIDER_API_KEY is a test key (qp_test_…): customers would pay nothing';
  if (!settings.device.livemode && key.startsWith('qp_live_'))
    return 'device.livemode is false but VENDGATE_PROVIDER_API_KEY is a live key (qp_live_…): real money would be taken for test orders';
  return null;
}

/** The Pi has no real-time clock: before NTP answers it may think it is the day of its last shutdown. */
const EARLIEST_PLAUSIBLE = Date.UTC(2026, 0, 1);
const SKEW_WARN_MS = 10_000;

/**
 * timedatectl says whether NTP synchronised the clock; the provider's Date header says how far off
 * we are. Webhook signatures carry a timestamp, so a clock that is off by more than half the
 * tolerance is a FAIL.
 */
export async function checkClock(
  settings: Readonly<Settings>,
  deps: { clock: Clock; exec: Exec },
  serverDate: ProviderCheck['serverDate'],
  providerAnswered = serverDate !== undefined,
): Promise<CheckResult> {
  const name = 'clock';
  const now = deps.clock.now();
  const hint =
    'turn on time sync: sudo timedatectl set-ntp true; the network must allow NTP (UDP 123); timedatectl timesync-status shows the server';
  if (now < EARLIEST_PLAUSIBLE) return fail(name, `the clock says ${new Date(now).toISOString()}: it was never set`, hint);
  const timedatectl = await deps.exec('timedatectl', ['show', '-p', 'NTPSynchronized', '--value'], 2_000);
  const synced = timedatectl.code === 0 ? timedatectl.stdout.trim() === 'yes' : null;
  // The Date header has one-second resolution (truncated), and the answer takes a moment to
  // arrive: under two seconds of difference is no evidence of any skew at all.
  const skewMs = serverDate ? serverDate.ours - serverDate.theirs : null;
  const skewText =
    skewMs === null
      ? ''
      : Math.abs(skewMs) < 2_000
        ? "within 1 s of the provider's clock"
        : `${Math.round(Math.abs(skewMs) / 1000)} s ${skewMs < 0 ? 'behind' : 'ahead of'} the provider's clock`;
  const toleranceMs = settings.provider.toleranceSec * 1000;
  if (skewMs !== null && Math.abs(skewMs) > toleranceMs / 2) {
    return fail(name, `${skewText}: signed webhooks are refused beyond ${settings.provider.toleranceSec} s`, hint);
  }
  const skewBad = skewMs !== null && Math.abs(skewMs) > SKEW_WARN_MS;
  if (synced === true && !skewBad) return pass(name, ['synchronised (timedatectl)', skewText].filter(Boolean).join('; '));
  if (synced === false) return warn(name, ['not synchronised (timedatectl)', skewText].filter(Boolean).join('; '), hint);
  if (skewBad) return warn(name, skewText, hint);
  if (skewMs !== null) return pass(name, `${skewText} (timedatectl unavailable: ${timedatectl.error ?? 'no answer'})`);
  const noReference =
    settings.provider.name === 'sandbox'
      ? 'the sandbox has no clock of its own'
      : providerAnswered
        ? 'the provider sent no Date header'
        : 'the provider did not answer';
  return warn(
    name,
    `cannot tell: timedatectl unavailable (${timedatectl.error ?? 'no answer'}) and ${noReference}`,
    'on the Pi: timedatectl status (systemd-timesyncd keeps the clock)',
  );
}
