import t from 'tap';
import {
  accountFromDirectory,
  checkAccessDirectory,
  principalFromDirectory,
  type AccessDirectory,
} from '#lib/access/directory.js';
import {
  checkAllowRules,
  describeAccessDecision,
  describeAllowRules,
  describeRouteAccess,
  evaluateAccess,
  orgsNamedBy,
  type AccessAccount,
  type AccessPrincipal,
  type AllowRules,
} from '#lib/access/evaluate-access.js';

function human(overrides: Partial<AccessAccount> = {}): AccessPrincipal {
  return { type: 'human', id: 'usr_alice', username: 'alice', memberships: [], emails: [], ...overrides };
}

t.test('without rules any signed-in account passes, a disabled one never', async (t) => {
  t.same(evaluateAccess(undefined, human()), { allowed: true, match: { rule: 'any_signed_in' } });
  t.same(evaluateAccess(undefined, human({ disabled: true })), { allowed: false, refusal: 'account_disabled' });
  t.same(evaluateAccess({ users: ['alice'] }, human({ disabled: true })), {
    allowed: false,
    refusal: 'account_disabled',
  });
});

t.test('users: ids exactly, usernames case-insensitively', async (t) => {
  t.same(evaluateAccess({ users: ['usr_alice'] }, human()), {
    allowed: true,
    match: { rule: 'users', entry: 'usr_alice' },
  });
  t.same(evaluateAccess({ users: ['ALICE'] }, human()), { allowed: true, match: { rule: 'users', entry: 'ALICE' } });
  t.same(evaluateAccess({ users: [' Alice '] }, human({ username: 'alice' })).allowed, true, 'surrounding space folds');
  t.same(evaluateAccess({ users: ['USR_ALICE'] }, human({ username: 'bob' })), {
    allowed: false,
    refusal: 'no_rule_matched',
  });
  t.same(evaluateAccess({ users: ['bob'] }, human()), { allowed: false, refusal: 'no_rule_matched' });
  t.same(
    evaluateAccess({ users: ['alice'] }, human({ username: undefined })).allowed,
    false,
    'an unknown name matches nothing',
  );
});

t.test('orgs: members, optionally only listed roles (owner is not implied by admin)', async (t) => {
  const member = human({ memberships: [{ slug: 'acme', role: 'member' }] });
  const owner = human({ memberships: [{ slug: 'acme', role: 'owner' }] });
  t.same(evaluateAccess({ orgs: [{ slug: 'acme' }] }, member), {
    allowed: true,
    match: { rule: 'orgs', slug: 'acme', role: 'member' },
  });
  t.same(evaluateAccess({ orgs: [{ slug: 'ACME' }] }, member).allowed, true, 'slugs fold');
  t.same(evaluateAccess({ orgs: [{ slug: 'acme', roles: ['admin'] }] }, member), {
    allowed: false,
    refusal: 'no_rule_matched',
  });
  t.same(evaluateAccess({ orgs: [{ slug: 'acme', roles: ['admin'] }] }, owner).allowed, false);
  t.same(evaluateAccess({ orgs: [{ slug: 'acme', roles: ['admin', 'owner'] }] }, owner), {
    allowed: true,
    match: { rule: 'orgs', slug: 'acme', role: 'owner' },
  });
  t.same(
    evaluateAccess({ orgs: [{ slug: 'acme', roles: [] }] }, member).allowed,
    true,
    'an empty role list is any role',
  );
  t.same(evaluateAccess({ orgs: [{ slug: 'other' }] }, member).allowed, false);
  // Removed from the org: the directory no longer lists the membership.
  t.same(evaluateAccess({ orgs: [{ slug: 'acme' }] }, human()), { allowed: false, refusal: 'no_rule_matched' });
});

t.test('email_domains: only verified addresses, domains case-insensitive and exact', async (t) => {
  const rules: AllowRules = { email_domains: ['Example.COM'] };
  const verified = human({ emails: [{ address: 'Alice@EXAMPLE.com', verified: true }] });
  t.same(evaluateAccess(rules, verified), {
    allowed: true,
    match: { rule: 'email_domains', domain: 'Example.COM' },
  });
  t.same(evaluateAccess(rules, human({ emails: [{ address: 'alice@example.com', verified: false }] })), {
    allowed: false,
    refusal: 'no_rule_matched',
  });
  t.same(
    evaluateAccess(rules, human({ emails: [{ address: 'alice@example.com', verified: 'true' as unknown as boolean }] }))
      .allowed,
    false,
    'verified must be exactly true',
  );
  t.same(
    evaluateAccess(rules, human({ emails: [{ address: 'alice@mail.example.com', verified: true }] })).allowed,
    false,
  );
  t.same(
    evaluateAccess(rules, human({ emails: [{ address: 'alice@example.com.evil', verified: true }] })).allowed,
    false,
  );
  t.same(evaluateAccess(rules, human({ emails: [{ address: 'example.com', verified: true }] })).allowed, false);
  t.same(evaluateAccess({ email_domains: ['example.com.'] }, verified).allowed, true, 'a trailing dot folds');
});

