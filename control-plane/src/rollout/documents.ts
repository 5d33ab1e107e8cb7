import { decodeProtectedHeader } from 'jose';
import { fail } from '#lib/errors/keyplane-error.js';
import { canonicalJson } from '#lib/ledger/canonical-json.js';
import {
  DocumentError,
  kindOfDocument,
  parseDocumentText,
  validateDocument,
  type DocumentKind,
  type MigrationPlan,
  type TrustProfile,
} from '#lib/profiles/documents.js';
import { DOCUMENT_TYP, SignatureError, signDocument, verifySignedDocument } from '#lib/profiles/signed-documents.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredRolloutDocument } from '../storage/interface.js';
import { refuseMetadataOutside } from './constraints.js';

export type DocumentServices = Pick<ControlPlaneServices, 'storage' | 'keys' | 'config' | 'events' | 'now'>;

export interface ClassifyResult {
  document: StoredRolloutDocument;
  /** False when the newest version already says exactly this (nothing new was signed). */
  created: boolean;
  receipt?: string;
}

const COMPACT_JWS = /^\s*[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\s*$/;

function refuseDocument(error: unknown): never {
  if (error instanceof DocumentError)
    throw fail('invalid_profile', error.message, { fields: { problems: error.problems } });
  throw error;
}

/** Checks a presented signed document: ours (the ring, the issuer, its `typ`), never unsigned or re-signed. */
export async function verifyPresented(
  services: Pick<DocumentServices, 'keys' | 'config'>,
  kind: DocumentKind,
  jws: string,
) {
  try {
    return await verifySignedDocument(kind, jws, {
      issuer: services.config.issuer,
      publicKey: (kid) => services.keys.publicKey(kid),
    });
  } catch (error) {
    if (error instanceof SignatureError)
      throw fail(error.refusal === 'unsigned' ? 'profile_unsigned' : 'profile_signature_invalid', error.message);
    throw error;
  }
}

/** Reads what was presented: YAML/JSON text, an already parsed object, or a compact JWS this control plane signed. */
async function readPresented(
  services: DocumentServices,
  input: { text?: string; document?: unknown },
): Promise<{ kind: DocumentKind; value: unknown }> {
  const text = input.text;
  if (text !== undefined && COMPACT_JWS.test(text)) {
    let typ: unknown;
    try {
      typ = decodeProtectedHeader(text.trim()).typ;
    } catch {
      throw fail('profile_unsigned', 'the JWS header is not readable');
    }
    const kind: DocumentKind = typ === DOCUMENT_TYP.plan ? 'plan' : 'profile';
    const { payload } = await verifyPresented(services, kind, text);
    return { kind, value: payload[kind] };
  }
  let value: unknown;
  try {
    value = text !== undefined ? parseDocumentText(text) : input.document;
  } catch (error) {
    refuseDocument(error);
  }
  const kind = kindOfDocument(value);
  if (!kind)
    throw fail('invalid_profile', 'contract must be project-trust-profile/v1 or migration-plan/v1', {
      fields: { problems: ['contract must be project-trust-profile/v1 or migration-plan/v1'] },
    });
  return { kind, value };
}

/**
 * `classify`: validates a trust profile or migration plan and signs it as the project's next
 * version, unless the newest version already says the same (then that one is the answer, so
 * running it twice changes nothing). A new profile must still cover the registered client.
 */
export async function classifyDocument(
  services: DocumentServices,
  input: { text?: string; document?: unknown },
): Promise<ClassifyResult> {
  const { kind, value } = await readPresented(services, input);
  let document: TrustProfile | MigrationPlan;
  try {
    document = validateDocument(kind, value);
  } catch (error) {
    refuseDocument(error);
  }
  const project = document.project;
  const contentHash = sha256Hex(canonicalJson(document));
  const latest = await services.storage.rollout.latestDocument(kind, project);
  if (latest && latest.contentHash === contentHash) return { document: latest, created: false };

  if (kind === 'profile') await checkProfileCoversClient(services, document as TrustProfile);
  else await checkPlanProfile(services, document as MigrationPlan);

  const now = services.now();
  const version = (latest?.version ?? 0) + 1;
  const key = services.keys.current();
  const signed = await signDocument(kind, { issuer: services.config.issuer, project, version, document, now }, key);
  const stored: StoredRolloutDocument = {
    kind,
    project,
    version,
    document: document as unknown as Record<string, unknown>,
    jws: signed.jws,
    hash: signed.hash,
    contentHash,
    kid: key.kid,
    createdAt: now,
  };
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.rollout.ensureProject(project, now);
    if (!(await tx.rollout.insertDocument(stored)))
      throw fail('conflict', `version ${version} of ${project} was signed at the same moment; run classify again`);
    return services.events.record(tx, {
      type: 'rollout.document_signed',
      at: now,
      outcome: 'success',
      project,
      kind,
      version,
      documentHash: signed.hash,
    });
  });
  return { document: stored, created: true, ...(receipt ? { receipt } : {}) };
}

/** A new profile version may not leave the registered client outside it. */
async function checkProfileCoversClient(services: DocumentServices, profile: TrustProfile): Promise<void> {
  const project = await services.storage.rollout.getProject(profile.project);
  const client = project?.clientId ? await services.storage.clients.get(project.clientId) : null;
  if (client) refuseMetadataOutside(client.metadata, profile);
}

async function checkPlanProfile(services: DocumentServices, plan: MigrationPlan): Promise<void> {
  const profile = await services.storage.rollout.latestDocument('profile', plan.project);
  if (!profile || plan.profile_version > profile.version) {
    const problem = `profile_version ${plan.profile_version} of ${plan.project} does not exist${profile ? ` (the newest is ${profile.version})` : ': classify its trust profile first'}`;
    throw fail('invalid_profile', problem, { fields: { problems: [problem] } });
  }
}

/** The newest signed profile of a project, or 404. */
export async function latestProfile(
  services: Pick<DocumentServices, 'storage'>,
  project: string,
): Promise<StoredRolloutDocument> {
  const latest = await services.storage.rollout.latestDocument('profile', project);
  if (!latest) throw fail('not_found', `no trust profile for ${project}: run keyplane rollout classify first`);
  return latest;
}
