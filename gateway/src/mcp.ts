import type { IncomingMessage, ServerResponse } from 'node:http';
import { fail, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import {
  MCP_BODY_LIMIT,
  buildProtectedResourceMetadata,
  findMetadataRoute,
  protectedResourceMetadataUrl,
  readToolCalls,
} from '#lib/gateway-protocol/mcp.js';
import { checkToolCall, type Caller, type RoutePolicy } from '#lib/gateway-protocol/policy.js';
import { challenge } from './bearer.js';
import type { GatewayContext } from './context.js';
import { readBodyUpTo } from './request-body.js';
import { sendError, sendJson } from './respond.js';

/**
 * The gateway's side of an MCP route (docs/gateway.md#mcp-routes): its protected resource
 * metadata, the `resource_metadata` every challenge names, and the rules per tool applied to a
 * JSON-RPC `tools/call` before the body is replayed upstream.
 */

/** `GET /.well-known/oauth-protected-resource<route path>`; false when no MCP route has that path (the app may serve its own). */
export function serveProtectedResourceMetadata(
  ctx: GatewayContext,
  method: string,
  path: string,
  res: ServerResponse,
): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  const route = findMetadataRoute(ctx.holder.current?.policy.routes ?? [], path);
  if (!route) return false;
  // RFC 9728 §3.2: the document, as JSON; public (it names no one), so it may be cached briefly.
  sendJson(res, 200, buildProtectedResourceMetadata(route, { publicUrl: ctx.publicUrl, issuer: ctx.controlPlane }), {
    'cache-control': 'public, max-age=300',
    'access-control-allow-origin': '*',
  });
  return true;
}

/**
 * RFC 9728 §5.1: every challenge from an MCP route names where its metadata is, so a client that
 * holds no token, the wrong one or too weak a one finds the authorization server. A request with
 * no usable credential gets exactly `Bearer resource_metadata="…"` (MCP authorization §2.3).
 */
export function withResourceMetadata(ctx: GatewayContext, route: RoutePolicy, error: KeyplaneError): KeyplaneError {
  const metadata = `resource_metadata="${protectedResourceMetadataUrl(route, ctx.publicUrl)}"`;
  if (error.reason === 'unauthorized') {
    const scope = route.scopes && route.scopes.length > 0 ? `, scope="${route.scopes.join(' ')}"` : '';
    error.headers['www-authenticate'] = `Bearer ${metadata}${scope}`;
  } else if (error.headers['www-authenticate']) {
    error.headers['www-authenticate'] = `${error.headers['www-authenticate']}, ${metadata}`;
  }
  return error;
}

/**
 * The rules per tool for one POST to an MCP route with `tools`: the body is read (bounded), each
 * JSON-RPC message of it (a batch: every one) that calls a tool with rules is checked, and the body
 * is returned for the upstream. A refusal is answered here (counted and logged) and null returned.
 */
export async function checkToolCalls(
  ctx: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: RoutePolicy,
  caller: Caller | null,
  enforced: boolean,
): Promise<{ body: Buffer } | null> {
  const refuse = (error: KeyplaneError, tool?: string) => {
    // Counted by tool too: the evidence carries these, and the control plane writes a receipt for them.
    if (tool) ctx.metrics.toolRefusals.inc({ tool, reason: error.reason });
    ctx.log.info(
      { event: 'gateway.refused', reason: error.reason, path: route.path, ...(tool ? { tool } : {}) },
      'tool call refused',
    );
    sendError(ctx.metrics, res, error);
    return null;
  };
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity')
    return refuse(fail('unsupported_media_type', 'an MCP route with tool rules reads the body: send it uncompressed'));
  const body = await readBodyUpTo(req, MCP_BODY_LIMIT);
  if (body === null) {
    res.setHeader('connection', 'close');
    return refuse(fail('payload_too_large', `an MCP request is read up to ${MCP_BODY_LIMIT} bytes`));
  }
  const calls = readToolCalls(body.toString('utf8'));
  if ('malformed' in calls) return refuse(fail('invalid_request', `not a JSON-RPC request: ${calls.malformed}`));
  const directory = ctx.holder.current?.directory;
  for (const tool of calls.tools) {
    const rule = Object.hasOwn(route.tools ?? {}, tool) ? route.tools![tool] : undefined;
    if (!rule) continue;
    const refusal = caller ? checkToolCall(rule, caller, directory) : ({ reason: 'access_denied' } as const);
    if (!refusal) continue;
    if (!enforced) {
      // observe / canary outside the bucket: counted and logged as a refusal that did not hold.
      ctx.metrics.observed.inc({ reason: refusal.reason });
      ctx.log.info({ event: 'gateway.observed', reason: refusal.reason, path: route.path, tool }, 'would refuse');
      continue;
    }
    if (refusal.reason === 'access_denied')
      return refuse(fail('access_denied', `this account may not call the tool ${tool}`), tool);
    if (refusal.reason === 'insufficient_scope') {
      // RFC 6750 §3.1: 403 naming the scope the token lacks, so the client can ask for it.
      const scope = refusal.missingScopes!.join(' ');
      const scheme = caller?.kind === 'dpop' ? 'DPoP' : 'Bearer';
      const error = fail('insufficient_scope', `the tool ${tool} needs scope ${scope}`, {
        headers: { 'www-authenticate': challenge(scheme, ctx.publicUrl, { error: 'insufficient_scope', scope }) },
        fields: { error: 'insufficient_scope', scope },
      });
      return refuse(withResourceMetadata(ctx, route, error), tool);
    }
    const acr = refusal.requiredAssurance ?? 'sensitive';
    const description = `the tool ${tool} needs assurance ${acr}`;
    const scheme = caller?.kind === 'dpop' ? 'DPoP' : 'Bearer';
    const error = fail('insufficient_user_authentication', description, {
      headers: {
        'www-authenticate': challenge(scheme, ctx.publicUrl, {
          error: 'insufficient_user_authentication',
          error_description: description,
          acr_values: acr,
        }),
      },
      fields: { error: 'insufficient_user_authentication', acr_values: acr },
    });
    return refuse(withResourceMetadata(ctx, route, error), tool);
  }
  return { body };
}
