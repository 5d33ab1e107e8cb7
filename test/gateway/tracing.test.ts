import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import t from 'tap';
import { request } from 'undici';
import { loadGatewayConfig } from '#config/load.js';
import { startGateway, type RunningGateway } from '../../gateway/src/server.js';
import { tempDir } from '../helpers/build.js';
import { startLiveControlPlane } from '../helpers/live-browser.js';
import { ADMIN } from '../helpers/oidc.js';
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { SoftAuthenticator } from '../helpers/soft-authenticator.js';
import { until } from '../helpers/until.js';
import { startUpstream } from './helpers.js';

/**
 * Traces across a real gateway, a real control plane and an upstream app, exported by the real
 * OTLP/HTTP exporter to a receiver in the test (docs/observability.md#traces).
 */
const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
const sink = () =>
  new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  });

/** Cookies by name, sent to both services: on localhost a browser sends the same cookies to every port. */
class Jar {
  readonly cookies = new Map<string, string>();
  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
  async fetch(url: string, init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {}) {
    const res = await request(url, {
      method: init.method ?? 'GET',
      headers: { ...(this.cookies.size ? { cookie: this.header() } : {}), ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body }),
    });
    for (const line of [res.headers['set-cookie'] ?? []].flat()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /max-age=0\b/i.test(line)) this.cookies.delete(pair!.slice(0, eq).trim());
      else this.cookies.set(pair!.slice(0, eq).trim(), value);
    }
    const body = await res.body.text();
    return { status: res.statusCode, location: res.headers['location'] as string | undefined, body };
  }
}

