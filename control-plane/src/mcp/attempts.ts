import { receiptSafeName } from '#lib/mcp/catalogue.js';
import type { ControlPlaneServices } from '../context.js';

export type RefusalReason = 'mcp_read_only' | 'mcp_unknown_tool';

/**
 * Receipts a refused MCP call (docs/mcp.md: every mutation attempt through MCP leaves an
 * attempt-and-outcome receipt). The method and tool name are kept only when short and plain,
 * so a caller cannot write arbitrary text into the ledger. Returns the receipt hash.
 */
export async function recordMcpAttempt(
  services: Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>,
  attempt: { method: string; tool: string | null; reason: RefusalReason },
): Promise<string | undefined> {
  const { receipt } = await services.storage.transaction((tx) =>
    services.events.record(tx, {
      type: 'mcp.attempt',
      at: services.now(),
      outcome: 'failure',
      method: receiptSafeName(attempt.method),
      tool: attempt.tool === null ? null : receiptSafeName(attempt.tool),
      reason: attempt.reason,
    }),
  );
  return receipt;
}
