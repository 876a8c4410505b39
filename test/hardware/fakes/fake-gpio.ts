import type { GpioConstructor, GpioLine } from '../../../src/hardware/index.js';

type Level = 0 | 1;

export interface FakePin {
  number: number;
  direction: string;
  edge: string | undefined;
  level: Level;
  /** Every level driven (including the initial one from 'high'/'low'), with Date.now() (fake timers). */
  writes: { level: Level; at: number }[];
  exported: boolean;
  watchers: ((err: Error | null | undefined, value: Level) => void)[];
  /** Next writeSync throws this (once). */
  failNextWrite: Error | null;
}

/**
 * A stand-in for onoff's Gpio: records what is driven, lets a test move input levels and fire
 * edges. One registry per test so pins never leak between tests.
 */
export function createFakeGpio(): {
  Gpio: GpioConstructor;
  pins: Map<number, FakePin>;
  pin(number: number): FakePin;
  setInput(number: number, level: Level): void;
} {
  const pins = new Map<number, FakePin>();
  class FakeGpio implements GpioLine {
    private readonly state: FakePin;
    constructor(number: number, direction: 'in' | 'out' | 'high' | 'low', edge?: 'none' | 'rising' | 'falling' | 'both') {
      const existing = pins.get(number);
      const initial: Level = direction === 'high' ? 1 : direction === 'low' ? 0 : (existing?.level ?? 0);
      this.state = { number, direction, edge, level: initial, writes: [], exported: true, watchers: [], failNextWrite: null };
      if (direction === 'high' || direction === 'low') this.state.writes.push({ level: initial, at: Date.now() });
      pins.set(number, this.state);
    }
    readSync(): Level {
      return this.state.level;
    }
    writeSync(value: Level): void {
      if (!this.state.exported) throw new Error(`gpio${this.state.number} is not exported`);
      const failure = this.state.failNextWrite;
      if (failure) {
        this.state.failNextWrite = null;
        throw failure;
      }
      this.state.level = value;
      this.state.writes.push({ level: value, at: Date.now() });
    }
    watch(callback: (err: Error | null | undefined, value: Level) => void): void {
      this.state.watchers.push(callback);
    }
    unwatchAll(): void {
      this.state.watchers = [];
    }
    unexport(): void {
      this.state.exported = false;
    }
  }
  const pin = (number: number) => {
    const found = pins.get(number);
    if (!found) throw new Error(`gpio${number} was never opened`);
    return found;
  };
  return {
    Gpio: FakeGpio,
    pins,
    pin,
    /** Moves an input and fires its edge watchers, as the kernel would. */
    setInput(number, level) {
      const state = pins.get(number);
      if (!state) {
        // Level before the input is opened (e.g. an alarm already active at start).
        pins.set(number, {
          number,
          direction: 'in',
          edge: undefined,
          level,
          writes: [],
          exported: false,
          watchers: [],
          failNextWrite: null,
        });
        return;
      }
      state.level = level;
      for (const watcher of [...state.watchers]) watcher(null, level);
    },
  };
}
