import type { MqttClient } from 'mqtt';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { buildInfo } from '../../version.js';
import { discoveryMessages } from '../home-assistant.js';
import type { Topics } from '../topics.js';
import type { DeviceControl } from '../types.js';
import type { TopicPayloads } from '../topic-payloads.js';
import type { Feature, Link } from './feature.js';

export interface Presence extends Feature {
  /** A clean stop says so itself (`offline` on `status` and `state`): the last will only covers a crash. */
  farewell(client: MqttClient): Promise<unknown>;
}

/**
 * `status` (online; offline by the last will or a clean stop), `state` (retained, republished only
 * when it really changed) and, when asked for, Home Assistant's discovery messages on every connect.
 */
export function createPresence(
  deps: { control: DeviceControl; clock: Clock; logger: Logger; topics: Topics; deviceId: string; dbId: string },
  settings: { homeAssistant: boolean; homeAssistantPrefix: string },
): Presence {
  const { control, topics, logger: log } = deps;
  let link: Link | null = null;
  let lastState: string | null = null;

  function publishState(): void {
    if (!link || link.connectedSince() === null) return;
    let payload: string;
    try {
      const s = control.state();
      const state: TopicPayloads['state'] = {
        mode: s.mode,
        phase: s.phase,
        orderId: s.orderId,
        reference: s.reference,
        since: s.since,
        ...(s.reason ? { reason: s.reason } : {}),
        // The database it runs: `vendgate command send` signs for it (src/mqtt/commands/envelope.ts).
        dbId: deps.dbId,
      };
      payload = JSON.stringify(state);
    } catch (err) {
      log.warn({ err }, 'could not read the device state');
      return;
    }
    if (payload === lastState) return;
    if (link.publish(topics.state, payload, true)) lastState = payload;
  }

  function mode(): string {
    try {
      return control.state().mode;
    } catch {
      return 'vending';
    }
  }

  function discovery(to: Link): void {
    let slots: string[] = [];
    try {
      slots = control.catalog?.slots() ?? [];
    } catch (err) {
      log.warn({ err }, 'could not read the catalog slots for Home Assistant');
    }
    const messages = discoveryMessages({
      discoveryPrefix: settings.homeAssistantPrefix,
      deviceId: deps.deviceId,
      mode: mode(),
      topics,
      slots,
      version: buildInfo().version,
    });
    for (const message of messages) to.publish(message.topic, message.payload, true);
  }

  return {
    start(next) {
      link = next;
      control.onStateChange(publishState);
    },
    connected() {
      if (!link) return;
      link.publish(topics.status, 'online', true);
      lastState = null;
      publishState();
      if (settings.homeAssistant) discovery(link);
    },
    stop() {},
    farewell(c) {
      const offlineState = {
        ...(lastState ? (JSON.parse(lastState) as object) : { mode: mode() }),
        phase: 'offline',
        orderId: null,
        reference: null,
        since: new Date(deps.clock.now()).toISOString(),
      };
      const said = (topic: string, payload: string) =>
        new Promise<void>((resolve) => c.publish(topic, payload, { qos: 1, retain: true }, () => resolve()));
      return Promise.all([said(topics.state, JSON.stringify(offlineState)), said(topics.status, 'offline')]);
    },
  };
}
