import { Redis } from 'ioredis';

export const REDIS_URL = process.env['KEYPLANE_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

/**
 * Whether the real-Redis suites run. Without Redis they skip with a visible reason, except
 * under KEYPLANE_REQUIRE_ALL=1 (CI), where a missing Redis is a failure.
 */
export async function redisAvailability(): Promise<{ run: true } | { run: false; reason: string }> {
  const probe = new Redis(REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 1500,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  try {
    await probe.connect();
    await probe.ping();
    return { run: true };
  } catch (error) {
    const reason = `Redis at ${REDIS_URL} does not answer (${(error as Error).message})`;
    if (process.env['KEYPLANE_REQUIRE_ALL'] === '1')
      throw new Error(`${reason}, and KEYPLANE_REQUIRE_ALL=1 requires it`, { cause: error });
    return { run: false, reason };
  } finally {
    probe.disconnect();
  }
}
