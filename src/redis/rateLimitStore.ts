/**
 * `RedisRateLimitStore`: shared rate limits on Redis, the GCRA of `MemoryRateLimitStore`
 * (`src/core/rate-limit/rateLimitStore.ts`) in one Lua script, on Redis `TIME`.
 *
 * Keys (under the hash tag `{namespace}`; `<key>` and `<limit id>` each one key part, `keyPart` in
 * `./client.ts`: `%` and `:` escaped, so no two keys or ids share a key): `{ns}:rl:<key>` (node →
 * last reservation) and `{ns}:rl:<key>:<limit id>` (the limit's theoretical arrival time, expiring
 * when it is past).
 *
 * @module
 */
import { asyncScheduler, map, type Observable, type SchedulerLike } from 'rxjs';
import type { RateLimitAdjustment, RateLimitGrant, RateLimitRequest, RateLimitStore } from '../core/rate-limit/rateLimitStore.js';
import { validateOptions } from '../core/errors/options.js';
import { redisStoreProps } from './breakerStore.js';
import { hashTag, keyPart, num, Script, type RedisClientLike } from './client.js';

const RATE_LIMIT_SCRIPT = `
local op = ARGV[2]
local prefix = tag .. ':rl:' .. ARGV[3] .. ':'
local function tatOf(id) return math.max(tonumber(redis.call('GET', prefix .. id)) or now, now) end
local function store(id, tat) redis.call('SET', prefix .. id, tostring(tat), 'PX', math.max(1, math.ceil(tat - now) + 1)) end
if op == 'reserve' then
  local node, nodeTtl, maxWait, n = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
  local nodes = tag .. ':rl:' .. ARGV[3]
  redis.call('ZADD', nodes, now, node)
  redis.call('ZREMRANGEBYSCORE', nodes, '-inf', now - nodeTtl)
  redis.call('PEXPIRE', nodes, nodeTtl)
  local live = redis.call('ZCARD', nodes)
  local wait, next = 0, {}
  for i = 0, n - 1 do
    local id, limit, period, cost = ARGV[8 + i * 4], tonumber(ARGV[9 + i * 4]), tonumber(ARGV[10 + i * 4]), tonumber(ARGV[11 + i * 4])
    next[i] = tatOf(id) + cost * period / limit
    wait = math.max(wait, next[i] - period - now)
  end
  local granted = 0
  if wait <= maxWait then
    granted = 1
    for i = 0, n - 1 do store(ARGV[8 + i * 4], next[i]) end
  end
  return {now, granted, math.ceil(wait), live}
end
local n = tonumber(ARGV[4])
for i = 0, n - 1 do
  local id, limit, period, delta, floor = ARGV[5 + i * 5], tonumber(ARGV[6 + i * 5]), tonumber(ARGV[7 + i * 5]), tonumber(ARGV[8 + i * 5]), ARGV[9 + i * 5]
  local tat = math.max(now, tatOf(id) + delta * period / limit)
  if floor ~= '' then tat = math.max(tat, now + tonumber(floor)) end
  store(id, tat)
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
  /** A connected node-redis client (`disableOfflineQueue: true`). */
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
  private readonly tag: string;
  private readonly nodeTtlMs: number;

  constructor(options: RedisRateLimitStoreOptions) {
    const o = validateOptions('RedisRateLimitStore', redisStoreProps, options);
    if (o.client === undefined) throw new TypeError('RedisRateLimitStore: option "client" is required');
    this.timeoutMs = o.timeoutMs ?? 100;
    this.nodeTtlMs = o.nodeTtlMs ?? 60_000;
    this.tag = hashTag(o.namespace ?? 'rxheal');
    this.script = new Script(o.client, RATE_LIMIT_SCRIPT, o.scheduler ?? asyncScheduler, this.timeoutMs);
  }

  reserve(request: RateLimitRequest): Observable<RateLimitGrant> {
    const args = [request.node, this.nodeTtlMs, request.maxWaitMs, request.limits.length, ...request.limits.flatMap((l) => [keyPart(l.id), l.limit, l.periodMs, l.cost])];
    return this.script.run(this.tag, ['reserve', keyPart(request.key), ...args]).pipe(map((r) => ({ granted: num(r[0]) === 1, waitMs: num(r[1]), liveNodes: num(r[2]) })));
  }

  adjust(adjustment: RateLimitAdjustment): Observable<true> {
    const args = [adjustment.limits.length, ...adjustment.limits.flatMap((l) => [keyPart(l.id), l.limit, l.periodMs, l.delta ?? 0, l.floorMs ?? ''])];
    return this.script.run(this.tag, ['adjust', keyPart(adjustment.key), ...args]).pipe(map(() => true as const));
  }
}
