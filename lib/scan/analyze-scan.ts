import { autoResponse, noPreloadList, type Capture, type PreloadLookup } from './capture.js';
import { scoreModifierOf, type TestOutcome } from './expectations.js';
import { scoreModifiers, type Grade } from './grade.js';
import { testCookies } from './tests/cookies.js';
import { testCrossOriginResourceSharing } from './tests/cors.js';
import { testContentSecurityPolicy } from './tests/csp.js';
import {
  testCrossOriginResourcePolicy,
  testReferrerPolicy,
  testXContentTypeOptions,
  testXFrameOptions,
} from './tests/headers.js';
import { testSubresourceIntegrity } from './tests/sri.js';
import { testRedirection, testStrictTransportSecurity } from './tests/transport.js';

/**
 * Names the rules: Keyplane's scan, version 1, grading like the MDN HTTP Observatory's
 * algorithm 5 (ten tests), with the differences docs/scan.md lists.
 */
export const SCAN_ALGORITHM = 'keyplane-scan/1 (observatory-5)';

export interface ScoredTest extends TestOutcome {
  score_modifier: number;
}

export interface ScanAnalysis {
  grade: Grade;
  score: number;
  algorithm: string;
  statusCode: number;
  tests: ScoredTest[];
  testsPassed: number;
}

/** Why a capture cannot be graded: nothing answered, or the page answered with an error. */
export class UngradableScanError extends Error {
  constructor(
    readonly kind: 'site_down' | 'unexpected_status',
    message: string,
  ) {
    super(message);
    this.name = 'UngradableScanError';
  }
}

/**
 * Grades a captured site: every test, then base 100 with the modifiers (bonuses only when the
 * penalties leave at least 90). Pure: the same capture always gives the same Rating body.
 */
export function analyzeScan(capture: Capture, options: { preloaded?: PreloadLookup } = {}): ScanAnalysis {
  const preloaded = options.preloaded ?? noPreloadList;
  const auto = autoResponse(capture);
  if (!auto) throw new UngradableScanError('site_down', 'the site did not answer');
  // 2xx, 3xx, 401 and 403 are graded; any other status says the scan did not reach the page.
  if (auto.status < 200 || (auto.status >= 400 && auto.status !== 401 && auto.status !== 403)) {
    throw new UngradableScanError('unexpected_status', `the site answered with HTTP status ${auto.status}`);
  }
  const hsts = testStrictTransportSecurity(capture, preloaded);
  const outcomes: TestOutcome[] = [
    testContentSecurityPolicy(capture),
    testCookies(capture, hsts.pass),
    testCrossOriginResourceSharing(capture),
    testRedirection(capture, preloaded),
    testReferrerPolicy(capture),
    hsts,
    testSubresourceIntegrity(capture),
    testXContentTypeOptions(capture),
    testXFrameOptions(capture),
    testCrossOriginResourcePolicy(capture),
  ];
  const tests = outcomes.map((t) => ({ ...t, score_modifier: scoreModifierOf(t.result) }));
  const { score, grade } = scoreModifiers(tests.map((t) => t.score_modifier));
  return {
    grade,
    score,
    algorithm: SCAN_ALGORITHM,
    statusCode: auto.status,
    tests,
    testsPassed: tests.filter((t) => t.pass).length,
  };
}
