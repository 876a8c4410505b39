import type { VendRequest } from '../types.js';

export type TemplateValues = Pick<VendRequest, 'slot' | 'amount' | 'reference'>;

const PLACEHOLDER = /\{(slot|amount|reference)\}/g;

function valueOf(values: TemplateValues, name: string): string {
  switch (name) {
    case 'slot':
      return values.slot ?? '';
    case 'amount':
      return String(values.amount);
    default:
      return values.reference;
  }
}

/** Fills {slot}, {amount} and {reference} in a command template. */
export function fillCommand(template: string, values: TemplateValues): string {
  return template.replace(PLACEHOLDER, (_match, name: string) => valueOf(values, name));
}

/** Compiles an answer pattern; placeholders become the escaped literal values of this vend. */
export function compilePattern(pattern: string, values: TemplateValues): RegExp {
  return new RegExp(pattern.replace(PLACEHOLDER, (_match, name: string) => escapeRegExp(valueOf(values, name))));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** For logs: lines from a machine are untrusted; keep them short. */
export function preview(line: string, max = 120): string {
  return line.length > max ? `${line.slice(0, max)}…` : line;
}
