import type { FastifyRequest } from 'fastify';
import { meetsAssurance } from '#lib/assurance/assurance.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { checkRequestOrigin } from '#lib/http/check-request-origin.js';
import { presentsAdminToken, requireAdminToken } from '#lib/http/admin-token.js';
import { ADMIN_TOKEN } from '../events/types.js';
import type { OperatorCaller } from '../context.js';
import {
  type ConsoleServices,
  type ConsoleSessionView,
  consoleCookieName,
  lookUpConsoleSession,
} from '../console/console-session.js';

/** What an operator request is allowed to do: read (operators and auditors) or change (operators at `sensitive`). */
export type OperatorAccess = 'read' | 'change';

export type { OperatorCaller };

/**
 * The console session the request carries, checked once per request and kept on `request.kp`.
 * A state-changing request with it must come from our own pages (Fetch Metadata, then Origin),
 * on top of its `SameSite=Strict`.
 */
export async function consoleSessionOf(
  services: ConsoleServices,
  request: FastifyRequest,
): Promise<ConsoleSessionView | undefined> {
  if (request.kp.consoleChecked) return request.kp.console;
  request.kp.consoleChecked = true;
  const found = await lookUpConsoleSession(services, request.cookies[consoleCookieName(services)]);
  if (!found) return undefined;
  if (!['GET', 'HEAD', 'OPTIONS'].includes(request.method)) {
    const site = request.headers['sec-fetch-site'];
    checkRequestOrigin(
      { secFetchSite: typeof site === 'string' ? site : undefined, origin: request.headers.origin },
      { expectedOrigin: new URL(services.config.issuer).origin, originRequired: true },
    );
  }
  request.kp.console = found;
  return found;
}

/**
 * The admin API's guard (docs/console.md#the-admin-api): the admin token for automation, or a
 * person's console session: an auditor reads, an operator changes at assurance `sensitive`
 * (its everyday session of the same account stepped up). An everyday session alone, whatever
 * its assurance, never passes.
 */
export async function authorizeOperator(
  services: ConsoleServices,
  request: FastifyRequest,
  access: OperatorAccess,
): Promise<OperatorCaller> {
  const authorization = request.headers.authorization;
  if (presentsAdminToken(services.config.adminToken, authorization)) return { actor: ADMIN_TOKEN };
  const opened = await consoleSessionOf(services, request);
  if (!opened) {
    // Without a console session the answer is the admin token's refusal, as before the console.
    requireAdminToken(services.config.adminToken, authorization);
    throw fail('console_session_required', 'open a console session at /console first');
  }
  if (access === 'change') checkCanChange(opened, request);
  return { actor: { type: 'person', id: opened.identityId }, console: opened };
}

/** A change needs the operator role and, on the same account's everyday session, a fresh step-up. */
export function checkCanChange(opened: ConsoleSessionView, request: FastifyRequest): void {
  checkOperatorRole(opened);
  if (!isSensitive(opened, request))
    throw fail('insufficient_assurance', 'this change needs a sensitive session; step up at /auth/step-up', {
      fields: { required: 'sensitive', stepUp: '/auth/step-up' },
    });
}

export function isSensitive(opened: ConsoleSessionView, request: FastifyRequest): boolean {
  const session = request.kp.session;
  return session?.identityId === opened.identityId && meetsAssurance(session.assurance, 'sensitive');
}

/** Auditors read and export only: any change they send is refused (403). */
export function checkOperatorRole(opened: ConsoleSessionView): void {
  if (opened.role !== 'operator') throw fail('forbidden', 'an auditor reads and exports only');
}
