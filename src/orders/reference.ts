/**
 * What an order reference names. A reference is `<device>-<db>-<order>-<nonce>` (repository.ts
 * `referenceFor`; before the nonce, `<device>-<db>-<order>`). A device id may contain `-`, but the
 * parts after it never do, so the reference is read from the right: the last parts are the nonce
 * (8 hex), the order id (digits) and the database id, and everything before them is the device id.
 * `vm-1` therefore never owns a reference of `vm-1-annex`, nor `m1` one of `m1-2`: a reference
 * belongs to a device only when its parse gives exactly that device's id (the relay's route table,
 * the orphan sweep).
 */

export interface ParsedReference {
  deviceId: string;
  dbId: string;
  /** The order's number in that database. */
  orderId: number;
}

const NONCE = /^[0-9a-f]{8}$/;
const ORDER_ID = /^[0-9]+$/;
const DB_ID = /^[a-z0-9]+$/;

/** A database id as it appears in a reference (no `-`). */
export function isDatabaseId(value: string): boolean {
  return DB_ID.test(value);
}

/** The device and database a reference names, or null when it is not a vendgate order reference. */
export function parseReference(reference: string): ParsedReference | null {
  const parts = reference.split('-');
  const [last = '', second = '', third = ''] = parts.slice(-3).reverse();
  // Current form: <device>-<db>-<order>-<nonce>.
  if (parts.length >= 4 && NONCE.test(last) && ORDER_ID.test(second) && DB_ID.test(third)) {
    const deviceId = parts.slice(0, -3).join('-');
    if (deviceId !== '') return { deviceId, dbId: third, orderId: Number(second) };
  }
  // Orders made before the nonce: <device>-<db>-<order>.
  if (parts.length >= 3 && ORDER_ID.test(last) && DB_ID.test(second)) {
    const deviceId = parts.slice(0, -2).join('-');
    if (deviceId !== '') return { deviceId, dbId: second, orderId: Number(last) };
  }
  return null;
}

/** Whether `reference` is one of `deviceId`'s own order references (exactly that device, any database). */
export function isReferenceOf(deviceId: string, reference: string): boolean {
  return parseReference(reference)?.deviceId === deviceId;
}
