import type { GpioConstructor, GpioLine, Level } from './onoff.js';

/** One physical output pin. Levels are electrical (0 = low, 1 = high); the relay decides what they mean. */
export interface DigitalOutput {
  /** Throws when the level could not be driven. */
  set(level: Level): Promise<void>;
  /** Throws if a level set since the last check did not hold (drivers that cannot tell at once). */
  verify?(): Promise<void>;
  /** Releases the pin. Safe to call twice. */
  close(): Promise<void>;
  readonly description: string;
}

/** sysfs through onoff. The initial level is applied in the same export that makes the pin an output. */
export function openSysfsOutput(Gpio: GpioConstructor, sysfsNumber: number, initialLevel: Level): DigitalOutput {
  // 'high'/'low' set direction and level in one write: the relay never sees a default level first.
  let line: GpioLine | null = new Gpio(sysfsNumber, initialLevel === 1 ? 'high' : 'low');
  return {
    description: `sysfs gpio${sysfsNumber}`,
    async set(level) {
      if (!line) throw new Error(`gpio${sysfsNumber} is closed`);
      line.writeSync(level);
    },
    async close() {
      const current = line;
      line = null;
      current?.unexport();
    },
  };
}
