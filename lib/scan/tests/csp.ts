import parseContentSecurityPolicy from 'content-security-policy-parser';
import { autoResponse, autoUrl, getHeaders, type Capture } from '../capture.js';
import type { Expectation, TestOutcome } from '../expectations.js';
import { readHtmlFacts, isHtmlContentType } from '../html.js';

/** One policy: directive name → lower-cased source list. */
export type CspPolicy = Map<string, string[]>;

export interface ParsedCsp {
  /** Enforced policies from headers (each comma-separated policy on its own). */
  header: CspPolicy[];
  /** Enforced policies from `<meta http-equiv>`, without the directives browsers ignore there. */
  meta: CspPolicy[];
  /** Directive names repeated where repeating is harmless (report-uri, report-to). */
  duplicateWarnings: string[];
  /** Why a policy could not be used, when one could not. */
  invalid: string | null;
}

const DANGEROUSLY_BROAD = new Set([
  'ftp:',
  'http:',
  'https:',
  '*',
  'http://*',
  'http://*.*',
  'https://*',
  'https://*.*',
]);
const UNSAFE_INLINE = new Set(["'unsafe-inline'", 'data:']);
const PASSIVE_DIRECTIVES = ['img-src', 'media-src'];
const NONCE_OR_HASH = ["'sha256-", "'sha384-", "'sha512-", "'nonce-"];
const ALLOWED_DUPLICATES = new Set(['report-uri', 'report-to']);
// CSP3 §6.1.1 / HTML: a policy delivered in <meta> ignores these.
const DISALLOWED_IN_META = ['frame-ancestors', 'report-uri', 'sandbox'];
// The shortest meaningful policy ("img-src" less one character), the Observatory's bound.
const SHORTEST_POLICY = 6;

function isBroad(source: string): boolean {
  return DANGEROUSLY_BROAD.has(source);
}
function isBroadOrInline(source: string): boolean {
  return DANGEROUSLY_BROAD.has(source) || UNSAFE_INLINE.has(source);
}
function hasNonceOrHash(sources: string[]): boolean {
  return sources.some((s) => NONCE_OR_HASH.some((p) => s.startsWith(p)));
}

/**
 * Parses one serialized policy with the CSP3 parser (§2.2.1 "parse a serialized CSP"), one
 * directive at a time so that repeated directives are seen (the parser itself keeps the first).
 */
function parsePolicy(serialized: string, warnings: Set<string>): CspPolicy {
  const cleaned = serialized.replace(/[\r\n]/g, '').trim();
  if (cleaned.length < SHORTEST_POLICY) throw new Error('policy too short');
  const policy: CspPolicy = new Map();
  for (const token of cleaned.split(';')) {
    const parsed = parseContentSecurityPolicy(token);
    for (const [name, values] of parsed) {
      if (policy.has(name)) {
        if (ALLOWED_DUPLICATES.has(name)) {
          warnings.add(name);
          continue;
        }
        throw new Error(`duplicate directive ${name}`);
      }
      const sources = values.map((v) => v.toLowerCase());
      policy.set(name, sources.length === 0 && name.endsWith('-src') ? ["'none'"] : sources);
    }
  }
  return policy;
}

/** RFC 9110 §5.3 lets a client join repeated fields with commas; CSP3 §2.2.2 uses commas between policies. */
function splitPolicies(values: string[]): string[] {
  return values.flatMap((v) => v.split(',').map((s) => s.trim()));
}

/** Reads every enforced policy of the response the header tests look at (headers and meta). */
export function readCsp(capture: Capture): ParsedCsp {
  const response = autoResponse(capture);
  const parsed: ParsedCsp = { header: [], meta: [], duplicateWarnings: [], invalid: null };
  if (!response) return parsed;
  const warnings = new Set<string>();
  const headerPolicies = splitPolicies(getHeaders(response, 'content-security-policy'));
  const html = response.body !== undefined && isHtmlContentType(getHeaders(response, 'content-type')[0] ?? null);
  const metaPolicies = html ? splitPolicies(readHtmlFacts(response.body ?? '').metaCsp) : [];
  try {
    parsed.header = headerPolicies.map((p) => parsePolicy(p, warnings));
    parsed.meta = metaPolicies
      .map((p) => parsePolicy(p, warnings))
      .map((p) => {
        for (const d of DISALLOWED_IN_META) p.delete(d);
        return p;
      })
      .filter((p) => p.size > 0);
  } catch (error) {
    parsed.invalid = (error as Error).message;
  }
  parsed.duplicateWarnings = [...warnings];
  return parsed;
}

