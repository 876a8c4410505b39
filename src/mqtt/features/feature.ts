import type { IPublishPacket, MqttClient } from 'mqtt';
import type { ReconnectingClient } from '../reconnecting-client.js';

/** What a feature may do with the device's one monitoring connection. */
export type Link = Pick<ReconnectingClient, 'publish' | 'connectedSince' | 'isCurrent'>;

/**
 * One part of operator monitoring (outbox pump, presence and state, telemetry, storage alarms,
 * selftest, commands). `createMqtt` starts them in its list's order once the broker is settled, tells
 * them of every (re)connect in that order (which is the order of the first messages after a connect),
 * and stops them in that order before the connection ends.
 */
export interface Feature {
  /** MQTT runs: timers, subscriptions to the app's changes. Not connected yet. */
  start(link: Link): void;
  /** A connection came up (the first or a new one after a loss). */
  connected?(client: MqttClient): void;
  /** The connection is gone; whatever was in flight on it is unknown. */
  disconnected?(): void;
  /** A message on a subscribed topic. */
  message?(topic: string, payload: Buffer, packet: IPublishPacket): void;
  /** Timers off, last words written (the connection is still up, if it was). */
  stop(): void;
}
