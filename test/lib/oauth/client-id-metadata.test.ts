import t from 'tap';
import {
  DOCUMENT_CACHE_BOUNDS,
  checkClientIdUrl,
  documentLifetime,
  isClientIdUrl,
  readClientIdMetadataDocument,
} from '#lib/oauth/client-id-metadata.js';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';

const URL_ID = 'https://client.example.com/oauth/client.json';
const DOCUMENT = {
  client_id: URL_ID,
  client_name: 'Example MCP client',
  redirect_uris: ['https://client.example.com/callback'],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  logo_uri: 'https://client.example.com/logo.png',
};

function problemOf(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (error) {
    if (!isKeyplaneError(error) || error.reason !== 'invalid_client') throw error;
    return /refused \(([a-z_]+)\)/.exec(error.message)?.[1] ?? 'unnamed';
  }
}

t.test('only http and https URLs are taken for document client ids', async (t) => {
  t.ok(isClientIdUrl(URL_ID));
  t.ok(isClientIdUrl('http://client.example.com/c.json'));
  t.notOk(isClientIdUrl('cl_abc123'));
  t.notOk(isClientIdUrl('urn:example:client'));
});

t.test('a client id URL must be https with a path, without fragment, credentials or dot segments', async (t) => {
  t.equal(checkClientIdUrl(URL_ID), null);
  t.equal(checkClientIdUrl('https://client.example.com:8443/c?v=1'), null);
  const refused: Record<string, string> = {
    'http://client.example.com/c.json': 'not_https',
    'https://client.example.com': 'no_path',
    'https://client.example.com/': 'no_path',
    'https://client.example.com?x=1': 'no_path',
    'https://client.example.com/c.json#x': 'bad_url',
    'https://user:pw@client.example.com/c.json': 'bad_url',
    'https://client.example.com/a/../c.json': 'bad_url',
    'https://client.example.com/./c.json': 'bad_url',
    [`https://client.example.com/${'a'.repeat(2001)}`]: 'bad_url',
  };
  for (const [url, problem] of Object.entries(refused)) t.equal(checkClientIdUrl(url)?.problem, problem, url);
});

t.test('reads a document as public client metadata', async (t) => {
  const metadata = readClientIdMetadataDocument(URL_ID, JSON.stringify(DOCUMENT));
  t.equal(metadata.client_name, 'Example MCP client');
  t.same(metadata.redirect_uris, DOCUMENT.redirect_uris);
  t.equal(metadata.token_endpoint_auth_method, 'none');
  t.same(metadata.grant_types, ['authorization_code', 'refresh_token']);
  t.equal(metadata.logo_uri, DOCUMENT.logo_uri);
  t.same(metadata.resources, []);
  t.equal(metadata.first_party, undefined);
});

t.test("ignores Keyplane's own members a document might carry", async (t) => {
  const metadata = readClientIdMetadataDocument(
    URL_ID,
    JSON.stringify({
      ...DOCUMENT,
      first_party: true,
      resources: ['https://api.example.com/'],
      gateway: { mode: 'enforce', routes: [] },
      in_place: true,
      access: { humans: true, agents: true },
    }),
  );
  t.equal(metadata.first_party, undefined);
  t.same(metadata.resources, []);
  t.equal(metadata.gateway, undefined);
  t.equal(metadata.in_place, false);
  t.equal(metadata.access.agents, false);
});

t.test('accepts private_key_jwt with a jwks_uri, and a native client with a private-use scheme', async (t) => {
  const jwt = readClientIdMetadataDocument(
    URL_ID,
    JSON.stringify({
      ...DOCUMENT,
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: 'https://client.example.com/jwks',
    }),
  );
  t.equal(jwt.token_endpoint_auth_method, 'private_key_jwt');
  const native = readClientIdMetadataDocument(
    URL_ID,
    JSON.stringify({
      ...DOCUMENT,
      application_type: 'native',
      redirect_uris: ['com.example.app:/callback', 'http://127.0.0.1/cb'],
    }),
  );
  t.equal(native.application_type, 'native');
});

t.test('refuses each kind of bad document, naming the problem', async (t) => {
  const cases: Record<string, [string, string]> = {
    'not JSON': ['<html>', 'not_json'],
    'an array': ['[]', 'not_json'],
    'another client_id': [
      JSON.stringify({ ...DOCUMENT, client_id: 'https://evil.example.com/c.json' }),
      'client_id_mismatch',
    ],
    'no client_id': [JSON.stringify({ ...DOCUMENT, client_id: undefined }), 'client_id_mismatch'],
    'no redirect_uris': [JSON.stringify({ ...DOCUMENT, redirect_uris: undefined }), 'no_redirect_uris'],
    'empty redirect_uris': [JSON.stringify({ ...DOCUMENT, redirect_uris: [] }), 'no_redirect_uris'],
    'an http redirect URI': [
      JSON.stringify({ ...DOCUMENT, redirect_uris: ['http://client.example.com/cb'] }),
      'no_redirect_uris',
    ],
    'a secret': [JSON.stringify({ ...DOCUMENT, client_secret: 's' }), 'bad_metadata'],
    client_secret_basic: [
      JSON.stringify({ ...DOCUMENT, token_endpoint_auth_method: 'client_secret_basic' }),
      'bad_metadata',
    ],
    'private_key_jwt without jwks_uri': [
      JSON.stringify({ ...DOCUMENT, token_endpoint_auth_method: 'private_key_jwt' }),
      'bad_metadata',
    ],
    'an agent grant': [
      JSON.stringify({ ...DOCUMENT, grant_types: ['urn:ietf:params:oauth:grant-type:jwt-bearer'] }),
      'bad_metadata',
    ],
    'a private-use scheme on a web client': [
      JSON.stringify({ ...DOCUMENT, redirect_uris: ['com.example.app:/cb'] }),
      'no_redirect_uris',
    ],
  };
  for (const [name, [body, problem]] of Object.entries(cases))
    t.equal(
      problemOf(() => readClientIdMetadataDocument(URL_ID, body)),
      problem,
      name,
    );
});

t.test('keeps a document as its caching headers say, within the bounds', async (t) => {
  const { min, max } = DOCUMENT_CACHE_BOUNDS;
  t.equal(documentLifetime({ 'cache-control': 'public, max-age=600' }), 600_000);
  t.equal(documentLifetime({ 'cache-control': 'max-age=5' }), min * 1000, 'raised to the minimum');
  t.equal(documentLifetime({ 'cache-control': 'max-age=999999999' }), max * 1000, 'cut to the maximum');
  t.equal(documentLifetime({ 'cache-control': 'no-store' }), min * 1000);
  t.equal(documentLifetime({ 'cache-control': 'no-cache, max-age=600' }), min * 1000);
  t.equal(documentLifetime({}), DOCUMENT_CACHE_BOUNDS.default * 1000);
  t.equal(
    documentLifetime({ date: 'Thu, 26 Nov 2026 10:00:00 GMT', expires: 'Thu, 26 Nov 2026 11:00:00 GMT' }),
    3_600_000,
  );
  t.equal(documentLifetime({ expires: 'garbage' }), min * 1000, 'an invalid Expires is in the past');
});
