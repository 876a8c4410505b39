import type { FastifyInstance } from 'fastify';
import { ErrorCodes, VendgateError, httpStatusOf, type Logger } from '../util/index.js';

export interface ErrorBody {
  error: { code: string; message: string };
}

export function badRequest(message: string): VendgateError {
  return new VendgateError(ErrorCodes.BAD_REQUEST, message);
}

/**
 * A refusal of the request's form rather than its content (wrong media type, like fastify's own
 * 404/413/415): VG_ERR_BAD_REQUEST with the status HTTP defines for it. VendgateErrors get their
 * status from their code; these are the transport's, so they are not VendgateErrors.
 */
export class HttpRefusal extends Error {
  readonly statusCode: 404 | 413 | 415;

  constructor(statusCode: 404 | 413 | 415, message: string) {
    super(message);
    this.name = 'HttpRefusal';
    this.statusCode = statusCode;
  }
}

/** fastify's own body errors, reworded for a person reading curl output on the device. */
const FASTIFY_MESSAGES: Record<string, (limit: number) => string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: () => 'the body is not valid JSON; send an object such as {"slot":"A1"}',
  FST_ERR_CTP_EMPTY_JSON_BODY: () => 'the body is empty; send a JSON object such as {"slot":"A1"} ({} for a turnstile)',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => 'unsupported Content-Type; send application/json',
  FST_ERR_CTP_BODY_TOO_LARGE: (limit) => `the body is larger than ${limit} bytes`,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => 'Content-Length does not match the body',
  FST_ERR_BAD_URL: () => 'malformed URL',
};

/**
 * One error shape for every route: `{ error: { code, message } }`. VendgateErrors keep their code and
 * the status of that code (ERROR_HTTP_STATUS in util/errors.ts); an HttpRefusal and fastify's 4xx
 * become VG_ERR_BAD_REQUEST with their own status; anything else is a 500 whose details go to the
 * log only, never to the client.
 */
export function installErrorHandling(app: FastifyInstance, log: Logger, bodyLimitBytes: number): void {
  app.setErrorHandler((err: unknown, request, reply) => {
    if (err instanceof VendgateError) {
      if (err.httpStatus >= 500) log.warn({ code: err.code, url: request.url, err }, 'local api request failed');
      return reply.code(err.httpStatus).send(errorBody(err.code, err.message));
    }
    if (err instanceof HttpRefusal) return reply.code(err.statusCode).send(errorBody(ErrorCodes.BAD_REQUEST, err.message));
    const status = (err as { statusCode?: unknown }).statusCode;
    const fastifyCode = (err as { code?: unknown }).code;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      const describe = typeof fastifyCode === 'string' ? FASTIFY_MESSAGES[fastifyCode] : undefined;
      return reply.code(status).send(errorBody(ErrorCodes.BAD_REQUEST, describe ? describe(bodyLimitBytes) : 'bad request'));
    }
    log.error({ err, url: request.url, method: request.method }, 'local api internal error');
    return reply.code(httpStatusOf(ErrorCodes.INTERNAL)).send(errorBody(ErrorCodes.INTERNAL, 'internal error'));
  });

  app.setNotFoundHandler((request, reply) => {
    // "Wrong address" has always answered VG_ERR_BAD_REQUEST (clients match on it), not VG_ERR_NOT_FOUND.
    reply.code(404).send(errorBody(ErrorCodes.BAD_REQUEST, `no such resource: ${request.method} ${request.url.slice(0, 100)}`));
  });
}

export function errorBody(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}
