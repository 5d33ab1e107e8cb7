import type { Registry } from 'prom-client';
import type { ControlPlaneConfig } from '../../config/types.js';
import type { SharedState } from '../../lib/runtime/shared-state/types.js';
import type { KeyRing } from './keys/key-ring.js';
import type { Storage } from './storage/types.js';

/** The services a control plane runs on, built once at start and handed to every plugin. */
export interface ControlPlaneServices {
  config: ControlPlaneConfig & { issuer: string };
  storage: Storage;
  state: SharedState;
  keys: KeyRing;
  metrics: Registry;
  now: () => number;
}

/** Request-scoped state: one typed slot, filled in one hook. */
export interface RequestContext {
  requestId: string;
  cspNonce: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    kp: ControlPlaneServices;
  }
  interface FastifyRequest {
    kp: RequestContext;
  }
  interface FastifyContextConfig {
    /** Sent as Cache-Control; default `no-store`. */
    cache?: string;
  }
}
