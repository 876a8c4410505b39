import type { Settings } from '../../settings/index.js';
import { checkMqttRoundTrip, embeddedBrokerIdentity, embeddedInstance, embeddedRefusal, type MqttCheckResult } from '../../mqtt/index.js';
import type { Db } from '../../store/index.js';
import { firstFreePort, movePortAdvice } from '../../util/free-port.js';
import type { CheckResult } from '../types.js';
import { fail, pass, warn } from '../helpers.js';
import type { ServiceState } from './listeners.js';

const HINTS: Record<string, string> = {
  refused: 'nothing listens at mqtt.url: is the broker running (systemctl status mosquitto)? check host and port',
  unreachable: 'check the network, DNS and the host in mqtt.url',
  timeout: 'a firewall may drop the connection; check host and port in mqtt.url',
  auth: "check mqtt.username and VENDGATE_MQTT_PASSWORD in /etc/vendgate/secrets.env, and the broker's ACL for <prefix>/<deviceId>/#",
  tls: "check mqtt.caPath (the broker's CA), the host name in the certificate, and the clock",
  config: 'fix the path in the configuration',
  no_echo: 'the broker accepted the connection but did not deliver our message back: check its ACL for <prefix>/<deviceId>/#',
  error: "see the detail; the broker's log says more",
};

/**
 * The MQTT round trip. `embedded` is a broker inside the service: with the service stopped it is
 * simply not there (WARN). If something else answers on its port, the service would use that broker
 * instead of its own, which is worth a WARN of its own.
 */
export async function checkMqtt(
  settings: Readonly<Settings>,
  service: ServiceState,
  options: { deviceId: string; timeoutMs: number; db?: Db | null },
): Promise<{ result: CheckResult; reachable: boolean }> {
  const name = 'mqtt';
  const mqtt = settings.mqtt;
  if (mqtt.url === '') return { reachable: false, result: pass(name, 'disabled (mqtt.url is empty): no fleet monitoring') };
  let refused: ReturnType<typeof embeddedRefusal> = null;
  try {
    refused = mqtt.url === 'embedded' && service.running && options.db ? embeddedRefusal(options.db) : null;
  } catch {
    refused = null;
  }
  if (refused) {
    // The service runs without MQTT: its embedded broker found the port taken and it logs in nowhere else.
    return {
      reachable: false,
      result: fail(
        name,
        `the service runs without MQTT: at ${refused.at} ${refused.reason}, so its embedded broker did not start (it logs in to no other broker)`,
        await brokerPortHint(refused.port),
      ),
    };
  }
  const round: MqttCheckResult = await checkMqttRoundTrip(mqtt, options);
  const embedded = mqtt.url === 'embedded';
  if (round.ok) {
    if (embedded && !service.running) {
      // Another program's broker: described, never published to.
      return {
        reachable: false,
        result: warn(
          name,
          `the service is not running, yet a broker answers on the embedded broker's port: ${round.detail}`,
          `the service would use that broker instead of starting its own: set mqtt.url: ${round.url} to use it on purpose, or change mqtt.embeddedPort`,
        ),
      };
    }
    if (embedded) {
      const foreign = await notOurBroker(settings, options);
      if (foreign) return { reachable: false, result: foreign };
    }
    return { reachable: true, result: pass(name, `${embedded ? 'embedded broker: ' : ''}${round.detail}`) };
  }
  if (embedded && round.reason === 'refused' && !service.running) {
    const result = {
      detail: 'embedded broker not running: it lives inside the service, which is not running',
      hint: 'start the service (sudo systemctl start vendgate) and run the selftest again',
    };
    return { reachable: false, result: service.expected ? fail(name, result.detail, result.hint) : warn(name, result.detail, result.hint) };
  }
  return { reachable: false, result: fail(name, round.detail, HINTS[round.reason ?? 'error'] ?? HINTS.error!) };
}

/** One line: how to start beside a broker that holds the port (the demo's flag, the device's setting). */
export async function brokerPortHint(port: number): Promise<string> {
  const free = await firstFreePort('127.0.0.1', port + 1);
  return `another program holds port ${port}: ${movePortAdvice('mqtt.embeddedPort', port, free)}, or set mqtt.url to that broker's URL with its own login to use it on purpose`;
}

/**
 * The FAIL line when the broker on the embedded port is not the running service's (it lacks the id
 * the service wrote), or null when it is the service's own.
 */
async function notOurBroker(
  settings: Readonly<Settings>,
  options: { deviceId: string; timeoutMs: number; db?: Db | null },
): Promise<CheckResult | null> {
  const port = settings.mqtt.embeddedPort;
  let recorded: ReturnType<typeof embeddedInstance> = null;
  try {
    recorded = options.db ? embeddedInstance(options.db) : null;
  } catch {
    recorded = null;
  }
  if (recorded && recorded.port === port) {
    const identity = await embeddedBrokerIdentity(settings.mqtt, { ...options, expected: recorded.instance });
    if (identity === 'ours') return null;
  }
  const elsewhere = recorded && recorded.port !== port ? recorded.port : null;
  return fail(
    'mqtt',
    `a broker answers on 127.0.0.1:${port}, but it is not this service's embedded broker (it does not hold the id the service wrote): nothing was published to it`,
    elsewhere !== null
      ? `the service's own broker listens on port ${elsewhere}: vendgate selftest --broker-port ${elsewhere}`
      : await brokerPortHint(port),
  );
}
