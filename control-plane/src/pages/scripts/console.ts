/**
 * The console's page script (docs/console.md): the passkey ceremony that opens a console session,
 * and the check of one receipt's inclusion proof against its signed checkpoint with WebCrypto
 * (RFC 8785 hash, RFC 9162 audit path, ES256 checkpoint against the JWKS), all in the browser.
 */
export const CONSOLE_JS = String.raw`
import { startAuthentication } from '/assets/simplewebauthn/index.js';
import { call, describe, say, PAGE_MESSAGES } from '/assets/common.js';

const open = document.getElementById('console-open');
if (open) {
  const status = document.getElementById('status');
  open.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      say(status, open.dataset.msgWaiting);
      const begin = await call('POST', '/console/session/options');
      const response = await startAuthentication({ optionsJSON: begin.options });
      await call('POST', '/console/session/verify', { response });
      location.assign('/console');
    } catch (error) {
      say(status, describe(error), true);
    }
  });
}

const text = new TextEncoder();
const hex = (bytes) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');
const fromHex = (h) => new Uint8Array(h.match(/../g).map((b) => parseInt(b, 16)));
const b64url = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
const sha256 = async (...parts) => new Uint8Array(await crypto.subtle.digest('SHA-256', concat(...parts)));
function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}
// RFC 8785 for what receipts hold: objects with sorted keys, strings, integers, booleans, null.
function canonical(value) {
  if (Array.isArray(value)) return '[' + value.map(canonical).join(',') + ']';
  if (value && typeof value === 'object')
    return '{' + Object.keys(value).sort().map((k) => JSON.stringify(k) + ':' + canonical(value[k])).join(',') + '}';
  return JSON.stringify(value);
}
// RFC 9162 §2.1.3.2: the root an audit path leads to from leaf index fn in a tree of size sn + 1.
async function rootFrom(leaf, index, size, path) {
  let fn = index, sn = size - 1, r = leaf;
  for (const p of path.map(fromHex)) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = await sha256(Uint8Array.of(1), p, r);
      while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
    } else {
      r = await sha256(Uint8Array.of(1), r, p);
    }
    fn = Math.floor(fn / 2); sn = Math.floor(sn / 2);
  }
  return sn === 0 ? hex(r) : null;
}
async function checkProof(data) {
  const hash = hex(await sha256(text.encode(canonical(data.receipt))));
  if (hash !== data.hash) return false;
  const key = await sha256(text.encode('keyplane:receipt:v1'), fromHex(hash));
  const leaf = await sha256(Uint8Array.of(0), key);
  const [h, p, s] = data.checkpoint.split('.');
  const header = JSON.parse(new TextDecoder().decode(b64url(h)));
  const payload = JSON.parse(new TextDecoder().decode(b64url(p)));
  if (payload.epoch !== data.proof.epoch || payload.size !== data.proof.size) return false;
  if ((await rootFrom(leaf, data.proof.index, data.proof.size, data.proof.path)) !== payload.root) return false;
  const discovery = await (await fetch('/.well-known/openid-configuration')).json();
  const jwks = await (await fetch(discovery.jwks_uri)).json();
  const jwk = jwks.keys.find((k) => k.kid === header.kid);
  if (!jwk || header.alg !== 'ES256') return false;
  const verifier = await crypto.subtle.importKey('jwk', { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
  return crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, verifier, b64url(s), text.encode(h + '.' + p));
}
const proof = document.getElementById('receipt-proof');
const button = document.getElementById('verify-proof');
if (proof && button) {
  const status = document.getElementById('proof-status');
  button.addEventListener('click', async () => {
    let good = false;
    try { good = await checkProof(JSON.parse(proof.textContent)); } catch { good = false; }
    status.dataset.verified = String(good);
    say(status, good ? PAGE_MESSAGES.lines.proofOk : PAGE_MESSAGES.lines.proofBad, !good);
  });
}
`;
