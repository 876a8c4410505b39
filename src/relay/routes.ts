import type { RouteAnnouncement } from '../mqtt/index.js';

/**
 * Which device owns an order reference, from the devices' retained route announcements. Longest
 * prefix wins, so `vm-1-<db>-` and `vm-1-a-<db>-` never shadow each other.
 */
export function createRouteTable() {
  const byDevice = new Map<string, readonly string[]>();
  // Sorted longest first, rebuilt on change (announcements are rare; lookups are per webhook).
  let prefixes: { prefix: string; deviceId: string }[] = [];

  function rebuild(): void {
    prefixes = [...byDevice.entries()]
      .flatMap(([deviceId, list]) => list.map((prefix) => ({ prefix, deviceId })))
      .sort((a, b) => b.prefix.length - a.prefix.length);
  }

  return {
    /** A device announced (or, with null, withdrew) its route. */
    update(deviceId: string, route: RouteAnnouncement | null): void {
      if (route) byDevice.set(deviceId, route.referencePrefixes);
      else byDevice.delete(deviceId);
      rebuild();
    },
    find(reference: string): string | null {
      for (const entry of prefixes) if (reference.startsWith(entry.prefix)) return entry.deviceId;
      return null;
    },
    devices: () => byDevice.size,
  };
}

export type RouteTable = ReturnType<typeof createRouteTable>;
