import { describe, it } from 'vitest';
import { PROPERTY, TIMEOUT_MS, moneyPathHolds } from './money-path.js';

// The model, its steps and the invariants: ./money-path.ts (the other capture mode has its own file).
describe('money path under any sequence of observations, faults and crashes', () => {
  it(`manual capture: ${PROPERTY}`, () => moneyPathHolds('manual'), TIMEOUT_MS);
});
