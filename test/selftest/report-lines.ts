/**
 * The lines of a selftest report that do not depend on the device's hardware or fiscal register
 * (src/selftest/run.ts): the settings, the database and disk, the clock and provider, both listeners
 * and the tunnel, MQTT, and the pending work.
 */
export const REPORT_LINES = [
  'settings',
  'database',
  'disk',
  'clock',
  'provider',
  'webhook.listener',
  'webhook.tunnel',
  'local.listener',
  'mqtt',
  'pending.uncertain_vends',
  'pending.refunds',
  'pending.webhooks',
  'pending.outbox',
  'pending.alarms',
];
