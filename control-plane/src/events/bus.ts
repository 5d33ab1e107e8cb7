import type { Stores } from '../storage/interface.js';
import type { DomainEvent } from './types.js';

/**
 * A subscriber runs inside the transaction of the change it observes, so a receipt is written
 * with the change or not at all. It may return a receipt hash.
 */
export type EventSubscriber = (tx: Stores, event: DomainEvent) => Promise<string | void> | string | void;

export class EventBus {
  private readonly subscribers: EventSubscriber[] = [];

  subscribe(subscriber: EventSubscriber): void {
    this.subscribers.push(subscriber);
  }

  /**
   * Records `event` within `tx`. Returns the receipt hash when a ledger is subscribed.
   * Call it inside `storage.transaction(...)` together with the writes it describes.
   */
  async record(tx: Stores, event: DomainEvent): Promise<{ receipt?: string }> {
    let receipt: string | undefined;
    for (const subscriber of this.subscribers) {
      const result = await subscriber(tx, event);
      if (typeof result === 'string' && receipt === undefined) receipt = result;
    }
    return receipt === undefined ? {} : { receipt };
  }
}
