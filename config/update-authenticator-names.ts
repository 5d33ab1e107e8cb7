import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { compactAuthenticatorList } from '#lib/webauthn/authenticator-names.js';

/**
 * Refreshes lib/webauthn/passkey-authenticator-aaguids.ts from a copy of the community list
 * (passkeydeveloper/passkey-authenticator-aaguids, `aaguid.json`): names kept, light icons kept
 * only when small (docs/passkeys.md#updating-the-authenticator-names). A module rather than a
 * JSON file, so that the build carries it like any other source.
 *
 *   npx tsx config/update-authenticator-names.ts <path to aaguid.json> [source note]
 */
const [from, source = 'passkeydeveloper/passkey-authenticator-aaguids aaguid.json'] = process.argv.slice(2);
if (!from) {
  process.stderr.write('usage: npx tsx config/update-authenticator-names.ts <aaguid.json> [source note]\n');
  process.exit(2);
}
const list = compactAuthenticatorList(JSON.parse(readFileSync(from, 'utf8')) as unknown, source);
const count = Object.keys(list.authenticators).length;
if (count === 0) {
  // The list's README: a retired list becomes an empty object; keep the copy we have.
  process.stderr.write('the list is empty (retired?): the committed copy is left as it is\n');
  process.exit(1);
}
const target = fileURLToPath(new URL('../lib/webauthn/passkey-authenticator-aaguids.ts', import.meta.url));
// No import back into authenticator-names.ts (an import cycle): that module types the list where it reads it.
const text = `// Written by config/update-authenticator-names.ts from the community AAGUID list; do not edit by hand.
export const COMMITTED_AUTHENTICATOR_LIST = ${JSON.stringify(list)};
`;
writeFileSync(target, await prettier.format(text, { ...(await prettier.resolveConfig(target)), filepath: target }));
process.stderr.write(`wrote lib/webauthn/passkey-authenticator-aaguids.ts: ${count} authenticators\n`);
