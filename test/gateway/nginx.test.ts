import t from 'tap';
import { request } from 'undici';
import { tempDir } from '../helpers/build.js';
import { startNginx } from '../helpers/nginx.js';
import { peerAvailability } from '../helpers/peers.js';
import { ACCESS_DIRECTORY, startTestGateway, startUpstream } from './helpers.js';

/** nginx `auth_request` in front of an app, asking the gateway's /_gate/auth (a real nginx, started here). */
const availability = peerAvailability('nginx', ['-v'], 'nginx-light');

t.test(
  'nginx auth_request with /_gate/auth: 401, 403, and identity for the app',
  { skip: availability.run ? false : availability.reason },
  async (t) => {
    const upstream = await startUpstream(t);
    const gw = await startTestGateway(t);
    await gw.configure(
      {
        mode: 'enforce',
        routes: [
          { path: '/', min_assurance: 'email' },
          { path: '/admin', min_assurance: 'sensitive' },
          { path: '/public', public: true },
          { path: '/team', allow: { orgs: [{ slug: 'acme' }], email_domains: ['partner.example'] } },
        ],
      },
      undefined,
      ACCESS_DIRECTORY,
    );
    const nginx = await startNginx({
      dir: tempDir(t, 'keyplane-nginx-'),
      server: `
    location = /_gate/auth {
      internal;
      proxy_pass ${gw.url.replace('localhost', '127.0.0.1')}/_gate/auth;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URI $request_uri;
      proxy_set_header X-Original-Method $request_method;
    }
    location / {
      auth_request /_gate/auth;
      auth_request_set $kp_subject $upstream_http_x_auth_subject;
      auth_request_set $kp_assurance $upstream_http_x_auth_assurance;
      auth_request_set $kp_assertion $upstream_http_x_auth_assertion;
      proxy_set_header X-Auth-Subject $kp_subject;
      proxy_set_header X-Auth-Assurance $kp_assurance;
      proxy_set_header X-Auth-Assertion $kp_assertion;
      proxy_pass ${upstream.url};
    }`,
    });
    t.teardown(() => nginx.stop());
    const base = nginx.url;

    const anonymous = await request(`${base}/app`, { headers: { 'x-auth-subject': 'evil' } });
    t.equal(anonymous.statusCode, 401, 'no session: nginx answers 401');
    await anonymous.body.dump();
    t.equal(upstream.seen.length, 0, 'and the app saw nothing');

    const cookie = await gw.sessionCookie({ assurance: 'passkey' });
    const ok = await request(`${base}/app/page?x=1`, { headers: { cookie, 'x-auth-subject': 'evil' } });
    t.equal(ok.statusCode, 200);
    await ok.body.dump();
    t.equal(upstream.last().url, '/app/page?x=1');
    t.equal(upstream.last().headers['x-auth-subject'], 'user-1', "the gateway's identity, not the client's");
    t.equal(upstream.last().headers['x-auth-assurance'], 'passkey');
    t.ok(upstream.last().headers['x-auth-assertion']);

    const weak = await request(`${base}/admin/users`, { headers: { cookie } });
    t.equal(weak.statusCode, 403, 'signed in but too weak: 403');
    await weak.body.dump();

    const open = await request(`${base}/public/x`);
    t.equal(open.statusCode, 200, 'a public route passes without a session');
    await open.body.dump();

    // Access rules (docs/gateway.md#access-rules): the same answers through auth_request.
    const member = await request(`${base}/team/x`, { headers: { cookie } });
    t.equal(member.statusCode, 200, 'a member of acme passes');
    await member.body.dump();
    const stranger = await gw.sessionCookie({ sub: 'user-2', email: 'eve@partner.example', emailVerified: false });
    const refused = await request(`${base}/team/x`, { headers: { cookie: stranger } });
    t.equal(refused.statusCode, 403, 'a stranger with an unverified address at the domain: 403');
    await refused.body.dump();
    const partner = await gw.sessionCookie({ sub: 'user-3', email: 'Pat@Partner.Example', emailVerified: true });
    const byDomain = await request(`${base}/team/x`, { headers: { cookie: partner } });
    t.equal(byDomain.statusCode, 200, 'a verified address at the domain passes');
    await byDomain.body.dump();
    t.notOk(
      upstream.seen.some((seen) => seen.headers['x-auth-subject'] === 'user-2'),
      'the app never saw the stranger',
    );
  },
);