t.test(
  'one trace crosses the gateway and the control plane, the upstream gets the gateway’s traceparent, and no span records a secret',
  async (t) => {
    const received = await startOtlpReceiver(t);
    const cp = await startLiveControlPlane(t, { adminToken: ADMIN, telemetry: { otlp: { endpoint: received.url } } });
    const upstream = await startUpstream(t);

    // Both gateways serve one registration: the first signs in, the second only passes a public route.
    const registered = await request(`${cp.url}/register`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Traced edge',
        redirect_uris: ['http://localhost:1/_gate/callback'],
        scope: 'openid email',
        gateway: {
          mode: 'enforce',
          routes: [
            { path: '/', min_assurance: 'passkey' },
            { path: '/open', public: true },
          ],
        },
      }),
    });
    const client = (await registered.body.json()) as {
      client_id: string;
      client_secret: string;
      registration_access_token: string;
    };
    t.equal(registered.statusCode, 201);

    const startTracedGateway = async (trustedProxies: string[]): Promise<RunningGateway> => {
      const gw = await startGateway(
        loadGatewayConfig({
          env: {},
          overrides: {
            port: 0,
            dataDir: tempDir(t, 'keyplane-gw-'),
            controlPlane: cp.url,
            clientId: client.client_id,
            clientSecret: client.client_secret,
            upstream: upstream.url,
            trustedProxies,
            logLevel: 'warn',
            telemetry: { otlp: { endpoint: received.url } },
          },
        }),
        { logStream: sink() },
      );
      t.teardown(() => gw.close());
      await until('the gateway holds its signed config', async () =>
        (await request(`${gw.url}/readyz`).then(async (r) => (await r.body.dump(), r.statusCode))) === 200
          ? true
          : undefined,
      );
      return gw;
    };
    const trusting = await startTracedGateway(['127.0.0.1/32']);
    const current = await request(`${cp.url}/register/${client.client_id}`, {
      headers: { authorization: `Bearer ${client.registration_access_token}` },
    });
    const metadata = (await current.body.json()) as Record<string, unknown>;
    const updated = await request(`${cp.url}/register/${client.client_id}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${client.registration_access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...metadata, redirect_uris: [`${trusting.url}/_gate/callback`] }),
    });
    t.equal(updated.statusCode, 200, 'the redirect URI names the trusting gateway');
    await updated.body.dump();

    // A passkey account at the control plane, signed up over HTTP as a browser would.
    const jar = new Jar();
    const username = `tracer-${hex(4)}`;
    const post = (url: string, body: unknown) =>
      jar.fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: cp.url },
        body: JSON.stringify(body),
      });
    const options = JSON.parse((await post(`${cp.url}/auth/registration-options`, { username })).body);
    const response = new SoftAuthenticator(cp.url).create(options.options);
    const verified = await post(`${cp.url}/auth/registration-verify`, {
      user: username,
      response,
      signupToken: options.signupToken,
    });
    t.equal(verified.status, 200, 'signed up');

    // Through the gateway to the control plane's authorize endpoint and back, stopped before the callback.
    let next = `${trusting.url}/first`;
    let callbackUrl: string | undefined;
    for (let hop = 0; hop < 10 && !callbackUrl; hop++) {
      const res = await jar.fetch(next, { headers: { accept: 'text/html' } });
      if (res.status >= 300 && res.status < 400 && res.location) {
        next = new URL(res.location, next).toString();
        if (next.startsWith(`${trusting.url}/_gate/callback`)) callbackUrl = next;
        continue;
      }
      // The one-tap approval page: its form carries the request back.
      const form = /<form\b[^>]*data-action="continue"[^>]*>([\s\S]*?)<\/form>/.exec(res.body);
      if (!form) break;
      const action = /action="([^"]*)"/.exec(form[0])?.[1] ?? next;
      const fields = new URLSearchParams();
      for (const input of form[1]!.matchAll(/<input\b[^>]*>/g)) {
        const name = /name="([^"]*)"/.exec(input[0])?.[1];
        if (name) fields.append(name, (/value="([^"]*)"/.exec(input[0])?.[1] ?? '').replace(/&amp;/g, '&'));
      }
      const approved = await jar.fetch(new URL(action.replace(/&amp;/g, '&'), next).toString(), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: cp.url },
        body: fields.toString(),
      });
      if (!approved.location) break;
      next = new URL(approved.location, next).toString();
      if (next.startsWith(`${trusting.url}/_gate/callback`)) callbackUrl = next;
    }
    t.ok(callbackUrl, 'the sign-in reached the gateway callback');
    const callbackQuery = new URL(callbackUrl!).searchParams;

    // The callback, sent by a trusted proxy with a traceparent: continued, and the code exchange joins it.
    const t1 = hex(16);
    const p1 = hex(8);
    const callback = await jar.fetch(callbackUrl!, { headers: { traceparent: `00-${t1}-${p1}-01` } });
    t.ok(callback.status < 400, `the callback signs in (${callback.status})`);

    // Without a traceparent: the upstream gets the gateway's own.
    upstream.seen.length = 0;
    t.equal((await jar.fetch(`${trusting.url}/plain`)).status, 200);
    const plain = TRACEPARENT.exec(String(upstream.last().headers['traceparent']));
    t.ok(plain, 'the upstream got a traceparent');

    // With one, and with credentials in the query and the headers: continued, nothing recorded.
    const t2 = hex(16);
    const p2 = hex(8);
    const secrets = {
      query: `q-${hex(8)}`,
      code: `c-${hex(8)}`,
      bearer: `bearer-${hex(12)}`,
      dpop: `dpop-${hex(12)}`,
    };
    await jar.fetch(`${trusting.url}/continued?token=${secrets.query}&code=${secrets.code}`, {
      headers: { traceparent: `00-${t2}-${p2}-01` },
    });
    const continued = TRACEPARENT.exec(String(upstream.last().headers['traceparent']));
    t.equal(continued?.[1], t2, 'the upstream request continues the trusted trace');
    t.not(continued?.[2], p2, "…as a child of the gateway's span, not of the caller's");
    const api = await jar.fetch(`${trusting.url}/api?token=${secrets.query}`, {
      headers: { authorization: `Bearer ${secrets.bearer}`, dpop: secrets.dpop },
    });
    t.equal(api.status, 401, 'a made-up bearer token is refused');

    // A gateway that trusts no loopback proxy: a new trace, linked to the one claimed.
    const untrusting = await startTracedGateway(['192.0.2.1/32']);
    const t3 = hex(16);
    upstream.seen.length = 0;
    t.equal(
      (await jar.fetch(`${untrusting.url}/open`, { headers: { traceparent: `00-${t3}-${hex(8)}-01` } })).status,
      200,
    );
    const fresh = TRACEPARENT.exec(String(upstream.last().headers['traceparent']));
    t.ok(fresh && fresh[1] !== t3, 'the untrusted traceparent is not continued upstream');

    await Promise.all([
      cp.services.tracing.flush(),
      trusting.gateway.tracing.flush(),
      untrusting.gateway.tracing.flush(),
    ]);
    const spans = received.spans;
    const gateway = (s: ReceivedSpan) => s.service === 'keyplane-gateway';
    const controlPlane = (s: ReceivedSpan) => s.service === 'keyplane-control-plane';

    const callbackSpan = spans.find((s) => gateway(s) && s.traceId === t1 && s.parentSpanId === p1);
    t.equal(callbackSpan?.name, 'GET /_gate/callback', 'the callback span continues the trusted traceparent');
    const gatewayIds = new Set(spans.filter((s) => gateway(s) && s.traceId === t1).map((s) => s.spanId));
    const exchange = spans.find((s) => controlPlane(s) && s.traceId === t1 && gatewayIds.has(s.parentSpanId));
    t.equal(exchange?.name, 'POST /auth/token', "the code exchange is a control-plane span under the gateway's");
    t.ok(
      spans.some(
        (s) =>
          controlPlane(s) &&
          s.traceId === t1 &&
          s.parentSpanId === exchange?.spanId &&
          s.attributes['db.system.name'] === 'sqlite',
      ),
      'its storage calls are spans under it',
    );
    t.ok(
      spans.some((s) => controlPlane(s) && s.name === 'POST /auth/registration-verify'),
      'requests are named by route',
    );

    t.ok(
      spans.some((s) => gateway(s) && s.traceId === plain![1] && s.spanId === plain![2]),
      "the upstream's traceparent names an exported gateway span",
    );
    t.ok(
      spans.some((s) => gateway(s) && s.traceId === t2 && s.parentSpanId === p2 && s.name === 'GET /'),
      'named by its policy route',
    );
    t.ok(
      spans.some((s) => gateway(s) && s.traceId === t2 && s.spanId === continued?.[2]),
      'the hop to the app is a span',
    );
    const linked = spans.find((s) => gateway(s) && s.traceId === fresh?.[1] && s.name === 'GET /open');
    t.ok(
      linked?.links.some((l) => l.traceId === t3),
      'the new trace links to the claimed one',
    );
    t.ok(
      spans.some((s) => gateway(s) && s.spanId === fresh?.[2] && s.links.some((l) => l.traceId === t3)),
      'so does the hop the app sees as its parent',
    );
    t.notOk(
      spans.some((s) => s.traceId === t3),
      'and no span joins it',
    );

    // Known secrets, searched in every name and attribute of every span.
    const known = [
      ...[...jar.cookies.values()].filter((v) => v.length >= 12),
      secrets.query,
      secrets.code,
      secrets.bearer,
      secrets.dpop,
      callbackQuery.get('code')!,
      callbackQuery.get('state')!,
      username,
    ];
    const leaks: string[] = [];
    for (const span of spans) {
      if (span.name.includes('?')) leaks.push(`${span.service} span name ${span.name}`);
      for (const [key, value] of Object.entries(span.attributes)) {
        if (/authorization|cookie|dpop|query|url\.full|statement|db\.query/i.test(key))
          leaks.push(`${span.service} ${span.name} has attribute ${key}`);
        for (const secret of known)
          if (`${key}=${value}`.includes(secret)) leaks.push(`${span.service} ${span.name} ${key} holds ${secret}`);
      }
    }
    t.ok(spans.length > 20, `spans were exported (${spans.length})`);
    t.same(leaks, [], 'no span records a cookie, token, DPoP proof, query value or SQL parameter');
  },
);
