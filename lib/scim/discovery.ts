import { CORE_GROUP, CORE_USER, ENTERPRISE_USER } from './attribute-path.js';
import { LIST_RESPONSE } from './resources.js';

/** The discovery endpoints (RFC 7644 §4): what this server supports, its resource types and their schemas. */

const SPC = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
const RESOURCE_TYPE = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
const SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

export function serviceProviderConfig(base: string, maxResults: number): Record<string, unknown> {
  return {
    schemas: [SPC],
    documentationUri: `${new URL(base).origin}/docs/scim`,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'Bearer token',
        description: "An org's SCIM token, created by an owner at /org/{slug}/scim-tokens",
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

export function resourceTypes(base: string): Record<string, unknown>[] {
  return [
    {
      schemas: [RESOURCE_TYPE],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      schema: CORE_USER,
      schemaExtensions: [{ schema: ENTERPRISE_USER, required: false }],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` },
    },
    {
      schemas: [RESOURCE_TYPE],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      schema: CORE_GROUP,
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` },
    },
  ];
}

type Attr = Record<string, unknown>;
const attr = (name: string, type: string, more: Attr = {}): Attr => ({
  name,
  type,
  multiValued: false,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...more,
});
const multi = (name: string, subAttributes: Attr[]): Attr =>
  attr(name, 'complex', { multiValued: true, subAttributes });
const typed = [attr('value', 'string'), attr('type', 'string'), attr('primary', 'boolean'), attr('display', 'string')];

export function schemas(base: string): Record<string, unknown>[] {
  const schema = (id: string, name: string, attributes: Attr[]) => ({
    schemas: [SCHEMA],
    id,
    name,
    attributes,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  });
  return [
    schema(CORE_USER, 'User', [
      attr('userName', 'string', { required: true, uniqueness: 'server' }),
      attr('externalId', 'string', { caseExact: true }),
      attr('name', 'complex', {
        subAttributes: ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map(
          (n) => attr(n, 'string'),
        ),
      }),
      ...['displayName', 'nickName', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone'].map((n) =>
        attr(n, 'string'),
      ),
      attr('active', 'boolean'),
      multi('emails', typed),
      multi('phoneNumbers', typed),
      multi('addresses', [
        ...['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type'].map((n) =>
          attr(n, 'string'),
        ),
        attr('primary', 'boolean'),
      ]),
      multi('roles', typed),
    ]),
    schema(ENTERPRISE_USER, 'EnterpriseUser', [
      ...['employeeNumber', 'costCenter', 'organization', 'division', 'department'].map((n) => attr(n, 'string')),
      attr('manager', 'complex', {
        subAttributes: [attr('value', 'string'), attr('$ref', 'reference'), attr('displayName', 'string')],
      }),
    ]),
    schema(CORE_GROUP, 'Group', [
      attr('displayName', 'string', { required: true, caseExact: true }),
      attr('externalId', 'string', { caseExact: true }),
      multi('members', [
        attr('value', 'string', { caseExact: true }),
        attr('$ref', 'reference'),
        attr('display', 'string'),
      ]),
    ]),
  ];
}

/** A discovery list as a ListResponse (RFC 7644 §4: `/ResourceTypes` and `/Schemas` answer one). */
export function discoveryList(resources: Record<string, unknown>[]): Record<string, unknown> {
  return {
    schemas: [LIST_RESPONSE],
    totalResults: resources.length,
    startIndex: 1,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}
