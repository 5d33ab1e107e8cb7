import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { build } from '../../helpers/build.js';
import { signUp } from '../../helpers/accounts.js';

/**
 * An outside verifier: a Python script written from the RFCs and docs/ledger.md alone checks a real
 * passkey sign-in's receipt (JCS hash, RFC 9162 path, ES256 checkpoint against the JWKS).
 * Needs python3 with the `cryptography` package; skipped without it unless KEYPLANE_REQUIRE_ALL=1.
 */
const SCRIPT = fileURLToPath(new URL('./verify_receipt.py', import.meta.url));
// The first interpreter that has `cryptography`: PATH's python3, else Debian's (python3-cryptography).
const PYTHON = ['python3', '/usr/bin/python3'].find(
  (python) => spawnSync(python, ['-c', 'import cryptography'], { encoding: 'utf8' }).status === 0,
);
const available = PYTHON !== undefined;

function verify(input: unknown): { code: number | null; out: string } {
  const run = spawnSync(PYTHON!, [SCRIPT], { input: JSON.stringify(input), encoding: 'utf8' });
  return { code: run.status, out: `${run.stdout}${run.stderr}`.trim() };
}

const required = process.env['KEYPLANE_REQUIRE_ALL'] === '1';
if (!available && required) t.fail('python3 with the cryptography package is required (KEYPLANE_REQUIRE_ALL=1)');
const skip =
  available || required
    ? false
    : 'python3 with the cryptography package is not installed: the outside-verifier suite is skipped';

t.test('an independent Python verifier accepts a sign-in receipt and refuses altered ones', { skip }, async (t) => {
  const { app, services } = await build(t, { config: { 'ledger.sealIntervalMs': 60_000 } });
  const account = await signUp(app, 'outside-verifier');
  const begin = await app.inject({ method: 'GET', url: '/auth/assertion-options' });
  const done = await app.inject({
    method: 'POST',
    url: '/auth/assertion-verify',
    headers: { origin: account.headers.origin },
    payload: { response: account.authenticator.get(begin.json().options) },
  });
  t.equal(done.statusCode, 200);
  const hash = done.json().receipt as string;
  t.match(hash, /^[0-9a-f]{64}$/, 'the sign-in answer carries its receipt hash');
  await services.ledger.sealNow();
  const body = (await app.inject({ method: 'GET', url: `/receipts/${hash}` })).json();
  t.equal(body.receipt.kind, 'session.started');
  const jwks = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
  const input = { hash, receipt: body.receipt, proof: body.proof, checkpoint: body.checkpoint, jwks };
  t.same(verify(input), { code: 0, out: 'ok' });
  t.equal(verify({ ...input, receipt: { ...body.receipt, outcome: 'failure' } }).code, 1, 'an altered receipt');
  t.equal(
    verify({ ...input, proof: { ...body.proof, index: (body.proof.index + 1) % body.proof.size } }).code,
    1,
    'another index',
  );
  const [h, p, s] = (body.checkpoint as string).split('.');
  t.equal(verify({ ...input, checkpoint: `${h}.${p}.${s!.slice(0, -4)}AAAA` }).code, 1, 'a broken signature');
});

const TLOG_SCRIPT = fileURLToPath(new URL('./verify_tlog.py', import.meta.url));

t.test(
  'the Python verifier finds a receipt in the transparency log from the signed note and tiles alone',
  { skip },
  async (t) => {
    const { app, services } = await build(t, { config: { 'ledger.sealIntervalMs': 60_000 } });
    const hashes: string[] = [];
    // Enough receipts for full level-0 tiles and a level-1 tile: paths cross tile levels.
    for (let epoch = 0; epoch < 3; epoch++) {
      for (let i = 0; i < 200; i++) {
        const { receipt } = await services.storage.transaction((tx) =>
          services.events.record(tx, {
            type: 'keys.rotated',
            at: services.now(),
            outcome: 'success',
            kid: `k-${epoch}-${i}`,
            retired: null,
          }),
        );
        hashes.push(receipt!);
      }
      await services.ledger.sealNow();
    }
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const vkey = (await app.inject({ method: 'GET', url: '/receipts/checkpoint/key' })).body.trim();
    // Not spawnSync: the script asks this process's server for tiles while it runs.
    const run = (...args: string[]) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(PYTHON!, [TLOG_SCRIPT, base, ...args]);
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d));
        child.stderr.on('data', (d: Buffer) => (out += d));
        child.on('close', (code) => resolve({ code, out: out.trim() }));
      });
    for (const hash of [hashes[0]!, hashes[255]!, hashes[599]!]) t.same(await run(hash, vkey), { code: 0, out: 'ok' });
    const witness = (await app.inject({ method: 'GET', url: '/receipts/witness/key' })).body.trim();
    t.same(await run(hashes[0]!, vkey, witness), { code: 1, out: `no cosignature by ${witness.split('+')[0]}` });
    const stranger = vkey.replace(/\+[0-9a-f]{8}\+/, '+00000000+');
    t.equal((await run(hashes[0]!, stranger)).code, 1, 'a key that is not the log key');
  },
);
