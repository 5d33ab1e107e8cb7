import { schemas } from './schema.js';

/**
 * The operator's admin token for commands that call a running control plane's admin API
 * (`keyplane accounts`): the same variable the control plane reads, never a flag (flags show up
 * in process listings). Undefined when unset or empty.
 */
export function readAdminToken(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const name = (schemas['control-plane'].properties['adminToken'] as { env?: string }).env!;
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

/** The client secret `keyplane agent token` authenticates with, from KEYPLANE_CLIENT_SECRET (never from argv). */
export function readClientSecret(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env['KEYPLANE_CLIENT_SECRET'];
  return value === undefined || value === '' ? undefined : value;
}
