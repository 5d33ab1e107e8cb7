import { oauthError } from '#lib/oauth/errors.js';

/** One form or JSON body, values as strings (a repeated parameter is refused, RFC 6749 §3.2). */
export function readTokenRequestBody(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body))
    throw oauthError('invalid_request', 'send the parameters as a form or a JSON object');
  for (const [name, value] of Object.entries(body)) {
    if (Array.isArray(value) && name !== 'resource')
      throw oauthError('invalid_request', `${name} must not be repeated`);
  }
  return body as Record<string, unknown>;
}

/** A single non-empty string parameter, or undefined when absent. */
export function stringParam(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > 4096)
    throw oauthError('invalid_request', `${name} must be a non-empty string`);
  return value;
}
