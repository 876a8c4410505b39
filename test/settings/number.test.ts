import { describe, expect, it } from 'vitest';
import { intIn } from '../../src/settings/sections/number.js';

/** What a technician reads for a bad whole-number setting (the messages the settings error lists). */
const messages = (value: unknown): string[] => {
  const result = intIn(1, 600, 30).safeParse(value);
  return result.success ? [] : result.error.issues.map((issue) => issue.message);
};

describe('intIn: a whole-number setting with bounds and a fallback', () => {
  it('takes the bounds themselves and anything between; an absent key is the fallback', () => {
    expect(intIn(1, 600, 30).parse(1)).toBe(1);
    expect(intIn(1, 600, 30).parse(600)).toBe(600);
    expect(intIn(1, 600, 30).parse(42)).toBe(42);
    expect(intIn(1, 600, 30).parse(undefined)).toBe(30);
  });

  it('refuses out of range, fractions, unsafe integers and what is not a number, each with its own message', () => {
    expect(messages(0)).toEqual(['Too small: expected number to be >=1']);
    expect(messages(601)).toEqual(['Too big: expected number to be <=600']);
    expect(messages(1.5)).toEqual(['Invalid input: expected int, received number']);
    expect(messages(2 ** 60)).toEqual(['Too big: expected int to be <=9007199254740991', 'Too big: expected number to be <=600']);
    expect(messages('30')).toEqual(['Invalid input: expected number, received string']);
    expect(messages(null)).toEqual(['Invalid input: expected number, received null']);
    expect(messages(Number.NaN)).toEqual(['Invalid input: expected number, received NaN']);
  });
});
