/**
 * `RedisSpendStore`: shared money limits on Redis, the {@link SpendStore} rule
 * (`src/core/money/spendStore.ts`) in one Lua script, on Redis `TIME`: whole nanodollars, fixed
 * windows aligned on Redis's clock, a reservation granted iff `used + nanos ≤ limitNanos`, an
 * adjustment `used = max(0, used + delta)` in the window it names.
 *
 * Keys: one hash tag per spend key, `{ns:sp:<key>}` (`hashTag` in `./keys.ts`; `<key>` one key
 * part, `keyPart`), so a fleet's keys spread over a Redis Cluster's slots: `{ns:sp:<key>}` (node →
 * last reservation) and `{ns:sp:<key>}:<windowMs>` (a hash: window start → `used`, integer
 * nanodollars, `HINCRBY`). The window a reservation goes to is Redis's `TIME` rounded down, known
 * only inside the script, while every key a script touches comes in `KEYS` (one call, one slot):
 * so the windows of one length share one key, and each is a field of it, kept until its end plus
 * {@link SPEND_KEEP_MS} (the hash expires then, `PEXPIRE` never shortened; a reservation drops the
 * fields past that).
 *
 * @module
 */
import { map, type Observable, type SchedulerLike } from 'rxjs';
import type { SpendAdjustment, SpendGrant, SpendRequest, SpendStore } from '../core/money/spendStore.js';
import { scriptStore } from './breakerStore.js';
import { num, type RedisClientLike, type Script } from './client.js';
import { hashTag } from './keys.js';

/**
 * How long a window's `used` is kept past the window's end, in ms: an adjustment of a window that
 * has just ended (a call settled after the window rolled over) still finds it.
 *
 * @example
 * ```ts
 * SPEND_KEEP_MS; // 60_000
 * ```
 */
export const SPEND_KEEP_MS = 60_000;

const SPEND_SCRIPT = `
-- KEYS: the key's node set, then its windows of length windowMs (a hash: window start -> used nanodollars)
local op, windows, windowMs, keep = ARGV[2], KEYS[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local function kept(window) return window + windowMs + keep - now end
-- the hash lives until its newest window's end plus the margin: an older window's adjustment never shortens it
local function keepUntil(window)
  local left = kept(window)
  if left > 0 and redis.call('PTTL', windows) < left then redis.call('PEXPIRE', windows, left) end
end
if op == 'reserve' then
  local node, nodeTtl, limit, nanos = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
  local window = now - now % windowMs
  local field = string.format('%.0f', window)
  -- read before the first write: a refusal midway (a slot mid-migration) wrote only the node's liveness
  local used = tonumber(redis.call('HGET', windows, field)) or 0
  local nodes = KEYS[1]
  redis.call('ZADD', nodes, now, node)
  redis.call('ZREMRANGEBYSCORE', nodes, '-inf', now - nodeTtl)
  redis.call('PEXPIRE', nodes, nodeTtl)
  local live = redis.call('ZCARD', nodes)
  if used + nanos > limit then return {now, 0, window, used, live} end
  used = redis.call('HINCRBY', windows, field, ARGV[8])
  keepUntil(window)
  if redis.call('HLEN', windows) > 1 then
    for _, f in ipairs(redis.call('HKEYS', windows)) do
      if kept(tonumber(f)) <= 0 then redis.call('HDEL', windows, f) end
    end
  end
  return {now, 1, window, used, live}
end
-- adjust: the named window, as far as it is kept (one past its keep has nothing to change)
local field, delta = ARGV[5], tonumber(ARGV[6])
local used = tonumber(redis.call('HGET', windows, field))
if used == nil and (delta <= 0 or kept(tonumber(field)) <= 0) then return {now, 1} end
used = used or 0
if used + delta <= 0 then redis.call('HSET', windows, field, '0') else redis.call('HINCRBY', windows, field, ARGV[6]) end
keepUntil(tonumber(field))
return {now, 1}
`;

