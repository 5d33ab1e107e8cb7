import { adminApi } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

export interface ExportOptions {
  controlPlane?: string;
  since?: string;
  until?: string;
  type?: string;
  subject?: string;
}

/** Pages this large: few round trips for a SIEM, well inside the server's cap. */
const PAGE = 1000;

/**
 * `keyplane receipts export`: the audit export as NDJSON on stdout, one `{hash, receipt}` per
 * line in ledger order (the hash asks for its inclusion proof), progress on stderr. Exit 0 done,
 * 1 refused by the server, 2 usage or network error.
 */
export async function exportReceipts(options: ExportOptions): Promise<void> {
  for (const [name, value] of [
    ['--since', options.since],
    ['--until', options.until],
  ] as const)
    if (value !== undefined && !Number.isFinite(Date.parse(value)))
      throw new CliError(`${name} must be an RFC 3339 time`, EXIT.usage);
  const api = adminApi(options.controlPlane);
  const filters = new URLSearchParams({ limit: String(PAGE) });
  for (const name of ['since', 'until', 'type', 'subject'] as const) {
    const value = options[name];
    if (value !== undefined) filters.set(name, value);
  }
  let after: string | null = null;
  let written = 0;
  do {
    const query = new URLSearchParams(filters);
    if (after !== null) query.set('after', after);
    const page = await api.call('GET', `/admin/receipts?${query}`, 'exporting receipts');
    for (const item of page['receipts'] as unknown[]) say(JSON.stringify(item));
    written += (page['receipts'] as unknown[]).length;
    after = (page['next'] as string | null) ?? null;
    progress(`${written} receipt(s) exported${after === null ? '' : ', more to come'}`);
  } while (after !== null);
}
