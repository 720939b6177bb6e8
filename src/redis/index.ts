/**
 * `rxheal/redis`: fleet stores on Redis (≥ 5, or Valkey) — breaker verdicts, the one prober and
 * provider facts ({@link RedisBreakerStore}), shared rate limits ({@link RedisRateLimitStore}) and
 * shared dollar budgets ({@link RedisSpendStore}), each in one Lua script on Redis time, one hash
 * tag per breaker, per rate-limit key and per spend key (Redis Cluster ready). Clients by shape
 * ({@link RedisClientLike}): node-redis (`redis` ≥ 5, an optional peer dependency)
 * `createClient()` or `createCluster()`, or ioredis 5 `Redis` or `Cluster`. See marble-docs/fleet.md.
 *
 * @example
 * ```ts
 * import { createClient } from 'redis';
 * import { CircuitBreakerRegistry, RateLimiter } from 'rxheal';
 * import { RedisBreakerStore, RedisRateLimitStore } from 'rxheal/redis';
 *
 * const client = await createClient({ url: 'redis://127.0.0.1:6379', disableOfflineQueue: true }).on('error', () => {}).connect();
 * const subscriber = await client.duplicate().on('error', () => {}).connect();
 * const breakers = new CircuitBreakerRegistry({ fleet: { store: new RedisBreakerStore({ client, subscriber }), quorum: { minNodes: 2 } } });
 * const limiter = new RateLimiter({ name: 'openai:prod', tokensPerMinute: 30_000, store: new RedisRateLimitStore({ client }) });
 * ```
 *
 * @module
 */
export { RedisBreakerStore } from './breakerStore.js';
export type { RedisBreakerStoreOptions } from './breakerStore.js';
export { RedisRateLimitStore } from './rateLimitStore.js';
export type { RedisRateLimitStoreOptions } from './rateLimitStore.js';
export { RedisSpendStore, SPEND_KEEP_MS } from './spendStore.js';
export type { RedisSpendStoreOptions } from './spendStore.js';
export { redisJournal } from './journalStore.js';
export type { RedisJournalOptions } from './journalStore.js';
export { ExpiredCommandError } from './client.js';
export type {
  RedisCallClient,
  RedisCallSubscriber,
  RedisClientLike,
  RedisClusterSendCommandClient,
  RedisListenerSubscriber,
  RedisSendCommandClient,
  RedisSentinelSendCommandClient,
  RedisSubscriberLike,
} from './client.js';
