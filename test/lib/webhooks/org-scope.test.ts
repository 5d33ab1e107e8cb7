import t from 'tap';
import type { Receipt } from '#lib/ledger/receipt.js';
import { idsNamed, receiptConcernsOrg, type OwnedKind } from '#lib/webhooks/org-scope.js';

// Which receipts an org's webhooks see (docs/events.md#org-webhooks): one case per kind of thing
// a receipt can name, and the personal member's life elsewhere, which names none of them.

const ORG = 'org_acme';
const OTHER = 'org_other';
/** What each org owns in these cases. */
const owned: Record<string, string> = {
  'client:cl_acme': ORG,
  'client:sp_acme': ORG,
  'client:cl_other': OTHER,
  'connection:con_acme': ORG,
  'connection:con_other': OTHER,
  'scim_token:scim_acme': ORG,
  'api:api_acme': ORG,
  'team:team_acme': ORG,
  'team:team_other': OTHER,
  'site:site_acme': ORG,
  'managed_account:usr_managed': ORG,
  'managed_account:usr_theirs': OTHER,
};
const ownerOf = (kind: OwnedKind, id: string) => owned[`${kind}:${id}`];
const receipt = (kind: string, fields: Record<string, unknown>): Receipt => ({
  kind,
  at: '2026-12-07T12:00:00.000Z',
  outcome: 'success',
  ...fields,
});
const seen = (r: Receipt) => receiptConcernsOrg(r, ORG, ownerOf);
const person = (id: string) => ({ type: 'person', id });
const member = 'usr_member';

t.test('the org itself: receipts naming its orgId, or it as the owner of what it registered', async (t) => {
  t.ok(seen(receipt('org.site_added', { orgId: ORG, siteId: 'site_new', actor: person(member) })));
  t.ok(seen(receipt('webhook.created', { orgId: ORG, webhookId: 'whk_1' })));
  t.ok(seen(receipt('client.registered', { clientId: 'cl_new', ownerId: ORG, actor: person(member) })));
  t.notOk(seen(receipt('org.site_added', { orgId: OTHER, siteId: 'site_x' })), "another org's");
  t.notOk(seen(receipt('webhook.created', { orgId: null, webhookId: 'whk_2' })), "the operator's");
});

t.test("its clients: everyone's activity at them, a personal member's included", async (t) => {
  t.ok(seen(receipt('token.issued', { clientId: 'cl_acme', identityId: member, grantId: 'g' })));
  t.ok(seen(receipt('signin.in_place', { client_id: 'cl_acme', identityId: 'usr_stranger' })), 'client_id');
  t.ok(seen(receipt('consent.approved', { party: 'cl_acme', partyKind: 'client', identityId: member })));
  t.ok(seen(receipt('consent.approved', { party: 'sp_acme', partyKind: 'saml', identityId: member })), 'a SAML SP');
  t.ok(seen(receipt('saml.assertion_issued', { providerId: 'sp_acme', identityId: member })), 'providerId');
  t.notOk(seen(receipt('token.issued', { clientId: 'cl_other', identityId: member })), "another org's client");
  t.notOk(seen(receipt('token.issued', { clientId: 'cl_personal', identityId: member })), 'a personal client');
  t.notOk(
    seen(receipt('token.exchanged', { clientId: 'cl_personal', subjectClientId: 'cl_acme', identityId: member })),
    "a token of the org's client exchanged at another client is the other client's activity",
  );
});

t.test('its teams, connections, SCIM tokens, APIs and sites, by id', async (t) => {
  t.ok(seen(receipt('team.member_added', { teamId: 'team_acme', identityId: member })));
  t.notOk(seen(receipt('team.member_added', { teamId: 'team_other', identityId: member })), "another org's team");
  t.ok(seen(receipt('federation.sign_in', { connectionId: 'con_acme', identityId: 'usr_x' })), 'a connection');
  t.ok(
    seen(
      receipt('federation.account_created', { identityId: 'usr_new', actor: { type: 'connection', id: 'con_acme' } }),
    ),
    'a connection acting',
  );
  t.notOk(seen(receipt('federation.sign_in', { connectionId: 'con_other', identityId: 'usr_x' })));
  t.notOk(
    seen(receipt('federation.sign_in', { connectionId: 'con_instance', identityId: member })),
    "a personal member's sign-in through an instance-wide connection",
  );
  t.ok(seen(receipt('scim.user_created', { tokenId: 'scim_acme', identityId: 'usr_new' })), 'a SCIM token');
  t.ok(
    seen(receipt('scim.group_patched', { teamId: 'team_new', actor: { type: 'scim_token', id: 'scim_acme' } })),
    'a SCIM token acting',
  );
  t.ok(seen(receipt('token.issued', { clientId: 'cl_personal', apiId: 'api_acme' })), 'an API');
  t.ok(seen(receipt('scan.completed', { scanId: 'scan_1', siteId: 'site_acme', trigger: 'schedule' })), 'a site');
  t.notOk(seen(receipt('scan.completed', { scanId: 'scan_2', siteId: null, trigger: 'public' })), 'a public scan');
});

t.test('its managed accounts: all their life, and their agents', async (t) => {
  t.ok(seen(receipt('passkey.added', { identityId: 'usr_managed', credId: 'c' })));
  t.ok(seen(receipt('session.started', { identityId: 'usr_managed', sessionId: 's' })));
  t.ok(seen(receipt('token.issued', { clientId: 'cl_personal', identityId: 'usr_managed' })), 'at any client');
  t.ok(seen(receipt('agent.enrolled', { agentId: 'agt_1', ownerId: 'usr_managed' })), 'its agent');
  t.ok(
    seen(receipt('org.member_invited', { orgId: OTHER, identityId: 'usr_managed', by: member })),
    'invited to another org',
  );
  t.notOk(seen(receipt('passkey.added', { identityId: 'usr_theirs', credId: 'c' })), "another org's managed account");
});

t.test("a personal member's life elsewhere is never seen", async (t) => {
  for (const r of [
    receipt('passkey.added', { identityId: member, credId: 'c', actor: person(member) }),
    receipt('session.started', { identityId: member, sessionId: 's' }),
    receipt('account.disabled', { identityId: member, by: 'admin', actor: { type: 'admin_token' } }),
    receipt('org.member_joined', { orgId: OTHER, identityId: member, actor: person(member) }),
    receipt('client.registered', { clientId: 'cl_personal', ownerId: member, actor: person(member) }),
    receipt('agent.enrolled', { agentId: 'agt_2', ownerId: member }),
    // The member acting in another org, on someone the org does not manage.
    receipt('team.member_added', { orgId: OTHER, teamId: 'team_other', identityId: 'usr_y', actor: person(member) }),
  ])
    t.notOk(seen(r), r.kind);
  t.ok(
    seen(receipt('org.member_joined', { orgId: ORG, identityId: member, actor: person(member) })),
    'but their membership changes in this org',
  );
});

t.test('what a receipt names, each id once, and nothing from the acting person', async (t) => {
  t.same(
    idsNamed(
      receipt('consent.approved', {
        party: 'cl_acme',
        clientId: 'cl_acme',
        identityId: member,
        actor: person('usr_actor'),
      }),
    ),
    [
      { kind: 'client', id: 'cl_acme' },
      { kind: 'managed_account', id: member },
    ],
  );
  t.same(idsNamed(receipt('keys.rotated', { kid: 'k', retired: null, actor: { type: 'system' } })), []);
});
