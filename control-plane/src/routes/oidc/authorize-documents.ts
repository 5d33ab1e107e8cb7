import { LOCALES } from '#lib/i18n/locales.js';
import { CLIENT_SIGNING_ALGS } from '#lib/oauth/oidc-client-metadata.js';

/** What `/auth/authorize` declares of itself: its parameters (OpenAPI) and its discovery metadata. */

// Documentation only: every parameter is checked by checkAuthorizationRequest, so that a bad one is
// redirected with an RFC 6749 error (or shown on a page) instead of failing schema validation.
export const AUTHORIZE_QUERY = {
  type: 'object',
  properties: Object.fromEntries(
    Object.entries({
      client_id: 'registered client id',
      redirect_uri: 'exact registered callback',
      response_type: 'code (only)',
      code_challenge: 'PKCE S256 challenge (required)',
      code_challenge_method: 'S256 (only)',
      state: 'opaque RP value',
      nonce: 'ID token nonce',
      scope: 'openid, email, profile, offline_access (unknown values are ignored)',
      resource: 'RFC 8707 resource (exact registered URI)',
      response_mode: 'query, form_post or web_message',
      prompt: 'none, login, consent or select_account',
      max_age: 'seconds',
      acr_values: 'recovery, email, passkey or sensitive',
      dpop_jkt: 'RFC 9449 §10 key thumbprint',
      id_token_hint: 'an ID token this server issued to the client: who should be signed in',
      request: 'RFC 9101 signed request object (by value)',
      request_uri: 'RFC 9101 request object by reference (one of the registered request_uris)',
      resume: 'internal: resumes a request after sign-in or step-up',
    }).map(([name, description]) => [name, { description }]),
  ),
  additionalProperties: true,
} as const;

/** The authorization endpoint's part of discovery (OIDC Discovery 1.0 §3): exactly what it does. */
export const AUTHORIZE_DISCOVERY = {
  endpoint: 'authorization_endpoint',
  metadata: {
    response_types_supported: ['code'],
    response_modes_supported: ['query', 'form_post', 'web_message'],
    code_challenge_methods_supported: ['S256'],
    // draft-ietf-oauth-client-id-metadata-document: an https client_id URL is read as the client's metadata.
    client_id_metadata_document_supported: true,
    scopes_supported: ['openid', 'email', 'profile', 'orgs', 'groups', 'offline_access'],
    claims_supported: [
      'iss',
      'sub',
      'aud',
      'exp',
      'iat',
      'auth_time',
      'nonce',
      'acr',
      'amr',
      'sid',
      'email',
      'email_verified',
      'name',
      'preferred_username',
      'orgs',
      'groups',
      'svc',
    ],
    acr_values_supported: ['recovery', 'email', 'passkey', 'sensitive'],
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    claims_parameter_supported: false,
    // OIDC Discovery §3: the languages of the pages (docs/i18n.md). claims_locales is accepted and
    // ignored, so claims_locales_supported is not advertised.
    ui_locales_supported: [...LOCALES],
    // RFC 9101 and OIDC Core §6: signed request objects, by value and by a registered request_uri.
    request_parameter_supported: true,
    request_uri_parameter_supported: true,
    require_request_uri_registration: true,
    request_object_signing_alg_values_supported: [...CLIENT_SIGNING_ALGS],
    authorization_response_iss_parameter_supported: true,
  },
};
