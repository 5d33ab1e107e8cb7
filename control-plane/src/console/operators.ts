import { fail } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices } from '../context.js';
import type { Actor } from '../events/types.js';
import type { OperatorRole, StoredOperatorRole } from '../storage/interface.js';
import { findAccount } from '../accounts/lifecycle.js';
import { refuseLastOperator } from './last-operator.js';

export type OperatorServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now' | 'mailer' | 'config'>;

export const OPERATOR_ROLES: readonly OperatorRole[] = ['operator', 'auditor'];

export interface OperatorListing extends StoredOperatorRole {
  username: string;
}

/** Every account holding a console role, with its username. */
export async function listOperators(services: Pick<OperatorServices, 'storage'>): Promise<OperatorListing[]> {
  const roles = await services.storage.operators.list();
  const names = new Map(
    (await services.storage.identities.summaries(roles.map((r) => r.identityId))).map((s) => [
      s.identityId,
      s.username,
    ]),
  );
  return roles.map((role) => ({ ...role, username: names.get(role.identityId) ?? role.identityId }));
}

function checkRole(role: unknown): OperatorRole {
  if (!OPERATOR_ROLES.includes(role as OperatorRole)) throw fail('invalid_request', 'role must be operator or auditor');
  return role as OperatorRole;
}

/**
 * Grants `role` to an account (a grant replaces its previous role); lowering the last operator to
 * auditor is refused (`last_operator`). Every other operator is told by mail, so that a grant
 * nobody expected is seen (docs/console.md#who).
 */
export async function grantOperatorRole(
  services: OperatorServices,
  ref: string,
  roleInput: unknown,
  actor: Actor,
): Promise<{ identityId: string; username: string; role: OperatorRole; receipt?: string }> {
  const role = checkRole(roleInput);
  const account = await findAccount(services, ref);
  const now = services.now();
  const { receipt } = await services.storage.transaction(async (tx) => {
    if (role !== 'operator') await refuseLastOperator(tx, account.identityId);
    await tx.operators.grant({
      identityId: account.identityId,
      role,
      grantedAt: now,
      grantedBy: actor.type === 'person' ? (actor.id ?? null) : null,
    });
    return services.events.record(tx, {
      type: 'operator.granted',
      at: now,
      outcome: 'success',
      actor,
      identityId: account.identityId,
      role,
    });
  });
  await mailOtherOperators(services, account.identityId, (to) => ({
    to,
    subject: `[Keyplane] ${account.username} is now ${role === 'operator' ? 'an operator' : 'an auditor'}`,
    text: `On ${services.config.issuer}, the account ${account.username} (${account.identityId}) was granted the console role "${role}" at ${new Date(now).toISOString()}${actor.type === 'person' ? ` by ${actor.id}` : ' with the admin token'}.\n\nIf you did not expect this, open ${services.config.issuer}/console/operators and revoke it.\n`,
  }));
  return { identityId: account.identityId, username: account.username, role, ...(receipt ? { receipt } : {}) };
}

/** Takes the account's console role away; the last operator's is refused (409 `last_operator`). */
export async function revokeOperatorRole(
  services: OperatorServices,
  ref: string,
  actor: Actor,
): Promise<{ identityId: string; username: string; receipt?: string }> {
  const account = await findAccount(services, ref);
  const now = services.now();
  const { receipt } = await services.storage.transaction(async (tx) => {
    const before = await tx.operators.roleOf(account.identityId);
    if (!before) throw fail('not_found', 'this account holds no console role');
    await refuseLastOperator(tx, account.identityId);
    await tx.operators.revoke(account.identityId);
    return services.events.record(tx, {
      type: 'operator.revoked',
      at: now,
      outcome: 'success',
      actor,
      identityId: account.identityId,
      role: before,
    });
  });
  return { identityId: account.identityId, username: account.username, ...(receipt ? { receipt } : {}) };
}

/** Mails every other operator's verified addresses; a failure is told to the operator log, never thrown. */
async function mailOtherOperators(
  services: OperatorServices,
  except: string,
  mail: (to: string) => { to: string; subject: string; text: string },
): Promise<void> {
  for (const operator of await services.storage.operators.list()) {
    if (operator.role !== 'operator' || operator.identityId === except) continue;
    for (const address of await services.storage.emails.listByIdentity(operator.identityId))
      if (address.verifiedAt !== null) services.mailer.enqueue(mail(address.email));
  }
}
