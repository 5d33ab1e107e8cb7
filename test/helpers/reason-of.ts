import { isKeyplaneError } from '#lib/errors/keyplane-error.js';

/**
 * The `reason` of the KeyplaneError `fn` throws; undefined when it returns, and
 * 'not a KeyplaneError' for any other throw, so a stray TypeError never passes for a refusal.
 */
export function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isKeyplaneError(error) ? error.reason : 'not a KeyplaneError';
  }
  return undefined;
}

/** The `reason` a promise rejects with, on the same terms as `reasonOf`. */
export async function rejectionReason(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return isKeyplaneError(error) ? error.reason : 'not a KeyplaneError';
  }
  return undefined;
}
