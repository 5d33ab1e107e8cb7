/** The JSON schemas of the connection routes (docs/federation.md#adding-an-oidc-connection). */
export const connectionSchema = {
  type: 'object',
  required: ['connectionId', 'type', 'name', 'redirect_uri'],
  properties: {
    connectionId: { type: 'string' },
    type: { enum: ['oidc', 'saml'] },
    name: { type: 'string' },
    orgId: { type: ['string', 'null'] },
    oidc: {
      type: 'object',
      properties: {
        issuer: { type: 'string' },
        client_id: { type: 'string' },
        token_endpoint_auth_method: { enum: ['client_secret_basic', 'private_key_jwt'] },
        scopes: { type: 'array', items: { type: 'string' } },
        tenant: { type: 'object', properties: { hd: { type: 'string' }, tid: { type: 'string' } } },
      },
    },
    saml: {
      type: 'object',
      properties: {
        idp_entity_id: { type: 'string' },
        sso_url: { type: 'string' },
        slo_url: { type: 'string' },
        metadata_url: { type: 'string' },
        certificates_not_after: { type: 'string' },
        allow_idp_initiated: { type: 'boolean' },
      },
    },
    sp_entity_id: { type: 'string', description: "SAML: the service provider's entityID, to register at the IdP" },
    acs_url: { type: 'string', description: 'SAML: the AssertionConsumerService URL (HTTP-POST)' },
    sp_metadata_url: { type: 'string', description: "SAML: the service provider's metadata, to give the IdP" },
    domains: { type: 'array', items: { type: 'string' } },
    jit: { anyOf: [{ type: 'null' }, { type: 'object', properties: { role: { const: 'member' } } }] },
    required: { type: 'boolean' },
    session_max_hours: { type: 'integer' },
    max_assurance: { enum: ['email', 'passkey'] },
    redirect_uri: { type: 'string' },
    post_logout_redirect_uri: { type: 'string', description: 'Register at the upstream for RP-initiated logout' },
    backchannel_logout_uri: { type: 'string', description: 'Register at the upstream for its back-channel logout' },
    jwks_uri: { type: 'string' },
    createdAt: { type: 'string' },
    updatedAt: { type: 'string' },
  },
} as const;

const oidcInput = {
  type: 'object',
  additionalProperties: false,
  properties: {
    issuer: { type: 'string', maxLength: 2048 },
    client_id: { type: 'string', maxLength: 255 },
    client_secret: { type: 'string', maxLength: 1024 },
    token_endpoint_auth_method: { enum: ['client_secret_basic', 'private_key_jwt'] },
    scopes: { type: 'array', maxItems: 20, items: { type: 'string', maxLength: 64 } },
    tenant: {
      type: 'object',
      additionalProperties: false,
      properties: { hd: { type: 'string', maxLength: 253 }, tid: { type: 'string', maxLength: 64 } },
    },
  },
} as const;

export const connectionBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: { enum: ['oidc', 'saml'] },
    name: { type: 'string', maxLength: 100 },
    oidc: oidcInput,
    saml: {
      type: 'object',
      additionalProperties: false,
      properties: {
        metadata_xml: { type: 'string', maxLength: 262144 },
        metadata_url: { type: 'string', maxLength: 2048 },
        allow_idp_initiated: { type: 'boolean' },
      },
    },
    domains: { type: 'array', maxItems: 50, items: { type: 'string', maxLength: 253 } },
    jit: {
      anyOf: [
        { type: 'null' },
        { type: 'object', additionalProperties: false, required: ['role'], properties: { role: { const: 'member' } } },
      ],
    },
    required: { type: 'boolean' },
    session_max_hours: { type: 'integer', minimum: 1, maximum: 12 },
    max_assurance: { enum: ['email', 'passkey'] },
  },
} as const;
