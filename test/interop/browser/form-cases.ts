import type { Test } from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Page } from 'playwright-core';

/**
 * The forms of test/interop/browser/forms-csrf.test.ts: one case per `<form` of the control
 * plane's and the gateway's templates, in the order an account's life allows them.
 */

export interface FormCase {
  /** The template that renders the form, and what tells its opening tag apart there. */
  source: string;
  tag: RegExp;
  /** Where the form is shown (a path of `at`, or a URL). */
  open: () => string;
  at?: 'control plane' | 'gateway';
  /** Opened in a browser without the account's session (a mailed link opened elsewhere). */
  signedOut?: true;
  /** The form on the page, and its submit button when not the first `button[type=submit]`. */
  form: string;
  button?: string;
  /** A script's form whose page stays as it is after a success (no reload, no next page). */
  stays?: true;
  fill?: (page: Page) => Promise<void>;
  /** What the real submission must also show, past "not refused as another site's". */
  then?: (t: Test, answer: Answer) => unknown;
  /**
   * Another form that the tag of an earlier case renders too (a helper making several forms): it
   * is sent and forged like the others, but that earlier case alone covers the tag.
   */
  sharedTag?: true;
}

/** Forms covered elsewhere: those that post to another party (the relying party, the SAML SP), and the ones below, each with why. */
export const ELSEWHERE: Array<{ source: string; tag: RegExp; why: string }> = [
  {
    source: 'control-plane/src/routes/oidc/pages.ts',
    tag: /id="kp-form-post"/,
    why: "posts to the client's redirect URI",
  },
  { source: 'control-plane/src/routes/saml/pages.ts', tag: /id="kp-saml-form"/, why: "posts to the SP's ACS URL" },
  // Script forms whose only request is JSON (PUT, or POST with application/json): another origin's
  // page cannot send one without a CORS preflight, which Keyplane never grants, besides the Origin
  // check. Their own Chromium suites send them as the page does.
  {
    source: 'control-plane/src/pages/link-pages.ts',
    tag: /id="enrol-form"/,
    why: 'a passkey ceremony posting JSON: test/interop/browser/scim-enrolment.test.ts',
  },
  {
    source: 'control-plane/src/routes/orgs/index.ts',
    tag: /members\/enrolment-link/,
    why: "shown only beside an account the org manages that has no passkey (a SCIM-provisioned one, absent from this suite's org); the org routes' Origin check guards it as every dashboard form: test/interop/browser/scim-enrolment.test.ts submits it in Chromium",
  },
  {
    source: 'control-plane/src/routes/orgs/passkey-policy-section.ts',
    tag: /data-method="PUT"/,
    why: 'preview (JSON POST) and save (JSON PUT): test/interop/browser/passkey-policy.test.ts',
  },
  // Connections (docs/federation.md): their pages need an upstream identity provider, so the
  // suites that run node-oidc-provider drive them and post them from another origin too.
  {
    source: 'control-plane/src/routes/federation/pages.ts',
    tag: /id="replace-form"/,
    why: '"Continue as …?" after an upstream sign-in: test/interop/browser/federation-oidc.test.ts',
  },
  {
    source: 'control-plane/src/routes/federation/pages.ts',
    tag: /id="link-form"/,
    why: 'a passkey ceremony posting JSON after an upstream sign-in: test/interop/browser/federation-oidc.test.ts',
  },
  ...[/\/connect"/, /\/remove"/].map((tag) => ({
    source: 'control-plane/src/accounts/account-sections.ts',
    tag,
    why: 'shown only while an instance-wide connection exists: test/interop/browser/federation-oidc.test.ts',
  })),
  {
    source: 'control-plane/src/routes/step-up/index.ts',
    tag: /id="step-up-upstream-form"/,
    why: 'a managed account signed in upstream without a passkey: test/control-plane/federation/upstream-step-up.test.ts',
  },
  // The console's forms ride its own SameSite=Strict cookie, which another origin's page never
  // sends, besides the Origin check (docs/console.md): test/interop/browser/console.test.ts drives
  // them in Chromium (opening, search, changes after a step-up, an auditor's forged post, and the
  // sign-out, role and delete forms posted by another origin's page).
  ...[/action="\/console\/signout"/, /action="\$\{action\}"/].map((tag) => ({
    source: 'control-plane/src/pages/console-views.ts',
    tag,
    why: 'the console suite',
  })),
  ...(
    [
      ['session', /id="console-open"/],
      ['accounts', /action="\/console\/accounts" role="search"/],
      ['accounts', /action="\$\{base\}\/role"/],
      ['accounts', /action="\$\{base\}\/delete"/],
      ['clients', /method="post" action="\$\{action\}"/],
      ['clients', /method="get" action="\$\{base\}"/],
      ['webhooks', /action="\/console\/webhooks"/],
      ['receipts', /role="search" aria-label="\$\{u\.t\('console\.receipts\.search_heading'\)\}"/],
      ['receipts', /role="search" aria-label="\$\{u\.t\('console\.receipts\.hash'\)\}"/],
    ] as const
  ).map(([section, tag]) => ({
    source: `control-plane/src/routes/console/${section}.ts`,
    tag,
    why: 'the console suite',
  })),
];

