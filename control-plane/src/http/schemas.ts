/** Shared pieces of route schemas. */
export const errorResponses = {
  '4xx': { $ref: 'envelope#' },
  '5xx': { $ref: 'envelope#' },
} as const;

export const okObject = (properties: Record<string, unknown> = {}, required: string[] = []) => ({
  type: 'object',
  required: ['ok', ...required],
  properties: { ok: { const: true }, ...properties },
  additionalProperties: true,
});

/** A JSON document of any shape (discovery, JWKS): documented but not reshaped by the serializer. */
export const anyObject = { type: 'object', additionalProperties: true } as const;

/** The `receipt` field of a response whose operation left one (docs/ledger.md). */
export const receiptField = {
  type: 'string',
  pattern: '^[0-9a-f]{64}$',
  description: 'Hex SHA-256 of the receipt for this change.',
} as const;
