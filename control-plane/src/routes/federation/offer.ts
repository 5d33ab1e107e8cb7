import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ControlPlaneServices } from '../../context.js';
import { html, type SafeHtml } from '../../pages/layout.js';
import type { PageUi } from '../../pages/ui.js';
import { beginPendingSignIn, startHref } from '../../federation/federated-sign-in.js';
import { offeredConnection } from '../../federation/connections.js';
import { bindingCookie } from './binding-cookie.js';

/**
 * The sign-in page's button for a connection asked for by name (`/auth?connection=`, or an
 * authorization request's `connection`): a start link with a pending sign-in bound to this browser.
 * Nothing for an unknown connection.
 */
export async function connectionOffer(
  kp: Pick<ControlPlaneServices, 'config' | 'storage' | 'state'>,
  request: FastifyRequest,
  reply: FastifyReply,
  ui: PageUi,
  connectionId: string | undefined,
  returnTo: string,
): Promise<SafeHtml | ''> {
  const connection = connectionId === undefined ? null : await offeredConnection(kp, connectionId);
  if (!connection) return '';
  const pending = await beginPendingSignIn(kp, bindingCookie.ensure(kp, request, reply), returnTo || '/account');
  return html`<p><a class="button" id="connection-start" data-connection="${connection.connectionId}" href="${startHref(connection.connectionId, pending)}">${ui.t('signin.connection_button', { name: connection.name })}</a></p>`;
}
