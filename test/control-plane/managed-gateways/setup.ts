import type { FastifyInstance } from 'fastify';
import { generateKeyPairSync } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import { buildGatewayEvidence, type EvidenceInput, type EvidenceKey } from '#lib/gateway-protocol/evidence.js';
import { TEST_ISSUER, manualClock } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { ADMIN, basicAuth, registerClient, type Registered } from '../../helpers/oidc.js';

export const POLICY = {
  mode: 'enforce',
  routes: [
    { path: '/', public: true },
    { path: '/admin', min_assurance: 'passkey' },
  ],
};

export interface GatewayClient extends Registered {
  client_secret: string;
  registration_access_token: string;
  revision: number;
}

/** A control plane with the admin token, a hand-moved clock and a test sign-in route. */
export async function setup(t: Parameters<typeof buildSignedIn>[0]) {
  const clock = manualClock();
  const built = await buildSignedIn(t, { config: { adminToken: ADMIN }, now: clock.now });
  return { ...built, clock };
}

/** Registers a gateway client (with `gateway` metadata unless `gateway: undefined` is passed). */
export async function registerGateway(
  app: FastifyInstance,
  extra: Record<string, unknown> = { gateway: POLICY },
): Promise<GatewayClient> {
  return (await registerClient(app, {
    redirect_uris: ['https://app.example.com/_gate/callback'],
    scope: 'openid email',
    grant_types: ['authorization_code'],
    resources: [],
    ...extra,
  })) as GatewayClient;
}

export function getConfig(app: FastifyInstance, client: Registered, headers: Record<string, string> = {}) {
  return app.inject({
    method: 'GET',
    url: '/gateway/config',
    headers: { authorization: basicAuth(client), ...headers },
  });
}

/** An RFC 7592 update of the client's `gateway` policy; returns the new revision. */
export async function updatePolicy(app: FastifyInstance, client: GatewayClient, gateway: unknown): Promise<number> {
  const current = await app.inject({
    method: 'GET',
    url: `/register/${client.client_id}`,
    headers: { authorization: `Bearer ${client.registration_access_token}` },
  });
  const body = current.json();
  const res = await app.inject({
    method: 'PUT',
    url: `/register/${client.client_id}`,
    headers: { authorization: `Bearer ${client.registration_access_token}` },
    payload: { ...body, client_id: client.client_id, revision: body.revision, gateway },
  });
  if (res.statusCode !== 200) throw new Error(`update: ${res.body}`);
  return res.json().revision;
}

export async function gatewayKey(): Promise<EvidenceKey & { jwk: JWK }> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = await exportJWK(publicKey);
  return { kid: await calculateJwkThumbprint(jwk), privateKey, publicJwk: jwk, jwk };
}

/** A signed report as a gateway would push it; `input` overrides any field. */
export function evidence(
  key: EvidenceKey,
  clientId: string,
  now: number,
  input: Partial<EvidenceInput> = {},
): Promise<string> {
  return buildGatewayEvidence(
    {
      issuer: 'https://app.example.com',
      audience: TEST_ISSUER,
      clientId,
      instance: 'instance-one',
      config: null,
      counts: { allowed: 3, refused: { unauthorized: 1 }, observed: {} },
      lastEnforcementAt: now - 1000,
      startedAt: now - 60_000,
      now,
      ttlSeconds: 30,
      ...input,
    },
    key,
  );
}

export function postEvidence(
  app: FastifyInstance,
  client: Registered,
  jws: string,
  headers: Record<string, string> = {},
) {
  return app.inject({
    method: 'POST',
    url: '/gateway/evidence',
    headers: { authorization: basicAuth(client), 'content-type': 'application/jwt', ...headers },
    payload: jws,
  });
}
