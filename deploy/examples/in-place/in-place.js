// The three in-place transports of docs/in-place.md against one Keyplane control plane. No build
// step: a browser module. `config.json` (served next to this file) names the issuer and client id.
const $ = (id) => document.getElementById(id);
const config = await (await fetch('config.json')).json();
const redirectUri = new URL('callback', location.href).href;
$('issuer').textContent = config.issuer;
$('client-id').textContent = config.clientId;

const b64url = (bytes) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const random = () => b64url(crypto.getRandomValues(new Uint8Array(16)));
async function pkce() {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return { verifier, challenge: b64url(new Uint8Array(digest)) };
}

function show(text, kind, claims) {
  $('status').textContent = text;
  $('status').className = kind ?? '';
  $('claims').textContent = claims ? JSON.stringify(claims, null, 2) : '';
}

/** This page's server checks what came back (code + verifier, or FedCM's ID token) and answers the claims. */
async function finish(transport, path, body) {
  const res = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer = await res.json();
  if (!answer.ok)
    return show(`${transport}: ${answer.reason}${answer.message ? ` (${answer.message})` : ''}`, 'failed');
  show(
    `Signed in with the ${transport} as ${answer.claims.preferred_username ?? answer.claims.sub}`,
    'signed-in',
    answer.claims,
  );
}

const authorizeParams = (pair, state) => ({
  client_id: config.clientId,
  redirect_uri: redirectUri,
  response_type: 'code',
  scope: 'openid profile',
  state,
  code_challenge: pair.challenge,
  code_challenge_method: 'S256',
});

$('popup').addEventListener('click', async () => {
  const pair = await pkce();
  const state = random();
  const url = `${config.issuer}/auth/authorize?${new URLSearchParams({ ...authorizeParams(pair, state), response_mode: 'web_message' })}`;
  if (!window.open(url, 'keyplane', 'popup,width=480,height=680'))
    return show('popup: the browser blocked the window', 'failed');
  show('Continue in the popup window…');
  const data = await new Promise((resolve) => {
    window.addEventListener('message', function onMessage(event) {
      if (event.origin !== config.issuer || event.data?.state !== state) return;
      window.removeEventListener('message', onMessage);
      resolve(event.data);
    });
  });
  if (!data.code) return show(`popup: ${data.error ?? 'no code'}`, 'failed');
  await finish('popup', 'token', { code: data.code, code_verifier: pair.verifier, redirect_uri: redirectUri });
});

$('fedcm').addEventListener('click', async () => {
  if (!('IdentityCredential' in window))
    return show('FedCM: this browser has no account chooser (try Chromium)', 'failed');
  const nonce = random();
  try {
    const credential = await navigator.credentials.get({
      identity: {
        context: 'signin',
        providers: [{ configURL: `${config.issuer}/fedcm/config.json`, clientId: config.clientId, params: { nonce } }],
      },
    });
    await finish('account chooser', 'id-token', { token: credential.token, nonce });
  } catch (error) {
    show(`FedCM: ${error.name} (${error.message}). Sign in at ${config.issuer}/auth first, then try again.`, 'failed');
  }
});

/** The direct grant's two calls go to the issuer; its CORS answer names this page's origin only. */
const idp = (path, body) =>
  fetch(config.issuer + path, {
    method: 'POST',
    credentials: 'omit',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then((res) => res.json());

$('direct-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const username = $('username').value.trim();
  const signup = $('signup').checked;
  if (signup && !username) return show('passkey: a new account needs a username', 'failed');
  const started = await idp('/auth/authorize/direct/options', {
    client_id: config.clientId,
    ...(username ? { username } : {}),
    ...(signup ? { signup } : {}),
  });
  if (!started.ok) return show(`passkey: ${started.reason} (${started.message ?? ''})`, 'failed');
  const pair = await pkce();
  const grant = { ...authorizeParams(pair, random()), response_type: undefined };
  try {
    const ceremony = signup
      ? {
          registration: {
            user: username,
            signupToken: started.signupToken,
            response: (
              await navigator.credentials.create({
                publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(started.options),
              })
            ).toJSON(),
          },
        }
      : {
          assertion: {
            response: (
              await navigator.credentials.get({
                publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(started.options),
              })
            ).toJSON(),
          },
        };
    const answer = await idp('/auth/authorize/direct', { ...grant, ...ceremony });
    if (!answer.ok)
      return show(
        `passkey: ${answer.reason} (${answer.message ?? ''})${answer.popup ? ': use the popup button' : ''}`,
        'failed',
      );
    await finish('passkey', 'token', { code: answer.code, code_verifier: pair.verifier, redirect_uri: redirectUri });
  } catch (error) {
    show(`passkey: ${error.name} (${error.message})`, 'failed');
  }
});

for (const id of ['popup', 'fedcm', 'direct']) $(id).disabled = false;
show('Ready: pick a way to sign in.');