interface PolicyFlags {
  unsafeInline: boolean;
  insecureSchemeActive: boolean;
  unsafeEval: boolean;
  insecureSchemePassive: boolean;
  unsafeInlineStyle: boolean;
  defaultNone: boolean;
  strictDynamicWithoutNonce: boolean;
  strictDynamic: boolean;
  nonceOrHash: boolean;
  objectSrcRestricted: boolean;
  baseUriRestricted: boolean;
  formActionRestricted: boolean;
}

/** The Observatory's per-policy checks (src/analyzer/tests/csp.js), over one policy. */
function flagPolicy(policy: CspPolicy, https: boolean): PolicyFlags {
  const effective = (name: string): string[] => [...(policy.get(name) ?? policy.get('default-src') ?? ['*'])];
  let scriptSrc = effective('script-src');
  let styleSrc = effective('style-src');
  const objectSrc = effective('object-src');
  // CSP3 §8.2/§8.3: a nonce or hash makes browsers ignore 'unsafe-inline'.
  if (hasNonceOrHash(scriptSrc)) scriptSrc = scriptSrc.filter((s) => s !== "'unsafe-inline'");
  if (hasNonceOrHash(styleSrc)) styleSrc = styleSrc.filter((s) => s !== "'unsafe-inline'");
  const nonceOrHash = hasNonceOrHash(scriptSrc);
  const strictDynamic = scriptSrc.includes("'strict-dynamic'");
  // CSP3 §8.2: with 'strict-dynamic' host and scheme sources, 'self' and 'unsafe-inline' are ignored.
  if (strictDynamic && nonceOrHash) {
    scriptSrc = scriptSrc.filter(
      (s) => ![...DANGEROUSLY_BROAD].some((b) => s.startsWith(b)) && s !== "'self'" && s !== "'unsafe-inline'",
    );
  }
  const active = [...policy]
    .filter(([name]) => !PASSIVE_DIRECTIVES.includes(name) && name !== 'script-src')
    .flatMap(([, sources]) => sources)
    .concat(scriptSrc);
  const passive = PASSIVE_DIRECTIVES.flatMap((name) => policy.get(name) ?? policy.get('default-src') ?? []);
  const insecure = (s: string) => s.startsWith('http:') || s.startsWith('ftp:');
  const restricted = (name: string) => {
    const sources = policy.get(name);
    return sources !== undefined && !sources.some(isBroadOrInline);
  };
  const defaultSrc = policy.get('default-src');
  return {
    unsafeInline: scriptSrc.some(isBroadOrInline) || objectSrc.some(isBroad),
    insecureSchemeActive: https && active.some(insecure),
    unsafeEval: scriptSrc.includes("'unsafe-eval'") || styleSrc.includes("'unsafe-eval'"),
    insecureSchemePassive: https && passive.some(insecure),
    unsafeInlineStyle: styleSrc.some(isBroadOrInline),
    defaultNone: defaultSrc !== undefined && defaultSrc.length === 1 && defaultSrc[0] === "'none'",
    strictDynamicWithoutNonce: strictDynamic && !nonceOrHash,
    strictDynamic: strictDynamic && nonceOrHash,
    nonceOrHash,
    objectSrcRestricted: !objectSrc.some(isBroad),
    baseUriRestricted: restricted('base-uri'),
    formActionRestricted: restricted('form-action'),
  };
}

/**
 * Several enforced policies all apply (CSP3 §4.1): a weakness counts only when every policy has
 * it, a strength when any policy has it.
 */
