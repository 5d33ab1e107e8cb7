/**
 * bench:jws — the two JWS libraries in the tree, jose and fast-jwt, signing and checking the exact
 * token shapes Keyplane issues or checks itself, side by side in one process: ID and access
 * tokens, the gateway's assertion, an agent proof token and an evidence report signed; an access
 * token, a `private_key_jwt` client assertion, a gateway config and DPoP proofs (ES256 and EdDSA,
 * key in the header, imported once as lib/dpop/key-cache.ts does) checked. It chose the one library
 * behind lib/crypto/jwt.ts (docs/performance.md#one-jws-library).
 *
 * Method: for each shape, the two libraries run in alternating batches (bench/harness.ts
 * `measureInterleaved`, the order turning round every round), with one call and then BENCH_IN_FLIGHT
 * calls (default 16, as concurrent requests) in flight, for BENCH_ROUNDS rounds (default 3); the
 * figure is calls per CPU-second of this process (thread-pool threads included, where WebCrypto
 * runs), and the ratio fast-jwt ÷ jose of each round is taken in the same round, its median
 * reported. Keys are imported before timing, as the key ring and the key caches hold them. Every
 * signed token is checked once by the other library, and every check returns the claims, so a
 * shape that fails cannot look fast.
 */
import { createPublicKey, generateKeyPairSync, randomUUID, type KeyObject, type JsonWebKey } from 'node:crypto';
import { SignJWT, importJWK, jwtVerify, type JWK } from 'jose';
import { createSigner, createVerifier } from 'fast-jwt';
import { benchCase, describeRun, log, measureInterleaved, type Rate } from './harness.js';

type Alg = 'ES256' | 'EdDSA';
type Claims = Record<string, unknown>;

const ISSUER = 'https://id.example.test';
const es = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ed = generateKeyPairSync('ed25519');
const now = () => Math.floor(Date.now() / 1000);

/** A signer per library for one key and header, built once (as lib/crypto/jwt.ts memoizes them). */
function signers(privateKey: KeyObject, alg: Alg, header: Record<string, unknown>) {
  const { kid, ...rest } = header;
  const fast = createSigner({
    key: privateKey.export({ format: 'pem', type: 'pkcs8' }) as string,
    algorithm: alg,
    noTimestamp: true,
    ...(typeof kid === 'string' ? { kid } : {}),
    header: { typ: undefined, ...rest, alg },
  }) as (payload: Claims) => string;
  return {
    jose: (claims: Claims) =>
      new SignJWT(claims).setProtectedHeader({ ...header, alg } as { alg: string }).sign(privateKey),
    fastJwt: async (claims: Claims) => fast(claims),
  };
}

/** A verifier per library for one public key: `alg` only, `typ` and `iss` when given; the caller's clock does exp. */
function verifiers(publicKey: KeyObject, alg: Alg, options: { typ?: string; issuer?: string } = {}) {
  const fast = createVerifier({
    key: publicKey.export({ format: 'pem', type: 'spki' }) as string,
    algorithms: [alg],
    complete: true,
    ignoreExpiration: true,
    ignoreNotBefore: true,
    ...(options.typ ? { checkTyp: options.typ } : {}),
    ...(options.issuer ? { allowedIss: options.issuer, requiredClaims: ['iss'] } : {}),
  }) as unknown as (token: string) => { payload: Claims };
  return {
    jose: async (token: string) =>
      (
        await jwtVerify(token, publicKey, {
          algorithms: [alg],
          ...(options.typ ? { typ: options.typ } : {}),
          ...(options.issuer ? { issuer: options.issuer } : {}),
        })
      ).payload,
    fastJwt: async (token: string) => fast(token).payload,
  };
}

const idClaims = (): Claims => ({
  iss: ISSUER,
  sub: 'usr_3f9a0c2b7d',
  aud: 'notes',
  iat: now(),
  exp: now() + 600,
  auth_time: now() - 30,
  nonce: 'n-456',
  acr: 'passkey',
  amr: ['pop', 'user'],
  sid: randomUUID(),
  email: 'ada@example.test',
  email_verified: true,
  name: 'Ada Lovelace',
  at_hash: 'x4Qn1s0s2bQxS0rJcA4oWQ',
});
const accessClaims = (): Claims => ({
  iss: ISSUER,
  sub: 'usr_3f9a0c2b7d',
  aud: 'https://notes.example.test',
  client_id: 'notes',
  iat: now(),
  exp: now() + 600,
  jti: randomUUID(),
  scope: 'openid email profile',
  acr: 'passkey',
  auth_time: now() - 30,
  svc: { assurance: 'passkey', principal: { type: 'human', id: 'usr_3f9a0c2b7d' } },
  cnf: { jkt: 'oKIywvGUpTVTyxMQ3bwIIeQUudfr_CkLMjCE19ECD-U' },
});

