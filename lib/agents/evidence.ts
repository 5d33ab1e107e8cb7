/** Kinds of evidence an agent's record can hold; each entry stands alone and ages on its own. */
export type EvidenceType = 'domain-control' | 'descriptor-integrity';

export interface EvidenceEntry {
  type: EvidenceType;
  /** When it was established (ms). */
  at: number;
  /** When it stops counting (ms). */
  expiresAt: number;
  detail: Record<string, string>;
}

export type ClaimName = 'key_control' | 'channel_control' | 'descriptor_integrity' | 'owner_accountability';
export type ClaimStatus = 'declared' | 'verified' | 'expired';

export interface ClaimView {
  status: ClaimStatus;
  verified_at?: string;
  expires_at?: string;
}

/** How long each kind of evidence counts (docs/agents.md#evidence). */
export const EVIDENCE_LIFETIME_MS: Readonly<Record<EvidenceType, number>> = {
  'domain-control': 30 * 86_400_000,
  'descriptor-integrity': 7 * 86_400_000,
};

/** Whether an entry still counts at `now`. */
export function isEvidenceFresh(entry: Pick<EvidenceEntry, 'expiresAt'>, now: number): boolean {
  return now < entry.expiresAt;
}

function fromEvidence(entries: readonly EvidenceEntry[], type: EvidenceType, now: number): ClaimView {
  const ofType = entries.filter((entry) => entry.type === type);
  if (ofType.length === 0) return { status: 'declared' };
  // The newest entry decides; an older fresh one never masks that the latest check expired.
  const newest = ofType.reduce((a, b) => (b.at > a.at ? b : a));
  return {
    status: isEvidenceFresh(newest, now) ? 'verified' : 'expired',
    verified_at: new Date(newest.at).toISOString(),
    expires_at: new Date(newest.expiresAt).toISOString(),
  };
}

export interface ClaimInput {
  /** When the current key was last proven (enrollment, rotation, verify or run), ms. */
  keyProvenAt: number | null;
  /** When the owner approved (enrollment or transfer acceptance), ms. */
  ownerApprovedAt: number | null;
  evidence: readonly EvidenceEntry[];
  now: number;
}

/**
 * The four claims of a Proof Link, each independent: key and owner claims are verified by the
 * ceremonies that established them; channel and descriptor claims only by fresh evidence of
 * their own kind, and fall to `expired` when it ages out.
 */
export function computeClaims(input: ClaimInput): Record<ClaimName, ClaimView> {
  const at = (ms: number | null): ClaimView =>
    ms === null ? { status: 'declared' } : { status: 'verified', verified_at: new Date(ms).toISOString() };
  return {
    key_control: at(input.keyProvenAt),
    channel_control: fromEvidence(input.evidence, 'domain-control', input.now),
    descriptor_integrity: fromEvidence(input.evidence, 'descriptor-integrity', input.now),
    owner_accountability: at(input.ownerApprovedAt),
  };
}
