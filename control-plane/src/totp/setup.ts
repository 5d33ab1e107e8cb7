import { fail } from '#lib/errors/keyplane-error.js';
import { buildTotpUri, generateTotpSecret, renderTotpQrSvg } from '#lib/totp/totp.js';
import { checkTotpCode, totpSealContext, type TotpServices } from './secret.js';

/** The session changing TOTP, named on its events. */
export interface TotpActor {
  identityId: string;
  sessionId: string;
}

export interface TotpSetup {
  /** Base32, for apps that cannot scan. */
  secret: string;
  /** The otpauth:// Key URI. */
  uri: string;
  qrSvg: string;
}

/**
 * Stores a new secret (sealed) as pending and returns it as URI and QR code. A pending setup is
 * replaced; an active one is refused, so a second app never silently takes over the factor.
 */
export async function startTotpSetup(
  services: Pick<TotpServices, 'config' | 'storage' | 'secrets' | 'now'>,
  identityId: string,
): Promise<TotpSetup> {
  const identity = await services.storage.identities.get(identityId);
  if (!identity) throw fail('unauthorized', 'sign in first');
  const { base32 } = generateTotpSecret();
  const stored = await services.storage.totp.putPending({
    identityId,
    state: 'pending',
    sealedSecret: services.secrets.seal(totpSealContext(identityId), base32),
    lastUsedStep: null,
    createdAt: services.now(),
    activatedAt: null,
  });
  if (!stored) throw fail('totp_already_active', 'TOTP is on already; turn it off before setting up a new secret');
  const issuer = new URL(services.config.issuer).host;
  const uri = buildTotpUri(base32, { issuer: `Keyplane (${issuer})`, accountName: identity.username });
  return { secret: base32, uri, qrSvg: await renderTotpQrSvg(uri) };
}

/** Activates a pending setup with a current code; the code's step counts as used (RFC 6238 §5.2). */
export async function confirmTotp(
  services: TotpServices,
  actor: TotpActor,
  code: string,
): Promise<{ receipt?: string }> {
  const record = await services.storage.totp.get(actor.identityId);
  if (!record || record.state !== 'pending') {
    throw record
      ? fail('totp_already_active', 'TOTP is on already')
      : fail('totp_not_pending', 'start with /auth/totp/setup');
  }
  const step = await checkTotpCode(services, record, code);
  const at = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.totp.activate(actor.identityId, step, at)))
      throw fail('totp_not_pending', 'the setup changed meanwhile; start again');
    return services.events.record(tx, {
      type: 'totp.enabled',
      at,
      outcome: 'success',
      identityId: actor.identityId,
      sessionId: actor.sessionId,
    });
  });
}

/**
 * Removes TOTP, active or pending. Only turning an active factor off is an event; cancelling a
 * pending setup changed nothing that guarded the account. Freshness is the caller's check.
 */
export async function disableTotp(
  services: Pick<TotpServices, 'storage' | 'events' | 'now'>,
  actor: TotpActor,
): Promise<{ receipt?: string }> {
  const at = services.now();
  return services.storage.transaction(async (tx) => {
    const record = await tx.totp.get(actor.identityId);
    if (!record) throw fail('totp_not_active', 'TOTP is off already');
    await tx.totp.remove(actor.identityId);
    if (record.state !== 'active') return {};
    return services.events.record(tx, {
      type: 'totp.disabled',
      at,
      outcome: 'success',
      identityId: actor.identityId,
      sessionId: actor.sessionId,
    });
  });
}
