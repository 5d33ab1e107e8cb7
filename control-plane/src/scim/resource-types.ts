import type { ScimCaller } from './tokens.js';
import { GROUP_SHAPE, USER_SHAPE } from '#lib/scim/attribute-path.js';
import { readChange } from '#lib/scim/patch.js';
import { createUser, deleteUser, getUser, listUsers, writeUser, type ListQuery, type ScimServices } from './users.js';
import { createGroup, deleteGroup, getGroup, listGroups, writeGroup } from './groups.js';

type Resource = Record<string, unknown>;

/** One SCIM resource type as the routes serve it: its endpoint and its operations (docs/scim.md). */
export interface ScimResourceType {
  endpoint: 'Users' | 'Groups';
  /** What one resource is, in the OpenAPI summaries. */
  noun: string;
  list(services: ScimServices, caller: ScimCaller, query: ListQuery): Promise<Resource>;
  create(services: ScimServices, caller: ScimCaller, body: unknown): Promise<{ resource: Resource }>;
  get(services: ScimServices, caller: ScimCaller, id: string): Promise<Resource>;
  change(
    services: ScimServices,
    caller: ScimCaller,
    id: string,
    method: 'PUT' | 'PATCH',
    body: unknown,
    ifMatch?: string,
  ): Promise<{ resource: Resource }>;
  /** `ifMatch`: the request's `If-Match` (RFC 7644 §3.14), checked in the write's transaction. */
  remove(services: ScimServices, caller: ScimCaller, id: string, ifMatch?: string): Promise<unknown>;
  /**
   * Whether a PATCH answers the resource (200) or nothing (204, RFC 7644 §3.5.2): Groups answer
   * 204, as Entra ID and Okta expect, since a member list can be long.
   */
  patchAnswersResource: boolean;
}

/** The resource types this server serves; adding one is one entry here and its module. */
export const RESOURCE_TYPES: readonly ScimResourceType[] = [
  {
    endpoint: 'Users',
    noun: 'account the org manages (suspended by `active: false`)',
    list: listUsers,
    create: createUser,
    get: getUser,
    change: (services, caller, id, method, body, ifMatch) =>
      writeUser(services, caller, id, readChange(method, body, USER_SHAPE), ifMatch),
    remove: deleteUser,
    patchAnswersResource: true,
  },
  {
    endpoint: 'Groups',
    noun: 'team of the org, with its managed members',
    list: listGroups,
    create: createGroup,
    get: getGroup,
    change: (services, caller, id, method, body, ifMatch) =>
      writeGroup(services, caller, id, readChange(method, body, GROUP_SHAPE), ifMatch),
    remove: deleteGroup,
    patchAnswersResource: false,
  },
];
