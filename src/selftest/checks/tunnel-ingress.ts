import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { Settings } from '../../settings/index.js';
import type { CheckResult, Exec } from '../types.js';
import { fail, oneLine, pass, warn } from '../helpers.js';

export const CLOUDFLARED_CONFIG_PATH = '/etc/vendgate/cloudflared.yml';
const NAME = 'tunnel.ingress';
const HINT =
  'fix /etc/vendgate/cloudflared.yml (systemd/cloudflared.yml.example): ^/webhooks/ to http://127.0.0.1:<http.webhook.port>, then - service: http_status:404; sudo systemctl restart vendgate-tunnel';
/** Paths a tunnel must never hand to the local listener. */
const LOCAL_PATHS = ['/', '/api/state', '/metrics'];

/** The service a request matches, from `cloudflared tunnel ingress rule`'s "service: …" line. */
export function matchedService(stdout: string): string | null {
  return /^\s*service:\s*(\S+)/m.exec(stdout)?.[1] ?? null;
}

/**
 * Asks cloudflared itself how it would route requests under this device's ingress rules: the rules
 * must be valid, a webhook must reach the webhook listener, and the kiosk, API and metrics must not
 * reach the local listener. Null (no line) where cloudflared is not installed.
 */
export async function checkTunnelIngress(
  settings: Readonly<Settings>,
  deps: { exec: Exec; configPath?: string },
  timeoutMs: number,
): Promise<CheckResult | null> {
  const configPath = deps.configPath ?? CLOUDFLARED_CONFIG_PATH;
  const version = await deps.exec('cloudflared', ['--version'], timeoutMs);
  if (version.code === null && /ENOENT/.test(version.error ?? '')) return null;
  if (!existsSync(configPath)) {
    if (!settings.http.webhook.publicUrl) return null;
    return warn(
      NAME,
      `cloudflared is installed but ${configPath} does not exist: the rules are not checked`,
      'a tunnel managed in the Cloudflare dashboard ignores local rules; for a locally managed one: sudo scripts/install-pi.sh --tunnel HOSTNAME',
    );
  }
  try {
    accessSync(configPath, constants.R_OK);
  } catch {
    return warn(
      NAME,
      `${configPath} is not readable by this user`,
      'sudo chown root:vendgate /etc/vendgate/cloudflared.yml && sudo chmod 0640 /etc/vendgate/cloudflared.yml (it holds no secret)',
    );
  }
  const tunnel = ['tunnel', '--config', configPath, 'ingress'];
  const validated = await deps.exec('cloudflared', [...tunnel, 'validate'], timeoutMs);
  if (validated.code !== 0)
    return fail(NAME, `cloudflared rejects the rules in ${configPath}: ${oneLine(validated.error ?? validated.stdout, 160)}`, HINT);

  const host = hostname(settings, configPath);
  if (!host) return warn(NAME, `no host name to test: set http.webhook.publicUrl, or hostname: in the rules of ${configPath}`, HINT);
  const webhookTarget = `http://127.0.0.1:${settings.http.webhook.port}`;
  const localPort = `:${settings.http.local.port}`;
  const rule = async (path: string) =>
    matchedService((await deps.exec('cloudflared', [...tunnel, 'rule', `https://${host}${path}`], timeoutMs)).stdout);

  const webhookPath = `/webhooks/${settings.provider.name}`;
  const webhook = await rule(webhookPath);
  const webhookOk = webhook !== null && webhook.replace(/\/+$/, '').replace('//localhost:', '//127.0.0.1:') === webhookTarget;
  if (!webhookOk)
    return fail(NAME, `https://${host}${webhookPath} goes to ${webhook ?? 'no rule'}, not the webhook listener ${webhookTarget}`, HINT);
  for (const path of LOCAL_PATHS) {
    const service = await rule(path);
    if (service === null || service.includes(localPort) || service === webhook) {
      return fail(NAME, `https://${host}${path} goes to ${service ?? 'no rule'}: only /webhooks/ may pass the tunnel`, HINT);
    }
  }
  return pass(
    NAME,
    `${configPath}: ${webhookPath} → ${webhookTarget}; ${LOCAL_PATHS.join(', ')} → not the local listener (cloudflared ${oneLine(version.stdout, 40)})`,
  );
}

function hostname(settings: Readonly<Settings>, configPath: string): string | null {
  if (settings.http.webhook.publicUrl) return new URL(settings.http.webhook.publicUrl).hostname;
  try {
    const config = parse(readFileSync(configPath, 'utf8')) as { ingress?: { hostname?: string }[] };
    return config.ingress?.find((r) => typeof r.hostname === 'string')?.hostname ?? null;
  } catch {
    return null;
  }
}
