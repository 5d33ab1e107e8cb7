import { fail } from '../errors/keyplane-error.js';
import type { MessageKey } from '../i18n/translate.js';

/**
 * A connector is a ready-made OIDC client for one third-party tool: from the few things the
 * operator knows (the tool's URL), it derives the exact registration Keyplane needs and the
 * tool's own configuration with the issuer, client id and secret filled in (docs/connectors.md).
 * Templates are pure: randomness and the issuer come in as arguments.
 */

/**
 * A note's message in the pages' catalogs (docs/i18n.md): `values` are code or settings, shown as
 * written inside the message's `<code>` tags. The JSON API keeps the English text beside it.
 */
export interface ConnectorNote {
  key: MessageKey;
  values?: Record<string, string>;
}

export interface ConnectorInput {
  name: string;
  label: string;
  /** English, for the JSON API and the refusal of a missing input. */
  description: string;
  /** The description on pages, in the reader's language. */
  note?: ConnectorNote;
  required: boolean;
  example?: string;
}

/** The RFC 7591 body a connector registers; it goes through the same validation as POST /register. */
export interface ConnectorRegistration {
  client_name: string;
  redirect_uris: string[];
  post_logout_redirect_uris?: string[];
  grant_types: ('authorization_code' | 'refresh_token')[];
  scope: string;
  token_endpoint_auth_method: 'none' | 'client_secret_basic' | 'client_secret_post';
}

export type SnippetFormat = 'ini' | 'ruby' | 'yaml' | 'shell' | 'env' | 'apache' | 'toml';

export interface Snippet {
  format: SnippetFormat;
  /** Where the snippet goes, for people: `grafana.ini`, `/etc/gitlab/gitlab.rb`, … */
  target: string;
  content: string;
}

export interface SnippetContext {
  issuer: string;
  clientId: string;
  /** Absent for public clients (token_endpoint_auth_method `none`). */
  clientSecret?: string;
  /** A fresh 256-bit value for the tool's own secret (cookie key, crypto passphrase), base64url. */
  toolSecret: string;
  inputs: Readonly<Record<string, string>>;
}

export interface ConnectorTemplate {
  name: string;
  title: string;
  /** Anchor in docs/connectors.md. */
  docs: string;
  inputs: ConnectorInput[];
  /** How the tool does PKCE S256, which Keyplane requires of every client (English, for the JSON API). */
  pkce: string;
  /** The same on pages, in the reader's language. */
  pkceNote: ConnectorNote;
  registration(inputs: Readonly<Record<string, string>>): ConnectorRegistration;
  snippet(context: SnippetContext): Snippet;
}

export const BASE_URL_INPUT: ConnectorInput = {
  name: 'base_url',
  label: 'Tool URL',
  description: 'The URL people open the tool at (https; http only on localhost), without query or fragment.',
  required: true,
  example: 'https://tool.example.com',
};

function badInput(message: string): never {
  throw fail('invalid_connector_input', message);
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
// Characters that need no quoting in any snippet format we write (ini, YAML, Ruby, shell, Apache, TOML).
const SAFE_PATH = /^[A-Za-z0-9._~/%-]*$/;

/**
 * The tool's base URL as `origin + path` without a trailing slash: https (http only on a
 * loopback host, RFC 8252 §7.3), no user information, query or fragment, and a path of plain
 * characters, so it can be pasted into every snippet format unquoted.
 */
export function parseBaseUrl(value: unknown, field = 'base_url'): string {
  if (typeof value !== 'string' || value.trim() === '')
    badInput(`${field} is required: the URL people open the tool at`);
  const text = value.trim();
  if (text.length > 500) badInput(`${field} must be at most 500 characters`);
  if (/[\s\u0000-\u001f\u007f]/.test(text)) badInput(`${field} must not contain whitespace or control characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    badInput(`${field} must be an absolute URL such as https://tool.example.com`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname))) {
    badInput(`${field} must use https (http only on localhost, 127.0.0.1 or [::1])`);
  }
  if (url.username !== '' || url.password !== '') badInput(`${field} must not contain user information`);
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(text)) badInput(`${field} must not have a query or fragment`);
  if (!SAFE_PATH.test(url.pathname))
    badInput(`${field} has characters in its path that a configuration file cannot hold unquoted`);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** A short label such as `Grafana at grafana.example.com` (client_name is at most 200 characters). */
export function clientName(title: string, baseUrl: string): string {
  return `${title} at ${new URL(baseUrl).host}`.slice(0, 200);
}

/**
 * Checks a request's inputs against the template: required ones present, no unknown ones,
 * strings only. Each template parses its own values (parseBaseUrl) when it builds.
 */
export function checkConnectorInputs(template: ConnectorTemplate, body: unknown): Record<string, string> {
  if (body === undefined || body === null) body = {};
  if (typeof body !== 'object' || Array.isArray(body)) badInput('the inputs must be a JSON object');
  const known = new Map(template.inputs.map((input) => [input.name, input]));
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    const input = known.get(name);
    if (!input) {
      const allowed = template.inputs.map((i) => i.name).join(', ') || 'none';
      badInput(`${name.slice(0, 60)} is not an input of the ${template.name} connector (inputs: ${allowed})`);
    }
    if (typeof value !== 'string') badInput(`${name} must be a string`);
    if (value.trim() !== '') values[name] = value.trim();
  }
  for (const input of template.inputs) {
    if (input.required && values[input.name] === undefined) badInput(`${input.name} is required: ${input.description}`);
  }
  return values;
}

/** Quoting for the formats whose strings are double-quoted with backslash escapes (Ruby, Apache). */
export function doubleQuoted(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`).replace(/#\{/g, '\\#{')}"`;
}

/** POSIX shell single quotes. */
export function shellQuoted(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
