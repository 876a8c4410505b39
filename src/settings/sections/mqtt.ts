import * as z from 'zod';
import { intIn } from './number.js';

const URL_FORMS = /^(mqtts?|wss?):\/\/[^\s]+$/;

/**
 * Owned by the MQTT issue. `url: embedded` starts an in-process broker on 127.0.0.1:`embeddedPort`;
 * an empty url disables MQTT. The password comes from VENDGATE_MQTT_PASSWORD, never from the file.
 */
export const mqttSchema = () =>
  z
    .object({
      url: z
        .string()
        .trim()
        .refine((url) => url === '' || url === 'embedded' || URL_FORMS.test(url), {
          message: "expected '' (disabled), 'embedded', or a broker URL such as mqtt://host:1883 or mqtts://host:8883",
        })
        .default('embedded'),
      prefix: z
        .string()
        .min(1)
        .regex(/^[^#+/]+$/, 'no /, # or +')
        .default('vendgate'),
      username: z.string().optional(),
      password: z.string().optional(),
      /** TLS (mqtts://): PEM files. certPath and keyPath go together (client certificate). */
      caPath: z.string().min(1).optional(),
      certPath: z.string().min(1).optional(),
      keyPath: z.string().min(1).optional(),
      /** Turn off only for a broker with a self-signed certificate you cannot give as caPath. */
      rejectUnauthorized: z.boolean().default(true),
      keepaliveSec: intIn(5, 3_600, 30),
      connectTimeoutMs: intIn(1_000, 120_000, 10_000),
      /** Reconnect waits double from min to max after each failed attempt (with jitter). */
      reconnectMinMs: intIn(100, 60_000, 1_000),
      reconnectMaxMs: intIn(100, 600_000, 60_000),
      /** Outbox messages sent before their PUBACKs come back (1 = strictly one at a time). */
      maxInflight: intIn(1, 100, 10),
      telemetryIntervalSec: intIn(5, 86_400, 60),
      /** The disk_low alarm opens when the database's file system has less free space than this. */
      diskLowFreeMb: intIn(1, 100_000_000, 200),
      allowRemoteVend: z.boolean().default(false),
      /** Live mode refuses mqtt:// and ws:// (login and commands in clear) unless this is true (a LAN-only broker). */
      allowPlaintext: z.boolean().default(false),
      homeAssistant: z.boolean().default(false),
      /** Home Assistant's discovery prefix (its `mqtt.discovery_prefix`). */
      homeAssistantPrefix: z
        .string()
        .min(1)
        .regex(/^[^#+]+$/, 'no # or +')
        .default('homeassistant'),
      outboxMaxRows: intIn(100, 10_000_000, 100_000),
      /** Port of the in-process broker for `url: embedded` (bound to 127.0.0.1). */
      embeddedPort: intIn(0, 65_535, 1883),
    })
    .loose()
    .superRefine((mqtt, ctx) => {
      if ((mqtt.certPath === undefined) !== (mqtt.keyPath === undefined)) {
        ctx.addIssue({
          code: 'custom',
          path: [mqtt.certPath === undefined ? 'certPath' : 'keyPath'],
          message: 'certPath and keyPath go together (client certificate and its key)',
        });
      }
      const tls = mqtt.url.startsWith('mqtts://') || mqtt.url.startsWith('wss://');
      for (const key of ['caPath', 'certPath', 'keyPath'] as const) {
        if (mqtt[key] !== undefined && !tls) {
          ctx.addIssue({ code: 'custom', path: [key], message: 'TLS files need a TLS url (mqtts://host:8883)' });
        }
      }
      if (mqtt.reconnectMinMs > mqtt.reconnectMaxMs) {
        ctx.addIssue({ code: 'custom', path: ['reconnectMinMs'], message: 'must not exceed reconnectMaxMs' });
      }
      if (mqtt.password !== undefined && mqtt.username === undefined) {
        ctx.addIssue({ code: 'custom', path: ['username'], message: 'a password (VENDGATE_MQTT_PASSWORD) needs mqtt.username' });
      }
    });
