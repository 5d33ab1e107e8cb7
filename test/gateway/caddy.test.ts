import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { findFreePort, waitForPort } from '#lib/runtime/listen.js';
import { tempDir } from '../helpers/build.js';
import { peerAvailability } from '../helpers/peers.js';
import {
  ACCESS_DIRECTORY,
  DEFAULT_IDENTITY,
  signAccessToken,
  signInRedirect,
  startTestGateway,
  startUpstream,
} from './helpers.js';

/** Caddy `forward_auth` in front of an app, asking the gateway's /_gate/auth: deploy/caddy/Caddyfile run as it is by a real Caddy. */
const availability = peerAvailability('caddy', ['version'], 'caddy');

const CADDYFILE = new URL('../../deploy/caddy/Caddyfile', import.meta.url);
/** Every spelling a backend might fold into X-Auth-Subject and friends: a client must not smuggle any of them past the gateway. */
const SPOOFED = {
  'x-auth-subject': 'evil',
  X_Auth_Subject: 'evil',
  'x.auth.subject': 'evil',
  'X-AUTH-ASSURANCE': 'evil',
  'x-auth_email': 'evil@example.test',
  'X_AUTH-PRINCIPAL-TYPE': 'evil',
  'x.Auth-Assertion': 'evil',
  'x-auth-other': 'evil',
};

/** The values of every header the upstream saw whose normalized name starts with `x-auth-`. */
function identityHeadersSeen(rawHeaders: string[]): Array<[string, string]> {
  const seen: Array<[string, string]> = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.toLowerCase().replace(/[_.]/g, '-').startsWith('x-auth-')) seen.push([name, rawHeaders[i + 1]!]);
  }
  return seen;
}