const publicJwk = (key: KeyObject): JWK => key.export({ format: 'jwk' }) as JWK;
const esJwk = publicJwk(es.publicKey);
const edJwk = publicJwk(ed.publicKey);

/** DPoP proofs signed beforehand (each is checked as a fresh request's would be), by either alg. */
function proofMaker(alg: Alg) {
  const pair = alg === 'ES256' ? es : ed;
  const sign = signers(pair.privateKey, alg, { typ: 'dpop+jwt', jwk: alg === 'ES256' ? esJwk : edJwk });
  return (n: number) =>
    Promise.all(
      Array.from({ length: n }, () =>
        sign.fastJwt({ htm: 'GET', htu: 'https://gw.example.test/api/items', jti: randomUUID(), iat: now() }),
      ),
    );
}

interface Pair {
  name: string;
  /** Makes `n` inputs (untimed). */
  prepare: (n: number) => Promise<string[] | Claims[]>;
  jose: (input: never) => Promise<unknown>;
  fastJwt: (input: never) => Promise<unknown>;
}

async function pairs(): Promise<Pair[]> {
  const tokenKey = { kid: 'k-2026-12', alg: 'ES256' as const };
  const idSign = signers(es.privateKey, 'ES256', { kid: tokenKey.kid, typ: 'JWT' });
  const atSign = signers(es.privateKey, 'ES256', { kid: tokenKey.kid, typ: 'at+jwt' });
  const assertionSign = signers(es.privateKey, 'ES256', { kid: 'gw-1', typ: 'kp-gate-assertion+jwt' });
  const agentSign = signers(es.privateKey, 'ES256', { kid: tokenKey.kid, typ: 'agent-proof+jwt' });
  const evidenceSign = signers(es.privateKey, 'ES256', {
    kid: 'oKIywvGUpTVTyxMQ3bwIIeQUudfr_CkLMjCE19ECD-U',
    typ: 'keyplane-gateway-evidence+jwt',
    jwk: esJwk,
  });
  const atCheck = verifiers(es.publicKey, 'ES256', { typ: 'at+jwt', issuer: ISSUER });
  const configCheck = verifiers(es.publicKey, 'ES256', { typ: 'keyplane-gateway-config+jwt', issuer: ISSUER });
  const clientCheck = verifiers(es.publicKey, 'ES256', { issuer: 'notes' });
  const clientSign = signers(es.privateKey, 'ES256', { kid: 'client-key' });
  const same =
    <T>(make: () => T) =>
    async (n: number) =>
      Array.from({ length: n }, make);
  const signed = (sign: (c: Claims) => Promise<string>, make: () => Claims) => async (n: number) =>
    Promise.all(Array.from({ length: n }, () => sign(make())));
  const dpop = async (alg: Alg): Promise<Pair> => {
    const jwk = alg === 'ES256' ? esJwk : edJwk;
    // Imported once per client key, as the key cache holds it: each library's own key form.
    const joseKey = await importJWK(jwk, alg);
    const nodeKey = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    const fast = verifiers(nodeKey, alg, { typ: 'dpop+jwt' });
    return {
      name: `check DPoP proof (${alg}, key in header)`,
      prepare: proofMaker(alg),
      jose: async (proof: string) => (await jwtVerify(proof, joseKey, { algorithms: [alg], typ: 'dpop+jwt' })).payload,
      fastJwt: fast.fastJwt as (input: never) => Promise<unknown>,
    } as Pair;
  };
  return [
    { name: 'sign ID token (ES256)', prepare: same(idClaims), ...idSign },
    { name: 'sign access token (ES256, at+jwt)', prepare: same(accessClaims), ...atSign },
    {
      name: "sign gateway's assertion",
      prepare: same(() => ({
        principal_type: 'human',
        assurance: 'passkey',
        acr: 'passkey',
        email: 'ada@example.test',
        iss: 'https://gw.example.test',
        aud: 'http://127.0.0.1:3000',
        sub: 'usr_3f9a0c2b7d',
        iat: now(),
        exp: now() + 60,
        jti: randomUUID(),
      })),
      ...assertionSign,
    },
    {
      name: 'sign agent proof token',
      prepare: same(() => ({ ...accessClaims(), proof_id: 'prf_1', kind: 'agent', challenge_id: randomUUID() })),
      ...agentSign,
    },
    {
      name: 'sign gateway evidence (jwk header)',
      prepare: same(() => ({
        client_id: 'gw',
        instance: 'a1b2c3d4e5',
        config: { version: 3, hash: 'c'.repeat(64), mode: 'enforce' },
        counts: { allowed: 1200, refused: { assurance: 4 }, observed: {} },
        iss: 'https://gw.example.test',
        aud: ISSUER,
        iat: now(),
        exp: now() + 300,
      })),
      ...evidenceSign,
    },
    { name: 'check access token (at+jwt, iss)', prepare: signed(atSign.fastJwt, accessClaims), ...atCheck },
    {
      name: 'check private_key_jwt assertion',
      prepare: signed(clientSign.fastJwt, () => ({
        iss: 'notes',
        sub: 'notes',
        aud: `${ISSUER}/auth/token`,
        jti: randomUUID(),
        iat: now(),
        exp: now() + 60,
      })),
      ...clientCheck,
    },
    {
      name: 'check gateway config',
      prepare: signed(
        signers(es.privateKey, 'ES256', { kid: tokenKey.kid, typ: 'keyplane-gateway-config+jwt' }).fastJwt,
        () => ({
          version: 3,
          gateway: { mode: 'enforce', routes: [{ path: '/', min_assurance: 'passkey' }] },
          iss: ISSUER,
          aud: 'gw',
          iat: now(),
          exp: now() + 3600,
        }),
      ),
      ...configCheck,
    },
    await dpop('ES256'),
    await dpop('EdDSA'),
  ] as Pair[];
}

