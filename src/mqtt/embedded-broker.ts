import { createServer, type Socket } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { prepared, type Db } from '../store/index.js';

/** `meta` key: why the service's embedded broker is not running (the selftest reads it). */
const REFUSAL_KEY = 'mqtt_embedded_refused';

export interface EmbeddedRefusal {
  at: string;
  port: number;
  reason: string;
}

/** Written at start: null when the embedded broker is listening, else why it is not. */
export function recordEmbeddedRefusal(db: Db, refusal: EmbeddedRefusal | null): void {
  if (refusal === null) prepared(db, 'DELETE FROM meta WHERE key = ?').run(REFUSAL_KEY);
  else
    prepared(db, 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
      REFUSAL_KEY,
      JSON.stringify(refusal),
    );
}

/** `meta` key: the embedded broker the running service started (its port and the id it shows). */
const INSTANCE_KEY = 'mqtt_embedded_instance';

/**
 * What the service's embedded broker shows about itself: its port, and a random id it holds
 * retained on `<prefix>/<deviceId>/broker`. A broker on that port without that id is another
 * program's, whatever it answers: the selftest never calls it "embedded" nor publishes to it.
 */
export interface EmbeddedInstance {
  at: string;
  port: number;
  instance: string;
}

/** Written at start once the embedded broker listens. */
export function recordEmbeddedInstance(db: Db, instance: EmbeddedInstance): void {
  prepared(db, 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
    INSTANCE_KEY,
    JSON.stringify(instance),
  );
}

/** The embedded broker of the service's last start, if it started one. */
export function embeddedInstance(db: Db): EmbeddedInstance | null {
  const row = prepared(db, 'SELECT value FROM meta WHERE key = ?').get(INSTANCE_KEY) as { value: string } | undefined;
  if (!row) return null;
  try {
    const parsed = JSON.parse(row.value) as EmbeddedInstance;
    return typeof parsed.port === 'number' && typeof parsed.instance === 'string' ? parsed : null;
  } catch {
    return null;
  }
}

/** Why the embedded broker did not start at the service's last start, if it did not. */
export function embeddedRefusal(db: Db): EmbeddedRefusal | null {
  const row = prepared(db, 'SELECT value FROM meta WHERE key = ?').get(REFUSAL_KEY) as { value: string } | undefined;
  return row ? (JSON.parse(row.value) as EmbeddedRefusal) : null;
}

/**
 * Who may do what on the embedded broker. With a `login`, only a client presenting it may publish
 * everywhere (the service itself, an operator sending commands); a wrong login is refused; an
 * anonymous client may subscribe to everything (read) and publish only where
 * `anonymousMayPublish` says (the selftest's probe) — never a command, so no local program can
 * refund or vend by writing to `cmd/…`. Without a login the broker is open (tests).
 */
export interface EmbeddedBrokerAccess {
  login: { username: string; password: string };
  anonymousMayPublish?: (topic: string) => boolean;
}

function sameSecret(given: Buffer | undefined, expected: string): boolean {
  const want = Buffer.from(expected);
  return given !== undefined && given.length === want.length && timingSafeEqual(given, want);
}

export interface EmbeddedBroker {
  url: string;
  port: number;
  /** Stops listening and drops every connection (clients see the broker go away). Safe twice. */
  close(): Promise<void>;
}

/**
 * An in-process MQTT 3.1.1 broker (aedes, memory only) for the demo and the tests. Rejects with the
 * listen error (EADDRINUSE when another broker already holds the port).
 */
export async function startEmbeddedBroker(
  options: { host?: string; port?: number; access?: EmbeddedBrokerAccess; identity?: { topic: string; payload: string } } = {},
): Promise<EmbeddedBroker> {
  const host = options.host ?? '127.0.0.1';
  // Loaded only when a broker is wanted: a device that talks to the operator's broker never pays for it.
  const { Aedes } = await import('aedes');
  const access = options.access;
  const trusted = new WeakSet<object>();
  // MQTT 3.1.1 §3.1.3.1: a zero-length client id with CleanSession=0 must be answered CONNACK 0x02
  // (identifier rejected). aedes gives such a client a random id and keeps a session nobody can
  // ever resume, so the CONNECT is marked here and refused in authenticate (which can send 0x02).
  const anonymousPersistent = new WeakSet<object>();
  const identifierRejected = () => Object.assign(new Error('identifier rejected'), { returnCode: 2 });
  const clientIds = {
    preConnect(client: object, packet: { clientId: string; clean?: boolean }, done: (err: Error | null, ok: boolean) => void) {
      if (packet.clientId === '' && packet.clean === false) anonymousPersistent.add(client);
      done(null, true);
    },
  };
  const broker = await Aedes.createBroker(
    access
      ? {
          ...clientIds,
          authenticate(client, username, password, done) {
            if (anonymousPersistent.has(client)) return done(identifierRejected(), false);
            if (username === undefined) return done(null, true);
            if (username === access.login.username && sameSecret(password, access.login.password)) {
              trusted.add(client);
              return done(null, true);
            }
            done(Object.assign(new Error('bad user name or password'), { returnCode: 4 }), false);
          },
          authorizePublish(client, packet, done) {
            if (packet.topic.startsWith('$SYS')) return done(new Error('$SYS topics are reserved'));
            if ((client && trusted.has(client)) || access.anonymousMayPublish?.(packet.topic)) return done(null);
            done(new Error(`anonymous clients may not publish to ${packet.topic}`));
          },
        }
      : {
          ...clientIds,
          authenticate(client, _username, _password, done) {
            if (anonymousPersistent.has(client)) return done(identifierRejected(), false);
            done(null, true);
          },
        },
  );
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    broker.handle(socket);
  });
  // A client that vanishes mid-packet is its own problem; the broker keeps serving the others.
  broker.on('clientError', () => {});
  broker.on('connectionError', () => {});
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    throw err;
  }
  const identity = options.identity;
  if (identity) {
    await new Promise<void>((resolve) =>
      broker.publish(
        { cmd: 'publish', topic: identity.topic, payload: Buffer.from(identity.payload), qos: 0, retain: true, dup: false },
        () => resolve(),
      ),
    );
  }
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? 0);
  let closing: Promise<void> | null = null;
  return {
    url: `mqtt://${host}:${port}`,
    port,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => broker.close(() => resolve()));
        await closed;
      })();
      return closing;
    },
  };
}
