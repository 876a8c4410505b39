import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { formatAmount } from '../../src/kiosk/index.js';

const PUBLIC = new URL('../../src/kiosk/public/', import.meta.url).pathname;

describe('money on the screen', () => {
  it('writes tugrik and tenge in whole units and other currencies in their minor unit', () => {
    expect(formatAmount(1500, 'MNT')).toBe('₮1,500');
    expect(formatAmount(1500, 'KZT')).toBe('₸1,500');
    expect(formatAmount(1500, 'USD')).toBe('$15.00');
    expect(formatAmount(1500, 'JPY')).toBe('¥1,500');
  });

  it('shows the raw figure and code for a currency code Intl does not accept', () => {
    expect(formatAmount(1500, 'NOT-A-CODE')).toBe('1500 NOT-A-CODE');
  });

  it('has one implementation: the page formats money with the file the server imports, and keeps no rule of its own', () => {
    const text = readFileSync(`${PUBLIC}text.js`, 'utf8');
    expect(text).toMatch(/import \{ formatAmount \} from '\.\/money\.js'/);
    expect(text).not.toMatch(/WHOLE_UNIT_CURRENCIES|NumberFormat/);
  });
});
