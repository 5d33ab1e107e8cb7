import t from 'tap';
import { ESLint } from 'eslint';

// One JWS library (docs/architecture.md#one-jws-library): lib/crypto/jwt.ts signs and checks every
// JWT Keyplane issues or checks, on fast-jwt; eslint.config.js refuses jose's sign and verify
// functions, and fast-jwt itself, everywhere else in lib/, the services and the CLI.
const eslint = new ESLint({ cwd: process.cwd() });

async function jwsErrors(filePath: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath });
  return (result?.messages ?? [])
    .filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId === 'keyplane/no-restricted-dynamic-imports')
    .map((m) => m.message);
}

const FILES = [
  'lib/oauth/example.ts',
  'lib/runtime/example.ts',
  'lib/gateway-protocol/example.ts',
  'control-plane/src/clients/example.ts',
  'control-plane/src/routes/oidc/example.ts',
  'gateway/src/example.ts',
  'cli/src/commands/example.ts',
];

for (const file of FILES) {
  t.test(`refuses jose's sign and verify functions and fast-jwt in ${file}`, async (t) => {
    for (const name of ['SignJWT', 'jwtVerify', 'CompactSign', 'compactVerify', 'EmbeddedJWK']) {
      const errors = await jwsErrors(file, `import { ${name} } from 'jose';\nexport default ${name};\n`);
      t.equal(errors.length, 1, `${name}: ${errors.join('; ')}`);
      t.match(errors[0], /lib\/crypto\/jwt\.ts/);
    }
    const fast = await jwsErrors(file, "import { createSigner } from 'fast-jwt';\nexport default createSigner;\n");
    t.equal(fast.length, 1, fast.join('; '));
    const taken = await jwsErrors(
      file,
      "export const load = async () => { const { jwtVerify } = await import('jose'); return jwtVerify; };\n",
    );
    t.equal(taken.length, 1, `a verify function taken from import('jose'): ${taken.join('; ')}`);
  });
}

t.test("jose's helpers that are not a JWS stay allowed", async (t) => {
  const source =
    "import { calculateJwkThumbprint, createRemoteJWKSet, exportJWK, EncryptJWT } from 'jose';\nexport default [calculateJwkThumbprint, createRemoteJWKSet, exportJWK, EncryptJWT];\n";
  for (const file of FILES) t.same(await jwsErrors(file, source), [], file);
  t.same(
    await jwsErrors(
      'cli/src/commands/example.ts',
      "export const load = async () => { const { createLocalJWKSet } = await import('jose'); return createLocalJWKSet; };\n",
    ),
    [],
    'a key-set getter taken from import()',
  );
});

t.test('the one JWS module uses fast-jwt; the demo app checks as a third party would', async (t) => {
  t.same(
    await jwsErrors('lib/crypto/jwt.ts', "import { createSigner } from 'fast-jwt';\nexport default createSigner;\n"),
    [],
  );
  t.same(
    await jwsErrors('cli/src/demo/example.ts', "import { jwtVerify } from 'jose';\nexport default jwtVerify;\n"),
    [],
    'the demo app stands in for a relying party and verifies with jose, an implementation of its own',
  );
  const fast = await jwsErrors(
    'cli/src/demo/example.ts',
    "import { createVerifier } from 'fast-jwt';\nexport default createVerifier;\n",
  );
  t.equal(fast.length, 1, 'but not with fast-jwt behind the one module');
});
