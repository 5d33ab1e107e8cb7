/**
 * bench:scim — a full directory sync from a Microsoft Entra ID-shaped client against an org's SCIM
 * server (docs/scim.md), then the look-ups and pages a provisioning client makes at that size, and
 * the gateway member directory's cost per membership change; on SQLite and on PostgreSQL
 * (issue #49, "Scale"; docs/performance.md#scim-benchscim).
 *
 * Method: a control plane in a fresh data directory (bench/harness.ts), driven through fastify's
 * `inject` (no sockets), one request at a time, as a provisioning service sends them. The org
 * `acme` has a proved mail domain and an OIDC connection (its people sign in there, as with
 * Entra, so no enrolment mail goes out) and a SCIM token of its owner; the per-token throttle is
 * lifted for the run (the limiter still runs).
 *
 * 1. Users: for each of `--users` people, Entra's sequence: `GET /Users?filter=externalId eq …`,
 *    `GET /Users?filter=userName eq …` (both must answer no match), then `POST /Users` with the
 *    attributes Entra's default mapping sends (enterprise extension included). Look-ups and
 *    creates are timed apart: users created per second and look-ups per second, wall and per
 *    CPU-second of this process (PostgreSQL's own CPU is not in it: read the wall rate there).
 * 2. Groups: for each of `--groups`, `GET /Groups?excludedAttributes=members&filter=displayName eq …`,
 *    `POST /Groups`, then its share of the users added by `PATCH` in batches of `--member-batch`
 *    (`"op": "Add"`, `path: members`), every user in one group.
 * 3. Queries, measured twice, interleaved batch by batch (`measureInterleaved`): once when the org
 *    holds `--small` users (during step 1) and once with all of them: `GET /ServiceProviderConfig`
 *    (the baseline: token check, throttle and SCIM pipeline, no user read), `userName eq` and
 *    `externalId eq` of a random existing user, a page from the middle (`startIndex`, `count=100`)
 *    and a filter no index serves (`name.familyName co …`, a scan). Each is reported as a ratio to
 *    the baseline of the same round: an index look-up keeps its ratio from `--small` to `--users`
 *    users, a scan's grows with the org.
 * 4. Directory: a gateway client whose rule admits the whole org (`allow.orgs: [acme]`). Timed,
 *    interleaved: a config poll with nothing changed (the directory reused: the baseline), one
 *    membership change (a Group PATCH adding or removing one member), and such a change followed
 *    by the poll that rebuilds the directory of every member. The directory's cost per change is
 *    (change + poll) − change − unchanged poll. The builds counter (`kp_gateway_directory_builds_total`)
 *    must grow by exactly the changes that were polled, never by an unchanged poll.
 *
 * Every answer is checked (status, and the rows asked for), so a failing request cannot look fast.
 *
 * `npm run bench:scim -- [--users N] [--groups N] [--small N] [--member-batch N]` (defaults 10,000,
 * 500, 100, 50). PostgreSQL: KEYPLANE_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres),
 * in a database made for the run and dropped after it; BENCH_SKIP_POSTGRES=1 leaves it out.
 * BENCH_SECONDS sets the timed work per query case (default 5).
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { ADMIN, basicAuth, registerClient, type Registered } from '../test/helpers/oidc.js';
import type { ControlPlaneServices } from '../control-plane/src/context.js';
import {
  benchCase,
  benchControlPlane,
  benchTap,
  describeRun,
  log,
  measureInterleaved,
  postgresDatabase,
  type Rate,
} from './harness.js';

const { values: args } = parseArgs({
  options: {
    users: { type: 'string' },
    groups: { type: 'string' },
    small: { type: 'string' },
    'member-batch': { type: 'string' },
  },
});
const USERS = Number(args.users ?? 10_000);
const GROUPS = Math.min(Number(args.groups ?? 500), USERS);
const SMALL = Math.min(Number(args.small ?? 100), USERS);
const MEMBER_BATCH = Number(args['member-batch'] ?? 50);
const PAGE = 100;

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const DOMAIN = 'acme.example';

type Teardowns = ReturnType<typeof benchTap>['tap'];
interface Answer {
  statusCode: number;
  body: string;
}

const pad = (n: number) => String(n).padStart(6, '0');
const userName = (i: number) => `user${pad(i)}@${DOMAIN}`;
const objectId = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

function expect(res: Answer, status: number, what: string): Record<string, unknown> {
  if (res.statusCode !== status) throw new Error(`${what}: ${res.statusCode} ${res.body.slice(0, 300)}`);
  return res.body === '' ? {} : (JSON.parse(res.body) as Record<string, unknown>);
}

function expectFound(res: Answer, total: number, what: string): Record<string, unknown> {
  const body = expect(res, 200, what);
  if (body['totalResults'] !== total)
    throw new Error(`${what}: totalResults ${String(body['totalResults'])}, want ${total}`);
  return body;
}

/** Wall and CPU time spent on one kind of request across a phase. */
class Tally {
  count = 0;
  private ns = 0n;
  private cpuUs = 0;
  async time<T>(op: () => Promise<T>): Promise<T> {
    const cpu = process.cpuUsage();
    const start = process.hrtime.bigint();
    const out = await op();
    this.ns += process.hrtime.bigint() - start;
    const used = process.cpuUsage(cpu);
    this.cpuUs += used.user + used.system;
    this.count++;
    return out;
  }
  rate(): Rate {
    return { wall: this.count / (Number(this.ns) / 1e9), cpu: this.count / (this.cpuUs / 1e6), count: this.count };
  }
  seconds(): number {
    return Number(this.ns) / 1e9;
  }
}

