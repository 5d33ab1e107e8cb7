import t from 'tap';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { SignJWT, exportJWK, type JSONWebKeySet } from 'jose';
import {
  GATEWAY_CONFIG_TYP,
  GatewayConfigHolder,
  verifyGatewayConfig,
  type ConfigStore,
} from '#lib/gateway-protocol/signed-config.js';

const ISSUER = 'http://localhost:4400';
const CLIENT = 'gw-client';
const NOW = Date.UTC(2026, 10, 22, 3, 0, 0);
const cp = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const policy = { mode: 'enforce', routes: [{ path: '/', min_assurance: 'passkey' }] };
let jwks: JSONWebKeySet;

t.before(async () => {
  jwks = { keys: [{ ...(await exportJWK(cp.publicKey)), kid: 'cp1', alg: 'ES256' }] };
});

function sign(
  version: number,
  options: { key?: KeyObject; typ?: string; aud?: string; gateway?: unknown; exp?: number } = {},
): Promise<string> {
  const iat = Math.floor(NOW / 1000);
  return new SignJWT({ version, gateway: options.gateway ?? policy })
    .setProtectedHeader({ alg: 'ES256', kid: 'cp1', typ: options.typ ?? GATEWAY_CONFIG_TYP })
    .setIssuer(ISSUER)
    .setAudience(options.aud ?? CLIENT)
    .setIssuedAt(iat)
    .setExpirationTime(options.exp ?? iat + 600)
    .sign(options.key ?? cp.privateKey);
}

function memoryStore(): ConfigStore & { saved: Array<{ jws: string }> } {
  const saved: Array<{ jws: string; jwks: JSONWebKeySet }> = [];
  return { saved, load: async () => saved.at(-1) ?? null, save: async (copy) => void saved.push(copy) };
}

const verify = (jws: string, now = NOW) =>
  verifyGatewayConfig(jws, { keys: jwks, issuer: ISSUER, clientId: CLIENT, now });

t.test('verifies a signed config', async (t) => {
  const document = await verify(await sign(3));
  t.equal(document.version, 3);
  t.same(document.policy, policy);
  t.match(document.hash, /^[0-9a-f]{64}$/);
});

t.test('refuses a bad signature, wrong typ, audience, expiry and a bad policy', async (t) => {
  await t.rejects(verify(await sign(1, { key: other.privateKey })), { code: 'bad_signature' });
  await t.rejects(verify(await sign(1, { typ: 'JWT' })), { code: 'malformed' });
  await t.rejects(verify(await sign(1, { aud: 'someone-else' })), { code: 'wrong_audience' });
  await t.rejects(verify(await sign(1), NOW + 601_000), { code: 'expired' });
  await t.rejects(verify(await sign(0)), { code: 'malformed' });
  await t.rejects(verify(await sign(1, { gateway: { mode: 'loose', routes: [] } })), { code: 'malformed' });
  const jws = await sign(1);
  const [h, p, s] = jws.split('.');
  const forged = Buffer.from(
    JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), version: 99 }),
  ).toString('base64url');
  await t.rejects(verify(`${h}.${forged}.${s}`), { code: 'bad_signature' });
});

t.test('the holder moves forward only, persists, and restores', async (t) => {
  const store = memoryStore();
  const holder = new GatewayConfigHolder({ issuer: ISSUER, clientId: CLIENT, store });
  t.equal(holder.current, null, 'holds nothing at first (fail closed)');
  t.equal((await holder.accept(await sign(2), jwks, NOW)).changed, true);
  const same = await sign(2);
  await t.rejects(holder.accept(await sign(1), jwks, NOW), { code: 'rollback' });
  await t.rejects(holder.accept(await sign(2, { gateway: { mode: 'observe', routes: [] } }), jwks, NOW), {
    code: 'equivocation',
  });
  t.equal(holder.current?.version, 2, 'the held copy stays in force');
  t.equal((await holder.accept(await sign(5), jwks, NOW)).changed, true);
  await t.rejects(holder.accept(await sign(6, { key: other.privateKey }), jwks, NOW), { code: 'bad_signature' });
  t.equal(holder.current?.version, 5);
  t.equal(store.saved.length, 2);
  void same;

  const restarted = new GatewayConfigHolder({ issuer: ISSUER, clientId: CLIENT, store });
  t.equal(
    (await restarted.restore(NOW + 86_400_000))?.version,
    5,
    'the last good copy comes back, even past its expiry, while the control plane is away',
  );
  await t.rejects(
    restarted.accept(await sign(4), jwks, NOW),
    { code: 'rollback' },
    'a rollback after restart is refused too',
  );
});

t.test('a persisted copy that does not verify is ignored', async (t) => {
  const store: ConfigStore = {
    load: async () => ({ jws: await sign(7, { key: other.privateKey }), jwks }),
    save: async () => {},
  };
  const holder = new GatewayConfigHolder({ issuer: ISSUER, clientId: CLIENT, store });
  t.equal(await holder.restore(NOW), null);
  t.equal(holder.current, null);
});
