import type { RouteAnnouncement } from '../mqtt/index.js';

/**
 * Which device owns an order reference, from the devices' retained route announcements, by EXACT
 * device id and database id. A reference is `<device>-<db>-<order>-<nonce>` (orders/repository.ts
 * `referenceFor`; before the nonce, `<device>-<db>-<order>`). A device id may contain `-`, but the
 * parts after it never do, so the reference is read from the right: the last parts are the nonce
 * (8 hex), the order id (digits) and the database id, and everything before them is the device id.
 * `m1` can therefore never own a reference of `m1-2`, whatever it announces: the reference names
 * its device, and the announcement only says which databases of that device are live.
 *
 * Learning is O(1) per announcement and a lookup is O(1) (two Map reads): the cost of a fleet grows
 * linearly with its size.
 */

export interface ParsedReference {
  deviceId: string;
  dbId: string;
}

const NONCE = /^[0-9a-f]{8}$/;
const ORDER_ID = /^[0-9]+$/;
const DB_ID = /^[a-z0-9]+$/;

/** The device and database a reference names, or null when it is not a vendgate order reference. */
export function parseReference(reference: string): ParsedReference | null {
  const parts = reference.split('-');
  const [last = '', second = '', third = ''] = parts.slice(-3).reverse();
  // Current form: <device>-<db>-<order>-<nonce>.
  if (parts.length >= 4 && NONCE.test(last) && ORDER_ID.test(second) && DB_ID.test(third)) {
    const deviceId = parts.slice(0, -3).join('-');
    if (deviceId !== '') return { deviceId, dbId: third };
  }
  // Orders made before the nonce: <device>-<db>-<order>.
  if (parts.length >= 3 && ORDER_ID.test(last) && DB_ID.test(second)) {
    const deviceId = parts.slice(0, -2).join('-');
    if (deviceId !== '') return { deviceId, dbId: second };
  }
  return null;
}

/**
 * The database ids an announcement of `deviceId` names: each prefix must be exactly
 * `<deviceId>-<db>-` with a database id (no `-`). Anything else is not this device's to claim.
 */
export function announcedDatabases(deviceId: string, prefixes: readonly string[]): string[] {
  const own = `${deviceId}-`;
  const out: string[] = [];
  for (const prefix of prefixes) {
    if (!prefix.startsWith(own) || !prefix.endsWith('-')) continue;
    const db = prefix.slice(own.length, -1);
    if (DB_ID.test(db) && !out.includes(db)) out.push(db);
  }
  return out;
}

export function createRouteTable() {
  const byDevice = new Map<string, readonly string[]>();

  return {
    /** A device announced (or, with null, withdrew) its route. Returns whether it now has one. */
    update(deviceId: string, route: RouteAnnouncement | null): boolean {
      const dbs = route && route.deviceId === deviceId ? announcedDatabases(deviceId, route.referencePrefixes) : [];
      if (dbs.length > 0) byDevice.set(deviceId, dbs);
      else byDevice.delete(deviceId);
      return dbs.length > 0;
    },
    find(reference: string): string | null {
      const parsed = parseReference(reference);
      if (!parsed) return null;
      const dbs = byDevice.get(parsed.deviceId);
      return dbs?.includes(parsed.dbId) ? parsed.deviceId : null;
    },
    devices: () => byDevice.size,
  };
}

export type RouteTable = ReturnType<typeof createRouteTable>;
