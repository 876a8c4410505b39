import type { Topics } from './topics.js';

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
 * Retained discovery configs (`<discovery prefix>/sensor/<deviceId>_<name>/config`) so Home
 * Assistant shows the machine without YAML: its state, its counters and how many alarms are open.
 */
export function discoveryMessages(options: {
  discoveryPrefix: string;
  deviceId: string;
  mode: string;
  topics: Topics;
  /** Catalog slots: one stock sensor each (telemetry `stock.<slot>`). */
  slots?: string[];
}): { topic: string; payload: string }[] {
  const { discoveryPrefix, deviceId, topics } = options;
  const device = {
    identifiers: [`vendgate_${deviceId}`],
    name: `vendgate ${deviceId}`,
    manufacturer: 'vendgate',
    model: options.mode,
  };
  const common = {
    availability_topic: topics.status,
    payload_available: 'online',
    payload_not_available: 'offline',
    device,
  };
  const sensor = (name: string, config: Record<string, unknown>) => ({
    topic: `${discoveryPrefix}/sensor/${deviceId}_${name}/config`,
    payload: JSON.stringify({ unique_id: `vendgate_${deviceId}_${name}`, ...common, ...config }),
  });
  return [
    sensor('state', {
      name: 'State', state_topic: topics.state, value_template: '{{ value_json.phase }}',
      json_attributes_topic: topics.state, icon: 'mdi:store',
    }),
    sensor('alarms', {
      name: 'Open alarms', state_topic: topics.telemetry, value_template: '{{ value_json.openAlarms | count }}',
      json_attributes_topic: topics.telemetry, json_attributes_template: '{{ {"alarms": value_json.openAlarms} | tojson }}',
      state_class: 'measurement', icon: 'mdi:alarm-light',
    }),
    sensor('outbox_depth', {
      name: 'MQTT backlog', state_topic: topics.telemetry, value_template: '{{ value_json.outboxDepth }}',
      state_class: 'measurement', entity_category: 'diagnostic',
    }),
    sensor('catalog_version', {
      name: 'Catalog version', state_topic: topics.relative('catalog'), value_template: '{{ value_json.version }}',
      entity_category: 'diagnostic', icon: 'mdi:tag-text',
    }),
    ...(options.slots ?? []).map((slot) => sensor(`stock_${slot}`, {
      name: `Stock ${slot}`, state_topic: topics.telemetry, value_template: `{{ value_json.stock['${slot}'] }}`,
      state_class: 'measurement', icon: 'mdi:package-variant',
    })),
    ...COUNTERS.map(([name, label]) => sensor(name, {
      name: label, state_topic: topics.telemetry,
      value_template: `{{ value_json.counters.${name} | default(0) }}`, state_class: 'total_increasing',
    })),
  ];
}
