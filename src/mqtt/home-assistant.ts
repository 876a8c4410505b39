import type { Topics } from './topics.js';
import { buildInfo } from '../version.js';

/** Counters the money path keeps (outbox.count names), shown as Home Assistant sensors. */
const COUNTERS: [name: string, label: string][] = [
  ['orders_created', 'Orders'],
  ['orders_paid', 'Paid orders'],
  ['vends_succeeded', 'Vends'],
  ['vends_failed', 'Failed vends'],
  ['vends_uncertain', 'Uncertain vends'],
  ['refunds_requested', 'Refunds requested'],
  ['refunds_succeeded', 'Refunds'],
  ['outbox_dropped', 'Dropped MQTT events'],
];

/**
 * Commands Home Assistant may press: the read-only ones. Home Assistant cannot sign, so the
 * commands that move money, goods or prices (out_of_service, test_vend, …) are not offered
 * (docs/security.md). Each press must carry a new requestId: the device answers an exact repeat
 * (a QoS 1 redelivery) from memory instead of running it again, so the payload is a template with
 * the time in it.
 */
const BUTTONS: { name: string; command: string; label: string; body: Record<string, unknown>; icon: string }[] = [
  { name: 'ping', command: 'ping', label: 'Ping', body: {}, icon: 'mdi:lan-check' },
  { name: 'selftest', command: 'selftest', label: 'Run selftest', body: {}, icon: 'mdi:clipboard-check-outline' },
];

/** The command_template of a button: `{"requestId":"ha-<name>-<time>", …body}` (Jinja, rendered by Home Assistant). */
export function buttonTemplate(name: string, body: Record<string, unknown>): string {
  const rest = JSON.stringify(body).slice(1, -1);
  return `{"requestId":"ha-${name}-{{ now().timestamp() }}"${rest ? `,${rest}` : ''}}`;
}

/**
 * Retained discovery configs (`<discovery prefix>/<component>/<deviceId>_<name>/config`) so Home
 * Assistant shows the machine without YAML: its state, counters, open alarms (a problem sensor),
 * whether the device and its payment provider are reachable, and buttons for the commands this
 * device allows.
 */
export function discoveryMessages(options: {
  discoveryPrefix: string;
  deviceId: string;
  mode: string;
  topics: Topics;
  /** The release (device sw_version, origin); defaults to this build's. */
  version?: string;
  /** Catalog slots: one stock sensor each (telemetry `stock.<slot>`). */
  slots?: string[];
}): { topic: string; payload: string }[] {
  const { discoveryPrefix, deviceId, topics } = options;
  const device = {
    identifiers: [`vendgate_${deviceId}`],
    name: `vendgate ${deviceId}`,
    manufacturer: 'vendgate',
    model: options.mode,
    sw_version: options.version ?? buildInfo().version,
  };
  const origin = { name: 'vendgate', sw_version: device.sw_version };
  const common = {
    availability_topic: topics.status,
    payload_available: 'online',
    payload_not_available: 'offline',
    device,
    origin,
  };
  const entity = (component: string, name: string, config: Record<string, unknown>, base: Record<string, unknown> = common) => ({
    topic: `${discoveryPrefix}/${component}/${deviceId}_${name}/config`,
    payload: JSON.stringify({ unique_id: `vendgate_${deviceId}_${name}`, ...base, ...config }),
  });
  return [
    entity('sensor', 'state', {
      name: 'State',
      state_topic: topics.state,
      value_template: '{{ value_json.phase }}',
      json_attributes_topic: topics.state,
      icon: 'mdi:store',
    }),
    entity('sensor', 'alarms', {
      name: 'Open alarms',
      state_topic: topics.telemetry,
      value_template: '{{ value_json.openAlarms | count }}',
      json_attributes_topic: topics.telemetry,
      json_attributes_template: '{{ {"alarms": value_json.openAlarms} | tojson }}',
      state_class: 'measurement',
      icon: 'mdi:alarm-light',
    }),
    entity('sensor', 'outbox_depth', {
      name: 'MQTT backlog',
      state_topic: topics.telemetry,
      value_template: '{{ value_json.outboxDepth }}',
      state_class: 'measurement',
      entity_category: 'diagnostic',
    }),
    entity('sensor', 'catalog_version', {
      name: 'Catalog version',
      state_topic: topics.relative('catalog'),
      value_template: '{{ value_json.version }}',
      entity_category: 'diagnostic',
      icon: 'mdi:tag-text',
    }),
    ...(options.slots ?? []).map((slot) =>
      entity('sensor', `stock_${slot}`, {
        name: `Stock ${slot}`,
        state_topic: topics.telemetry,
        value_template: `{{ value_json.stock['${slot}'] }}`,
        state_class: 'measurement',
        icon: 'mdi:package-variant',
      }),
    ),
    ...COUNTERS.map(([name, label]) =>
      entity('sensor', name, {
        name: label,
        state_topic: topics.telemetry,
        value_template: `{{ value_json.counters.${name} | default(0) }}`,
        state_class: 'total_increasing',
      }),
    ),
    entity('binary_sensor', 'problem', {
      name: 'Problem',
      device_class: 'problem',
      state_topic: topics.telemetry,
      value_template: "{{ 'ON' if (value_json.openAlarms | count) > 0 else 'OFF' }}",
    }),
    entity('binary_sensor', 'provider_reachable', {
      name: 'Payment provider',
      device_class: 'connectivity',
      state_topic: topics.telemetry,
      value_template: "{{ 'ON' if value_json.providerReachable else 'OFF' }}",
      entity_category: 'diagnostic',
    }),
    // The device itself: its own retained status (and last will) is the state, so no availability.
    entity(
      'binary_sensor',
      'online',
      {
        name: 'Online',
        device_class: 'connectivity',
        state_topic: topics.status,
        payload_on: 'online',
        payload_off: 'offline',
        entity_category: 'diagnostic',
      },
      { device, origin },
    ),
    ...BUTTONS.map((button) =>
      entity('button', button.name, {
        name: button.label,
        command_topic: `${topics.base}/cmd/${button.command}`,
        command_template: buttonTemplate(button.name, button.body),
        icon: button.icon,
      }),
    ),
  ];
}
