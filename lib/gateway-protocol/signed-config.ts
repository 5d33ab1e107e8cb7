import { ProtocolError, type ConfigRefusal } from '../errors/protocol-error.js';
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { checkJwt, JwtCheckError } from '../crypto/jwt.js';
import { checkAccessDirectory, type AccessDirectory } from '../access/directory.js';
import { sha256Hex } from '../crypto/sha256.js';
import { parseGatewayPolicy } from './parse-policy.js';
import type { GatewayPolicy } from './policy.js';

/**
 * The gateway's policy arrives as a JWS signed by the control plane (docs/gateway.md#signed-config; "Gateway config
 * and evidence"). This module verifies one, orders versions so that rollbacks are refused,
 * and holds the last good copy. Pure: persistence and the key look-up are passed in.
 */

export const GATEWAY_CONFIG_TYP = 'keyplane-gateway-config+jwt';

export interface GatewayConfigDocument {
  version: number;
  policy: GatewayPolicy;
  /** Control-plane session ids (`sid`) revoked recently: a gateway session of one of them ends at once. */
  revokedSessions: ReadonlySet<string>;
  /** The accounts the routes' `allow` rules can name, with their memberships (absent without rules). */
  directory?: AccessDirectory;
  /** Seconds; a document received after this is refused. */
  exp: number;
  /** SHA-256 hex of the compact JWS: what evidence reports. */
  hash: string;
  jws: string;
}

export type { ConfigRefusal };

export const CONFIG_REFUSALS: readonly ConfigRefusal[] = [
  'bad_signature',
  'malformed',
  'expired',
  'rollback',
  'equivocation',
  'wrong_audience',
];

/** A signed config the gateway refuses; `code` says why. */
export class GatewayConfigError extends ProtocolError<ConfigRefusal> {}

export interface VerifyConfigOptions {
  /** The control plane's keys: a JWKS, or jose's remote JWKS getter. */
  keys: JSONWebKeySet | JWTVerifyGetKey;
  /** The control plane's issuer. */
  issuer: string;
  /** This gateway's client id. */
  clientId: string;
  /** Milliseconds. */
  now: number;
  /** Accept a document whose `exp` has passed (the persisted last good copy, read back at start). */
  allowExpired?: boolean;
}

/** Verifies a signed config: ES256, `typ`, issuer, audience = the client id, `exp`, and a valid policy. */
export async function verifyGatewayConfig(jws: string, options: VerifyConfigOptions): Promise<GatewayConfigDocument> {
  const getKey = typeof options.keys === 'function' ? options.keys : createLocalJWKSet(options.keys);
  let payload: Record<string, unknown>;
  try {
    const verified = await checkJwt(jws, getKey, {
      algorithms: ['ES256'],
      typ: GATEWAY_CONFIG_TYP,
      issuer: options.issuer,
      now: options.now,
      requiredClaims: ['exp', 'iat'],
      ...(options.allowExpired ? { clockToleranceSeconds: Number.MAX_SAFE_INTEGER } : {}),
    });
    payload = verified.payload;
  } catch (error) {
    const code = error instanceof JwtCheckError ? error.code : undefined;
    if (code === 'expired') throw new GatewayConfigError('expired', 'the config has expired');
    if (code === 'claim')
      throw new GatewayConfigError('malformed', `the config claims are invalid: ${(error as Error).message}`);
    throw new GatewayConfigError('bad_signature', 'the config signature does not verify');
  }
  const aud = payload['aud'];
  if (aud !== options.clientId && !(Array.isArray(aud) && aud.includes(options.clientId)))
    throw new GatewayConfigError('wrong_audience', 'the config is for another gateway client');
  const version = payload['version'];
  if (!Number.isSafeInteger(version) || (version as number) < 1)
    throw new GatewayConfigError('malformed', 'version must be a positive integer');
  const parsed = parseGatewayPolicy(payload['gateway'], { at: 'enforcement' });
  if (!parsed.policy) throw new GatewayConfigError('malformed', parsed.problems.join('; '));
  const revoked = payload['revoked_sessions'] ?? [];
  if (!Array.isArray(revoked) || !revoked.every((sid) => typeof sid === 'string'))
    throw new GatewayConfigError('malformed', 'revoked_sessions must be a list of session ids');
  const directory = payload['access_directory'];
  if (directory !== undefined) {
    const directoryProblems = checkAccessDirectory(directory);
    if (directoryProblems.length > 0) throw new GatewayConfigError('malformed', directoryProblems.join('; '));
  }
  return {
    version: version as number,
    policy: parsed.policy,
    revokedSessions: new Set(revoked as string[]),
    ...(directory !== undefined ? { directory: directory as AccessDirectory } : {}),
    exp: payload['exp'] as number,
    hash: sha256Hex(jws),
    jws,
  };
}

/** Where the last good copy is kept (the gateway's data dir); the JWKS is kept beside it so it verifies offline. */
export interface ConfigStore {
  load(): Promise<{ jws: string; jwks: JSONWebKeySet } | null>;
  save(copy: { jws: string; jwks: JSONWebKeySet }): Promise<void>;
}

/**
 * Holds the newest verified config. Versions only move forward: an older version is a rollback,
 * the same version with different content is equivocation; both are refused and the held copy
 * stays in force.
 */
export class GatewayConfigHolder {
  #current: GatewayConfigDocument | null = null;

  constructor(private readonly options: { issuer: string; clientId: string; store: ConfigStore }) {}

  get current(): GatewayConfigDocument | null {
    return this.#current;
  }

  /** Reads the persisted copy back at start; a copy that does not verify is ignored (fail closed). */
  async restore(now: number): Promise<GatewayConfigDocument | null> {
    const copy = await this.options.store.load();
    if (!copy) return null;
    try {
      const document = await verifyGatewayConfig(copy.jws, {
        keys: copy.jwks,
        issuer: this.options.issuer,
        clientId: this.options.clientId,
        now,
        allowExpired: true,
      });
      if (!this.#current || document.version > this.#current.version) this.#current = document;
      return document;
    } catch {
      return null;
    }
  }

  /** Verifies and installs a config fetched from the control plane; returns whether it changed. */
  async accept(
    jws: string,
    jwks: JSONWebKeySet,
    now: number,
  ): Promise<{ changed: boolean; document: GatewayConfigDocument }> {
    const document = await verifyGatewayConfig(jws, {
      keys: jwks,
      issuer: this.options.issuer,
      clientId: this.options.clientId,
      now,
    });
    const held = this.#current;
    if (held) {
      if (document.version < held.version)
        throw new GatewayConfigError(
          'rollback',
          `version ${document.version} is older than the held version ${held.version}`,
        );
      if (document.version === held.version) {
        if (document.hash !== held.hash)
          throw new GatewayConfigError('equivocation', `version ${document.version} arrived with different content`);
        return { changed: false, document: held };
      }
    }
    await this.options.store.save({ jws, jwks });
    this.#current = document;
    return { changed: true, document };
  }
}
