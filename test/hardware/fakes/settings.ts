import { parseSettings, type Settings } from '../../../src/settings/index.js';

/** Valid settings for hardware tests: a vending device in EUR (cents: an MDB machine's 1.50 is 150) with slots A1, A2 and 12, plus overrides. */
export function hardwareSettings(
  overrides: { device?: Record<string, unknown>; actuator?: Record<string, unknown>; inputs?: Record<string, unknown> } = {},
): Readonly<Settings> {
  return parseSettings({
    device: {
      id: 'test-1',
      currency: 'EUR',
      catalog: [
        { slot: 'A1', name: 'Water', price: 150 },
        { slot: 'A2', name: 'Juice', price: 250 },
        { slot: '12', name: 'Chips', price: 150 },
      ],
      ...overrides.device,
    },
    actuator: overrides.actuator ?? {},
    inputs: overrides.inputs ?? {},
  });
}
