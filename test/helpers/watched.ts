import type { DomainEvent } from '../../control-plane/src/events/types.js';
import { manualClock, type BuildOptions } from './build.js';
import { buildSignedIn } from './signed-in.js';
import { readOutbox } from './smtp.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

type Clock = ReturnType<typeof manualClock>;

/**
 * `buildSignedIn` on a manual clock, with every domain event recorded in `events` and
 * `mails()` reading the dev outbox once the mailer has sent what it queued.
 * `options` gets the clock, so a shared state can run on the same time.
 */
export async function buildWatched(t: Tap, options: (clock: Clock) => Omit<BuildOptions, 'now'> = () => ({})) {
  const clock = manualClock();
  const built = await buildSignedIn(t, { ...options(clock), now: clock.now });
  const events: DomainEvent[] = [];
  built.services.events.subscribe((_tx, event) => void events.push(event));
  const mails = async () => {
    await built.services.mailer.idle();
    return readOutbox(built.config.dataDir);
  };
  return { ...built, clock, events, mails };
}
