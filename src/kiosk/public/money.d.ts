/** Types of money.js (the one implementation, shared by the page and the server). */
export declare const WHOLE_UNIT_CURRENCIES: ReadonlySet<string>;
export declare function formatAmount(amount: number, currency: string, locale?: string): string;