/**
 * Options of {@link RedisSpendStore}.
 *
 * @example
 * ```ts
 * const options: RedisSpendStoreOptions = { client, namespace: 'agents-prod' };
 * ```
 */
export interface RedisSpendStoreOptions {
  /**
   * A client by shape ({@link RedisClientLike}): node-redis `createClient()` / `createCluster()` /
   * `createSentinel()` (`disableOfflineQueue: true`), ioredis `Redis` / `Cluster` (`enableOfflineQueue: false`).
   */
  readonly client: RedisClientLike;
  /** Prefix (and Cluster hash tag, `{namespace}`: no `}` in it) of every key. Defaults to `'rxheal'`. */
  readonly namespace?: string;
  /**
   * Bound on every call, in ms. Defaults to 250 — more than the breaker and rate-limit stores'
   * 100: a reservation comes before a model call of hundreds of ms, and an answer that misses the
   * bound is decided on the local share (see `SpendLimiter`), which a fleet's count sees only later.
   */
  readonly timeoutMs?: number;
  /** A node that has not reserved for this long is not live, in whole ms (up to 2^31 − 1). Defaults to 60 000. */
  readonly nodeTtlMs?: number;
  /** The local clock, only to estimate Redis's for command deadlines. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

/**
 * Dollar budgets shared by every process through Redis: each reservation is granted only while
 * the window's `used` stays within the limit, atomically (one Lua script), so a fleet never
 * reserves past it. Give it to a `SpendLimiter` (`store`), or call its protocol directly.
 *
 * @example
 * ```ts
 * import { createClient } from 'redis';
 * import { firstValueFrom } from 'rxjs';
 * import { RedisSpendStore } from 'rxheal/redis';
 *
 * const client = await createClient({ url: 'redis://127.0.0.1:6379', disableOfflineQueue: true }).on('error', () => {}).connect();
 * const store = new RedisSpendStore({ client });
 * // $1 per minute; hold a worst case of $0.03 (nanodollars), then settle at the $0.012 it cost
 * const grant = await firstValueFrom(store.reserve({ key: 'team:search', node: 'n1', windowMs: 60_000, limitNanos: 1e9, nanos: 30_000_000 }));
 * if (grant.granted) await firstValueFrom(store.adjust({ key: 'team:search', window: grant.window, windowMs: 60_000, deltaNanos: -18_000_000 }));
 * ```
 */
export class RedisSpendStore implements SpendStore {
  readonly timeoutMs: number;
  private readonly script: Script;
  private readonly namespace: string;
  private readonly nodeTtlMs: number;

  constructor(options: RedisSpendStoreOptions) {
    ({
      timeoutMs: this.timeoutMs,
      nodeTtlMs: this.nodeTtlMs,
      namespace: this.namespace,
      script: this.script,
    } = scriptStore('RedisSpendStore', options, SPEND_SCRIPT, 250));
  }

  reserve(request: SpendRequest): Observable<SpendGrant> {
    const args = ['reserve', request.windowMs, SPEND_KEEP_MS, request.node, this.nodeTtlMs, request.limitNanos, request.nanos];
    return this.script
      .run(this.keys(request.key, request.windowMs), args)
      .pipe(map((r) => ({ granted: num(r[0]) === 1, window: num(r[1]), usedNanos: num(r[2]), liveNodes: num(r[3]) })));
  }

  adjust(adjustment: SpendAdjustment): Observable<true> {
    const args = ['adjust', adjustment.windowMs, SPEND_KEEP_MS, adjustment.window, adjustment.deltaNanos];
    return this.script.run(this.keys(adjustment.key, adjustment.windowMs), args).pipe(map(() => true as const));
  }

  /** A key's node set, then its windows of this length, under the key's own hash tag (the node set first: it routes the command). */
  private keys(key: string, windowMs: number): string[] {
    const tag = hashTag(this.namespace, 'sp', key);
    return [tag, `${tag}:${windowMs}`];
  }
}
