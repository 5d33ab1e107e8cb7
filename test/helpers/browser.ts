import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';

/**
 * Debian's Chromium driven by playwright-core, with the CDP WebAuthn virtual authenticator: the
 * one way every browser suite starts, skips (or fails under KEYPLANE_REQUIRE_ALL=1) and watches
 * for problems worth printing when a step times out.
 */

interface Tap {
  teardown(fn: () => unknown): void;
  fail(message: string): void;
}

export const CHROMIUM = '/usr/bin/chromium';

/** The CDP virtual authenticator the browser suites use: a platform passkey that verifies the user. */
export const PLATFORM_AUTHENTICATOR = {
  protocol: 'ctap2',
  ctap2Version: 'ctap2_1',
  transport: 'internal',
  hasResidentKey: true,
  hasUserVerification: true,
  isUserVerified: true,
  automaticPresenceSimulation: true,
} as const;
const REQUIRE_ALL = process.env['KEYPLANE_REQUIRE_ALL'] === '1';
// Without the background-networking flags Chromium keeps dialling Google on this closed network.
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const chromiumMissing = !existsSync(CHROMIUM);

/** The `skip` option of a browser suite: false when Chromium is here, or a message; a failure when it must be here. */
export function chromiumSkip(t: Tap, suite: string): string | false {
  if (!chromiumMissing) return false;
  if (REQUIRE_ALL) {
    t.fail(`Chromium is required (KEYPLANE_REQUIRE_ALL=1) but ${CHROMIUM} does not exist`);
    return false;
  }
  return `Chromium not found at ${CHROMIUM}: ${suite} skipped (install chromium, or set KEYPLANE_REQUIRE_ALL=1 to fail instead)`;
}

export interface BrowserSession {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  cdp: CDPSession;
  /** Page errors, console errors and 4xx/5xx responses seen so far (for failure messages). */
  problems: string[];
  /** Adds a CTAP2 platform authenticator holding discoverable credentials that verifies the user. */
  addAuthenticator(): Promise<string>;
}

export interface LaunchOptions {
  /** Response paths whose 4xx/5xx is expected and not a problem (besides /favicon.ico). */
  expectedFailures?: string[];
  /** Log every response, not only failures. */
  traceResponses?: boolean;
  /**
   * Keep passkey autofill (conditional mediation). Off by default: Chromium's virtual authenticator
   * answers a conditional request on its own, which would sign a suite back in the moment /auth
   * loads after it signs out; without it the pages take the button path, as in a browser without
   * autofill. test/interop/browser/passkey-journeys.test.ts turns it on.
   */
  autofill?: boolean;
}

/**
 * Makes the page see a browser without passkey autofill or conditional create (their feature
 * detection answers false), so that it takes the button path.
 */
export async function withoutAutofill(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    const credential = (globalThis as { PublicKeyCredential?: { getClientCapabilities?: () => Promise<object> } })
      .PublicKeyCredential;
    if (!credential) return;
    Object.defineProperty(credential, 'isConditionalMediationAvailable', { value: async () => false });
    const capabilities = credential.getClientCapabilities?.bind(credential);
    if (capabilities)
      Object.defineProperty(credential, 'getClientCapabilities', {
        value: async () => ({ ...(await capabilities()), conditionalGet: false, conditionalCreate: false }),
      });
  });
}

export async function launchChromium(t: Tap, options: LaunchOptions = {}): Promise<BrowserSession> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  t.teardown(() => browser.close());
  const context = await browser.newContext();
  if (!options.autofill) await withoutAutofill(context);
  const page = await context.newPage();
  const problems: string[] = [];
  const expected = new Set(['/favicon.ico', ...(options.expectedFailures ?? [])]);
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    // Failed loads are reported with their URL by the response listener.
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
      problems.push(`console: ${message.text()}`);
  });
  page.on('response', (response) => {
    const url = new URL(response.url());
    if (options.traceResponses)
      problems.push(
        `${response.status()} ${response.request().method()} ${url.href.slice(0, 120)} ${response.headers()['location'] ?? ''}`,
      );
    else if (response.status() >= 400 && !expected.has(url.pathname))
      problems.push(`${response.status()} ${url.pathname}`);
  });
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  return {
    browser,
    context,
    page,
    cdp,
    problems,
    async addAuthenticator() {
      const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: PLATFORM_AUTHENTICATOR,
      });
      return authenticatorId;
    },
  };
}
