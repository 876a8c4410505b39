/**
 * The `schemaController` option of every vendgate fastify instance. Our routes validate with zod
 * and answer with JSON.stringify: none declares a JSON schema. Left at its default, fastify
 * evaluates ajv, ajv-formats, fast-uri and fast-json-stringify at its first `Fastify()` (the JSON
 * schema compilers) whether a route uses them or not; with our own factories it never loads them. A
 * route that declares a schema fails at registration with this message instead of compiling it.
 */
function refuse(): never {
  throw new Error('vendgate listeners declare no JSON schemas (validate with zod); see src/util/fastify-schemas.ts');
}

export const NO_JSON_SCHEMAS = { compilersFactory: { buildValidator: refuse, buildSerializer: refuse } } as const;
