import { fail } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices } from '../context.js';

/**
 * Ready when storage answers, the signing keys are loaded and shared state answers; otherwise
 * `not_ready` naming each part's state, so a load balancer's log says what is down.
 */
export async function checkReadiness(
  services: Pick<ControlPlaneServices, 'storage' | 'keys' | 'state'>,
): Promise<{ state: string }> {
  const storageOk = await services.storage.ping().catch(() => false);
  const stateOk = await services.state.get('readyz').then(
    () => true,
    () => false,
  );
  if (!storageOk || !services.keys.ready || !stateOk) {
    throw fail(
      'not_ready',
      `not ready: storage ${storageOk ? 'ok' : 'down'}, keys ${services.keys.ready ? 'ok' : 'missing'}, shared state ${stateOk ? 'ok' : 'down'}`,
    );
  }
  return { state: services.state.kind };
}
