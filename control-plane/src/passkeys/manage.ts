import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server';
import { checkFreeText, PASSKEY_LABEL_MAX } from '#lib/accounts/username.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { defaultPasskeyLabel, type AuthenticatorName } from '#lib/webauthn/authenticator-names.js';
import { credentialRecord } from '../accounts/sign-up.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import type { StoredCredential } from '../storage/interface.js';
import { policyWantsAttestation } from '#lib/webauthn/judge-passkey-policy.js';
import { creationOptionsFor, readRegistration, takeChallenge, verifyRegistration } from './ceremony.js';
import { authenticatorOf, judgeNewPasskey, policyFor } from './policy.js';

/** A signed-in account managing its passkeys: storage, the ledger's events, challenges, the clock. */
export type PasskeyServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'events' | 'metadata' | 'now'
>;

export type PasskeySummary = Pick<
  StoredCredential,
  'credId' | 'label' | 'createdAt' | 'lastUsedAt' | 'backedUp' | 'backupEligible' | 'transports'
> & { aaguid: string | null; authenticator: AuthenticatorName | null };

/** The account's passkeys, never their public keys. */
export async function listPasskeys(
  services: Pick<PasskeyServices, 'storage' | 'metadata'>,
  identityId: string,
): Promise<PasskeySummary[]> {
  const passkeys = await services.storage.credentials.listByIdentity(identityId);
  return passkeys.map(({ credId, label, createdAt, lastUsedAt, backedUp, backupEligible, transports, aaguid }) => ({
    credId,
    label,
    createdAt,
    lastUsedAt,
    backedUp,
    backupEligible,
    transports,
    aaguid: aaguid ?? null,
    authenticator: authenticatorOf(services, aaguid),
  }));
}

export async function renamePasskey(
  services: Pick<PasskeyServices, 'storage'>,
  identityId: string,
  credId: string,
  label: unknown,
): Promise<void> {
  const clean = checkFreeText(label, PASSKEY_LABEL_MAX, 'label_invalid', 'the label');
  if (!(await services.storage.credentials.rename(identityId, credId, clean)))
    throw fail('unknown_passkey', 'no such passkey on this account');
}

/** Removes a passkey of the account, never its last one. */
export async function removePasskey(
  services: PasskeyServices,
  identityId: string,
  credId: string,
): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const owned = (await tx.credentials.listByIdentity(identityId)).some((c) => c.credId === credId);
    if (!owned) throw fail('unknown_passkey', 'no such passkey on this account');
    if ((await tx.credentials.countByIdentity(identityId)) <= 1)
      throw fail('last_passkey', "this is the account's last passkey; add another before removing it");
    await tx.credentials.remove(identityId, credId);
    return services.events.record(tx, { type: 'passkey.removed', at: now, outcome: 'success', identityId, credId });
  });
}

/** The person declined the passkey offered after a sign-in without one: not offered again for a month. */
export async function declinePasskeyUpgrade(
  services: Pick<PasskeyServices, 'storage' | 'now'>,
  identityId: string,
): Promise<void> {
  await services.storage.identities.declinePasskeyUpgrade(identityId, services.now());
}

/** Creation options for one more passkey; the challenge is bound to this session. */
export async function beginAddPasskey(
  services: PasskeyServices,
  session: Pick<SessionView, 'id' | 'identityId'>,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const identity = await services.storage.identities.get(session.identityId);
  if (!identity) throw fail('unauthorized', 'sign in first');
  const existing = await services.storage.credentials.listByIdentity(identity.identityId);
  const policy = await policyFor(services, identity);
  return creationOptionsFor(
    services,
    identity,
    existing,
    { purpose: 'add', identityId: identity.identityId, sessionId: session.id },
    policyWantsAttestation(policy) ? 'direct' : 'none',
  );
}

/** Verifies the new passkey (started by this very session) and stores it, labelled after its authenticator unless named. */
export async function finishAddPasskey(
  services: PasskeyServices,
  session: Pick<SessionView, 'id' | 'identityId'>,
  input: { response: unknown; label?: unknown },
): Promise<{ credId: string; label: string; receipt?: string }> {
  const { clientData, fields } = await readRegistration(input.response);
  const state = await takeChallenge(services, clientData, 'add');
  if (state.identityId !== session.identityId || state.sessionId !== session.id)
    throw fail('challenge_mismatch', 'this passkey was started by another session');
  const verified = await verifyRegistration(services, input.response, clientData, fields, clientData.challenge);
  const { attested } = await judgeNewPasskey(
    services,
    await services.storage.identities.get(session.identityId),
    verified,
  );
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const count = await tx.credentials.countByIdentity(session.identityId);
    const label =
      input.label === undefined
        ? defaultPasskeyLabel(verified.aaguid, count + 1)
        : checkFreeText(input.label, PASSKEY_LABEL_MAX, 'label_invalid', 'the label');
    if (!(await tx.credentials.insert(credentialRecord(session.identityId, { ...verified, attested }, label, now))))
      throw fail('credential_exists', 'this passkey is registered already');
    const { receipt } = await services.events.record(tx, {
      type: 'passkey.added',
      at: now,
      outcome: 'success',
      identityId: session.identityId,
      credId: verified.credId,
    });
    return { credId: verified.credId, label, ...(receipt ? { receipt } : {}) };
  });
}
