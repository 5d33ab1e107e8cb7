import type { FastifyInstance } from 'fastify';
import { CONNECTORS, describeConnector } from '#lib/connectors/catalog.js';
import { describeConnectorResult, registerConnector } from '../../connectors/register-connector.js';
import { page } from '../../pages/layout.js';
import { uiOf } from '../../pages/ui.js';
import { authenticateRegistrar, orgRegistrar } from '../../clients/registration.js';
import { wantsJson } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { connectorsPage } from './page.js';

const input = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    label: { type: 'string' },
    description: { type: 'string' },
    required: { type: 'boolean' },
    example: { type: 'string' },
  },
} as const;
const connector = {
  type: 'object',
  required: ['name', 'title', 'inputs', 'docs'],
  properties: {
    name: { type: 'string' },
    title: { type: 'string' },
    inputs: { type: 'array', items: input },
    docs: { type: 'string' },
    pkce: { type: 'string', description: 'How the tool does PKCE S256, which Keyplane requires.' },
    registration: {
      type: 'object',
      additionalProperties: true,
      description: 'The registration the example inputs would make.',
    },
  },
} as const;
const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: 60 } },
} as const;

/** The examples of a template's inputs, for the registration GET /connectors shows. */
function exampleInputs(template: (typeof CONNECTORS)[number]): Record<string, string> {
  return Object.fromEntries(template.inputs.filter((i) => i.required && i.example).map((i) => [i.name, i.example!]));
}

/**
 * Connectors: ready-made OIDC clients for third-party tools (docs/connectors.md). The catalogue
 * is public; registering one needs what POST /register needs (the admin token, or a session
 * that then owns the client).
 */
export default async function connectorRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/connectors',
    {
      schema: {
        tags: ['connectors'],
        summary:
          'The connector templates: name, title, inputs, PKCE notes and the guide; HTML, or JSON with format=json',
        querystring: { type: 'object', properties: { format: { enum: ['json', 'html'] } } },
        response: {
          200: okObject({ connectors: { type: 'array', items: connector } }, ['connectors']),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      if (wantsJson(request)) {
        return {
          ok: true,
          connectors: CONNECTORS.map((template) =>
            describeConnector(template, template.registration(exampleInputs(template))),
          ),
        };
      }
      reply.type('text/html; charset=utf-8');
      const ui = uiOf(request);
      return page({ title: ui.t('connectors.title'), nonce: request.kp.cspNonce, ui, body: connectorsPage(ui) });
    },
  );

  app.post(
    '/connectors/:name',
    {
      schema: {
        tags: ['connectors'],
        summary:
          "Register a client from a connector template; answers with the registration (secret shown once) and the tool's configuration",
        security: [{ bearerAuth: [] }, { sessionCookie: [] }],
        params: nameParams,
        body: {
          type: 'object',
          additionalProperties: { type: 'string', maxLength: 500 },
          description:
            'The template\'s inputs, such as {"base_url": "https://grafana.example.com"}; with `org: <slug>` (a session of ' +
            'one of its admins or owners) the organization owns the client.',
        },
        response: {
          201: okObject(
            {
              connector: { type: 'string' },
              client: {
                type: 'object',
                additionalProperties: true,
                description: 'The RFC 7591 registration, with client_secret and registration_access_token shown once.',
              },
              snippet: {
                type: 'object',
                required: ['format', 'content'],
                properties: { format: { type: 'string' }, target: { type: 'string' }, content: { type: 'string' } },
              },
              docs: { type: 'string' },
              receipt: receiptField,
            },
            ['connector', 'client', 'snippet'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const { name } = request.params as { name: string };
      const registrar = authenticateRegistrar(app.kp, request.headers.authorization, request.kp.session);
      // `org: <slug>`: the organization owns the client, as at POST /register (docs/orgs.md#apps).
      const { org, ...inputs } = (request.body ?? {}) as Record<string, string>;
      const owned = org === undefined ? registrar : await orgRegistrar(app.kp, registrar, org);
      const result = await registerConnector(app.kp, name, inputs, owned);
      reply.code(201);
      return describeConnectorResult(app.kp, result);
    },
  );
}