function combineFlags(all: PolicyFlags[]): PolicyFlags {
  const every = (k: keyof PolicyFlags) => all.every((f) => f[k]);
  const some = (k: keyof PolicyFlags) => all.some((f) => f[k]);
  return {
    unsafeInline: every('unsafeInline'),
    insecureSchemeActive: every('insecureSchemeActive'),
    unsafeEval: every('unsafeEval'),
    insecureSchemePassive: every('insecureSchemePassive'),
    unsafeInlineStyle: every('unsafeInlineStyle'),
    defaultNone: some('defaultNone'),
    strictDynamicWithoutNonce: some('strictDynamicWithoutNonce'),
    strictDynamic: some('strictDynamic'),
    nonceOrHash: some('nonceOrHash'),
    objectSrcRestricted: some('objectSrcRestricted'),
    baseUriRestricted: some('baseUriRestricted'),
    formActionRestricted: some('formActionRestricted'),
  };
}

/** The restrictive `frame-ancestors` of the header policies, if any (meta ones are ignored by browsers). */
export function restrictiveFrameAncestors(csp: ParsedCsp): string[] | null {
  if (csp.invalid) return null;
  for (const policy of csp.header) {
    const sources = policy.get('frame-ancestors');
    if (sources && !sources.some(isBroad)) return sources;
  }
  return null;
}

/** Content-Security-Policy, as the Observatory grades it: the first failing rule wins. */
export function testContentSecurityPolicy(capture: Capture): TestOutcome {
  const csp = readCsp(capture);
  const url = autoUrl(capture);
  const outcome = (result: Expectation, pass: boolean, data: Record<string, unknown> = {}): TestOutcome => ({
    name: 'content-security-policy',
    result,
    pass,
    data,
  });
  if (csp.invalid) return outcome('csp-header-invalid', false, { error: csp.invalid });
  const policies = [...csp.header, ...csp.meta];
  if (policies.length === 0) {
    const reportOnly = getHeaders(autoResponse(capture), 'content-security-policy-report-only').length > 0;
    return outcome(reportOnly ? 'csp-not-implemented-but-reporting-enabled' : 'csp-not-implemented', false);
  }
  const flags = combineFlags(policies.map((p) => flagPolicy(p, url?.protocol === 'https:')));
  const data: Record<string, unknown> = {
    policies: policies.map((p) => Object.fromEntries(p)),
    meta: csp.meta.length > 0,
    strictDynamic: flags.strictDynamic,
    nonceOrHash: flags.nonceOrHash,
    objectSrcRestricted: flags.objectSrcRestricted,
    baseUriRestricted: flags.baseUriRestricted,
    formActionRestricted: flags.formActionRestricted,
    frameAncestors: restrictiveFrameAncestors(csp),
  };
  let result: Expectation;
  if (flags.strictDynamicWithoutNonce) result = 'csp-header-invalid';
  else if (flags.unsafeInline) result = 'csp-implemented-with-unsafe-inline';
  else if (flags.insecureSchemeActive) result = 'csp-implemented-with-insecure-scheme';
  else if (flags.unsafeEval) result = 'csp-implemented-with-unsafe-eval';
  else if (flags.insecureSchemePassive) result = 'csp-implemented-with-insecure-scheme-in-passive-content-only';
  else if (flags.unsafeInlineStyle) result = 'csp-implemented-with-unsafe-inline-in-style-src-only';
  else if (flags.defaultNone) result = 'csp-implemented-with-no-unsafe-default-src-none';
  else result = 'csp-implemented-with-no-unsafe';
  const pass = [
    'csp-implemented-with-no-unsafe',
    'csp-implemented-with-no-unsafe-default-src-none',
    'csp-implemented-with-unsafe-inline-in-style-src-only',
    'csp-implemented-with-insecure-scheme-in-passive-content-only',
  ].includes(result);
  if (pass && csp.duplicateWarnings.length > 0) {
    result = 'csp-implemented-but-duplicate-directives';
    data['duplicates'] = csp.duplicateWarnings;
  }
  return outcome(result, pass, data);
}
