import type { AssuranceLevel } from './assurance.js';
import type { CookieJar } from './cookie-session.js';
import { KeyplaneSdkError } from './errors.js';
import type { Session, WebSessions } from './web.js';

/** What an adapter knows of a request, framework-neutral. */
export interface RequestFacts {
  method: string;
  /** Path and query as received, e.g. `/callback?code=…`. */
  url: string;
  origin?: string;
  accept?: string;
}

/** An answer the adapter writes as it is. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body?: string;
}

const json = (status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): Answer => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers },
  body: JSON.stringify(body),
});
const redirect = (location: string): Answer => ({ status: 302, headers: { location, 'cache-control': 'no-store' } });

/** Answers the SDK's own paths (sign-in, callback, sign-out); null for every other request. */
export async function answerReservedPath(
  web: WebSessions,
  request: RequestFacts,
  jar: CookieJar,
): Promise<Answer | null> {
  const url = new URL(request.url, web.appOrigin);
  if (url.pathname === web.loginPath && request.method === 'GET') {
    return redirect(
      await web.beginLogin(jar, url.searchParams.get('return') ?? undefined, url.searchParams.get('acr') ?? undefined),
    );
  }
  if (url.pathname === web.callbackPath && request.method === 'GET') {
    try {
      return redirect(await web.finishLogin(jar, url.href));
    } catch (error) {
      if (!(error instanceof KeyplaneSdkError)) throw error;
      // The user declined, the sign-in expired or the answer was forged: nothing is signed in.
      return json(error.code === 'access_denied' ? 403 : 400, {
        ok: false,
        reason: error.code,
        message: error.message,
      });
    }
  }
  if (url.pathname === web.logoutPath && request.method === 'POST') {
    if (!web.isSameOrigin(request.origin))
      return json(403, { ok: false, reason: 'origin_mismatch', message: 'sign-out must come from this app' });
    return { status: 303, headers: { location: await web.logout(jar), 'cache-control': 'no-store' } };
  }
  return null;
}

/**
 * Whether a request may reach a protected route: null to go on, else the answer. Page loads are
 * sent to sign in (or to step up); API callers get 401 with RFC 9470's challenge.
 */
export function gate(
  web: WebSessions,
  request: RequestFacts,
  session: Session | null,
  level?: AssuranceLevel,
): Answer | null {
  const isPageLoad = request.method === 'GET' && (request.accept ?? '').includes('text/html');
  const back = encodeURIComponent(request.url);
  if (!session) {
    return isPageLoad
      ? redirect(`${web.loginPath}?return=${back}`)
      : json(401, { ok: false, reason: 'unauthorized', message: 'sign in first' }, { 'www-authenticate': 'Bearer' });
  }
  if (!level || web.client.requireAssurance(level).isMetBy(session.claims)) return null;
  return isPageLoad
    ? redirect(`${web.loginPath}?return=${back}&acr=${level}`)
    : json(
        401,
        { ok: false, reason: 'step_up_required', message: `this needs assurance ${level}` },
        {
          'www-authenticate': `Bearer error="insufficient_user_authentication", acr_values="${level}"`,
        },
      );
}
