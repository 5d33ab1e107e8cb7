import { request } from 'undici';
import { formatClientSecretBasic } from '#lib/oauth/client-auth.js';
import { repeat } from './repeat.js';

/**
 * Pushes this gateway's signed evidence to the control plane (`POST /gateway/evidence`, docs/gateway.md#evidence
 * item 8), authenticated as the gateway's client like the config pull. A report says for how
 * long it is fresh (`ttlSeconds`); pushing several times within that keeps the control plane's
 * status green through a lost request, and a missed push simply lets the evidence go stale.
 */

export type PushResult =
  { outcome: 'accepted' } | { outcome: 'refused'; status: number; reason?: string } | { outcome: 'unavailable' };

export interface EvidencePushOptions {
  controlPlane: string;
  clientId: string;
  clientSecret: string;
  /** Signs a fresh report (the gateway's `evidence`). */
  evidence: (ttlSeconds: number) => Promise<string>;
  intervalMs: number;
  ttlSeconds: number;
  timeoutMs?: number;
  onResult?: (result: PushResult) => void;
}

export interface EvidencePush {
  /** Pushes one report now (also used right after a config is installed). */
  pushOnce(): Promise<PushResult>;
  stop(): Promise<void>;
}

export function createEvidencePush(options: EvidencePushOptions): EvidencePush {
  const url = `${options.controlPlane.replace(/\/$/, '')}/gateway/evidence`;
  const timeout = options.timeoutMs ?? 5_000;
  const inFlight = new Set<Promise<PushResult>>();
  let stopped = false;

  async function push(): Promise<PushResult> {
    let result: PushResult;
    try {
      const res = await request(url, {
        method: 'POST',
        headers: {
          authorization: formatClientSecretBasic(options.clientId, options.clientSecret),
          'content-type': 'application/jwt',
        },
        body: await options.evidence(options.ttlSeconds),
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
      if (res.statusCode === 202) {
        await res.body.dump();
        result = { outcome: 'accepted' };
      } else {
        const body = (await res.body.json().catch(() => null)) as { reason?: unknown } | null;
        result =
          res.statusCode >= 500
            ? { outcome: 'unavailable' }
            : {
                outcome: 'refused',
                status: res.statusCode,
                ...(typeof body?.reason === 'string' ? { reason: body.reason } : {}),
              };
      }
    } catch {
      result = { outcome: 'unavailable' };
    }
    options.onResult?.(result);
    return result;
  }

  function pushOnce(): Promise<PushResult> {
    if (stopped) return Promise.resolve({ outcome: 'unavailable' });
    const running = push().finally(() => inFlight.delete(running));
    inFlight.add(running);
    return running;
  }

  const loop = repeat(pushOnce, options.intervalMs);
  return {
    pushOnce,
    async stop() {
      stopped = true;
      await loop.stop();
      await Promise.allSettled([...inFlight]);
    },
  };
}
