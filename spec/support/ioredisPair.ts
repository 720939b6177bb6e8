/**
 * ioredis clients for the Redis specs: one made ready (its `error` events swallowed — the store
 * guard reports them — and `ready` awaited), and a store's pair of them (a client and a
 * subscriber) with the close that disconnects both.
 */
import { once, type EventEmitter } from 'node:events';

/** What the specs need of an ioredis `Redis` or `Cluster`. */
type IoredisLike = EventEmitter & { disconnect(): void };

/** `client`, once it is ready (its errors swallowed). */
export async function ioredisReady<C extends IoredisLike>(client: C): Promise<C> {
  client.on('error', () => undefined);
  await once(client, 'ready');
  return client;
}

/** Two clients from `make` (a store's client and its subscriber), ready, and their close. */
export async function ioredisPair<C extends IoredisLike>(make: () => C): Promise<{ client: C; subscriber: C; close: () => Promise<void> }> {
  const client = await ioredisReady(make());
  const subscriber = await ioredisReady(make());
  return {
    client,
    subscriber,
    close: () => {
      client.disconnect();
      subscriber.disconnect();
      return Promise.resolve();
    },
  };
}
