import type { RouteAnnouncement } from '../mqtt/index.js';
// The one pure file of orders/ the relay reads (no money path at run time): hence not through the index.
import { isDatabaseId, parseReference } from '../orders/reference.js';

/**
 * Which device owns an order reference, from the devices' retained route announcements, by EXACT
 * device id and database id. The reference is read from the right (orders/reference.ts
 * `parseReference`): `m1` can therefore never own a reference of `m1-2`, whatever it announces: the
 * reference names its device, and the announcement only says which databases of that device are live.
 *
 * Learning is O(1) per announcement and a lookup is O(1) (two Map reads): the cost of a fleet grows
 * linearly with its size.
 */

/**
 * The database ids an announcement of `deviceId` names: each prefix must be exactly
 * `<deviceId>-<db>-` with a database id (no `-`). Anything else is not this device's to claim.
 */
export function announcedDatabases(deviceId: string, prefixes: readonly string[]): ReadonlySet<string> {
  const own = `${deviceId}-`;
  // A Set: linear in the prefixes announced, whatever a device repeats (an array's includes was quadratic).
  const out = new Set<string>();
  for (const prefix of prefixes) {
    if (!prefix.startsWith(own) || !prefix.endsWith('-')) continue;
    const db = prefix.slice(own.length, -1);
    if (isDatabaseId(db)) out.add(db);
  }
  return out;
}

export function createRouteTable() {
  const byDevice = new Map<string, ReadonlySet<string>>();

  return {
    /** A device announced (or, with null, withdrew) its route. Returns whether it now has one. */
    update(deviceId: string, route: RouteAnnouncement | null): boolean {
      const dbs = route && route.deviceId === deviceId ? announcedDatabases(deviceId, route.referencePrefixes) : null;
      if (dbs && dbs.size > 0) byDevice.set(deviceId, dbs);
      else byDevice.delete(deviceId);
      return dbs !== null && dbs.size > 0;
    },
    find(reference: string): string | null {
      const parsed = parseReference(reference);
      if (!parsed) return null;
      const dbs = byDevice.get(parsed.deviceId);
      return dbs?.has(parsed.dbId) ? parsed.deviceId : null;
    },
    devices: () => byDevice.size,
  };
}

export type RouteTable = ReturnType<typeof createRouteTable>;
