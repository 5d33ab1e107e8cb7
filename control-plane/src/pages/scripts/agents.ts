/** The /account/agents pages: approve an enrollment by its owner code; suspend, resume, revoke. */
export const AGENTS_JS = String.raw`
import { act, call } from '/assets/common.js';

const approve = document.getElementById('approve');
if (approve) {
  approve.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(approve);
    act(() => call('POST', '/auth/agents/proof/enroll/approve', { enrollment_id: String(data.get('enrollment_id')).trim(), owner_code: String(data.get('owner_code')).trim() }), 'Enrollment approved: the agent can now finish it.');
  });
}

for (const button of document.querySelectorAll('[data-agent-action]')) {
  button.addEventListener('click', () => act(() => call('POST', '/auth/agents/proof/lifecycle', { agent_id: button.dataset.agentId, action: button.dataset.agentAction }), 'Done.'));
}
`;
