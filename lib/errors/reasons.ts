/**
 * Every `reason` an envelope can carry, with its HTTP status and meaning. docs/errors.md is
 * generated from this table (`npm run docs`) and a test keeps the two in step.
 * Add a reason here before throwing it anywhere.
 */
export const REASONS = {
  // generic HTTP
  invalid_request: {
    status: 400,
    description: 'The request is malformed: bad JSON, a schema violation, a missing or invalid field.',
  },
  unauthorized: {
    status: 401,
    description: 'No valid credential (session, token or admin token) came with the request.',
  },
  forbidden: { status: 403, description: 'The caller is known but may not do this.' },
  not_found: { status: 404, description: 'No such resource, or one the caller may not know exists.' },
  method_not_allowed: { status: 405, description: 'The path exists but not with this method.' },
  conflict: { status: 409, description: 'The request conflicts with the current state.' },
  payload_too_large: { status: 413, description: 'The body is larger than `http.bodyLimit`.' },
  unsupported_media_type: { status: 415, description: 'The body is neither JSON nor, where documented, form data.' },
  rate_limited: {
    status: 429,
    description: 'Too many requests from this address or for this account; `Retry-After` says when to try again.',
  },
  internal: {
    status: 500,
    description: 'The server failed; the request id in `x-request-id` identifies it in the logs.',
  },
  not_ready: { status: 503, description: 'Storage, keys or shared state are not ready yet.' },
  unavailable: {
    status: 503,
    description:
      'A dependency the request needs cannot be reached or cannot serve now (PostgreSQL, Redis, or for the gateway the control plane); the message names which, `Retry-After` says when to try again (docs/errors.md#dependency-outages).',
  },
  // credentials and lockout
  locked_out: {
    status: 429,
    description: 'Too many wrong codes for this account and method; locked until `Retry-After`.',
  },
  origin_mismatch: {
    status: 403,
    description: 'A state-changing request came from an origin other than the issuer (or a registered one).',
  },
  // OAuth 2.0 / OIDC (docs/oidc.md): the reason equals the RFC `error` code where one exists
  invalid_scope: {
    status: 400,
    description: 'A requested scope is malformed, unknown or not registered for the client (RFC 6749 §5.2).',
  },
  invalid_target: {
    status: 400,
    description:
      'The `resource` is not one of the exact resource URIs registered for the client (RFC 8707 §2); at registration, a resource that is the URL of a gateway registered by someone else.',
  },
  invalid_redirect_uri: {
    status: 400,
    description:
      'A redirect URI is not https (or http on a loopback host), has a fragment or a wildcard, or is not a registered exact match (RFC 7591 §3.2.2).',
  },
  invalid_client_metadata: {
    status: 400,
    description: 'A client metadata field is invalid or inconsistent with the others (RFC 7591 §3.2.2).',
  },
  stale_revision: {
    status: 409,
    description:
      'The client registration changed since the `revision` this update was based on; read it again and retry.',
  },
  unknown_connector: { status: 404, description: 'No connector template has this name; `GET /connectors` lists them.' },
  invalid_connector_input: {
    status: 400,
    description:
      'A connector input is missing, unknown or invalid (the tool URL must be https, or http on a loopback host, without query or fragment).',
  },
  invalid_dpop_proof: {
    status: 400,
    description: 'The DPoP proof is missing, malformed, replayed or does not match the request (RFC 9449 §4.3).',
  },
  use_dpop_nonce: {
    status: 400,
    description: 'The DPoP proof must carry the server nonce sent in the `DPoP-Nonce` header (RFC 9449 §8).',
  },
  invalid_client: {
    status: 401,
    description:
      'Client authentication failed: unknown client, wrong secret or assertion, or a method other than the registered `token_endpoint_auth_method` (RFC 6749 §5.2); or a `client_id` URL whose Client ID Metadata Document cannot be used, the message starting `client metadata document refused (<problem>)` (400 on the authorization page; problems in docs/oidc.md §2.1).',
  },
  authorization_pending: {
    status: 400,
    description:
      'Device grant (RFC 8628 §3.5): the person has not decided on the verification page yet; poll again after `interval` seconds.',
  },
  slow_down: {
    status: 400,
    description:
      'Device grant (RFC 8628 §3.5): the client polled sooner than `interval` after its last poll; wait 5 seconds longer from now on.',
  },
  expired_token: {
    status: 400,
    description:
      'Device grant (RFC 8628 §3.5): the device code outlived `expires_in`; start a new device authorization.',
  },
  invalid_grant: {
    status: 400,
    description:
      'The authorization code or refresh token is unknown, expired, used already, revoked, or was issued to another client, redirect URI or PKCE verifier (RFC 6749 §5.2).',
  },
  unauthorized_client: {
    status: 400,
    description: 'The client is not registered for this grant type or operation (RFC 6749 §5.2).',
  },
  unsupported_grant_type: {
    status: 400,
    description: 'The token endpoint offers `authorization_code` and `refresh_token` only (RFC 6749 §5.2).',
  },
  unsupported_response_type: {
    status: 400,
    description: 'Only `response_type=code` is offered: implicit and hybrid flows are refused (RFC 6749 §4.1.2.1).',
  },
  unknown_client: {
    status: 400,
    description:
      'The authorization request names no registered client, or a redirect URI that is not registered for it exactly; shown on a page, never redirected.',
  },
  login_required: {
    status: 401,
    description: '`prompt=none` was asked but there is no usable session (OIDC Core §3.1.2.6).',
  },
  consent_required: {
    status: 401,
    description:
      '`prompt=none` was asked but no earlier approval of this account covers the client, scopes and resource (OIDC Core §3.1.2.6); sent as a redirect error. FedCM and the direct grant answer it with 403 when nothing approved the client and the transport cannot ask (the direct grant adds `popup`).',
  },
  interaction_required: {
    status: 401,
    description:
      '`prompt=none` was asked but the session does not meet `acr_values` or `max_age` without user interaction (OIDC Core §3.1.2.6).',
  },
  saml_request_invalid: {
    status: 400,
    description:
      'The SAML message is malformed, declares a DTD, is too large, stale (IssueInstant outside ±5 minutes), for another Destination, or uses an unsupported binding.',
  },
  saml_signature_invalid: {
    status: 403,
    description:
      'The SAML request is unsigned although its service provider signs, or its signature does not verify against the pinned certificate (another key, a wrapped or second signature).',
  },
  saml_unknown_provider: {
    status: 400,
    description:
      'The SAML request names an Issuer that is no registered service provider (or IdP-initiated sign-in is off for it).',
  },
  saml_acs_not_registered: {
    status: 400,
    description:
      'The AssertionConsumerServiceURL (or index) is not one the service provider registered; nothing is ever posted to it.',
  },
  saml_request_replayed: { status: 400, description: 'A SAML request with this ID was seen already.' },
  invalid_session_token: {
    status: 401,
    description:
      'The deprecated v1 session token (macaroon) is malformed, forged, expired, for a client without the v1 bridge, or for a session that ended.',
  },
  access_denied: {
    status: 403,
    description:
      "The user declined the request, or the one-tap approval is unknown, expired or belongs to another session; or the account is signed in strongly enough but no access rule (a gateway route's `allow`, a client's `access.orgs`) admits it.",
  },
  // passkey accounts (docs/accounts.md)
  invalid_username: {
    status: 400,
    description: 'The username does not match `^[a-z0-9][a-z0-9._-]{2,31}$` after case-folding.',
  },
  username_taken: {
    status: 409,
    description: 'That username (or a previous username kept as an alias) belongs to an account already.',
  },
  display_name_invalid: {
    status: 400,
    description: 'The display name is longer than 64 characters or contains control characters.',
  },
  label_invalid: {
    status: 400,
    description: 'The passkey label is empty, longer than 64 characters or contains control characters.',
  },
  invalid_preferences: {
    status: 400,
    description: 'A preference key is unknown or its value is not one the key accepts.',
  },
  signup_closed: {
    status: 403,
    description:
      'Self-service sign-up is turned off (`signup.selfService: false`); only the founder setup link creates an account.',
  },
  invalid_setup_token: {
    status: 403,
    description: 'The founder setup token is unknown, already used, or a founder exists already.',
  },
  challenge_unknown: {
    status: 400,
    description:
      'The WebAuthn challenge or sign-up token is unknown, expired or already used (every ceremony is one-use).',
  },
  challenge_mismatch: {
    status: 400,
    description:
      'The response answers a different ceremony than the one it was sent to (purpose, account or user differs).',
  },
  webauthn_malformed: {
    status: 400,
    description: 'The WebAuthn response is not a well-formed credential (bad base64url, JSON, CBOR or type).',
  },
  webauthn_origin_mismatch: {
    status: 400,
    description: 'The WebAuthn response was produced on an origin this server does not expect.',
  },
  webauthn_rp_mismatch: {
    status: 400,
    description: 'The WebAuthn response was produced for another relying party ID.',
  },
  user_verification_required: {
    status: 400,
    description: 'The authenticator did not report user presence and user verification (PIN or biometric).',
  },
  webauthn_verification_failed: {
    status: 400,
    description: 'The WebAuthn response failed verification (signature, algorithm or attestation).',
  },
  unknown_credential: {
    status: 401,
    description: 'No passkey with this credential id is registered (for this account).',
  },
  credential_counter_regressed: {
    status: 401,
    description: "The passkey's signature counter went backwards: the authenticator may have been cloned.",
  },
  credential_exists: { status: 409, description: 'This passkey is registered already.' },
  last_passkey: { status: 409, description: 'The last passkey of an account cannot be removed; add another first.' },
  unknown_passkey: { status: 404, description: 'The account has no passkey with this credential id.' },
  unknown_session: { status: 404, description: 'The account has no live session with this identifier.' },
  unknown_device: { status: 404, description: 'The account has no device with this id in its ledger.' },
  last_operator: {
    status: 409,
    description:
      'This is the only operator: its role cannot be revoked or lowered, nor its account deleted (by the admin API, the console, `keyplane accounts delete` or the account itself), until another account is an operator.',
  },
  console_session_required: {
    status: 401,
    description:
      'A person reaches `/admin/*` and `/console` only with a console session, opened by a fresh passkey ceremony at `/console` (docs/console.md).',
  },
  account_disabled: {
    status: 403,
    description: 'An operator disabled this account: it cannot sign in, and its sessions and grants stopped working.',
  },
  account_suspended: {
    status: 403,
    description:
      'The org that manages this account suspended it (SCIM `active: false`, docs/scim.md#suspension): it cannot sign in, and its sessions and grants stopped working.',
  },
  authenticator_not_allowed: {
    status: 403,
    description:
      "The passkey's authenticator is refused by the passkey policy of the org that manages the account (docs/passkeys.md#org-policy), at registration or at sign-in: `authenticator` names it (`aaguid`, `name`) and `why` says which rule (`denied`, `not_allowed`, `attestation_required`, `revoked`, `compromised`).",
  },
  sso_required: {
    status: 403,
    description:
      'The org that manages this account (or holds this mail domain) requires sign-in through its connection (docs/federation.md#required-sso): magic links and backup codes are refused, and a passkey signs in only after an upstream sign-in.',
  },
  confirmation_mismatch: {
    status: 400,
    description: "Deleting the account needs `confirm` set to the account's current username.",
  },
  insufficient_assurance: {
    status: 403,
    description: "The session's assurance is too low for this action; step up at `/auth/step-up` first.",
  },
  // TOTP, recovery codes, email addresses and magic links (docs/accounts.md)
  totp_required: {
    status: 401,
    description: 'TOTP is active on the account: this step needs its current 6-digit code.',
  },
  totp_invalid: {
    status: 401,
    description: 'The TOTP code is wrong (or outside the one-step window); wrong codes count toward lockout.',
  },
  totp_replayed: { status: 401, description: 'A code of this time step was accepted already; wait for the next code.' },
  totp_already_active: {
    status: 409,
    description: 'TOTP is active already; disable it before setting up a new secret.',
  },
  totp_not_pending: {
    status: 409,
    description: 'There is no pending TOTP setup to confirm; call /auth/totp/setup first.',
  },
  totp_not_active: { status: 409, description: 'TOTP is not active on this account.' },
  invalid_recovery_code: {
    status: 401,
    description: 'The account or recovery code is wrong, or the code was used already; failures count toward lockout.',
  },
  invalid_email: {
    status: 400,
    description: 'The email address is not a plausible address (one @, no spaces, at most 254 characters).',
  },
  too_many_emails: { status: 409, description: 'The account holds the most e-mail addresses it may (10).' },
  email_taken: {
    status: 409,
    description: 'Another account verified this address first; a verified address belongs to one account.',
  },
  link_invalid: {
    status: 400,
    description: 'The link token is unknown or malformed (copy the whole link from the mail).',
  },
  link_used: { status: 410, description: 'The link was used already; every link works once.' },
  link_expired: { status: 410, description: 'The link is older than its lifetime; ask for a new one.' },
  enrolment_unavailable: {
    status: 409,
    description:
      "No new passkey enrolment link can be sent to this managed account (docs/scim.md#enrolment-links): `why` says whether it has a passkey already (`passkey_enrolled`), no verified address (`no_verified_address`), or signs in through its org's connection (`connection`).",
  },
  link_wrong_device: {
    status: 403,
    description: 'A sign-in link works only in the browser that asked for it; open it there or ask for a new one here.',
  },
  invalid_return: {
    status: 400,
    description: 'The `return` target is neither a path on this server nor a registered relying-party URI.',
  },
  // receipt ledger (docs/ledger.md)
  unknown_receipt: {
    status: 404,
    description: 'No receipt has this hash (receipts are looked up by their exact lower-case hex SHA-256 only).',
  },
  unknown_epoch: { status: 404, description: 'No ledger epoch with this number has been sealed yet.' },
  receipt_in_epoch: {
    status: 409,
    description:
      'The receipt is in this epoch, so it has no proof of absence; `GET /receipts/{hash}` gives its inclusion proof.',
  },
  unknown_tile: {
    status: 404,
    description:
      'No such tile of the transparency log yet: the tree is smaller, or the path is not a C2SP tlog-tiles path (docs/ledger.md#verifying-with-transparency-tools).',
  },
  unknown_log: {
    status: 404,
    description:
      "This instance witnesses no log with the checkpoint's origin (`ledger.witness.logs`), or witnesses none at all.",
  },
  checkpoint_not_signed: {
    status: 403,
    description: 'The checkpoint sent to the witness carries no valid signature by a key configured for its log.',
  },
  checkpoint_older: {
    status: 400,
    description: "The old size sent to the witness is larger than the checkpoint's own size (C2SP tlog-witness).",
  },
  checkpoint_conflict: {
    status: 409,
    description:
      'The witness already cosigned another root at this size: the log shows two histories, and the witness refuses the second.',
  },
  inconsistent_checkpoint: {
    status: 422,
    description:
      'The consistency proof does not show the checkpoint extending the one the witness cosigned last: a forked log is refused.',
  },
  // gateway (docs/gateway.md)
  gateway_not_configured: {
    status: 503,
    description:
      'The gateway holds no valid signed config from the control plane yet, so it refuses every protected request (fail closed).',
  },
  upstream_unavailable: {
    status: 502,
    description: 'The gateway could not reach the upstream app or the connection failed mid-request.',
  },
  upstream_busy: {
    status: 503,
    description: 'The gateway is closing or its connection pool to the upstream is full; retry shortly.',
  },
  upstream_timeout: { status: 504, description: "The upstream app did not answer within the gateway's timeout." },
  invalid_path: {
    status: 400,
    description:
      'The request path carries a form that a common upstream could read as another path (encoded separators, backslashes, dot segments, `;` parameters, double encoding, invalid or compatibility UTF-8; docs/gateway.md#path-rule).',
  },
  invalid_token: {
    status: 401,
    description:
      'The access token is malformed, expired, revoked, for another audience or not signed by the control plane (RFC 6750 §3.1).',
  },
  insufficient_scope: {
    status: 403,
    description: 'The access token lacks a scope this route requires (RFC 6750 §3.1).',
  },
  insufficient_user_authentication: {
    status: 401,
    description:
      'The authentication is weaker than this route (or the MCP tool called, docs/gateway.md#mcp-routes) requires; ask again with the `acr_values` in `WWW-Authenticate` (RFC 9470).',
  },
  principal_not_allowed: { status: 403, description: 'This route admits only other principal types (human or agent).' },
  dpop_required: {
    status: 401,
    description: 'This route needs a DPoP-bound access token with a DPoP proof (RFC 9449).',
  },
  no_gateway_policy: {
    status: 404,
    description:
      'The client has no `gateway` metadata in its registration, so there is no gateway config to serve; add one with an RFC 7592 update.',
  },
  invalid_evidence: {
    status: 400,
    description:
      'The gateway evidence is not a valid signed report: wrong `typ`, signature, `kid`, audience, client, times or shape, or a key not registered for the client.',
  },
  sign_in_expired: {
    status: 400,
    description:
      'The gateway sign-in callback matches no sign-in in progress in this browser (unknown, expired or already used `state`) and no return path is known; start again from the app.',
  },
  sign_in_refused: {
    status: 403,
    description:
      'The control plane ended the gateway sign-in with an OAuth error (the user declined, or the request was refused); `error` in the envelope names it.',
  },
  issuer_mismatch: {
    status: 400,
    description:
      "The sign-in response names another issuer than the gateway's control plane (RFC 9207 mix-up defence).",
  },
  invalid_id_token: {
    status: 401,
    description:
      'The ID token from the control plane failed verification at the gateway (signature, `iss`, `aud`, `nonce`, expiry, algorithm, or no assurance).',
  },
  session_refresh_pending: {
    status: 503,
    description:
      'Another request is refreshing this gateway session and did not finish in time; retry shortly (`Retry-After`).',
  },
  // agent identity: see docs/agents.md
  private_key_material: {
    status: 400,
    description:
      'The JWK carries private key members (`d`, `p`, `q`, `dp`, `dq`, `qi`, `k`); an agent sends its public key only.',
  },
  unsupported_key: {
    status: 400,
    description: 'The agent key is not an EC P-256 (ES256) or OKP Ed25519 (EdDSA) public JWK.',
  },
  agent_state: {
    status: 409,
    description: "The agent's current state (named in the message and in `state`) does not allow this transition.",
  },
  enrollment_unknown: {
    status: 404,
    description:
      'No enrollment with this id is waiting: unknown, expired, completed already, or the owner code does not match.',
  },
  enrollment_not_approved: {
    status: 409,
    description: 'The enrollment has not been approved by its owner yet; poll `enroll/status`.',
  },
  transfer_unknown: {
    status: 403,
    description:
      'No transfer of this agent to the signed-in account matches this code (unknown, expired, used, or meant for someone else).',
  },
  run_proof_invalid: {
    status: 400,
    description:
      'The run proof is not a valid `svc-agent-run-proof-v1`: raw content fields, unknown members, a bad commitment, another agent or challenge, or a bad signature.',
  },
  agent_key_mismatch: {
    status: 401,
    description: "The DPoP proof or assertion was signed by another key than the agent's current key.",
  },
  dns_record_missing: {
    status: 400,
    description: "No TXT record at `_svc-agent.<domain>` carries this agent's value (or the name did not resolve).",
  },
  agent_card_invalid: {
    status: 400,
    description:
      'The fetched A2A agent card is not a JSON object with a `name` (not JSON, not an object, or no name); nothing is appended.',
  },
  // in-place sign-in: popup, FedCM and the direct grant (docs/in-place.md)
  in_place_disabled: {
    status: 403,
    description:
      'The client has not turned on in-place sign-in (client metadata `in_place: true`), so FedCM and the direct grant refuse it.',
  },
  webidentity_required: {
    status: 400,
    description:
      "A FedCM endpoint was called without `Sec-Fetch-Dest: webidentity`: only the browser's FedCM machinery may call it.",
  },
  nonce_replayed: {
    status: 400,
    description: 'This nonce was used for this client already; every in-place sign-in needs a fresh nonce.',
  },
  account_mismatch: { status: 403, description: 'The FedCM `account_id` is not the signed-in account.' },
  step_up_required: {
    status: 403,
    description:
      'The account has TOTP active, which the direct grant cannot ask for: sign in through `popup` (in the envelope), the authorization URL with `response_mode=web_message`.',
  },
  // organizations, posture scan and seal (docs/orgs.md, docs/scan.md)
  last_owner: {
    status: 409,
    description: 'The org would be left without an owner: the last owner can be neither demoted nor removed.',
  },
  already_member: { status: 409, description: 'That account is a member of the org already.' },
  invalid_site_url: {
    status: 400,
    description:
      'A site URL must be an absolute https URL with a host name, no credentials, no IP literal and no fragment.',
  },
  scan_target_refused: {
    status: 400,
    description:
      'The scan was not run: the URL is not https, carries credentials, names an IP literal, or resolves to a loopback, private, link-local or metadata address.',
  },
  scan_failed: {
    status: 502,
    description:
      'The site could not be graded: it did not answer in time, answered with an error status, or sent something unreadable.',
  },
  domain_claimed: {
    status: 409,
    description:
      'Another organization has proved this mail domain already: the first org to verify a domain holds it, and the operator settles disputes.',
  },
  domain_not_verified: {
    status: 409,
    description:
      "The org has not proved control of the site's domain (DNS TXT or /.well-known/keyplane-site.txt), so no seal is shown; `cause` says why (`not_published`, `wrong_content`, `certificate_failed`, `fetch_failed`) and `checks` what each place answered.",
  },
  // connections: sign-in through an upstream identity provider (docs/federation.md)
  multi_tenant_issuer: {
    status: 400,
    description:
      'The upstream issuer lets accounts of any tenant sign in (Google without `hd`, Entra `common`/`organizations`): pin the connection to one with `tenant`.',
  },
  upstream_unreachable: {
    status: 502,
    description:
      'The upstream identity provider did not answer in time, or its discovery document, keys or token endpoint could not be read.',
  },
  upstream_error: {
    status: 400,
    description:
      'The upstream identity provider answered the sign-in with an error (`error=`, for example `access_denied`); `error` names it.',
  },
  upstream_response_invalid: {
    status: 400,
    description:
      "The upstream's answer did not verify: a bad or missing signature, another issuer (RFC 9207 `iss`) or audience, an expired ID token, a wrong nonce, or another tenant than the connection's pin; for SAML also another Recipient or Destination, an expired or replayed assertion, a wrapped or unsigned one, or a NameID that is not persistent.",
  },
  federation_state_unknown: {
    status: 400,
    description:
      'The upstream sent the browser back without a `state` (SAML: an IdP-initiated response, or an `InResponseTo`), or with one that is unknown, expired or used already (a replay), or started in another browser: start the sign-in again.',
  },
  not_provisioned: {
    status: 403,
    description:
      "The upstream identity is not an account this connection signs in: an org connection signs in only accounts its org manages (with `jit`, a new one whose address lies in the org's proved mail domains); an instance-wide one only identities linked to it.",
  },
  // trust profiles, migration plans and the rollout flow (docs/rollout.md)
  invalid_profile: {
    status: 400,
    description:
      'The trust profile or migration plan is not valid YAML or JSON, or breaks its schema (`project-trust-profile/v1`, `migration-plan/v1`); `problems` lists every violation with its path.',
  },
  profile_unsigned: {
    status: 400,
    description:
      'A signed profile or plan was expected but the document is not a compact JWS, or carries no signature (`alg: none`).',
  },
  profile_signature_invalid: {
    status: 400,
    description:
      'The signed profile or plan was not signed by this control plane (a `kid` outside its JWKS, a re-signed copy, another `typ` or issuer), or is not the version it has on record.',
  },
  outside_trust_profile: {
    status: 400,
    description:
      "The client registration steps outside its project's trust profile: a redirect URI or resource in none of the declared environments, or a principal type the profile does not admit; `violations` lists each.",
  },
  project_not_registered: {
    status: 409,
    description: 'The project has no registered client yet: run `keyplane rollout register` first.',
  },
  verification_required: {
    status: 409,
    description:
      'Attest needs a passing `keyplane rollout verify` of the current profile version within the last 24 hours.',
  },
  evidence_not_fresh: {
    status: 409,
    description:
      "The gateway's signed evidence is missing, expired or names another config than the declared one, so nothing can be attested now.",
  },
  // the guarded fetcher: every server-side fetch of a URL a user gave (docs/fetch.md)
  fetch_invalid_url: { status: 400, description: 'The URL to fetch is not an absolute URL.' },
  fetch_not_https: { status: 400, description: 'Server-side fetches go to https URLs only.' },
  fetch_credentials_in_url: {
    status: 400,
    description: 'The URL to fetch carries a user name or password; server-side fetches send no credentials.',
  },
  fetch_private_address: {
    status: 400,
    description:
      "The URL's host is, or resolves to, a loopback, private, link-local, metadata, shared (CGNAT), multicast, unspecified or reserved address (`addressClass` says which); nothing is sent to it.",
  },
  fetch_unresolvable: { status: 502, description: "The URL's host name does not resolve." },
  fetch_too_many_redirects: {
    status: 502,
    description: 'The target redirected more often than allowed, or in a loop.',
  },
  fetch_too_large: { status: 502, description: "The target's answer is larger than the fetch allows; it was cut off." },
  fetch_timeout: { status: 504, description: "The target did not answer completely within the fetch's deadline." },
  fetch_failed: { status: 502, description: 'The target could not be reached or its TLS certificate did not verify.' },
  // the read-only MCP tool server (docs/mcp.md): these travel in a JSON-RPC error's `data.reason`
  mcp_read_only: {
    status: 403,
    description:
      'The MCP server is read-only: a tool call or method that would change something is refused (JSON-RPC error -32003) and leaves an `mcp.attempt` receipt.',
  },
  mcp_unknown_tool: {
    status: 404,
    description:
      'No MCP tool has this name (JSON-RPC error -32602); `GET /mcp/tools` lists them. The attempt leaves an `mcp.attempt` receipt.',
  },
  // the SCIM 2.0 server (docs/scim.md): answered in the SCIM error schema with the `scimType` of RFC 7644 §3.12
  scim_invalid_filter: {
    status: 400,
    description:
      'SCIM `invalidFilter`: the filter does not parse, or names an attribute or operator the server does not filter on.',
  },
  scim_invalid_value: {
    status: 400,
    description: 'SCIM `invalidValue`: a required attribute is missing, or a value has the wrong type or form.',
  },
  scim_invalid_path: {
    status: 400,
    description: "SCIM `invalidPath`: a PATCH operation's `path` is malformed or unknown.",
  },
  scim_no_target: {
    status: 400,
    description: "SCIM `noTarget`: a PATCH operation's value filter matched nothing to replace or remove.",
  },
  scim_uniqueness: {
    status: 409,
    description:
      "SCIM `uniqueness`: the org has a user with this `userName`, or a group with this `displayName`'s slug, already.",
  },
  scim_mutability: { status: 400, description: 'SCIM `mutability`: the attribute is read-only (`id`, `meta`).' },
  scim_invalid_syntax: {
    status: 400,
    description: 'SCIM `invalidSyntax`: the body is not the SCIM message the endpoint takes (`schemas`, `Operations`).',
  },
  scim_precondition_failed: {
    status: 412,
    description:
      "SCIM ETags (RFC 7644 §3.14): the `If-Match` header names a version other than the resource's current `meta.version`; read it again.",
  },
  // the contact channel (docs/contact.md)
  message_too_long: {
    status: 413,
    description: 'The contact message is longer than `contact.maxMessageChars` characters.',
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type Reason = keyof typeof REASONS;
