import type { ApiAccess } from '../../apis/apis.js';
import type { AccessRulePart } from '#lib/access/evaluate-access.js';
import type { AttributeSource } from '#lib/saml/provider.js';
import type { ClientMetadata } from '#lib/oauth/client-metadata.js';

/*
 * What the authorization endpoint's pages show, as plain data: the operation fills them, the
 * route's pages (routes/oidc/pages.ts) draw them. SAML and the device grant draw the one-tap page too.
 */

export interface OneTapView {
  clientName: string;
  clientOrigin: string;
  /** The host serving the client's Client ID Metadata Document: the app is shown as unverified. */
  unverifiedHost?: string;
  /** OIDC Registration §2 `logo_uri`, https only: shown, and the one image the page's CSP admits. */
  logoUri?: string;
  /** OIDC Registration §2 `policy_uri` and `tos_uri`: links the person SHOULD be shown. */
  policyUri?: string;
  tosUri?: string;
  username: string;
  scopes: string[];
  /**
   * The API scopes among `scopes` (docs/apis.md), with the declared descriptions: shown in the
   * person's language, marked as the org's words when an org declared the API.
   */
  apiScopes?: ApiAccess['scopes'];
  /** The names of the orgs that declared `apiScopes`, by org id. */
  apiOrgNames?: Readonly<Record<string, string>>;
  /** Every resource (RFC 8707) the token would be for: the user approves those by name. */
  resources: string[];
  hidden: Record<string, string>;
  /** Origins the form may end at (the redirect URI's), for CSP form-action. */
  formAction: string[];
  /** Where the form goes (default `/auth/authorize`): each protocol's approval endpoint. */
  action?: string;
  /** What is released when it is not OAuth scopes (a SAML provider's attributes, `releaseParts`). */
  released?: { source: AttributeSource; names: string[] }[];
  /** The device grant's user code (RFC 8628 §3.3): shown so the person compares it with the device's. */
  userCode?: string;
  /** The client's name and `client_uri` are what its registrant typed, vouched for by no one: marked so. */
  selfDeclared?: true;
  /** Who registered the client (`null`: the operator), shown beside its self-declared name. */
  registeredBy?: string | null;
}

export interface NotAdmittedView {
  clientName: string;
  clientOrigin: string;
  username: string;
  /** The orgs (and roles) the client admits (`accessRuleParts`), put in words in the page's language. */
  admits: AccessRulePart[];
  /** The form that answers the relying party; absent where no one waits at a redirect URI (a device code). */
  hidden?: Record<string, string>;
  formAction: string[];
  /** Where "Back to the app" posts: `/auth/authorize` (default), or `/saml/sso/approve` for a SAML provider. */
  action?: '/auth/authorize' | '/saml/sso/approve';
}

export interface AccountChoiceView {
  clientName: string;
  username: string;
  /** Continues the request with the signed-in account. */
  continueHref: string;
  /** The sign-in page, which resumes the request with whichever account signs in. */
  anotherHref: string;
}

/**
 * What the consent page shows of the client's registration (OIDC Registration §2): its logo only
 * when it is https (loaded by the browser from there, under a CSP naming exactly it), and its
 * privacy policy and terms as links.
 */
export function clientLinksOf(
  metadata: Pick<ClientMetadata, 'logo_uri' | 'policy_uri' | 'tos_uri'>,
): Pick<OneTapView, 'logoUri' | 'policyUri' | 'tosUri'> {
  const { logo_uri: logo, policy_uri: policy, tos_uri: tos } = metadata;
  return {
    ...(logo !== undefined && logo.startsWith('https://') ? { logoUri: logo } : {}),
    ...(policy !== undefined ? { policyUri: policy } : {}),
    ...(tos !== undefined ? { tosUri: tos } : {}),
  };
}
