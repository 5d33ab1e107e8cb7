import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { tempDir } from '../helpers/build.js';
import { startTestGateway, startUpstream } from './helpers.js';

/** nginx `auth_request` in front of an app, asking the gateway's /_gate/auth (a real nginx, started here). */
function nginxAvailable(): { run: true } | { run: false; reason: string } {
  const probe = spawnSync('nginx', ['-v'], { encoding: 'utf8' });
  if (probe.status === 0) return { run: true };
  const reason = 'nginx is not installed (Debian: nginx-light)';
  if (process.env['KEYPLANE_REQUIRE_ALL'] === '1') throw new Error(`${reason}, and KEYPLANE_REQUIRE_ALL=1 requires it`);
  return { run: false, reason };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function waitForPort(port: number, log: () => string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); resolve(true); });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(50);
  }
  throw new Error(`nginx did not listen on ${port}: ${log()}`);
}

const availability = nginxAvailable();

t.test('nginx auth_request with /_gate/auth: 401, 403, and identity for the app', { skip: availability.run ? false : availability.reason }, async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { policy: { mode: 'enforce', routes: [{ path: '/', min_assurance: 'email' }, { path: '/admin', min_assurance: 'sensitive' }, { path: '/public', public: true }] } });
  const dir = tempDir(t, 'keyplane-nginx-');
  mkdirSync(join(dir, 'logs'));
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, `
${process.getuid?.() === 0 ? 'user root;' : ''}
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
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
    }
  }
}
`);
  const nginx = spawn('nginx', ['-c', conf, '-p', dir, '-e', join(dir, 'logs', 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  nginx.stderr.on('data', (d) => (stderr += d));
  t.teardown(() => { nginx.kill('SIGQUIT'); });
  const errors = () => `${stderr}${(() => { try { return readFileSync(join(dir, 'logs', 'error.log'), 'utf8'); } catch { return ''; } })()}`;
  await waitForPort(port, errors);
  const base = `http://127.0.0.1:${port}`;

  const anonymous = await request(`${base}/app`, { headers: { 'x-auth-subject': 'evil' } });
  t.equal(anonymous.statusCode, 401, 'no session: nginx answers 401');
  await anonymous.body.dump();
  t.equal(upstream.seen.length, 0, 'and the app saw nothing');

  const cookie = await gw.sessionCookie({ assurance: 'passkey' });
  const ok = await request(`${base}/app/page?x=1`, { headers: { cookie, 'x-auth-subject': 'evil' } });
  t.equal(ok.statusCode, 200);
  await ok.body.dump();
  t.equal(upstream.last().url, '/app/page?x=1');
  t.equal(upstream.last().headers['x-auth-subject'], 'user-1', 'the gateway\'s identity, not the client\'s');
  t.equal(upstream.last().headers['x-auth-assurance'], 'passkey');
  t.ok(upstream.last().headers['x-auth-assertion']);

  const weak = await request(`${base}/admin/users`, { headers: { cookie } });
  t.equal(weak.statusCode, 403, 'signed in but too weak: 403');
  await weak.body.dump();

  const open = await request(`${base}/public/x`);
  t.equal(open.statusCode, 200, 'a public route passes without a session');
  await open.body.dump();
});
