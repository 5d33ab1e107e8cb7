import type { IncomingHttpHeaders } from 'node:http';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';
import type { GuardedFetcher } from '#lib/fetch/guarded-fetch.js';
import { CertificateError, type ScanFetch } from './capture-site.js';

// OpenSSL and Node codes for a certificate that did not verify (expired, self-signed, unknown
// issuer, wrong host name, ...): the scan grades such a site anyway, as the Observatory does.
const CERTIFICATE_CODES =
  /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS_CERT_ALTNAME_INVALID|HOSTNAME_MISMATCH/;

function headerPairs(headers: IncomingHttpHeaders): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) pairs.push([name, v]);
  }
  return pairs;
}

/**
 * The scan's single request through the guarded fetcher: every address checked and pinned,
 * redirects answered as they are (the capture follows them hop by hop), plain http allowed for
 * the redirection test, and a certificate failure reported so it can be retried unverified.
 */
export function createScanFetch(fetcher: GuardedFetcher): ScanFetch {
  return async (url, request) => {
    try {
      const response = await fetcher.fetch(url, {
        method: request.method,
        ...(request.headers ? { headers: request.headers } : {}),
        accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
        allowHttp: true,
        followRedirects: false,
        verifyCertificate: request.verify,
        maxBytes: request.maxBytes,
        timeoutMs: 10_000,
        signal: request.signal,
      });
      return { status: response.status, headers: headerPairs(response.headers), body: response.body.toString('utf8') };
    } catch (error) {
      const code = isKeyplaneError(error) ? (error.cause as NodeJS.ErrnoException | undefined)?.code : undefined;
      if (request.verify && code && CERTIFICATE_CODES.test(code)) throw new CertificateError(code);
      throw error;
    }
  };
}
