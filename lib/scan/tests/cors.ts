import { Parser } from 'htmlparser2';
import { getFirstHeader, type Capture, type CapturedResponse } from '../capture.js';
import type { Expectation, TestOutcome } from '../expectations.js';

/** Whether a Flash (crossdomain.xml) or Silverlight (clientaccesspolicy.xml) policy lets any origin in. */
export function allowsAnyOrigin(xml: string, kind: 'crossdomain' | 'clientaccesspolicy'): boolean {
  let open = false;
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (kind === 'crossdomain' && name === 'allow-access-from' && attributes['domain']?.trim() === '*') open = true;
        if (kind === 'clientaccesspolicy' && name === 'domain' && attributes['uri']?.trim() === '*') open = true;
      },
    },
    { xmlMode: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(xml);
  parser.end();
  return open;
}

function policyOpen(response: CapturedResponse | null, kind: 'crossdomain' | 'clientaccesspolicy'): boolean {
  return response !== null && response.status === 200 && allowsAnyOrigin(response.body ?? '', kind);
}

/**
 * CORS: a preflight from a foreign origin that is echoed back with credentials allowed hands any
 * site the user's session (Fetch §3.2.5); so does a wildcard Flash or Silverlight policy file.
 */
export function testCrossOriginResourceSharing(capture: Capture): TestOutcome {
  const data: Record<string, unknown> = {};
  let result: Expectation = 'cross-origin-resource-sharing-not-implemented';
  const acao = getFirstHeader(capture.cors, 'access-control-allow-origin');
  if (acao !== null) {
    const value = acao.slice(0, 256).trim();
    data['acao'] = value;
    const credentials =
      getFirstHeader(capture.cors, 'access-control-allow-credentials')?.trim().toLowerCase() === 'true';
    if (value === '*') result = 'cross-origin-resource-sharing-implemented-with-public-access';
    else if (value === capture.corsOrigin && credentials)
      result = 'cross-origin-resource-sharing-implemented-with-universal-access';
    else result = 'cross-origin-resource-sharing-implemented-with-restricted-access';
  }
  for (const kind of ['crossdomain', 'clientaccesspolicy'] as const) {
    if (policyOpen(capture[kind], kind)) {
      data[`${kind}.xml`] = 'allows any origin';
      result = 'cross-origin-resource-sharing-implemented-with-universal-access';
    }
  }
  return {
    name: 'cross-origin-resource-sharing',
    result,
    pass: result !== 'cross-origin-resource-sharing-implemented-with-universal-access',
    data,
  };
}
