#!/usr/bin/env node
/**
 * Light devices for `npm run bench:fleet`: many devices in one process, each with what a real
 * device's fleet webhook session does on the wire — its own login, a persistent session
 * (`<prefix>-<id>_webhooks`, clean false), SUBSCRIBE `<prefix>/<id>/webhooks/+` QoS 1, a retained
 * route announcement, a PUBACK for each webhook — and nothing else (no database, no HTTP). Raw
 * MQTT 3.1.1 packets (mqtt-packet), a few KB per device instead of a client library's ~100 KB.
 *
 * Reconnects: `--backoff current` draws each wait with the device's own backoffDelay (full jitter,
 * dist/mqtt/connection.js); `--backoff baseline` with the formula of cecb1e4 (exponential ±20 %).
 * Like the device, a session the broker kept is not subscribed or announced again.
 *
 * Reports to its parent over IPC: { connected }, { got: [[eventId, device, topicDevice, ms]] },
 * { reconnects: [[device, msSinceLoss]] }.
 */
import { connect } from 'node:net';
import { parseArgs } from 'node:util';
import mqttPacket from 'mqtt-packet';
import { backoffDelay } from '../../dist/mqtt/connection.js';

const { values: a } = parseArgs({
  options: {
    port: { type: 'string' },
    prefix: { type: 'string', default: 'vendgate' },
    from: { type: 'string' },
    to: { type: 'string' },
    db: { type: 'string', default: 'ab12cd' },
    backoff: { type: 'string', default: 'current' },
    'min-ms': { type: 'string', default: '1000' },
    'max-ms': { type: 'string', default: '60000' },
    'connect-per-tick': { type: 'string', default: '50' },
    // As the device's mqtt.connectTimeoutMs (10 s): no CONNACK by then, drop the socket and back off.
    'connect-timeout-ms': { type: 'string', default: '10000' },
  },
});
const PORT = Number(a.port);
const PREFIX = a.prefix;
const MIN = Number(a['min-ms']);
const MAX = Number(a['max-ms']);
const CONNECT_TIMEOUT = Number(a['connect-timeout-ms']);
const baselineDelay = (attempt) => {
  const base = Math.min(MAX, MIN * 2 ** Math.min(attempt, 20));
  return Math.round(Math.min(MAX, base * (0.8 + 0.4 * Math.random())));
};
const delayFor = a.backoff === 'baseline' ? baselineDelay : (attempt) => backoffDelay(attempt, MIN, MAX);

let got = [];
let reconnects = [];
let connected = 0;
const send = (m) => process.send?.(m);
setInterval(() => {
  if (got.length) send({ got });
  if (reconnects.length) send({ reconnects });
  got = [];
  reconnects = [];
  send({ connected });
}, 200).unref();

function device(id) {
  const d = { id, attempt: 0, lostAt: null, up: false, announced: false, socket: null };
  const route = JSON.stringify({
    v: 1,
    deviceId: id,
    referencePrefixes: [`${id}-${a.db}-`],
    providers: ['gerege'],
    at: new Date().toISOString(),
  });
  const filter = `${PREFIX}/${id}/webhooks/+`;
  function retry() {
    const wait = delayFor(d.attempt);
    d.attempt += 1;
    setTimeout(open, wait);
  }
  function open() {
    const socket = connect(PORT, '127.0.0.1');
    d.socket = socket;
    const parser = mqttPacket.parser({ protocolVersion: 4 });
    socket.setNoDelay(true);
    // A handshake the broker's full accept queue dropped still looks ESTABLISHED here (syncookies):
    // without this the device waited for its CONNACK forever and the fleet never came up.
    const connectTimer = setTimeout(() => socket.destroy(), CONNECT_TIMEOUT);
    socket.on('connect', () => {
      socket.write(
        mqttPacket.generate({
          cmd: 'connect',
          protocolId: 'MQTT',
          protocolVersion: 4,
          clean: false,
          clientId: `${PREFIX}-${id}_webhooks`,
          keepalive: 300,
          username: id,
          password: Buffer.from(`pw-${id}`),
        }),
      );
    });
    parser.on('packet', (p) => {
      if (p.cmd === 'connack') {
        clearTimeout(connectTimer);
        if (p.returnCode !== 0) return socket.destroy();
        d.attempt = 0;
        d.up = true;
        connected += 1;
        if (d.lostAt !== null) reconnects.push([id, Date.now() - d.lostAt]);
        d.lostAt = null;
        if (p.sessionPresent && d.announced) return;
        socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: filter, qos: 1 }] }));
        socket.write(
          mqttPacket.generate({ cmd: 'publish', topic: `${PREFIX}/${id}/route`, payload: route, qos: 1, retain: true, messageId: 2 }),
        );
        d.announced = true;
      } else if (p.cmd === 'publish') {
        const at = Date.now();
        if (p.qos > 0) socket.write(mqttPacket.generate({ cmd: 'puback', messageId: p.messageId }));
        const payload = p.payload.toString();
        const eventId = /"gerege-event-id":"([^"]+)"/.exec(payload)?.[1] ?? '?';
        got.push([eventId, id, p.topic.split('/')[1], at]);
      }
    });
    socket.on('data', (chunk) => parser.parse(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(connectTimer);
      if (d.up) {
        connected -= 1;
        d.lostAt = Date.now();
      } else d.lostAt ??= Date.now();
      d.up = false;
      retry();
    });
  }
  return { open };
}

const from = Number(a.from);
const to = Number(a.to);
const devices = [];
for (let i = from; i < to; i += 1) devices.push(device(`bd-${i}`));
// Start a few per tick, as a fleet powering up does (and as a loopback handshake queue allows).
let next = 0;
const perTick = Number(a['connect-per-tick']);
const starter = setInterval(() => {
  for (let k = 0; k < perTick && next < devices.length; k += 1) devices[next++].open();
  if (next >= devices.length) clearInterval(starter);
}, 10);
process.on('disconnect', () => process.exit(0));
