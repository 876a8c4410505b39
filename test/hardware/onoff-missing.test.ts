import { describe, expect, it, vi } from 'vitest';
import { loadOnoffGpio } from '../../src/hardware/gpio/onoff.js';

// onoff is an optionalDependency whose native part may fail to build: simulate it being absent.
vi.mock('onoff', () => {
  throw new Error("Cannot find package 'onoff'");
});

describe('onoff missing', () => {
  it('loading GPIO without onoff says how to install it or which driver to use instead', async () => {
    await expect(loadOnoffGpio()).rejects.toThrow(/onoff package could not be loaded .*npm install onoff.*driver: gpioset/);
  });
});
