/** The /account/agents pages (their confirmations come translated in data-msg-done): approve an enrollment by its owner code; approve and revoke grants; suspend, resume, revoke. */
export const AGENTS_JS = String.raw`
import { act, call } from '/assets/common.js';

const approve = document.getElementById('approve');
if (approve) {
  approve.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(approve);
    act(() => call('POST', '/auth/agents/proof/enroll/approve', { enrollment_id: String(data.get('enrollment_id')).trim(), owner_code: String(data.get('owner_code')).trim() }), approve.dataset.msgDone || 'Enrollment approved: the agent can now finish it.');
  });
}

const grant = document.getElementById('grant');
if (grant) {
  grant.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(grant);
    const resource = String(data.get('resource')).trim();
    const body = { agent_id: grant.dataset.agentId, client_id: String(data.get('client_id')).trim(), scope: String(data.get('scope')).trim() };
    if (resource) body.resource = resource;
    act(() => call('POST', '/auth/agents/proof/grants', body), grant.dataset.msgDone || 'Grant approved: the agent can now get tokens from this app.');
  });
}

for (const button of document.querySelectorAll('[data-revoke-grant]')) {
  button.addEventListener('click', () => act(() => call('POST', '/auth/agents/proof/grants/revoke', { grant_id: button.dataset.revokeGrant }), button.dataset.msgDone || 'Grant revoked.'));
}

for (const button of document.querySelectorAll('[data-agent-action]')) {
  button.addEventListener('click', () => act(() => call('POST', '/auth/agents/proof/lifecycle', { agent_id: button.dataset.agentId, action: button.dataset.agentAction }), button.dataset.msgDone || 'Done.'));
}
`;
