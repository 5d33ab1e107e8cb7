import type { Capture, CapturedResponse } from '#lib/scan/index.js';

export const HOST = 'www.shop.example';
export const ORIGIN = `https://${HOST}`;

/** A final https response with these headers (and an HTML body), reached from http by one redirect. */
export function site(
  headers: Array<[string, string]>,
  options: { body?: string; http?: CapturedResponse[] | null; verified?: boolean; cors?: Array<[string, string]> } = {},
): Capture {
  const page: CapturedResponse = {
    url: `${ORIGIN}/`,
    status: 200,
    headers: headers.some(([n]) => n.toLowerCase() === 'content-type')
      ? headers
      : [['Content-Type', 'text/html; charset=utf-8'], ...headers],
    body: options.body ?? '<!doctype html><title>x</title>',
    verified: options.verified ?? true,
  };
  const http =
    options.http === undefined
      ? [
          {
            url: `http://${HOST}/`,
            status: 301,
            headers: [['Location', `${ORIGIN}/`]] as Array<[string, string]>,
            verified: true,
          },
          page,
        ]
      : options.http;
  return {
    url: `${ORIGIN}/`,
    http,
    https: [page],
    cors: options.cors ? { url: `${ORIGIN}/`, status: 204, headers: options.cors, verified: true } : null,
    corsOrigin: 'https://scan.keyplane.invalid',
    crossdomain: null,
    clientaccesspolicy: null,
  };
}

export const HARDENED: Array<[string, string]> = [
  ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'"],
  ['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'],
  ['X-Content-Type-Options', 'nosniff'],
  ['X-Frame-Options', 'DENY'],
  ['Referrer-Policy', 'no-referrer'],
  ['Cross-Origin-Resource-Policy', 'same-origin'],
  ['Set-Cookie', 'sessionid=abc; Secure; HttpOnly; SameSite=Strict; Path=/'],
];

/** The hardened headers with one replaced (by name) or removed (value null). */
export function hardenedWith(
  name: string,
  value: string | null,
  extra: Array<[string, string]> = [],
): Array<[string, string]> {
  const rest = HARDENED.filter(([n]) => n.toLowerCase() !== name.toLowerCase());
  return [...rest, ...(value === null ? [] : [[name, value] as [string, string]]), ...extra];
}
