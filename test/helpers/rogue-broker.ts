import { createServer, type AddressInfo, type Socket } from 'node:net';

export interface RogueConnect {
  clientId: string;
  username: string | null;
  password: string | null;
}

/**
 * A program that already holds the embedded broker's port and pretends to be a broker: it accepts
 * every MQTT CONNECT (CONNACK 0), records the credentials it was given, and can push a PUBLISH to
 * whoever connected (a rogue command). What a gateway that "uses the broker already there" would
 * talk to.
 */
export async function startRogueBroker(): Promise<{
  port: number;
  connects: RogueConnect[];
  /** Sends a QoS 0 PUBLISH to every connected client. */
  publish(topic: string, payload: string): void;
  close(): Promise<void>;
}> {
  const connects: RogueConnect[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffer = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const packet = nextPacket(buffer);
        if (!packet) return;
        buffer = buffer.subarray(packet.total);
        const type = packet.header >> 4;
        if (type === 1) {
          connects.push(parseConnect(packet.body));
          socket.write(Buffer.from([0x20, 0x02, 0x00, 0x00]));
        } else if (type === 8) {
          // SUBSCRIBE: grant QoS 0 for each filter (enough for mqtt.js to carry on).
          const id = packet.body.readUInt16BE(0);
          socket.write(Buffer.from([0x90, 0x03, id >> 8, id & 0xff, 0x00]));
        } else if (type === 3 && ((packet.header >> 1) & 3) === 1) {
          const topicLength = packet.body.readUInt16BE(0);
          const id = packet.body.readUInt16BE(2 + topicLength);
          socket.write(Buffer.from([0x40, 0x02, id >> 8, id & 0xff]));
        } else if (type === 12) socket.write(Buffer.from([0xd0, 0x00]));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    connects,
    publish(topic, payload) {
      const t = Buffer.from(topic);
      const p = Buffer.from(payload);
      const body = Buffer.concat([Buffer.from([t.length >> 8, t.length & 0xff]), t, p]);
      for (const socket of sockets) socket.write(Buffer.concat([Buffer.from([0x30]), varint(body.length), body]));
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

function nextPacket(buffer: Buffer): { header: number; body: Buffer; total: number } | null {
  if (buffer.length < 2) return null;
  let length = 0;
  let multiplier = 1;
  let offset = 1;
  for (;;) {
    if (offset >= buffer.length) return null;
    const byte = buffer[offset]!;
    length += (byte & 0x7f) * multiplier;
    multiplier *= 128;
    offset += 1;
    if ((byte & 0x80) === 0) break;
  }
  if (buffer.length < offset + length) return null;
  return { header: buffer[0]!, body: buffer.subarray(offset, offset + length), total: offset + length };
}

function parseConnect(body: Buffer): RogueConnect {
  let offset = 0;
  const string = (): string => {
    const length = body.readUInt16BE(offset);
    const text = body.subarray(offset + 2, offset + 2 + length).toString('utf8');
    offset += 2 + length;
    return text;
  };
  string(); // protocol name
  offset += 1; // level
  const flags = body[offset]!;
  offset += 1 + 2; // flags, keepalive
  const clientId = string();
  if (flags & 0x04) {
    string(); // will topic
    string(); // will message
  }
  const username = flags & 0x80 ? string() : null;
  const password = flags & 0x40 ? string() : null;
  return { clientId, username, password };
}

function varint(n: number): Buffer {
  const bytes: number[] = [];
  do {
    let byte = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 0x80;
    bytes.push(byte);
  } while (n > 0);
  return Buffer.from(bytes);
}