export interface Answer {
  status: number;
  body: string;
  url: string;
  /** A redirect's target. */
  location?: string;
}

const ROOTS = ['control-plane/src', 'gateway/src'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Every `<form …>` opening tag in the page templates, with its file. */
export function formTags(): Array<{ source: string; tag: string }> {
  return ROOTS.flatMap((root) =>
    sourceFiles(root).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/<form\b[^>]*>/g)].map((m) => ({
        source: relative(process.cwd(), file),
        tag: m[0],
      })),
    ),
  );
}

export interface Places {
  cp: string;
  gateway: string;
  evil: string;
  slug: string;
  clientId: string;
  emailLink: () => string;
  recoveryCode: () => string;
  challenge: string;
  /** A client whose `access.orgs` admits only Bob Co's owners (Ada is a member there). */
  gatedClientId: string;
  /** A client registered for agents (the jwt-bearer grant), for a grant. */
  agentClientId: string;
  /** Ada's enrolled agent, once enrolled. */
  agentId: () => string;
  /** A fresh user code from `POST /auth/device` by a client registered with the device grant. */
  userCode: () => Promise<string>;
}

/** The cases in the order the account's life allows them (sign-up first, sign-out last). */
export function formCases(places: () => Places): FormCase[] {
  const cp = (path: string) => () => `${places().cp}${path}`;
  const acct = 'control-plane/src/pages/account-page.ts';
  const orgs = 'control-plane/src/routes/orgs/index.ts';
  const apps = 'control-plane/src/routes/clients/apps.ts';
  const org = () => `${places().cp}/org/${places().slug}`;
  const siteRow = 'tr[data-site]';
  const teams = 'control-plane/src/routes/orgs/teams-section.ts';
  const teamForm = /action="\/org\/\$\{slug\}\/teams\/\$\{encodeURIComponent/;
  const team = 'li[data-team="eng"]';
  const authorize = (clientId: () => string, state: string) => () =>
    `${places().cp}/auth/authorize?${new URLSearchParams({
      client_id: clientId(),
      redirect_uri: `${places().evil}/cb`,
      response_type: 'code',
      scope: 'openid',
      state,
      code_challenge: places().challenge,
      code_challenge_method: 'S256',
    })}`;
  return [
    {
      source: 'control-plane/src/routes/auth-page/index.ts',
      tag: /id="auth-form"/,
      open: cp('/auth'),
      form: '#auth-form',
      button: 'button[data-action="signup"]',
      fill: (page) => page.fill('#username', 'ada'),
    },
    {
      source: 'control-plane/src/routes/step-up/index.ts',
      tag: /id="step-up-form"/,
      open: cp('/auth/step-up?return=/account'),
      form: '#step-up-form',
    },
    {
      source: 'control-plane/src/routes/oidc/device.ts',
      tag: /data-action="device-code"/,
      open: cp('/device'),
      form: 'form[data-action="device-code"]',
      // A new device authorization each time: the sign-up is minutes old, so the code leads to the consent.
      fill: async (page) => page.fill('#user-code', await places().userCode()),
      then: (t, answer) => t.match(answer.body, /data-field="user_code"/, 'the code is known: the consent shows it'),
    },
    {
      source: acct,
      tag: /data-form="profile"/,
      open: cp('/account'),
      form: 'form[data-form="profile"]',
      fill: (page) => page.fill('#display-name', 'Ada L.'),
    },
    {
      source: acct,
      tag: /data-form="rename"/,
      open: cp('/account'),
      form: 'form[data-form="rename"]',
      fill: (page) => page.fill('#new-username', 'ada.l'),
    },
    { source: acct, tag: /data-form="preferences"/, open: cp('/account'), form: 'form[data-form="preferences"]' },
    {
      source: 'control-plane/src/accounts/account-sections.ts',
      tag: /data-sf-form="totp-confirm"/,
      open: cp('/account'),
      form: 'form[data-sf-form="totp-confirm"]',
      fill: async (page) => {
        await page.click('button[data-sf-action="totp-setup"]');
        await page.waitForSelector('#totp-setup-panel:not([hidden])', { timeout: 10_000 });
        // A wrong code: TOTP stays off (later step-ups need no code); the form still reaches its handler.
        await page.fill('#totp-code', '000000');
      },
    },
    {
      source: 'control-plane/src/accounts/account-sections.ts',
      tag: /data-sf-form="email-add"/,
      open: cp('/account'),
      form: 'form[data-sf-form="email-add"]',
      stays: true,
      fill: (page) => page.fill('#email-new', 'ada@example.com'),
    },
    {
      source: 'control-plane/src/pages/link-pages.ts',
      tag: /action="\/auth\/email\/verify"/,
      open: () => places().emailLink(),
      // Opened where the account is signed in, the link verifies at once; elsewhere it shows the form.
      signedOut: true,
      form: 'form[data-action="verify-email"]',
      then: (t, answer) => t.match(answer.body, /Address verified/),
    },
    {
      source: acct,
      tag: /action="\/auth\/orgs\/create"/,
      open: cp('/account'),
      form: 'form[action="/auth/orgs/create"]',
      fill: (page) => page.fill('#org-name', 'Ada Shop'),
    },
    {
      source: acct,
      tag: /members\/accept/,
      open: cp('/account'),
      form: 'form[data-invite="bob-co"]',
    },
    {
      source: orgs,
      tag: /websites\/add/,
      open: org,
      form: 'form[action$="/websites/add"]',
      fill: (page) => page.fill('#site-url', 'https://shop.example/'),
    },
    { source: orgs, tag: /action="\/org\/\$\{slug\}\/scan"/, open: org, form: `${siteRow} form[action$="/scan"]` },
    {
      source: orgs,
      tag: /websites\/verify/,
      open: org,
      form: `${siteRow} form[action$="/websites/verify"]`,
    },
    {
      source: orgs,
      tag: /websites\/primary/,
      open: org,
      form: `${siteRow} form[action$="/websites/primary"]`,
    },
    {
      source: orgs,
      tag: /websites\/remove/,
      open: org,
      form: `${siteRow} form[action$="/websites/remove"]`,
    },
    {
      source: orgs,
      tag: /members\/invite/,
      open: org,
      form: 'form[action$="/members/invite"]',
      // The page says who was invited and lists them pending, without a reload.
      stays: true,
      fill: async (page) => page.fill('form[action$="/members/invite"] input[name="username"]', 'bob'),
    },
    {
      source: teams,
      tag: /action="\/org\/\$\{slug\}\/teams" aria-labelledby/,
      open: org,
      form: 'form[aria-labelledby="create-team-h"]',
      fill: async (page) => {
        await page.fill('#team-name', 'eng');
        await page.fill('#team-display', 'Engineering');
      },
      then: (t, answer) => t.equal(answer.status, 201, 'team created'),
    },
    // One tag renders each team's four forms, in this order; the member picker offers the org's one
    // member, Ada. The first covers the tag.
    ...(
      [
        ['/members/add', 'Ada joined the team'],
        ['/rename', 'renamed', (page: Page) => page.fill('#team-eng-display', 'Platform')],
        ['/members/remove', 'Ada left the team'],
        ['/delete', 'the team is gone'],
      ] as const
    ).map(([action, done, fill], i): FormCase => ({
      source: teams,
      tag: teamForm,
      ...(i > 0 ? { sharedTag: true as const } : {}),
      open: org,
      form: `${team} form[action$="${action}"]`,
      ...(fill ? { fill } : {}),
      then: (t, answer) => t.equal(answer.status, 200, done),
    })),
    {
      source: apps,
      tag: /action="\/apps\/register"/,
      open: cp('/apps'),
      form: 'form[action="/apps/register"]',
      fill: async (page) => {
        await page.fill('#client_name', 'Ada App');
        await page.fill('#redirect_uris', `${places().evil}/cb`);
        await page.check('input[name="client_type"][value="confidential"]');
      },
    },
    { source: apps, tag: /\/update"/, open: cp('/apps'), form: 'form[action$="/update"]' },
    { source: apps, tag: /rotate-secret/, open: cp('/apps'), form: 'form[action$="/rotate-secret"]' },
    { source: apps, tag: /\/revoke"/, open: cp('/apps'), form: 'form[action$="/revoke"]' },
    {
      source: 'control-plane/src/routes/connectors/page.ts',
      tag: /action="\/apps\/connectors"/,
      open: cp('/apps'),
      form: 'form[action="/apps/connectors"]',
      fill: (page) => page.fill('#connector_base_url', 'https://grafana.example.com'),
    },
    {
      source: 'control-plane/src/routes/saml/apps-page.ts',
      tag: /action="\$\{input\.action\}"/,
      open: cp('/apps/saml'),
      form: 'form[action="/apps/saml/register"]',
      fill: async (page) => {
        await page.fill('#entity_id', 'https://wiki.example.com/saml');
        await page.fill('#acs_urls', 'https://wiki.example.com/saml/acs');
        await page.fill('#certificate', 'not a certificate');
      },
    },
    {
      source: 'control-plane/src/routes/saml/apps-page.ts',
      tag: /\/delete"/,
      open: cp('/apps/saml'),
      form: 'form[action$="/delete"]',
    },
    {
      source: 'control-plane/src/routes/scan/index.ts',
      tag: /action="\/scan"/,
      open: cp('/scan'),
      form: 'form[action="/scan"]',
      fill: (page) => page.fill('#scan-url', 'https://shop.example/'),
    },
    {
      source: 'control-plane/src/routes/contact/index.ts',
      tag: /action="\/contact"/,
      open: cp('/contact'),
      form: 'form[action="/contact"]',
      fill: async (page) => {
        await page.fill('#contact-email', 'ada@example.com');
        await page.fill('#contact-message', 'Hello from a form test.');
      },
    },
    {
      source: 'control-plane/src/routes/agents/pages.ts',
      tag: /id="approve"/,
      open: cp('/account/agents'),
      form: '#approve',
      fill: async (page) => {
        await page.fill('input[name="enrollment_id"]', 'enr_unknown');
        await page.fill('input[name="owner_code"]', 'ABCD-EFGH');
      },
    },
    {
      source: 'control-plane/src/routes/agents/pages.ts',
      tag: /id="grant"/,
      open: () => `${places().cp}/account/agents/${places().agentId()}`,
      form: '#grant',
      fill: async (page) => {
        await page.fill('#grant input[name="client_id"]', places().agentClientId);
        await page.fill('#grant input[name="scope"]', 'notes:read');
      },
      then: (t, answer) => t.equal(answer.status, 200, `grant approved (${answer.body.slice(0, 120)})`),
    },
    {
      source: 'control-plane/src/routes/oidc/pages.ts',
      tag: /data-action="not-admitted"/,
      open: authorize(() => places().gatedClientId, 'state-0'),
      form: 'form[data-action="not-admitted"]',
      then: (t, answer) => {
        t.match(answer.status, /^30[23]$/, 'back to the client');
        t.match(answer.location, /[?&]error=access_denied/, 'with access_denied');
      },
    },
    {
      source: 'control-plane/src/routes/oidc/pages.ts',
      tag: /data-action="continue"/,
      open: authorize(() => places().clientId, 'state-1'),
      form: 'form[data-action="continue"]',
      button: 'button[value="allow"]',
      then: (t, answer) => t.match(answer.status, /^30[23]$/, 'approved: off to the client with a code'),
    },
    {
      source: acct,
      tag: /approvals\/revoke/,
      open: cp('/account'),
      // The approval the consent above left (the operator's gateway asks no approval, so lists none).
      form: 'form[action="/account/approvals/revoke"]',
      then: (t, answer) => t.equal(answer.status, 200, 'approval revoked'),
    },
    {
      source: 'gateway/src/page-flow.ts',
      tag: /action="\/_gate\/signout"/,
      at: 'gateway',
      open: () => `${places().gateway}/_gate/signout`,
      form: 'form[data-action="signout-form"]',
      then: (t, answer) => t.equal(answer.status, 302, 'signed out, on to the control plane'),
    },
    {
      source: 'control-plane/src/pages/link-pages.ts',
      tag: /action="\/auth\/recovery\/verify"/,
      open: cp('/auth/recovery'),
      form: 'form[action="/auth/recovery/verify"]',
      fill: async (page) => {
        await page.fill('#recovery-user', 'ada.l');
        await page.fill('#recovery-code', places().recoveryCode());
      },
      then: (t, answer) => t.ok(answer.status < 400, `signed in with the backup code (${answer.status})`),
    },
    {
      source: 'control-plane/src/pages/link-pages.ts',
      tag: /action="\/auth\/magic\/request"/,
      open: cp('/auth/magic/request'),
      form: 'form[action="/auth/magic/request"]',
      fill: (page) => page.fill('#magic-email', 'ada@example.com'),
      then: (t, answer) => t.match(answer.body, /Check your mail/),
    },
    {
      source: acct,
      tag: /data-form="delete-account"/,
      open: cp('/account'),
      form: 'form[data-form="delete-account"]',
      // A recovery session is below the sensitive level deleting needs: refused, but by that rule.
      fill: (page) => page.fill('#delete-confirm', 'ada.l'),
      then: (t, answer) => t.match(answer.body, /insufficient_assurance/),
    },
    {
      source: 'control-plane/src/routes/oidc/pages.ts',
      tag: /data-action="logout"/,
      open: cp('/auth/logout'),
      form: 'form[data-action="logout"]',
      then: (t, answer) => t.ok(answer.status < 400, `signed out (${answer.status})`),
    },
  ];
}
