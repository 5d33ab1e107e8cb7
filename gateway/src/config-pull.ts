import { isProtocolError } from '#lib/errors/protocol-error.js';
import { formatClientSecretBasic } from '#lib/oauth/client-auth.js';
import type { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import type { JSONWebKeySet } from 'jose';
import { request } from 'undici';
import { CONFIG_REFUSALS, type GatewayConfigHolder } from '#lib/gateway-protocol/signed-config.js';
import { repeat } from './repeat.js';

/**
 * Pulls the signed config from the control plane (`GET /gateway/config`, docs/gateway.md#pulling-it),
 * authenticated as the gateway's client (RFC 6749 §2.3.1 Basic), with `If-None-Match` so an
 * unchanged config costs a 304. A refused document (bad signature, rollback) or an unreachable
 * control plane leaves the held config in force.
 */

export type PullResult =
  | { outcome: 'installed'; version: number }
  | { outcome: 'unchanged' }
  | { outcome: 'refused'; reason: string }
  | { outcome: 'unavailable'; status?: number };

export interface ConfigPullOptions {
  controlPlane: string;
  clientId: string;
  clientSecret: string;
  holder: GatewayConfigHolder;
  now: () => number;
  /** Between pulls; a registration change must arrive within 5 s (docs/gateway.md#pulling-it). */
  intervalMs: number;
  timeoutMs?: number;
  onResult?: (result: PullResult) => void;
  /** Told when the control plane cannot be reached and when it answers again (the pull is the gateway's steady probe of it). */
  monitor?: DependencyMonitor;
}

export interface ConfigPull {
  pullOnce(): Promise<PullResult>;
  stop(): Promise<void>;
}

export function createConfigPull(options: ConfigPullOptions): ConfigPull {
  const base = options.controlPlane.replace(/\/$/, '');
  const timeout = options.timeoutMs ?? 5_000;
  let etag: string | undefined;

  async function fetchJwks(): Promise<JSONWebKeySet | null> {
    const res = await request(`${base}/.well-known/jwks.json`, { headersTimeout: timeout, bodyTimeout: timeout });
    if (res.statusCode !== 200) {
      await res.body.dump();
      return null;
    }
    return (await res.body.json()) as JSONWebKeySet;
  }

  async function pullOnce(): Promise<PullResult> {
    let result: PullResult;
    try {
      const res = await request(`${base}/gateway/config`, {
        headers: {
          authorization: formatClientSecretBasic(options.clientId, options.clientSecret),
          accept: 'application/jwt',
          ...(etag ? { 'if-none-match': etag } : {}),
        },
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
      options.monitor?.succeeded('control_plane');
      if (res.statusCode === 304) {
        await res.body.dump();
        result = { outcome: 'unchanged' };
      } else if (res.statusCode !== 200) {
        await res.body.dump();
        result = { outcome: 'unavailable', status: res.statusCode };
      } else {
        const jws = (await res.body.text()).trim();
        const tag = res.headers['etag'];
        const jwks = await fetchJwks();
        if (!jwks) result = { outcome: 'unavailable' };
        else {
          const { changed, document } = await options.holder.accept(jws, jwks, options.now());
          if (typeof tag === 'string') etag = tag;
          result = changed ? { outcome: 'installed', version: document.version } : { outcome: 'unchanged' };
        }
      }
    } catch (error) {
      if (isProtocolError(error, ...CONFIG_REFUSALS)) result = { outcome: 'refused', reason: error.code };
      else {
        options.monitor?.failure('control_plane', error);
        result = { outcome: 'unavailable' };
      }
    }
    options.onResult?.(result);
    return result;
  }

  const loop = repeat(pullOnce, options.intervalMs);
  return { pullOnce, stop: () => loop.stop() };
}
