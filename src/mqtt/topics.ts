/** Topic names under `<prefix>/<deviceId>/`: the layout operators rely on (ARCHITECTURE.md "External contract", docs/reference.md). */
export interface Topics {
  base: string;
  status: string;
  state: string;
  events: string;
  telemetry: string;
  selftest: string;
  /** Retained by the embedded broker itself: the id that tells it from another program's broker. */
  broker: string;
  /** Subscription filter for every command. */
  commands: string;
  /** Resolves an outbox row's relative topic (`events`, `alarms/<name>`). */
  relative(topic: string): string;
  /** The command name of an incoming topic, or null when it is not `cmd/<name>`. */
  commandName(topic: string): string | null;
  result(command: string): string;
}

export function createTopics(prefix: string, deviceId: string): Topics {
  const base = `${prefix}/${deviceId}`;
  const commandPrefix = `${base}/cmd/`;
  return {
    base,
    status: `${base}/status`,
    state: `${base}/state`,
    events: `${base}/events`,
    telemetry: `${base}/telemetry`,
    selftest: `${base}/selftest`,
    broker: `${base}/broker`,
    commands: `${base}/cmd/+`,
    relative: (topic) => `${base}/${topic}`,
    commandName(topic) {
      if (!topic.startsWith(commandPrefix)) return null;
      const name = topic.slice(commandPrefix.length);
      return name.length > 0 && !name.includes('/') ? name : null;
    },
    result: (command) => `${commandPrefix}${command}/result`,
  };
}
