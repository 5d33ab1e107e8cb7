import type { IncomingMessage, ServerResponse } from 'node:http';
import { fail } from '#lib/errors/keyplane-error.js';
import type { ClientView } from '#lib/gateway-protocol/forwarded.js';
import { normalizeRequestTarget } from '#lib/gateway-protocol/request-path.js';
import { authorize } from './authorize.js';
import type { GatewayContext } from './context.js';
import { identityHeaders } from './identity.js';
import { refuse } from './page-flow.js';
import { countPassed, sendError } from './respond.js';

/** `/_gate/auth` for nginx auth_request, Traefik ForwardAuth and Caddy forward_auth (docs/gateway.md#forward-auth-_gateauth). */
export async function forwardAuth(
  ctx: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  view: ClientView,
  wantsRedirect: boolean,
): Promise<void> {
  // Original method and URI are believed only from a trusted proxy; otherwise they were dropped.
  const method = view.originalMethod ?? 'GET';
  const target = normalizeRequestTarget(view.originalUri ?? '/');
  if (!target) return sendError(ctx.metrics, res, fail('invalid_path', 'the original URI is not acceptable'));
  const result = await authorize(ctx, req, { method, target, forwardAuth: true, wantsRedirect, res });
  if ('refused' in result) return refuse(ctx, req, res, result.refused);
  countPassed(ctx.metrics, result.decision);
  // The assertion names the app the original URI belongs to when the gateway knows it, else the gateway itself.
  const headers = result.who.caller
    ? await identityHeaders(
        ctx,
        result.who.caller,
        result.who.session,
        ctx.upstreams.find(target.path)?.origin ?? ctx.publicUrl,
      )
    : {};
  res.writeHead(200, { ...headers, 'cache-control': 'no-store', 'content-length': '0' });
  res.end();
}
