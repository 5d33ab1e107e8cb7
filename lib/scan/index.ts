export * from './capture.js';
export * from './expectations.js';
export * from './grade.js';
export * from './analyze-scan.js';
export { TEST_ADVICE, type TestAdvice } from './advice.js';
export { readCsp, testContentSecurityPolicy } from './tests/csp.js';
export { testCookies, cookiePrefixViolation } from './tests/cookies.js';
export { testCrossOriginResourceSharing, allowsAnyOrigin } from './tests/cors.js';
export {
  testCrossOriginResourcePolicy,
  testReferrerPolicy,
  testXContentTypeOptions,
  testXFrameOptions,
} from './tests/headers.js';
export { testSubresourceIntegrity } from './tests/sri.js';
export { testRedirection, testStrictTransportSecurity, parseHsts } from './tests/transport.js';
export * from './rating.js';
