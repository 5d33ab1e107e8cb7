import type { TestName } from './expectations.js';

export interface TestAdvice {
  title: string;
  /** What to change when the test fails or earns less than it could. */
  fix: string;
  /** A header (or markup) to copy. */
  snippet: string;
}

/** The report's words per test: plain advice and a header that passes it. */
export const TEST_ADVICE: Record<TestName, TestAdvice> = {
  'content-security-policy': {
    title: 'Content Security Policy',
    fix: "Send a Content-Security-Policy header without 'unsafe-inline', 'unsafe-eval' or wildcard sources in script-src and object-src; start from default-src 'none' and allow what the page needs. Use nonces or hashes for inline scripts.",
    snippet:
      "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  },
  cookies: {
    title: 'Cookies',
    fix: 'Mark every cookie Secure, session cookies HttpOnly too, and give each a SameSite attribute (Lax or Strict). Prefer the __Host- prefix for session cookies.',
    snippet: 'Set-Cookie: __Host-session=…; Path=/; Secure; HttpOnly; SameSite=Lax',
  },
  'cross-origin-resource-sharing': {
    title: 'Cross-origin resource sharing',
    fix: 'Never echo an arbitrary Origin together with Access-Control-Allow-Credentials: true; name the exact origins you trust. Remove wildcard crossdomain.xml and clientaccesspolicy.xml files.',
    snippet: 'Access-Control-Allow-Origin: https://app.example.com',
  },
  redirection: {
    title: 'Redirection to https',
    fix: 'Answer every plain-http request with a permanent redirect to https on the same host, before any other redirect.',
    snippet: 'HTTP/1.1 301 Moved Permanently\nLocation: https://<your host>/',
  },
  'referrer-policy': {
    title: 'Referrer Policy',
    fix: 'Send a Referrer-Policy that does not leak full URLs to other sites.',
    snippet: 'Referrer-Policy: strict-origin-when-cross-origin',
  },
  'strict-transport-security': {
    title: 'Strict Transport Security (HSTS)',
    fix: 'Send Strict-Transport-Security on https with a max-age of at least six months (a year, with includeSubDomains and preload, to be eligible for the browsers’ preload list). Serve a certificate that verifies.',
    snippet: 'Strict-Transport-Security: max-age=63072000; includeSubDomains; preload',
  },
  'subresource-integrity': {
    title: 'Subresource Integrity',
    fix: 'Load scripts from other domains over https with an integrity attribute (and crossorigin="anonymous"), or host them yourself.',
    snippet: '<script src="https://cdn.example.net/lib.js" integrity="sha384-…" crossorigin="anonymous"></script>',
  },
  'x-content-type-options': {
    title: 'X-Content-Type-Options',
    fix: 'Send X-Content-Type-Options: nosniff so that browsers do not guess content types.',
    snippet: 'X-Content-Type-Options: nosniff',
  },
  'x-frame-options': {
    title: 'Framing (X-Frame-Options / frame-ancestors)',
    fix: 'Forbid framing by other sites with the CSP frame-ancestors directive in a header (a <meta> policy cannot carry it), or X-Frame-Options: DENY.',
    snippet: "Content-Security-Policy: frame-ancestors 'none'\nX-Frame-Options: DENY",
  },
  'cross-origin-resource-policy': {
    title: 'Cross-Origin-Resource-Policy',
    fix: 'Tell browsers which sites may embed your responses.',
    snippet: 'Cross-Origin-Resource-Policy: same-origin',
  },
};