t.test(
  'caddy forward_auth with /_gate/auth: sign-in redirect, 401, 403, and identity for the app',
  { skip: availability.run ? false : availability.reason },
  async (t) => {
    const upstream = await startUpstream(t);
    const port = await findFreePort();
    const base = `http://127.0.0.1:${port}`;
    // The public URL is Caddy's origin: sign-in return URLs and token audiences are the browser's view.
    const gw = await startTestGateway(t, { overrides: { publicUrl: base } });
    await gw.configure(
      {
        mode: 'enforce',
        routes: [
          { path: '/', min_assurance: 'email' },
          { path: '/admin', min_assurance: 'sensitive' },
          { path: '/public', public: true },
          { path: '/team', allow: { orgs: [{ slug: 'acme' }] } },
        ],
      },
      undefined,
      ACCESS_DIRECTORY,
    );
    const dir = tempDir(t, 'keyplane-caddy-');
    const conf = join(dir, 'Caddyfile');
    writeFileSync(
      conf,
      `{\n\tadmin off\n\tauto_https off\n\tdefault_bind 127.0.0.1\n}\n\n${readFileSync(CADDYFILE, 'utf8')}`,
    );
    const caddy = spawn('caddy', ['run', '--config', conf, '--adapter', 'caddyfile'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: dir,
        XDG_DATA_HOME: join(dir, 'data'),
        XDG_CONFIG_HOME: join(dir, 'config'),
        KEYPLANE_SITE: base,
        KEYPLANE_GATEWAY: new URL(gw.local).host,
        KEYPLANE_UPSTREAM: new URL(upstream.url).host,
      },
    });
    let output = '';
    caddy.stdout.on('data', (d) => (output += d));
    caddy.stderr.on('data', (d) => (output += d));
    t.teardown(() => {
      caddy.kill('SIGTERM');
    });
    await waitForPort(port, '127.0.0.1', 10_000).catch(() => {
      throw new Error(`caddy did not listen on ${port}: ${output}`);
    });

    t.test('a browser without a session is sent to sign in, and the app sees nothing', async (t) => {
      const res = await request(`${base}/app/page?x=1`, { headers: { accept: 'text/html', ...SPOOFED } });
      t.match(
        await signInRedirect(gw.running.gateway, res),
        { returnTo: '/app/page?x=1', acr: null },
        'Caddy relays the redirect to authorize and its login cookie',
      );
      await res.body.dump();
      t.equal(upstream.seen.length, 0);
    });

    t.test('an API caller without a token gets 401 with a challenge, never a redirect', async (t) => {
      const res = await request(`${base}/app/data`, { headers: { accept: 'application/json', ...SPOOFED } });
      t.equal(res.statusCode, 401);
      t.match(String(res.headers['www-authenticate']), /^Bearer realm=/);
      t.match(await res.body.json(), { ok: false, reason: 'unauthorized' });
      const post = await request(`${base}/app/data`, { method: 'POST', headers: { accept: 'text/html' }, body: 'x' });
      t.equal(post.statusCode, 401, 'a form post is not a page load');
      await post.body.dump();
      t.equal(upstream.seen.length, 0);
    });

    t.test("an allowed session reaches the app with the gateway's identity and none of the client's", async (t) => {
      const cookie = await gw.sessionCookie({ assurance: 'passkey' });
      const res = await request(`${base}/app/page?x=1`, { headers: { cookie, accept: 'text/html', ...SPOOFED } });
      t.equal(res.statusCode, 200);
      await res.body.dump();
      const seen = upstream.last();
      t.equal(seen.url, '/app/page?x=1');
      t.has(seen.headers, DEFAULT_IDENTITY);
      t.match(seen.headers['x-auth-assertion'], /^ey[\w-]+\.[\w-]+\.[\w-]+$/);
      const identity = identityHeadersSeen(seen.rawHeaders);
      t.same(
        identity.map(([name]) => name.toLowerCase()).sort(),
        ['x-auth-assertion', 'x-auth-assurance', 'x-auth-email', 'x-auth-principal-type', 'x-auth-subject'],
        'exactly the five, once each',
      );
      t.notOk(
        identity.some(([, value]) => value.startsWith('evil')),
        'no spoofed value in any spelling',
      );

      const unverified = await gw.sessionCookie({ assurance: 'passkey', emailVerified: false });
      const second = await request(`${base}/app/page`, { headers: { cookie: unverified, ...SPOOFED } });
      t.equal(second.statusCode, 200);
      await second.body.dump();
      t.same(
        identityHeadersSeen(upstream.last().rawHeaders)
          .map(([name]) => name.toLowerCase())
          .sort(),
        ['x-auth-assertion', 'x-auth-assurance', 'x-auth-principal-type', 'x-auth-subject'],
        'an unverified email is not passed on, nor a stand-in for it',
      );
    });

    t.test('a bearer token reaches the app as its subject', async (t) => {
      const token = await signAccessToken({ audience: base, sub: 'api-user', assurance: 'passkey' });
      const res = await request(`${base}/app/data`, { headers: { authorization: `Bearer ${token}`, ...SPOOFED } });
      t.equal(res.statusCode, 200);
      await res.body.dump();
      t.equal(upstream.last().headers['x-auth-subject'], 'api-user');
      t.notOk(identityHeadersSeen(upstream.last().rawHeaders).some(([, value]) => value.startsWith('evil')));
    });

    t.test('a session too weak for the route gets 403 from fetch, and step-up from a page load', async (t) => {
      const cookie = await gw.sessionCookie({ assurance: 'passkey' });
      const before = upstream.seen.length;
      const xhr = await request(`${base}/admin/users`, { headers: { cookie, accept: 'application/json' } });
      t.equal(xhr.statusCode, 403);
      t.match(await xhr.body.json(), { ok: false, reason: 'insufficient_assurance', acr_values: 'sensitive' });
      const page = await request(`${base}/admin/users`, { headers: { cookie, accept: 'text/html' } });
      t.match(await signInRedirect(gw.running.gateway, page), { returnTo: '/admin/users', acr: 'sensitive' });
      await page.body.dump();
      t.equal(upstream.seen.length, before, 'the app saw neither');
    });

    t.test(
      'access rules: a member passes; a stranger gets the 403 page or the envelope, never a redirect',
      async (t) => {
        const member = await gw.sessionCookie({ assurance: 'passkey' });
        const passed = await request(`${base}/team/x`, { headers: { cookie: member, accept: 'text/html' } });
        t.equal(passed.statusCode, 200);
        await passed.body.dump();
        const before = upstream.seen.length;
        const stranger = await gw.sessionCookie({ sub: 'user-2', email: 'eve@example.test' });
        const page = await request(`${base}/team/x`, { headers: { cookie: stranger, accept: 'text/html' } });
        t.equal(page.statusCode, 403, 'Caddy relays the refusal');
        t.equal(page.headers['location'], undefined, 'not a redirect to sign-in (it would loop)');
        const html = await page.body.text();
        t.match(html, /data-field="account">eve@example\.test</);
        t.match(html, /data-action="use-another-account"/);
        const api = await request(`${base}/team/x`, { headers: { cookie: stranger, accept: 'application/json' } });
        t.equal(api.statusCode, 403);
        t.match(await api.body.json(), { ok: false, reason: 'access_denied' });
        t.equal(upstream.seen.length, before, 'the app saw neither');
      },
    );

    t.test('a public route passes without identity, and spoofed identity headers are gone', async (t) => {
      const res = await request(`${base}/public/x`, { headers: SPOOFED });
      t.equal(res.statusCode, 200);
      await res.body.dump();
      t.equal(upstream.last().url, '/public/x');
      t.same(
        identityHeadersSeen(upstream.last().rawHeaders),
        [],
        "no identity header at all (not even Caddy's unreplaced placeholder)",
      );
    });

    t.test("the gateway's pages are served on the app's origin, but /_gate/auth is Caddy's alone", async (t) => {
      const jwks = await request(`${base}/_gate/jwks`);
      t.equal(jwks.statusCode, 200);
      t.equal(((await jwks.body.json()) as { keys: unknown[] }).keys.length, 1);
      const auth = await request(`${base}/_gate/auth`, { headers: { 'x-forwarded-uri': '/public/x' } });
      t.equal(auth.statusCode, 404);
      await auth.body.dump();
    });
  },
);
