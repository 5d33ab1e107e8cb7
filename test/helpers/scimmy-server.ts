import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import SCIMMY from 'scimmy';
import { startHttpsServer, type TestCa } from './tls.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

type Stored = Record<string, unknown> & { id: string };

/** SCIMMY's resource classes as this server drives them (its typings keep User and Group apart). */
interface ResourceClass {
  ingress(handler: (resource: { id?: string }, instance: Record<string, unknown>) => unknown): unknown;
  egress(handler: (resource: { id?: string; filter?: { match(values: unknown[]): unknown[] } }) => unknown): unknown;
  degress(handler: (resource: { id?: string }) => unknown): unknown;
  new (idOrQuery?: string | Record<string, unknown>): {
    read(): Promise<unknown>;
    write(body: unknown): Promise<unknown>;
    patch(body: unknown): Promise<unknown>;
    dispose(): Promise<void>;
  };
}
const USERS = SCIMMY.Resources.User as unknown as ResourceClass;
const GROUPS = SCIMMY.Resources.Group as unknown as ResourceClass;
const notFound = (id: string | undefined) => new SCIMMY.Types.Error(404, null as never, `no ${id}`);

/**
 * A SCIM 2.0 server built with SCIMMY (the RFCs' schemas, filters and PatchOp), as an app's
 * provisioning endpoint is: https on 127.0.0.1 with the test CA, Users and Groups held in
 * memory, one bearer token. `failWith` makes every request answer that status (a broken
 * remote); `requests` records `METHOD path` of each.
 */
export async function startScimmyServer(t: Tap, tls: TestCa, token: string) {
  const users = new Map<string, Stored>();
  const groups = new Map<string, Stored>();
  const state = { failWith: 0 };
  declareHandlers(users, groups);
  const server = await startHttpsServer(t, tls, (req, res) => void serve(req, res, token, state));
  return {
    users,
    groups,
    requests: server.requests,
    baseUrl: `${server.origin}/scim/v2`,
    failWith: (status: number) => (state.failWith = status),
    /** The user stored under `userName`, if any. */
    user: (userName: string) => [...users.values()].find((u) => u['userName'] === userName),
    /** A user the app had before Keyplane pushed anything (matched by userName, never duplicated). */
    seed(userName: string): string {
      const id = randomUUID();
      users.set(id, { id, userName, active: true });
      return id;
    },
  };
}

/** SCIMMY keeps its handlers per process: each server of this process shares them, with its own maps bound last. */
let bound: { users: Map<string, Stored>; groups: Map<string, Stored> } | undefined;

function declareHandlers(users: Map<string, Stored>, groups: Map<string, Stored>): void {
  const first = bound === undefined;
  bound = { users, groups };
  if (!first) return;
  const store = (kind: 'users' | 'groups') => bound![kind];
  SCIMMY.Resources.declare(SCIMMY.Resources.User);
  SCIMMY.Resources.declare(SCIMMY.Resources.Group);
  for (const [Resource, kind] of [
    [USERS, 'users'],
    [GROUPS, 'groups'],
  ] as const) {
    Resource.ingress((resource, instance) => {
      const id = resource.id ?? randomUUID();
      if (resource.id && !store(kind).has(id)) throw notFound(id);
      const data = JSON.parse(JSON.stringify(instance)) as Record<string, unknown>;
      delete data['meta'];
      delete data['schemas'];
      const saved = { ...data, id };
      store(kind).set(id, saved);
      return saved;
    });
    Resource.egress((resource) => {
      if (resource.id) {
        const found = store(kind).get(resource.id);
        if (!found) throw notFound(resource.id);
        return found;
      }
      const all = [...store(kind).values()];
      return resource.filter ? resource.filter.match(all) : all;
    });
    Resource.degress((resource) => {
      if (!store(kind).delete(resource.id!)) throw notFound(resource.id);
    });
  }
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  token: string,
  state: { failWith: number },
): Promise<void> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  const send = (status: number, body?: unknown) => {
    res.statusCode = status;
    if (body !== undefined) res.setHeader('content-type', 'application/scim+json');
    res.end(body === undefined ? undefined : JSON.stringify(body));
  };
  if (state.failWith) return send(state.failWith, { detail: 'down for the test' });
  if (req.headers.authorization !== `Bearer ${token}`) return send(401, new SCIMMY.Messages.Error({ status: 401 }));
  const url = new URL(req.url ?? '/', 'https://localhost');
  const match = /^\/scim\/v2\/(Users|Groups)(?:\/([^/]+))?$/.exec(url.pathname);
  if (!match) return send(404, new SCIMMY.Messages.Error({ status: 404 }));
  const Resource = match[1] === 'Users' ? USERS : GROUPS;
  const id = match[2] ? decodeURIComponent(match[2]) : undefined;
  const filter = url.searchParams.get('filter');
  const body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  try {
    const resource = id ? new Resource(id) : new Resource(filter ? { filter } : {});
    switch (req.method) {
      case 'GET':
        return send(200, await resource.read());
      case 'POST':
        return send(201, await resource.write(body));
      case 'PUT':
        return send(200, await resource.write(body));
      case 'PATCH': {
        const patched = await resource.patch(body);
        return patched ? send(200, patched) : send(204);
      }
      case 'DELETE':
        await resource.dispose();
        return send(204);
      default:
        return send(405);
    }
  } catch (error) {
    const status = error instanceof SCIMMY.Types.Error ? Number(error.status) : 500;
    return send(status, new SCIMMY.Messages.Error(error instanceof SCIMMY.Types.Error ? error : { status: 500 }));
  }
}
