import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { testBroker } from '../helpers/broker.js';
import { createDevice, onCleanup } from './harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * mqtt-packet's number cache: 65,536 two-byte Buffers, filled at the first packet written unless a
 * client was made with `writeCache: false` (6 MB of the idle device's 24 MB V8 heap). The device's
 * clients turn it off; the setting is the library's, so it holds for everything in the process.
 */
const numbers = createRequire(import.meta.url)('mqtt-packet/numbers.js') as { cache: Record<number, Buffer> };

describe('MQTT packet number cache', () => {
  it('stays empty while the device connects and publishes its events', async () => {
    const broker = await testBroker();
    onCleanup(() => broker.close());
    const device = createDevice(broker.url);
    await device.mqtt.start();
    await waitFor(() => device.mqtt.connected(), { what: 'the device to connect' });
    device.write(5);
    await waitFor(() => device.outbox.depth() === 0, { what: 'the events to be published (QoS 1, message ids written)' });
    expect(Object.keys(numbers.cache)).toHaveLength(0);
  });
});
