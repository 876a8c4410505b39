/** An answer with an error body; each provider renders `code` and `message` in its own shape. */
export class SimHttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;

  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'SimHttpError';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

/**
 * "Same body" for idempotency means the normalised JSON: object keys sorted, whitespace gone.
 * Array order still matters.
 */
export function normalisedJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

export const IDEMPOTENCY_KEY_MAX = 128;

/** Reads Idempotency-Key; `required` → 400 when absent. An empty or over-long key is always a 400. */
export function readIdempotencyKey(headers: Record<string, string | string[] | undefined>, required: boolean): string | null {
  const raw = headers['idempotency-key'];
  if (Array.isArray(raw)) throw new SimHttpError(400, 'invalid_request', 'Idempotency-Key must be sent once');
  if (raw === undefined) {
    if (required) throw new SimHttpError(400, 'invalid_request', 'Idempotency-Key header is required');
    return null;
  }
  if (raw.length < 1 || raw.length > IDEMPOTENCY_KEY_MAX) {
    throw new SimHttpError(400, 'invalid_request', `Idempotency-Key must be 1-${IDEMPOTENCY_KEY_MAX} characters, got ${raw.length}`);
  }
  return raw;
}

/** Body fields check shared by both providers' validators: collects every problem, then throws once. */
export function checkObjectBody(body: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new SimHttpError(400, 'invalid_request', 'the body must be a JSON object');
  }
  const unknown = Object.keys(body).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) {
    throw new SimHttpError(400, 'invalid_request', `unknown field(s): ${unknown.join(', ')}; allowed: ${allowed.join(', ')}`);
  }
  return body as Record<string, unknown>;
}

export function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}
