import { hkdfSync } from 'node:crypto';
import { EncryptJWT, jwtDecrypt, type JWTPayload } from 'jose';

/** Browsers keep about 4 KB per cookie; values longer than this are split into numbered chunks. */
const CHUNK = 3800;

export interface CookieOptions {
  maxAgeSeconds: number;
  secure: boolean;
  path?: string;
}

/** What a framework adapter gives the session code: its request's cookies and a way to set them. */
export interface CookieJar {
  all(): Record<string, string>;
  set(name: string, value: string, options: CookieOptions): void;
  clear(name: string, options: { secure: boolean; path?: string }): void;
}

/**
 * Encrypted cookies (JWE `dir` + `A256GCM` via jose): the newest secret encrypts, every listed
 * secret decrypts, so secrets rotate by prepending. Each key is derived from its secret with HKDF.
 */
export class CookieCipher {
  private readonly keys: Uint8Array[];

  constructor(secrets: readonly string[], purpose: string) {
    if (secrets.length === 0) throw new TypeError('at least one cookie secret is required');
    for (const secret of secrets)
      if (secret.length < 32) throw new TypeError('cookie secrets must be at least 32 characters');
    this.keys = secrets.map((secret) => new Uint8Array(hkdfSync('sha256', secret, 'keyplane-sdk', purpose, 32)));
  }

  seal(payload: JWTPayload, ttlSeconds: number): Promise<string> {
    return new EncryptJWT(payload)
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
      .setIssuedAt()
      .setExpirationTime(`${ttlSeconds}s`)
      .encrypt(this.keys[0]!);
  }

  async open<T extends JWTPayload>(token: string): Promise<T | null> {
    for (const key of this.keys) {
      try {
        return (
          await jwtDecrypt(token, key, { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] })
        ).payload as T;
      } catch {
        // Next key; a value no key opens (forged, expired, or older than every secret) is no cookie.
      }
    }
    return null;
  }
}

/** Reads a value written by `writeChunked` (`name`, or `name.0`, `name.1`, …). */
export function readChunked(jar: CookieJar, name: string): string | undefined {
  const cookies = jar.all();
  if (cookies[name]) return cookies[name];
  let value = '';
  for (let i = 0; cookies[`${name}.${i}`] !== undefined; i++) value += cookies[`${name}.${i}`];
  return value || undefined;
}

export function writeChunked(jar: CookieJar, name: string, value: string, options: CookieOptions): void {
  clearChunked(jar, name, options);
  if (value.length <= CHUNK) {
    jar.set(name, value, options);
    return;
  }
  for (let i = 0; i * CHUNK < value.length; i++)
    jar.set(`${name}.${i}`, value.slice(i * CHUNK, (i + 1) * CHUNK), options);
}

export function clearChunked(jar: CookieJar, name: string, options: { secure: boolean; path?: string }): void {
  for (const existing of Object.keys(jar.all())) {
    if (existing === name || (existing.startsWith(`${name}.`) && /^\d+$/.test(existing.slice(name.length + 1))))
      jar.clear(existing, options);
  }
}

/** `Set-Cookie` value: HttpOnly, SameSite=Lax, Secure on https. */
export function serializeCookie(name: string, value: string, options: CookieOptions): string {
  const parts = [
    `${name}=${value}`,
    `Path=${options.path ?? '/'}`,
    `Max-Age=${options.maxAgeSeconds}`,
    'HttpOnly',
    'SameSite=Lax',
  ];
  if (options.secure) parts.push('Secure');
  return parts.join('; ');
}

/** Parses a `Cookie` header; later duplicates do not override the first (RFC 6265 §5.4 order). */
export function parseCookies(header: string | undefined): Record<string, string> {
  const cookies: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 1) continue;
    const name = part.slice(0, eq).trim();
    if (!(name in cookies)) cookies[name] = part.slice(eq + 1).trim();
  }
  return cookies;
}