/** Each library's output is accepted by the other: the shapes are the same tokens. */
async function crossCheck(list: Pair[]): Promise<void> {
  const es256 = { jose: verifiers(es.publicKey, 'ES256'), fast: verifiers(es.publicKey, 'ES256') };
  for (const pair of list) {
    const [input] = (await pair.prepare(1)) as unknown[];
    if (pair.name.startsWith('sign')) {
      const a = (await pair.jose(input as never)) as string;
      const b = (await pair.fastJwt(input as never)) as string;
      await es256.fast.fastJwt(a);
      await es256.jose.jose(b);
      const header = (t: string) => Buffer.from(t.split('.')[0]!, 'base64url').toString();
      const members = (t: string) =>
        Object.keys(JSON.parse(header(t)) as object)
          .sort()
          .join();
      if (members(a) !== members(b)) throw new Error(`${pair.name}: headers differ: ${header(a)} vs ${header(b)}`);
    } else {
      const a = JSON.stringify(await pair.jose(input as never));
      const b = JSON.stringify(await pair.fastJwt(input as never));
      if (a !== b) throw new Error(`${pair.name}: claims differ`);
    }
  }
}

const ROUNDS = Math.max(1, Number(process.env['BENCH_ROUNDS'] ?? 3));
const IN_FLIGHT = Math.max(2, Number(process.env['BENCH_IN_FLIGHT'] ?? 16));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

describeRun('bench:jws');
const list = await pairs();
await crossCheck(list);
const rows: Array<{ name: string; inFlight: number; jose: Rate[]; fast: Rate[] }> = [];
for (const inFlight of [1, IN_FLIGHT]) {
  for (const pair of list) {
    const row = { name: pair.name, inFlight, jose: [] as Rate[], fast: [] as Rate[] };
    for (let round = 0; round < ROUNDS; round++) {
      log(`${pair.name}, ${inFlight} in flight, round ${round + 1}:`);
      const cases = [
        benchCase({ name: 'jose', prepare: pair.prepare as (n: number) => Promise<never[]>, op: pair.jose as never }),
        benchCase({
          name: 'fast-jwt',
          prepare: pair.prepare as (n: number) => Promise<never[]>,
          op: pair.fastJwt as never,
        }),
      ];
      // Which library goes first turns round every round, as within measureInterleaved.
      const ordered = round % 2 ? [...cases].reverse() : cases;
      const rates = await measureInterleaved(ordered, { batch: Math.max(200, inFlight * 16), inFlight });
      const [jose, fast] = round % 2 ? [rates[1]!, rates[0]!] : [rates[0]!, rates[1]!];
      row.jose.push(jose);
      row.fast.push(fast);
    }
    rows.push(row);
  }
}
const header = [
  'shape',
  'in flight',
  'jose per CPU-s (median)',
  'fast-jwt per CPU-s (median)',
  'fast-jwt ÷ jose per CPU-s, median of rounds (each round)',
  'fast-jwt ÷ jose wall, median',
];
process.stdout.write(`\n| ${header.join(' | ')} |\n|${header.map(() => '---|').join('')}\n`);
for (const { name, inFlight, jose, fast } of rows) {
  const cpuRatios = jose.map((j, i) => fast[i]!.cpu / j.cpu);
  const wallRatios = jose.map((j, i) => fast[i]!.wall / j.wall);
  process.stdout.write(
    `| ${name} | ${inFlight} | ${Math.round(median(jose.map((r) => r.cpu)))} | ${Math.round(median(fast.map((r) => r.cpu)))} | ${median(cpuRatios).toFixed(2)} (${cpuRatios.map((r) => r.toFixed(2)).join(', ')}) | ${median(wallRatios).toFixed(2)} |\n`,
  );
}
