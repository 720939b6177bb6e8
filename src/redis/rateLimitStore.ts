/**
 * `RedisRateLimitStore`: shared rate limits on Redis, the GCRA of `MemoryRateLimitStore`
 * (`src/core/rate-limit/rateLimitStore.ts`) in one Lua script, on Redis `TIME`.
 *
 * Keys: one hash tag per rate-limit key, `{ns:rl:<key>}` (`hashTag` in `./keys.ts`; `<key>`
 * and `<limit id>` each one key part, `keyPart`: `%`, `:` and braces escaped, so no two keys or
 * ids share a key), so a fleet's keys spread over a Redis Cluster's slots: `{ns:rl:<key>}` (node
 * → last reservation) and `{ns:rl:<key>}:<limit id>` (the limit's theoretical arrival time,
 * expiring when it is past). Every key the script touches comes in `KEYS`: one call, one slot.
 *
 * @module
 */
import { map, type Observable, type SchedulerLike } from 'rxjs';
import type { RateLimitAdjustment, RateLimitGrant, RateLimitRequest, RateLimitStore } from '../core/rate-limit/rateLimitStore.js';
import { scriptStore } from './breakerStore.js';
import { num, type RedisClientLike, type Script } from './client.js';
import { hashTag, keyPart } from './keys.js';

const RATE_LIMIT_SCRIPT = `
-- KEYS: the key's node set, then one key per limit (its theoretical arrival time), in ARGV's order
local op = ARGV[2]
local function tatOf(i) return math.max(tonumber(redis.call('GET', KEYS[i + 1])) or now, now) end
local function store(i, tat) redis.call('SET', KEYS[i + 1], tostring(tat), 'PX', math.max(1, math.ceil(tat - now) + 1)) end
if op == 'reserve' then
  local node, nodeTtl, maxWait, n = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), #KEYS - 1
  local nodes = KEYS[1]
  redis.call('ZADD', nodes, now, node)
  redis.call('ZREMRANGEBYSCORE', nodes, '-inf', now - nodeTtl)
  redis.call('PEXPIRE', nodes, nodeTtl)
  local live = redis.call('ZCARD', nodes)
  local wait, next = 0, {}
  for i = 1, n do
    local limit, period, cost = tonumber(ARGV[3 + i * 3]), tonumber(ARGV[4 + i * 3]), tonumber(ARGV[5 + i * 3])
    next[i] = tatOf(i) + cost * period / limit
    wait = math.max(wait, next[i] - period - now)
  end
  local granted = 0
  if wait <= maxWait then
    granted = 1
    for i = 1, n do store(i, next[i]) end
  end
  return {now, granted, math.ceil(wait), live}
end
-- every key read before the first write: a refusal midway (a slot mid-migration) has written nothing, so sending it again applies each delta once
local tats = {}
for i = 1, #KEYS - 1 do tats[i] = tatOf(i) end
for i = 1, #KEYS - 1 do
  local limit, period, delta, floor = tonumber(ARGV[i * 4 - 1]), tonumber(ARGV[i * 4]), tonumber(ARGV[i * 4 + 1]), ARGV[i * 4 + 2]
  local tat = math.max(now, tats[i] + delta * period / limit)
  if floor ~= '' then tat = math.max(tat, now + tonumber(floor)) end
  store(i, tat)
end
return {now, 1}
`;

/**
 * Options of {@link RedisRateLimitStore}.
 *
 * @example
 * ```ts
 * const options: RedisRateLimitStoreOptions = { client, namespace: 'agents-prod' };
 * ```
 */
export interface RedisRateLimitStoreOptions {
  /**
   * A client by shape ({@link RedisClientLike}): node-redis `createClient()` / `createCluster()`
   * (`disableOfflineQueue: true`), ioredis `Redis` / `Cluster` (`enableOfflineQueue: false`).
   */
  readonly client: RedisClientLike;
  /** Prefix (and Cluster hash tag, `{namespace}`: no `}` in it) of every key. Defaults to `'rxheal'`. */
  readonly namespace?: string;
  /** Bound on every call, in ms. Defaults to 100. */
  readonly timeoutMs?: number;
  /** A node that has not reserved for this long is not live, in whole ms (up to 2^31 − 1). Defaults to 60 000. */
  readonly nodeTtlMs?: number;
  /** The local clock, only to estimate Redis's for command deadlines. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

/**
 * Requests/min and tokens/min of a provider key, shared by every process through Redis. Give it
 * to `new RateLimiter({ store })`.
 *
 * @example
 * ```ts
 * import { RateLimiter, rateLimit } from 'rxheal';
 * import { RedisRateLimitStore } from 'rxheal/redis';
 *
 * const limiter = new RateLimiter({ name: 'openai:prod', tokensPerMinute: 30_000, store: new RedisRateLimitStore({ client }) });
 * const answer$ = streamModel(model, request).pipe(rateLimit(limiter, { cost: 1_200 }));
 * ```
 */
export class RedisRateLimitStore implements RateLimitStore {
  readonly timeoutMs: number;
  private readonly script: Script;
  private readonly namespace: string;
  private readonly nodeTtlMs: number;

  constructor(options: RedisRateLimitStoreOptions) {
    ({
      timeoutMs: this.timeoutMs,
      nodeTtlMs: this.nodeTtlMs,
      namespace: this.namespace,
      script: this.script,
    } = scriptStore('RedisRateLimitStore', options, RATE_LIMIT_SCRIPT, 100));
  }

  reserve(request: RateLimitRequest): Observable<RateLimitGrant> {
    const args = ['reserve', request.node, this.nodeTtlMs, request.maxWaitMs, ...request.limits.flatMap((l) => [l.limit, l.periodMs, l.cost])];
    return this.script
      .run(this.keys(request.key, request.limits), args)
      .pipe(map((r) => ({ granted: num(r[0]) === 1, waitMs: num(r[1]), liveNodes: num(r[2]) })));
  }

  adjust(adjustment: RateLimitAdjustment): Observable<true> {
    const args = ['adjust', ...adjustment.limits.flatMap((l) => [l.limit, l.periodMs, l.delta ?? 0, l.floorMs ?? ''])];
    return this.script.run(this.keys(adjustment.key, adjustment.limits), args).pipe(map(() => true as const));
  }

  /** A key's node set, then one key per limit, all under the key's own hash tag (the node set first: it routes the command). */
  private keys(key: string, limits: readonly { readonly id: string }[]): string[] {
    const tag = hashTag(this.namespace, 'rl', key);
    return [tag, ...limits.map((l) => `${tag}:${keyPart(l.id)}`)];
  }
}
