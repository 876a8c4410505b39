import { connect as tcpConnect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmbeddedBroker, type EmbeddedBroker } from '../../src/mqtt/embedded-broker.js';

/**
 * MQTT 3.1.1 §3.1.3.1: "If the Client supplies a zero-byte ClientId with CleanSession set to 0, the
 * Server MUST respond to the CONNECT Packet with a CONNACK return code 0x02 (Identifier rejected) and
 * then close the Network Connection" [MQTT-3.1.3-8]. The packets are written byte by byte here, as
 * the specification lays them out, so no client library can hide or fix what is sent.
 */
function connectPacket(clientId: string, clean: boolean): Buffer {
  const id = Buffer.from(clientId, 'utf8');
  const variable = Buffer.from([0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, clean ? 0x02 : 0x00, 0x00, 0x3c]);
  const payload = Buffer.concat([Buffer.from([id.length >> 8, id.length & 0xff]), id]);
  const remaining = variable.length + payload.length;
  return Buffer.concat([Buffer.from([0x10, remaining]), variable, payload]);
}

/** Sends one CONNECT; resolves with the bytes received and whether the broker closed the connection. */
function rawConnect(port: number, packet: Buffer): Promise<{ bytes: Buffer; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve({ bytes: Buffer.concat(chunks), closed });
    };
    socket.on('connect', () => socket.write(packet));
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      // An accepted client stays connected: 4 bytes of CONNACK are the whole answer.
      if (Buffer.concat(chunks).length >= 4 && Buffer.concat(chunks)[3] === 0x00) setTimeout(() => finish(false), 50);
    });
    socket.on('close', () => finish(true));
    socket.on('error', (err) => (settled ? undefined : reject(err)));
  });
}

let broker: EmbeddedBroker | null = null;
afterEach(async () => {
  await broker?.close();
  broker = null;
});

describe.each([
  ['open (tests, demo)', undefined],
  ['with a login (the service)', { login: { username: 'vendgate', password: 'secret' } }],
])('embedded broker %s: client identifiers', (_name, access) => {
  it('refuses a zero-length client id with a persistent session: CONNACK 0x02, then closes', async () => {
    broker = await startEmbeddedBroker({ access });
    const answer = await rawConnect(broker.port, connectPacket('', false));
    expect([...answer.bytes]).toEqual([0x20, 0x02, 0x00, 0x02]);
    expect(answer.closed).toBe(true);
  });

  it('accepts a zero-length client id with a clean session, and a named persistent one', async () => {
    broker = await startEmbeddedBroker({ access });
    const clean = await rawConnect(broker.port, connectPacket('', true));
    expect([...clean.bytes.subarray(0, 4)]).toEqual([0x20, 0x02, 0x00, 0x00]);
    const named = await rawConnect(broker.port, connectPacket('probe-1', false));
    expect([...named.bytes.subarray(0, 4)]).toEqual([0x20, 0x02, 0x00, 0x00]);
  });
});