t.test('agents pass only by their own id or agent_owners_in, never by human rules', async (t) => {
  const owner: AccessAccount = { id: 'usr_alice', username: 'alice', memberships: [{ slug: 'acme', role: 'admin' }] };
  const agent: AccessPrincipal = { type: 'agent', id: 'agt_1', owner };
  t.same(evaluateAccess({ agent_owners_in: ['acme'] }, agent), {
    allowed: true,
    match: { rule: 'agent_owners_in', slug: 'acme', role: 'admin' },
  });
  t.same(evaluateAccess({ orgs: [{ slug: 'acme' }], users: ['alice'] }, agent), {
    allowed: false,
    refusal: 'no_rule_matched',
  });
  t.same(evaluateAccess({ users: ['agt_1'] }, agent), { allowed: true, match: { rule: 'users', entry: 'agt_1' } });
  t.same(evaluateAccess({ agent_owners_in: ['acme'] }, { ...agent, owner: { ...owner, disabled: true } }), {
    allowed: false,
    refusal: 'owner_disabled',
  });
  t.same(evaluateAccess({ agent_owners_in: ['acme'] }, { ...agent, owner: null }).allowed, false);
  t.same(evaluateAccess({ agent_owners_in: ['acme'] }, human({ memberships: owner.memberships })).allowed, false);
});

t.test('combinations: any matching entry admits, the first kind that matches is named', async (t) => {
  const rules: AllowRules = {
    users: ['carol'],
    orgs: [{ slug: 'acme', roles: ['owner'] }],
    email_domains: ['example.com'],
  };
  const both = human({
    memberships: [{ slug: 'acme', role: 'owner' }],
    emails: [{ address: 'a@example.com', verified: true }],
  });
  t.same(evaluateAccess(rules, both), { allowed: true, match: { rule: 'orgs', slug: 'acme', role: 'owner' } });
  t.same(evaluateAccess(rules, human({ emails: [{ address: 'a@example.com', verified: true }] })).allowed, true);
  t.same(evaluateAccess(rules, human({ username: 'Carol' })).allowed, true);
  t.same(evaluateAccess(rules, human({ memberships: [{ slug: 'acme', role: 'member' }] })).allowed, false);
  t.same(evaluateAccess({}, human()), { allowed: false, refusal: 'no_rule_matched' }, 'empty rules admit nobody');
  t.same(orgsNamedBy({ orgs: [{ slug: 'Acme' }], agent_owners_in: ['acme', 'bots'] }), ['acme', 'bots']);
});

t.test('rule validation lists every problem', async (t) => {
  t.same(checkAllowRules({ users: ['a'], orgs: [{ slug: 'x', roles: ['admin'] }] }, 'allow'), []);
  t.same(checkAllowRules([], 'allow'), ['allow must be an object']);
  t.same(
    checkAllowRules(
      {
        users: [''],
        orgs: [{ slug: 1, roles: ['boss'], extra: 1 }],
        email_domains: ['a@b.c'],
        teamz: [],
        agent_owners_in: 'x',
      },
      'r',
    ),
    [
      'r.teamz is not a known key',
      'r.users must be a list of identity ids or usernames',
      'r.email_domains must list domains, not addresses',
      'r.agent_owners_in must be a list of org slugs',
      'r.orgs[0].extra is not a known key',
      'r.orgs[0].slug must be an org slug',
      'r.orgs[0].roles must list owner, admin and/or member',
    ],
  );
});

t.test('rules and decisions in words', async (t) => {
  t.same(describeAllowRules(undefined), ['any signed-in account']);
  t.same(
    describeAllowRules({
      users: ['alice', 'bob'],
      orgs: [{ slug: 'acme', roles: ['admin', 'owner'] }, { slug: 'ops' }],
      email_domains: ['example.com'],
      agent_owners_in: ['acme'],
    }),
    [
      'the accounts alice or bob',
      'admins or owners of the org acme',
      'members of the org ops',
      'accounts with a verified e-mail address at example.com',
      'agents owned by members of acme',
    ],
  );
  t.same(describeRouteAccess({ public: true }), ['anyone (public)'], 'a public route admits anyone');
  t.same(describeRouteAccess({}), ['any signed-in account'], 'a route without allow: any signed-in account');
  t.same(describeRouteAccess({ allow: { orgs: [{ slug: 'acme', roles: ['admin', 'owner'] }], users: ['alice'] } }), [
    'the accounts alice',
    'admins or owners of the org acme',
  ]);
  t.same(describeAllowRules({}), ['nobody (the rules are empty)']);
  t.equal(
    describeAccessDecision({ allowed: true, match: { rule: 'orgs', slug: 'acme', role: 'admin' } }),
    'allowed by orgs: admin of acme',
  );
  t.equal(describeAccessDecision({ allowed: false, refusal: 'no_rule_matched' }), 'denied: no allow rule matches');
});

