import { describe, expect, it } from 'vitest';
import { createAvailability } from '../../src/device/availability.js';

describe('availability: why the device takes no orders', () => {
  it('a new device is available and gives no reason', () => {
    const availability = createAvailability();
    expect(availability.isAvailable()).toBe(true);
    expect(availability.reason()).toBeNull();
  });

  it('a reason set without a detail reads as that source says it; with a detail, the detail is named', () => {
    const availability = createAvailability();
    availability.set('inhibit');
    expect(availability.isAvailable()).toBe(false);
    expect(availability.reason()).toBe('the machine inhibits sales');
    availability.clear('inhibit');
    availability.set('operator', 'cleaning');
    expect(availability.reason()).toBe('operator: cleaning');
    availability.set('operator');
    expect(availability.reason()).toBe('operator: out of service');
  });

  it('several reasons are joined in the order they were first set; setting one again keeps its place', () => {
    const availability = createAvailability();
    availability.set('fire_alarm');
    availability.set('serial_line');
    availability.set('operator', 'cleaning');
    expect(availability.reason()).toBe('fire alarm: gate held open; no connection to the vending machine; operator: cleaning');
    availability.set('fire_alarm', 'zone 2');
    expect(availability.reason()).toBe('fire alarm: zone 2; no connection to the vending machine; operator: cleaning');
  });

  it('clearing one reason leaves the others; the device is available only when the last is cleared', () => {
    const availability = createAvailability();
    availability.set('inhibit');
    availability.set('operator', 'cleaning');
    availability.clear('inhibit');
    expect(availability.reason()).toBe('operator: cleaning');
    expect(availability.isAvailable()).toBe(false);
    availability.clear('serial_line');
    expect(availability.reason()).toBe('operator: cleaning');
    availability.clear('operator');
    expect(availability.isAvailable()).toBe(true);
    expect(availability.reason()).toBeNull();
  });

  it('subscribers hear each change of the reason, and nothing when a set or clear changes nothing', () => {
    const availability = createAvailability();
    const heard: (string | null)[] = [];
    availability.subscribe((reason) => heard.push(reason));
    availability.set('inhibit');
    availability.set('inhibit');
    availability.clear('fire_alarm');
    availability.set('operator', 'cleaning');
    availability.clear('inhibit');
    availability.clear('operator');
    availability.clear('operator');
    expect(heard).toEqual(['the machine inhibits sales', 'the machine inhibits sales; operator: cleaning', 'operator: cleaning', null]);
  });

  it('an unsubscribed listener hears nothing more; the others still do', () => {
    const availability = createAvailability();
    const first: (string | null)[] = [];
    const second: (string | null)[] = [];
    const unsubscribe = availability.subscribe((reason) => first.push(reason));
    availability.subscribe((reason) => second.push(reason));
    availability.set('inhibit');
    unsubscribe();
    availability.clear('inhibit');
    expect(first).toEqual(['the machine inhibits sales']);
    expect(second).toEqual(['the machine inhibits sales', null]);
  });
});
