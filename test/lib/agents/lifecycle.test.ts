import t from 'tap';
import { reasonOf } from '../../helpers/reason-of.js';
import {
  AGENT_STATES,
  enrollmentState,
  nextAgentState,
  transitionAgent,
  type AgentAction,
} from '#lib/agents/lifecycle.js';
import { KeyplaneError } from '#lib/errors/keyplane-error.js';

t.test('the spec state table holds', async (t) => {
  t.equal(transitionAgent('active', 'suspend'), 'suspended');
  t.equal(transitionAgent('suspended', 'resume'), 'active');
  t.equal(transitionAgent('active', 'mark_compromised'), 'compromised');
  t.equal(transitionAgent('active', 'revoke'), 'revoked');
  t.equal(transitionAgent('active', 'transfer_begin'), 'suspended');
  t.equal(transitionAgent('suspended', 'transfer_accept'), 'suspended');
  t.equal(
    transitionAgent('compromised', 'rotate_key'),
    'suspended',
    'compromise recovery rotates first and stays suspended',
  );
  t.equal(transitionAgent('active', 'rotate_key'), 'active');
});

t.test('revoked is terminal: every action is refused from it', async (t) => {
  for (const action of [
    'suspend',
    'resume',
    'mark_compromised',
    'revoke',
    'transfer_begin',
    'transfer_accept',
    'rotate_key',
  ] as AgentAction[]) {
    t.equal(nextAgentState('revoked', action), null, action);
  }
});

t.test('an illegal transition is refused with the current state in the message', async (t) => {
  const error = t.throws(() => transitionAgent('compromised', 'resume')) as unknown as KeyplaneError;
  t.equal(error.reason, 'agent_state');
  t.match(error.message, /compromised/);
  t.same(error.fields, { state: 'compromised' });
  t.equal(
    reasonOf(() => transitionAgent('suspended', 'suspend')),
    'agent_state',
  );
  t.equal(
    reasonOf(() => transitionAgent('active', 'resume')),
    'agent_state',
  );
  t.equal(
    reasonOf(() => transitionAgent('compromised', 'transfer_begin')),
    'agent_state',
  );
  t.equal(AGENT_STATES.length, 4);
});

t.test('an enrollment reads expired once past its expiry unless completed', async (t) => {
  t.equal(enrollmentState({ state: 'pending_approval', expiresAt: 100 }, 99), 'pending_approval');
  t.equal(enrollmentState({ state: 'pending_approval', expiresAt: 100 }, 100), 'expired');
  t.equal(enrollmentState({ state: 'approved', expiresAt: 100 }, 101), 'expired');
  t.equal(enrollmentState({ state: 'completed', expiresAt: 100 }, 101), 'completed');
});
