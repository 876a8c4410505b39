/** Who follows the device's state (the kiosk's SSE stream, MQTT state): told after every change. */
export interface StateChanges {
  /** Returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
  notify(): void;
}

export function createStateChanges(): StateChanges {
  const listeners = new Set<() => void>();
  return {
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    notify() {
      for (const listener of [...listeners]) listener();
    },
  };
}
