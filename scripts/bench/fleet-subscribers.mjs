#!/usr/bin/env node
/**
 * N lightweight fleet devices in one process, for scripts/bench/relay.mjs: each a persistent MQTT
 * session (clean: false) subscribed to its own `<prefix>/<id>/webhooks/+`, with its retained route
 * announcement — what a real device's webhook subscription does, without the gateway around it.
 * Prints one JSON line when all are subscribed, then one per second with the messages received.
 *
 *   node scripts/bench/fleet-subscribers.mjs URL PREFIX COUNT
 */
import mqtt from 'mqtt';

const [url, prefix, countText] = process.argv.slice(2);
const count = Number(countText);
let received = 0;
let ready = 0;
const clients = [];
for (let i = 0; i < count; i += 1) {
  const id = `sub-${i}`;
  const client = mqtt.connect(url, {
    clientId: `${prefix}-${id}-webhooks`,
    clean: false,
    protocolVersion: 4,
    reconnectPeriod: 1_000,
    keepalive: 60,
  });
  client.on('error', () => {});
  client.on('message', () => {
    received += 1;
  });
  client.once('connect', async () => {
    await client.subscribeAsync(`${prefix}/${id}/webhooks/+`, { qos: 1 });
    await client.publishAsync(
      `${prefix}/${id}/route`,
      JSON.stringify({ v: 1, deviceId: id, referencePrefixes: [`${id}-db-`], providers: ['gerege'], at: new Date().toISOString() }),
      { qos: 1, retain: true },
    );
    ready += 1;
    if (ready === count) process.stdout.write(`${JSON.stringify({ ready, rssMb: Math.round(process.memoryUsage().rss / 2 ** 20) })}\n`);
  });
  clients.push(client);
}
setInterval(() => process.stdout.write(`${JSON.stringify({ received })}\n`), 1_000);
process.once('SIGTERM', async () => {
  // Withdraw the routes so a shared broker keeps nothing of the run.
  await Promise.all(clients.map((c, i) => c.publishAsync(`${prefix}/sub-${i}/route`, '', { qos: 1, retain: true }).catch(() => {})));
  await Promise.all(clients.map((c) => c.endAsync(true)));
  process.exit(0);
});
