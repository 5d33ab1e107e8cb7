import t from 'tap';
import { TokenEndpointError, type TokenClient, type TokenSet } from '../../gateway/src/token-client.js';
import {
  CLIENT_ID,
  rawHttp,
  signAccessToken,
  signIdToken,
  startTestGateway,
  startUpgradingUpstream,
} from './helpers.js';

const POLICY = {
  mode: 'enforce' as const,
  routes: [
    { path: '/', min_assurance: 'passkey' as const },
    { path: '/admin', min_assurance: 'sensitive' as const },
  ],
};
const UPGRADE =
  'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';

/** What the control plane answers a refresh with after the step-up window: the sign-in's passkey, no longer sensitive. */
async function afterWindow(): Promise<TokenSet> {
  return {
    accessToken: await signAccessToken({ audience: CLIENT_ID }),
    expiresIn: 600,
    scope: ['openid', 'email', 'offline_access'],
    refreshToken: 'rt-2',
    idToken: await signIdToken({
      acr: 'passkey',
      svc: { assurance: 'passkey', principal: { type: 'human', id: 'user-1' } },
    }),
  };
}

t.test(
  'an upgrade re-checks the session like a request: refreshed when due, step-up window and sign-out apply',
  async (t) => {
    const upstream = await startUpgradingUpstream(t);
    let answer: () => Promise<TokenSet> = afterWindow;
    const calls: string[] = [];
    const tokenClient: TokenClient = {
      exchangeCode: () => Promise.reject(new Error('unused')),
      refresh: (token) => {
        calls.push(token);
        return answer();
      },
    };
    const gw = await startTestGateway(t, { upstream: upstream.url, policy: POLICY, deps: { tokenClient } });
    const due = Math.floor(Date.now() / 1000) - 1;
    const upgrade = (cookie: string, path = '/admin/socket') =>
      rawHttp(
        gw.url,
        `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${UPGRADE}Cookie: ${cookie}\r\nConnection: close\r\n\r\n`,
      );

    const fresh = await gw.sessionCookie({
      assurance: 'sensitive',
      accessTokenExpiresAt: Math.floor(Date.now() / 1000) + 600,
      refreshToken: 'rt-0',
    });
    t.match(await upgrade(fresh), /^HTTP\/1\.1 101 /, 'a fresh step-up passes');
    t.same(calls, [], 'no refresh was due');

    const lapsed = await gw.sessionCookie({ assurance: 'sensitive', accessTokenExpiresAt: due, refreshToken: 'rt-1' });
    const refused = await upgrade(lapsed);
    t.match(refused, /^HTTP\/1\.1 403 /, 'the step-up window lapsed: the refresh states passkey');
    t.match(refused, /"reason":"insufficient_assurance"/);
    t.same(calls, ['rt-1'], 'the upgrade refreshed first');
    t.match(await upgrade(lapsed, '/chat'), /^HTTP\/1\.1 101 /, 'a passkey route still passes, on the refreshed state');
    t.same(calls, ['rt-1'], 'without spending the rotated refresh token again');

    answer = () => Promise.reject(new TokenEndpointError('refused', 'invalid_grant', 'signed out'));
    const signedOut = await gw.sessionCookie({
      assurance: 'sensitive',
      accessTokenExpiresAt: due,
      refreshToken: 'rt-gone',
    });
    const gone = await upgrade(signedOut, '/chat');
    t.match(gone, /^HTTP\/1\.1 401 /, 'after sign-out the refresh is refused and so is the upgrade');
    t.match(gone, /"reason":"unauthorized"/);

    answer = () => Promise.reject(new TokenEndpointError('unavailable', undefined, 'down'));
    const unreachable = await gw.sessionCookie({
      assurance: 'passkey',
      accessTokenExpiresAt: due,
      refreshToken: 'rt-3',
    });
    const unavailable = await upgrade(unreachable, '/chat');
    t.match(unavailable, /^HTTP\/1\.1 503 /, 'a refresh that is due and cannot be done refuses the upgrade');
    t.match(unavailable, /"reason":"unavailable"/, 'the control plane is unreachable: 503, retry');
    t.match(unavailable, /\r\nretry-after: 5\r\n/);
    t.equal(upstream.seen.length, 2, 'only the two allowed upgrades reached the app');
  },
);
