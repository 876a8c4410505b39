import { describe, expect, it } from 'vitest';
import { announcedDatabases, createRouteTable } from '../../src/fleet-relay/routes.js';
import { parseReference } from '../../src/orders/reference.js';
import { referenceFor } from '../../src/orders/index.js';

const route = (deviceId: string, referencePrefixes: string[]) => ({ v: 1, deviceId, referencePrefixes, providers: ['gerege'], at: '' });

describe('relay route table', () => {
  it('reads the device and database of a reference from the right, whatever dashes the device id holds', () => {
    for (const device of ['m1', 'm1-2', 'vm-1-b', 'a', 'x-', 'm1-2-3']) {
      const reference = referenceFor(device, 'ab12cd', 42, '0badf00d');
      expect(parseReference(reference), reference).toEqual({ deviceId: device, dbId: 'ab12cd', orderId: 42 });
    }
    // Orders made before the nonce: <device>-<db>-<order>.
    expect(parseReference('vm-1-b-cccc-7')).toEqual({ deviceId: 'vm-1-b', dbId: 'cccc', orderId: 7 });
    for (const bad of ['', 'm1', 'm1-', '-ab12cd-1-0badf00d', 'm1-ab12cd-x', 'pi_123']) expect(parseReference(bad), bad).toBeNull();
  });

  it("routes m1-2's orders to m1-2 whatever m1 announces, and m1's to m1", () => {
    const table = createRouteTable();
    // m1 first, with every claim it could make on m1-2's orders.
    expect(table.update('m1', route('m1', ['m1-2-ab12cd-', 'm1-2-ab12cd-5-', 'm1-2-', 'm1-ab12cd-']))).toBe(true);
    expect(table.update('m1-2', route('m1-2', ['m1-2-ab12cd-']))).toBe(true);
    expect(table.find(referenceFor('m1-2', 'ab12cd', 5, '0badf00d'))).toBe('m1-2');
    expect(table.find(referenceFor('m1-2', 'ab12cd', 6, '0badf00d'))).toBe('m1-2');
    expect(table.find(referenceFor('m1', 'ab12cd', 5, '0badf00d'))).toBe('m1');
    // Withdrawn, m1-2's orders go nowhere; m1 never gets them.
    table.update('m1-2', null);
    expect(table.find(referenceFor('m1-2', 'ab12cd', 5, '0badf00d'))).toBeNull();
    // An announcement carried under another device's topic names nothing.
    expect(table.update('m1', route('m1-2', ['m1-2-ab12cd-']))).toBe(false);
    expect(table.devices()).toBe(0);
  });

  it('an announcement names only whole databases of its own device', () => {
    expect([
      ...announcedDatabases('m1', ['m1-ab12cd-', 'm1-ab12cd-', 'm1-2-ab12cd-', 'm2-ab12cd-', 'm1-', 'm1-ab12cd', 'm1-ab-12-']),
    ]).toEqual(['ab12cd']);
    // "m1-2-" names database "2" of m1: only references m1-2-<order>-<nonce>, which are m1's own.
    expect([...announcedDatabases('m1', ['m1-2-'])]).toEqual(['2']);
    const table = createRouteTable();
    table.update('m1', route('m1', ['m1-2-']));
    table.update('m1-2', route('m1-2', ['m1-2-ab12cd-']));
    expect(table.find('m1-2-7-0badf00d')).toBe('m1');
    expect(table.find(referenceFor('m1-2', 'ab12cd', 7, '0badf00d'))).toBe('m1-2');
  });

  it('a database the device no longer announces routes nowhere; re-announcing replaces, never adds', () => {
    const table = createRouteTable();
    table.update('vm', route('vm', ['vm-aaaaaa-']));
    table.update('vm', route('vm', ['vm-bbbbbb-']));
    expect(table.find(referenceFor('vm', 'aaaaaa', 1, '0badf00d'))).toBeNull();
    expect(table.find(referenceFor('vm', 'bbbbbb', 1, '0badf00d'))).toBe('vm');
    // 30,000 devices learned, then learned again (a reconnect): the table holds each once.
    for (let round = 0; round < 2; round += 1)
      for (let i = 0; i < 30_000; i += 1) table.update(`d-${i}`, route(`d-${i}`, [`d-${i}-cccccc-`]));
    expect(table.devices()).toBe(30_001);
    expect(table.find(referenceFor('d-29999', 'cccccc', 3, '0badf00d'))).toBe('d-29999');
  });
});
