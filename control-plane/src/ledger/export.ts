import { fail } from '#lib/errors/keyplane-error.js';
import type { Receipt } from '#lib/ledger/receipt.js';
import { SUBJECT_PATTERN } from '#lib/ledger/receipt-subjects.js';
import type { Storage } from '../storage/interface.js';

/**
 * The audit export (docs/events.md#audit-export): operators and auditors page through the
 * receipts in ledger order. Each item carries its hash, so that an auditor can ask for its
 * inclusion proof (`GET /receipts/{hash}`, `keyplane receipt verify`). The cursor is the
 * position of the last receipt given, opaque to callers.
 */

export const EXPORT_LIMIT = { default: 100, max: 1000 };
const SUBJECT = SUBJECT_PATTERN;
const KIND = /^[a-z0-9_]+(\.[a-z0-9_]+)*$/;

export interface ExportQuery {
  after?: string;
  type?: string;
  subject?: string;
  since?: string;
  until?: string;
  limit?: number;
}

export interface ExportedReceipt {
  hash: string;
  receipt: Receipt;
}

function time(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) throw fail('invalid_request', `${name} must be an RFC 3339 time`);
  return ms;
}

/** One page of receipts, and the cursor of the next (null at the end). */
export async function exportReceipts(
  { storage }: { storage: Pick<Storage, 'receipts'> },
  query: ExportQuery,
): Promise<{ receipts: ExportedReceipt[]; next: string | null }> {
  if (query.after !== undefined && !/^[0-9]{1,15}$/.test(query.after))
    throw fail('invalid_request', 'after must be the next cursor of an earlier page');
  if (query.type !== undefined && !KIND.test(query.type)) throw fail('invalid_request', 'type must be a receipt type');
  if (query.subject !== undefined && !SUBJECT.test(query.subject))
    throw fail('invalid_request', 'subject must be an opaque id (letters, digits, _ . : @ -)');
  const limit = query.limit ?? EXPORT_LIMIT.default;
  const rows = await storage.receipts.list({
    after: query.after === undefined ? 0 : Number(query.after),
    limit,
    ...(query.type !== undefined ? { kind: query.type } : {}),
    ...(query.subject !== undefined ? { subject: query.subject } : {}),
    ...optional('since', time(query.since, 'since')),
    ...optional('until', time(query.until, 'until')),
  });
  return {
    receipts: rows.map((row) => ({ hash: row.hash, receipt: JSON.parse(row.body) as Receipt })),
    next: rows.length === limit ? String(rows.at(-1)!.position) : null,
  };
}

const optional = <K extends string>(name: K, value: number | undefined) =>
  (value === undefined ? {} : { [name]: value }) as Partial<Record<K, number>>;
