import type { Settings } from '../settings/index.js';
import { InstanceLockedError } from '../store/index.js';
import { PortInUseError } from '../util/http-listener.js';
import { HardwareStartError } from '../hardware/index.js';
import { movePortAdvice } from '../util/free-port.js';

/** A start-up failure a person can act on: what happened, in plain words, and what to do. */
export interface StartProblem {
  code: string;
  message: string;
  hint: string;
  [field: string]: unknown;
}

/** The settings that name a port this service listens on. */
function portSettings(settings: Readonly<Settings>): [setting: string, port: number][] {
  const ports: [string, number][] = [
    ['http.local.port', settings.http.local.port],
    ['http.webhook.port', settings.http.webhook.port],
  ];
  if (settings.mqtt.url === 'embedded') ports.push(['mqtt.embeddedPort', settings.mqtt.embeddedPort]);
  if (settings.provider.sandboxLanPort > 0) ports.push(['provider.sandboxLanPort', settings.provider.sandboxLanPort]);
  return ports;
}

/**
 * Turns the errors a technician meets at start (a port another program holds, a port below 1024,
 * an address this machine does not have) into a sentence and a next step; null for anything else,
 * which is then logged with its stack as a bug.
 */
export function describeStartError(err: unknown, settings: Readonly<Settings>, configSource: string): StartProblem | null {
  if (err instanceof PortInUseError) return portInUse(err.code, err.port, err.setting, configSource);
  if (err instanceof HardwareStartError)
    return { code: err.code, setting: err.setting, message: `${err.message} (${err.setting} in ${configSource})`, hint: err.hint };
  if (err instanceof InstanceLockedError) {
    return {
      code: err.code,
      holderPid: err.holderPid,
      lockPath: err.lockPath,
      message: 'another vendgate is already running on this database',
      hint: err.message,
    };
  }
  const e = err as NodeJS.ErrnoException & { port?: number; address?: string };
  if (!e || typeof e !== 'object' || typeof e.code !== 'string') return null;
  const setting = portSettings(settings).find(([, port]) => port === e.port)?.[0];
  const where = setting ? ` (${setting} in ${configSource})` : '';
  const port = e.port ?? '?';
  switch (e.code) {
    case 'EADDRINUSE':
      return { ...portInUse(e.code, port, setting ?? null, configSource), address: e.address ?? null };
    case 'EACCES':
      return {
        code: e.code,
        port,
        setting: setting ?? null,
        message: `not allowed to listen on port ${port}${where}`,
        hint: 'ports below 1024 need privileges the service does not have: choose a port of 1024 or above',
      };
    case 'EADDRNOTAVAIL':
      return {
        code: e.code,
        port,
        setting: setting ?? null,
        address: e.address ?? null,
        message: `this machine has no address ${e.address ?? ''}${where ? ` for port ${port}${where}` : ''}`.trim(),
        hint: 'use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface) as the host',
      };
    default:
      return null;
  }
}

function portInUse(code: string, port: number | string, setting: string | null, configSource: string): StartProblem {
  return {
    code,
    port,
    setting,
    message: `port ${port}${setting ? ` (${setting} in ${configSource})` : ''} is already in use by another program`,
    hint: `${setting && typeof port === 'number' ? `${movePortAdvice(setting, port, null)}, or ` : ''}find it with: sudo ss -ltnp 'sport = :${port}' — stop that program (another vendgate? sudo systemctl stop vendgate) or choose another port${setting ? ` in ${setting}` : ''}`,
  };
}
