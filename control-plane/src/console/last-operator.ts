import { fail } from '#lib/errors/keyplane-error.js';
import type { Stores } from '../storage/interface.js';

/**
 * Refuses a change that would leave the instance without an operator (409 `last_operator`):
 * revoking or lowering the only operator's role, or deleting its account on any path. Run inside
 * the change's transaction, so two such changes at once cannot both pass.
 */
export async function refuseLastOperator(tx: Pick<Stores, 'operators'>, identityId: string): Promise<void> {
  if ((await tx.operators.roleOf(identityId)) === 'operator' && (await tx.operators.countOperators()) <= 1)
    throw fail('last_operator', 'this is the only operator: grant operator to another account first');
}