/** The org `acme`, its proved mail domain, its connection and a SCIM token; a gateway client admitting the org. */
async function acme(tap: Teardowns, databaseUrl?: string) {
  const built = await benchControlPlane(tap, {
    adminToken: ADMIN,
    'scim.perTokenPerMinute': 1_000_000,
    ...(databaseUrl ? { databaseUrl } : {}),
  });
  const { app, services, signIn } = built;
  const { storage } = services;
  const { browser: owner } = await signIn({ username: 'owner', assurance: 'sensitive' });
  expect(await owner.post('/auth/orgs/create', { name: 'Acme' }), 200, 'create the org');
  const { token } = expect(await owner.post('/org/acme/scim-tokens'), 200, 'a SCIM token') as { token: string };
  const org = (await storage.orgs.getBySlug('acme'))!;
  const now = services.now();
  // A proved mail domain, as POST /org/acme/mail-domains/…/verify leaves it (the DNS proof is not timed here).
  await storage.orgs.addMailDomain({
    domainId: 'mdm_bench',
    orgId: org.orgId,
    domain: DOMAIN,
    proofToken: 'bench',
    verifiedAt: null,
    checkedAt: null,
    failingSince: null,
    createdAt: now,
  });
  await storage.orgs.claimMailDomain('mdm_bench', now);
  // The org's Entra connection: its people sign in there, so provisioning mails no enrolment link.
  await storage.connections.insert({
    connectionId: 'con_bench',
    orgId: org.orgId,
    type: 'oidc',
    name: 'Acme Entra ID',
    settings: {
      issuer: 'https://login.microsoftonline.com/00000000-0000-0000-0000-000000000001/v2.0',
      clientId: 'keyplane',
      tokenEndpointAuthMethod: 'client_secret_basic',
      scopes: ['openid'],
    },
    secretSealed: null,
    domains: [DOMAIN],
    jit: null,
    required: false,
    maxAssurance: 'email',
    sessionMaxHours: 12,
    createdAt: now,
    updatedAt: now,
  });
  const scim = (method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown) =>
    app.inject({
      method,
      url: `/scim/v2/orgs/acme${path}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const gateway = (await registerClient(app, {
    redirect_uris: ['https://app.acme.example/_gate/callback'],
    scope: 'openid email',
    grant_types: ['authorization_code'],
    resources: [],
    gateway: { mode: 'enforce', routes: [{ path: '/', allow: { orgs: [{ slug: 'acme' }] } }] },
  })) as Registered;
  return { app, services, scim, gateway };
}

const filter = (expression: string) => encodeURIComponent(expression);

/** The requests of the query step, each checked. */
function queryCases(scim: Awaited<ReturnType<typeof acme>>['scim'], users: number) {
  const someone = () => Math.floor(Math.random() * users);
  const many = <T>(n: number, make: () => T) => Array.from({ length: n }, make);
  return [
    benchCase({
      name: 'GET /ServiceProviderConfig (baseline)',
      prepare: async (n) => many(n, () => null),
      op: async () => void expect(await scim('GET', '/ServiceProviderConfig'), 200, 'ServiceProviderConfig'),
    }),
    benchCase({
      name: 'filter userName eq',
      prepare: async (n) => many(n, someone),
      op: async (i: number) =>
        void expectFound(
          await scim('GET', `/Users?filter=${filter(`userName eq "${userName(i)}"`)}`),
          1,
          'userName eq',
        ),
    }),
    benchCase({
      name: 'filter externalId eq',
      prepare: async (n) => many(n, someone),
      op: async (i: number) =>
        void expectFound(
          await scim('GET', `/Users?filter=${filter(`externalId eq "${objectId(i)}"`)}`),
          1,
          'externalId eq',
        ),
    }),
    benchCase({
      name: `a page from the middle (count=${PAGE})`,
      prepare: async (n) => many(n, () => Math.max(1, Math.floor(users / 2) - PAGE)),
      op: async (startIndex: number) => {
        const body = expectFound(
          await scim('GET', `/Users?startIndex=${startIndex}&count=${PAGE}`),
          users,
          'a page of /Users',
        );
        if ((body['Resources'] as unknown[]).length !== Math.min(PAGE, users - startIndex + 1))
          throw new Error('a page of /Users: short');
      },
    }),
    benchCase({
      name: 'filter name.familyName co (a scan)',
      prepare: async (n) => many(n, someone),
      op: async (i: number) =>
        void expectFound(
          await scim('GET', `/Users?filter=${filter(`name.familyName co "${pad(i)}"`)}`),
          1,
          'familyName co',
        ),
    }),
  ];
}

async function queries(scim: Awaited<ReturnType<typeof acme>>['scim'], users: number): Promise<Rate[]> {
  log(`  queries with ${users} users in the org:`);
  return measureInterleaved(queryCases(scim, users));
}

async function directoryBuilds(services: ControlPlaneServices): Promise<number> {
  const metric = services.metrics.getSingleMetric('kp_gateway_directory_builds_total');
  return (await metric!.get()).values[0]?.value ?? 0;
}

async function backend(tap: Teardowns, name: string, databaseUrl?: string): Promise<string[]> {
  log(`${name}:`);
  const { app, services, scim, gateway } = await acme(tap, databaseUrl);
  const lookups = new Tally();
  const creates = new Tally();
  const ids: string[] = [];
  let small: Rate[] = [];

  // 1. Users, Entra's sequence per person.
  for (let i = 0; i < USERS; i++) {
    await lookups.time(async () =>
      expectFound(await scim('GET', `/Users?filter=${filter(`externalId eq "${objectId(i)}"`)}`), 0, 'externalId'),
    );
    await lookups.time(async () =>
      expectFound(await scim('GET', `/Users?filter=${filter(`userName eq "${userName(i)}"`)}`), 0, 'userName'),
    );
    const created = await creates.time(async () =>
      expect(
        await scim('POST', '/Users', {
          schemas: [USER, ENTERPRISE],
          externalId: objectId(i),
          userName: userName(i),
          active: true,
          displayName: `Person ${pad(i)}`,
          emails: [{ primary: true, type: 'work', value: userName(i) }],
          meta: { resourceType: 'User' },
          name: { formatted: `Person ${pad(i)}`, familyName: `Family${pad(i)}`, givenName: 'Person' },
          roles: [],
          [ENTERPRISE]: { employeeNumber: String(i), department: `Department ${i % 20}` },
        }),
        201,
        'create a user',
      ),
    );
    ids.push(created['id'] as string);
    if (i + 1 === SMALL) small = await queries(scim, SMALL);
    if ((i + 1) % 1000 === 0) log(`  ${i + 1} users created`);
  }
  const userLine = `created ${USERS} users in ${creates.seconds().toFixed(1)} s: ${Math.round(creates.rate().wall)} users/s wall, ${Math.round(creates.rate().cpu)} per CPU-second; ${lookups.count} look-ups before them ${Math.round(lookups.rate().wall)}/s wall, ${Math.round(lookups.rate().cpu)} per CPU-second`;
  log(`  ${userLine}`);

  // 2. Groups: look-up, create, members in batches.
  const groupLookups = new Tally();
  const groupCreates = new Tally();
  const memberPatches = new Tally();
  const groupIds: string[] = [];
  for (let g = 0; g < GROUPS; g++) {
    const displayName = `Group ${pad(g)}`;
    await groupLookups.time(async () =>
      expectFound(
        await scim('GET', `/Groups?excludedAttributes=members&filter=${filter(`displayName eq "${displayName}"`)}`),
        0,
        'displayName eq',
      ),
    );
    const group = await groupCreates.time(async () =>
      expect(
        await scim('POST', '/Groups', {
          schemas: [GROUP],
          externalId: randomUUID(),
          displayName,
          meta: { resourceType: 'Group' },
        }),
        201,
        'create a group',
      ),
    );
    const groupId = group['id'] as string;
    groupIds.push(groupId);
    const members = ids.filter((_, i) => i % GROUPS === g);
    for (let from = 0; from < members.length; from += MEMBER_BATCH)
      await memberPatches.time(async () =>
        expect(
          await scim('PATCH', `/Groups/${groupId}`, {
            schemas: [PATCH_OP],
            Operations: [
              {
                op: 'Add',
                path: 'members',
                value: members.slice(from, from + MEMBER_BATCH).map((value) => ({ $ref: null, value })),
              },
            ],
          }),
          204,
          'add members',
        ),
      );
  }
  const groupLine = `created ${GROUPS} groups in ${(groupLookups.seconds() + groupCreates.seconds() + memberPatches.seconds()).toFixed(1)} s with their look-ups and ${memberPatches.count} member PATCHes: ${Math.round(groupCreates.rate().wall)} groups/s wall (create alone), look-ups ${Math.round(groupLookups.rate().wall)}/s wall, member PATCHes ${Math.round(memberPatches.rate().wall)}/s wall (${Math.round(memberPatches.rate().wall * Math.min(MEMBER_BATCH, USERS / GROUPS))} members/s)`;
  log(`  ${groupLine}`);

  // 3. The same queries with every user in the org.
  const full = await queries(scim, USERS);

  // 4. The gateway's member directory.
  log(`  directory (a gateway rule admitting all ${USERS} members):`);
  const poll = async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/gateway/config',
      headers: { authorization: basicAuth(gateway) },
    });
    if (res.statusCode !== 200) throw new Error(`gateway config: ${res.statusCode} ${res.body.slice(0, 200)}`);
  };
  await poll();
  // Each change toggles one member of one group: out, then in again.
  const toggler = (groupId: string, member: string) => {
    let inside = true;
    return async () => {
      const op = inside ? 'Remove' : 'Add';
      inside = !inside;
      expect(
        await scim('PATCH', `/Groups/${groupId}`, {
          schemas: [PATCH_OP],
          Operations:
            op === 'Add'
              ? [{ op, path: 'members', value: [{ value: member }] }]
              : [{ op, path: `members[value eq "${member}"]` }],
        }),
        204,
        'change one membership',
      );
    };
  };
  const changeAlone = toggler(groupIds[0]!, ids[0]!);
  const changeThenPoll = toggler(groupIds[1 % GROUPS]!, ids[1 % GROUPS]!);
  let polledChanges = 0;
  let unchangedPolls = 0;
  let unchangedBuilds = 0;
  const [unchanged, change, changePoll] = (await measureInterleaved([
    benchCase({
      name: 'config poll, nothing changed (baseline)',
      // Untimed: a poll after the other cases' changes, so that the timed ones find the directory current.
      prepare: async (n) => {
        await poll();
        return Array.from({ length: n }, () => null);
      },
      op: async () => {
        const before = await directoryBuilds(services);
        await poll();
        unchangedBuilds += (await directoryBuilds(services)) - before;
        unchangedPolls++;
      },
    }),
    benchCase({
      name: 'one membership change (Group PATCH)',
      prepare: async (n) => Array.from({ length: n }, () => null),
      op: changeAlone,
    }),
    benchCase({
      name: 'one membership change, then the poll that rebuilds the directory',
      prepare: async (n) => Array.from({ length: n }, () => null),
      op: async () => {
        await changeThenPoll();
        await poll();
        polledChanges++;
      },
    }),
  ])) as [Rate, Rate, Rate];
  if (unchangedBuilds !== 0)
    throw new Error(`${unchangedBuilds} of ${unchangedPolls} polls with nothing changed built the directory again`);
  const perChangeMs = (1 / changePoll.cpu - 1 / change.cpu - 1 / unchanged.cpu) * 1000;
  const perChangeWallMs = (1 / changePoll.wall - 1 / change.wall - 1 / unchanged.wall) * 1000;
  const directoryLine = `directory of ${USERS} members: rebuilt once per change (${polledChanges} changes polled; ${unchangedPolls} unchanged polls built nothing); cost per change ${perChangeMs.toFixed(2)} ms CPU (${perChangeWallMs.toFixed(2)} ms wall), ${(perChangeMs / (1000 / unchanged.cpu)).toFixed(1)} × an unchanged poll`;
  log(`  ${directoryLine}`);

  const lines = [`### ${name}`, '', `- ${userLine}`, `- ${groupLine}`, `- ${directoryLine}`, ''];
  lines.push(
    `| request | ${SMALL} users: per CPU-second | ÷ baseline | ${USERS} users: per CPU-second | ÷ baseline | wall /s at ${USERS} |`,
    '|---|---|---|---|---|---|',
  );
  const cases = queryCases(scim, USERS);
  for (const [i, c] of cases.entries()) {
    const s = small[i]!;
    const f = full[i]!;
    lines.push(
      `| ${c.name} | ${Math.round(s.cpu)} | ${(s.cpu / small[0]!.cpu).toFixed(2)} | ${Math.round(f.cpu)} | ${(f.cpu / full[0]!.cpu).toFixed(2)} | ${Math.round(f.wall)} |`,
    );
  }
  lines.push(
    '',
    `| directory | per CPU-second | ÷ unchanged poll | wall /s |`,
    '|---|---|---|---|',
    ...(
      [
        ['config poll, nothing changed (baseline)', unchanged],
        ['one membership change', change],
        ['one change, then the poll that rebuilds', changePoll],
      ] as Array<[string, Rate]>
    ).map(
      ([what, r]) =>
        `| ${what} | ${Math.round(r.cpu)} | ${(r.cpu / unchanged.cpu).toFixed(3)} | ${Math.round(r.wall)} |`,
    ),
    '',
  );
  return lines;
}

const { tap, runTeardowns } = benchTap();
describeRun(`bench:scim (${USERS} users, ${GROUPS} groups, queries at ${SMALL} and ${USERS} users)`);
try {
  const out = await backend(tap, 'SQLite');
  if (process.env['BENCH_SKIP_POSTGRES'] !== '1') {
    const databaseUrl = await postgresDatabase(tap, 'kp_bench_scim');
    if (databaseUrl) out.push(...(await backend(tap, 'PostgreSQL', databaseUrl)));
  }
  process.stdout.write(`\n${out.join('\n')}\n`);
} finally {
  await runTeardowns();
}
