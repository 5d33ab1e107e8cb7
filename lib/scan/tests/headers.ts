import { autoResponse, getFirstHeader, getHeaders, type Capture } from '../capture.js';
import type { Expectation, TestOutcome } from '../expectations.js';
import { isHtmlContentType, readHtmlFacts } from '../html.js';
import { readCsp, restrictiveFrameAncestors } from './csp.js';

/** X-Content-Type-Options: only `nosniff` exists (Fetch §3.5). */
export function testXContentTypeOptions(capture: Capture): TestOutcome {
  const header = getFirstHeader(autoResponse(capture), 'x-content-type-options');
  const result: Expectation =
    header === null
      ? 'x-content-type-options-not-implemented'
      : header.slice(0, 256).trim().toLowerCase() === 'nosniff'
        ? 'x-content-type-options-nosniff'
        : 'x-content-type-options-header-invalid';
  return {
    name: 'x-content-type-options',
    result,
    pass: result === 'x-content-type-options-nosniff',
    data: header === null ? {} : { header },
  };
}

/**
 * X-Frame-Options or CSP frame-ancestors. Unlike the Observatory, a `frame-ancestors` counts only
 * from a header (browsers ignore it in `<meta>`, CSP3 §6.4.2) and only when it is not a wildcard,
 * and `ALLOW-FROM` (which no current browser honours) is an invalid value.
 */
export function testXFrameOptions(capture: Capture): TestOutcome {
  const response = autoResponse(capture);
  const frameAncestors = restrictiveFrameAncestors(readCsp(capture));
  const header = getFirstHeader(response, 'x-frame-options');
  let result: Expectation;
  if (frameAncestors) result = 'x-frame-options-implemented-via-csp';
  else if (header === null) result = 'x-frame-options-not-implemented';
  else if (['deny', 'sameorigin'].includes(header.slice(0, 1024).trim().toLowerCase()))
    result = 'x-frame-options-sameorigin-or-deny';
  else result = 'x-frame-options-header-invalid';
  const data: Record<string, unknown> = {};
  if (header !== null) data['header'] = header.slice(0, 1024);
  if (frameAncestors) data['frameAncestors'] = frameAncestors;
  return {
    name: 'x-frame-options',
    result,
    pass: result === 'x-frame-options-implemented-via-csp' || result === 'x-frame-options-sameorigin-or-deny',
    data,
  };
}

const PRIVATE_POLICIES = ['no-referrer', 'same-origin', 'strict-origin', 'strict-origin-when-cross-origin'];
const UNSAFE_POLICIES = ['origin', 'origin-when-cross-origin', 'unsafe-url', 'no-referrer-when-downgrade'];

/** Referrer-Policy from the header and `<meta name="referrer">`; the last valid token wins (Referrer Policy §8.1). */
export function testReferrerPolicy(capture: Capture): TestOutcome {
  const response = autoResponse(capture);
  const values = [...getHeaders(response, 'referrer-policy')];
  if (response?.body !== undefined && isHtmlContentType(getFirstHeader(response, 'content-type'))) {
    const meta = readHtmlFacts(response.body).metaReferrer;
    if (meta) values.push(meta);
  }
  if (values.length === 0)
    return { name: 'referrer-policy', result: 'referrer-policy-not-implemented', pass: true, data: {} };
  const joined = values.join(', ');
  const policy =
    joined
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter((t) => PRIVATE_POLICIES.includes(t) || UNSAFE_POLICIES.includes(t))
      .at(-1) ?? '';
  const result: Expectation = PRIVATE_POLICIES.includes(policy)
    ? 'referrer-policy-private'
    : UNSAFE_POLICIES.includes(policy)
      ? 'referrer-policy-unsafe'
      : 'referrer-policy-header-invalid';
  return { name: 'referrer-policy', result, pass: result === 'referrer-policy-private', data: { header: joined } };
}

/** Cross-Origin-Resource-Policy (Fetch §3.7); a repeated header is invalid. */
export function testCrossOriginResourcePolicy(capture: Capture): TestOutcome {
  const headers = getHeaders(autoResponse(capture), 'cross-origin-resource-policy');
  if (headers.length === 0)
    return { name: 'cross-origin-resource-policy', result: 'corp-not-implemented', pass: true, data: {} };
  const value = headers.join(', ').slice(0, 256).trim().toLowerCase();
  const result: Expectation =
    value === 'same-origin'
      ? 'corp-implemented-with-same-origin'
      : value === 'same-site'
        ? 'corp-implemented-with-same-site'
        : value === 'cross-origin'
          ? 'corp-implemented-with-cross-origin'
          : 'corp-header-invalid';
  return {
    name: 'cross-origin-resource-policy',
    result,
    pass: result !== 'corp-header-invalid',
    data: { header: value },
  };
}