t.test('the directory: members, usernames and disabled accounts as the gateway knows them', async (t) => {
  const directory: AccessDirectory = {
    identities: {
      usr_alice: { username: 'alice', orgs: [{ slug: 'acme', role: 'member' }] },
      usr_dave: { username: 'dave', disabled: true },
    },
  };
  t.same(accountFromDirectory(directory, 'usr_alice'), {
    id: 'usr_alice',
    username: 'alice',
    memberships: [{ slug: 'acme', role: 'member' }],
    emails: [],
  });
  t.same(accountFromDirectory(directory, 'usr_stranger').memberships, []);
  const dave = principalFromDirectory(directory, { principalType: 'human', subject: 'usr_dave' });
  t.same(evaluateAccess({ users: ['dave'] }, dave), { allowed: false, refusal: 'account_disabled' });
  const agent = principalFromDirectory(directory, { principalType: 'agent', subject: 'agt_1', ownerId: 'usr_alice' });
  t.equal(evaluateAccess({ agent_owners_in: ['acme'] }, agent).allowed, true);
  const mailed = principalFromDirectory(undefined, {
    principalType: 'human',
    subject: 'usr_x',
    email: 'x@example.com',
    emailVerified: true,
  });
  t.equal(evaluateAccess({ email_domains: ['example.com'] }, mailed).allowed, true);
  t.same(checkAccessDirectory(directory), []);
  t.same(checkAccessDirectory({ identities: { a: { orgs: [{ slug: 'x', role: 'boss' }], disabled: false } } }), [
    'access_directory.identities.a.disabled must be true when present',
    'access_directory.identities.a.orgs must be a list of {slug, role, teams?}',
  ]);
});

t.test('teams: groups admit members of "<org>/<team>", org rules with teams only those teams', async (t) => {
  const inEng = human({ memberships: [{ slug: 'acme', role: 'member', teams: ['eng'] }] });
  const noTeam = human({ memberships: [{ slug: 'acme', role: 'member' }] });
  t.same(evaluateAccess({ groups: ['ACME/eng'] }, inEng), {
    allowed: true,
    match: { rule: 'groups', group: 'ACME/eng' },
  });
  t.same(evaluateAccess({ groups: ['acme/eng', 'acme/ops'] }, noTeam), {
    allowed: false,
    refusal: 'no_rule_matched',
    missingGroups: ['acme/eng', 'acme/ops'],
  });
  t.same(evaluateAccess({ orgs: [{ slug: 'acme', teams: ['eng'] }] }, inEng), {
    allowed: true,
    match: { rule: 'orgs', slug: 'acme', role: 'member', team: 'eng' },
  });
  t.same(evaluateAccess({ orgs: [{ slug: 'acme', teams: ['eng'] }] }, noTeam), {
    allowed: false,
    refusal: 'no_rule_matched',
    missingGroups: ['acme/eng'],
  });
  t.same(evaluateAccess({ orgs: [{ slug: 'acme', roles: ['admin'], teams: ['eng'] }] }, inEng).allowed, false);
  const agent: AccessPrincipal = { type: 'agent', id: 'agt_x', owner: { id: 'usr_alice', memberships: [] } };
  t.same(evaluateAccess({ groups: ['acme/eng'] }, agent), { allowed: false, refusal: 'no_rule_matched' });
  t.same(orgsNamedBy({ groups: ['Acme/eng', 'bolt/ops'] }), ['acme', 'bolt']);
  t.same(checkAllowRules({ groups: ['acme'], orgs: [{ slug: 'acme', teams: 'eng' }] }, 'allow'), [
    'allow.groups must be a list of "<org slug>/<team slug>"',
    'allow.orgs[0].teams must list team slugs',
  ]);
  t.same(checkAllowRules({ groups: ['acme/eng'], orgs: [{ slug: 'acme', teams: ['eng'] }] }, 'allow'), []);
  t.same(describeAllowRules({ orgs: [{ slug: 'acme', teams: ['eng'] }], groups: ['bolt/ops'] }), [
    'members of the org acme in the team eng',
    'members of the team bolt/ops',
  ]);
  t.equal(
    describeAccessDecision(evaluateAccess({ groups: ['acme/eng'] }, inEng)),
    'allowed by groups: a member of the team acme/eng',
  );
  t.equal(
    describeAccessDecision(evaluateAccess({ groups: ['acme/eng'] }, noTeam)),
    'denied: no allow rule matches (not a member of the team acme/eng)',
  );
  t.same(
    checkAccessDirectory({ identities: { usr_a: { orgs: [{ slug: 'acme', role: 'member', teams: ['eng'] }] } } }),
    [],
  );
  t.same(checkAccessDirectory({ identities: { usr_a: { orgs: [{ slug: 'acme', role: 'member', teams: 'eng' }] } } }), [
    'access_directory.identities.usr_a.orgs must be a list of {slug, role, teams?}',
  ]);
});
