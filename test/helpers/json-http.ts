/** A request's answer as the tests read it: the status, and the body parsed as JSON (undefined when empty). */
export interface JsonAnswer {
  status: number;
  json: any;
}

/** The status of `response` and its body parsed as JSON; undefined for an empty body. */
export async function jsonAnswer(response: Response): Promise<JsonAnswer> {
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

/** `method` on `url`, with `body` as JSON when there is one (none otherwise), and the answer read by jsonAnswer. */
export async function callJson(url: string, method: string, body?: unknown): Promise<JsonAnswer> {
  const response = await fetch(url, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return jsonAnswer(response);
}
