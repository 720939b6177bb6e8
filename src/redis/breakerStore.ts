/**
 * `RedisBreakerStore`: the fleet's {@link BreakerStore} on Redis, following the rules of
 * `MemoryBreakerStore` (the reference model, `src/core/fleet/fleetStore.ts`) in one Lua script. Every
 * time is Redis `TIME`, read inside the script; deadlines leave as remaining ms. Changes are
 * published on `<namespace>:fleet`; nodes also poll every `pollMs`.
 *
 * Keys: one hash tag per breaker, `{ns:b:<name>}` (`hashTag` in `./keys.ts`; `<name>` the
 * breaker's name as one key part: `%`, `:` and braces escaped, so no two names share a key or a
 * tag), so a fleet's breakers spread over a Redis Cluster's slots: `{ns:b:<name>}` (a hash: `gen`,
 * `state`, `reason`, `until`, `lease_node`, `lease_until`), `{ns:b:<name>}:votes` and
 * `{ns:b:<name>}:nodes` (sorted sets of node → Redis time). Every key a script touches comes in
 * `KEYS`. A breaker's live nodes and generation live under its own tag, so each operation touches
 * one slot; a sync of many breakers is one command on one server, and one command per breaker on
 * a cluster (all sent at once: a client pipelines them to each master).
 *
 * @module
 */
import { asyncScheduler, forkJoin, map, type Observable, Subject, type SchedulerLike } from 'rxjs';
import {
  type BreakerStore,
  type FleetReason,
  type FleetState,
  type FleetVerdict,
  type ProbeLease,
  type Quorum,
  FLEET_NODE,
  registerFleetNode,
  type FleetNode,
} from '../core/breaker/fleetSeam.js';
import { NonEmptyString, PositiveIntegerMs, PositiveNumber, Scheduler, check, validateOptions } from '../core/errors/options.js';
import { fleetNode } from '../core/fleet/fleet.js';
import {
  clientOption,
  isSubscriber,
  listenerSubscriber,
  num,
  Script,
  type RedisClientLike,
  type ChannelSubscriber,
  type RedisSubscriberLike,
} from './client.js';
import { hashTag } from './keys.js';

const BREAKER_SCRIPT = `
local channel = ARGV[2]
local nodeTtl = tonumber(ARGV[3])
local op = ARGV[4]
local node = ARGV[5]
-- every key comes in KEYS: a breaker's verdict (a hash), its votes and its live nodes (sorted sets)
local function verdict(hash)
  local h = redis.call('HMGET', hash, 'gen', 'state', 'reason', 'until', 'lease_node', 'lease_until')
  local state = h[2] or 'closed'
  local remaining = 0
  if state == 'isolated' then remaining = -1 elseif state == 'open' then remaining = math.max(0, (tonumber(h[4]) or 0) - now) end
  local lease = -1
  local leaseUntil = tonumber(h[6])
  if h[5] and leaseUntil and leaseUntil > now then lease = leaseUntil - now end
  return {tonumber(h[1]) or 0, state, h[3] or 'none', remaining, lease}
end
local function live(nodes)
  redis.call('ZADD', nodes, now, node)
  if nodeTtl > 0 then
    redis.call('ZREMRANGEBYSCORE', nodes, '-inf', now - nodeTtl)
    redis.call('PEXPIRE', nodes, nodeTtl)
  end
  return redis.call('ZCARD', nodes)
end
if op == 'sync' then
  -- KEYS: each breaker's verdict and node set, in turn
  local r = {now}
  for i = 1, #KEYS, 2 do
    live(KEYS[i + 1])
    local v = verdict(KEYS[i])
    for j = 1, 5 do r[#r + 1] = v[j] end
  end
  return r
end
-- one breaker: KEYS its verdict, votes and node set; ARGV[6] its name as published
local hash, votes, nodes, name = KEYS[1], KEYS[2], KEYS[3], ARGV[6]
local function change(state, reason, untilT)
  local gen = math.max((tonumber(redis.call('HGET', hash, 'gen')) or 0) + 1, now)
  redis.call('HSET', hash, 'gen', gen, 'state', state, 'reason', reason, 'until', untilT)
  redis.call('HDEL', hash, 'lease_node', 'lease_until')
  local v = verdict(hash)
  redis.call('PUBLISH', channel, cjson.encode({name = name, generation = v[1], state = v[2], reason = v[3], remainingMs = v[4]}))
end
local function out(v, extra)
  local r = {now}
  if extra ~= nil then r[#r + 1] = extra end
  for i = 1, 5 do r[#r + 1] = v[i] end
  return r
end
local h = redis.call('HMGET', hash, 'state', 'until', 'lease_node', 'lease_until')
local state = h[1] or 'closed'
local untilT = tonumber(h[2]) or 0
if op == 'vote' then
  local minNodes, minFraction, windowMs, openMs = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
  local n = live(nodes)
  redis.call('ZADD', votes, now, node)
  redis.call('ZREMRANGEBYSCORE', votes, '-inf', now - windowMs)
  redis.call('PEXPIRE', votes, windowMs)
  -- a stale open verdict (its period over, no probe under a live lease) counts as closed
  local stale = state == 'open' and now >= untilT and ((not h[3]) or now >= (tonumber(h[4]) or 0))
  if (state == 'closed' or stale) and redis.call('ZCARD', votes) >= math.max(minNodes, math.ceil(minFraction * n)) then
    redis.call('DEL', votes)
    change('open', 'quorum', now + openMs)
  end
elseif op == 'fact' then
  local openMs = tonumber(ARGV[7])
  live(nodes)
  if state ~= 'isolated' and not (state == 'open' and untilT >= now + openMs) then change('open', 'rate_limit', now + openMs) end
elseif op == 'acquire' then
  local leaseMs = tonumber(ARGV[7])
  local granted = 0
  local leaseUntil = tonumber(h[4]) or 0
  if state == 'open' and now >= untilT and ((not h[3]) or h[3] == node or now >= leaseUntil) then
    redis.call('HSET', hash, 'lease_node', node, 'lease_until', now + leaseMs)
    granted = 1
  end
  return out(verdict(hash), granted)
elseif op == 'result' then
  local success, openMs = ARGV[7] == '1', tonumber(ARGV[8])
  if state == 'open' and h[3] == node then
    if success then
      redis.call('DEL', votes)
      change('closed', 'probe_success', 0)
    else
      change('open', 'probe_failure', math.max(untilT, now + openMs))
    end
  end
elseif op == 'isolate' then
  if state ~= 'isolated' then change('isolated', 'isolated', 0) end
elseif op == 'reset' then
  redis.call('DEL', votes)
  change('closed', 'reset', 0)
end
return out(verdict(hash))
`;

/**
 * Options of {@link RedisBreakerStore}.
 *
 * @example
 * ```ts
 * const options: RedisBreakerStoreOptions = { client, subscriber, namespace: 'agents-prod', pollMs: 1000 };
 * ```
 */
export interface RedisBreakerStoreOptions {
  /**
   * A client by shape ({@link RedisClientLike}): node-redis `createClient()` / `createCluster()`
   * (`disableOfflineQueue: true`), ioredis `Redis` / `Cluster` (`enableOfflineQueue: false`).
   */
  readonly client: RedisClientLike;
  /**
   * A second connection for pub/sub (node-redis `client.duplicate()`, connected; or an ioredis
   * `Redis` / `Cluster`). Without it, changes arrive by the poll only.
   */
  readonly subscriber?: RedisSubscriberLike;
  /** Prefix (and Cluster hash tag, `{namespace}`: no `}` in it) of every key and of the channel. Defaults to `'rxheal'`. */
  readonly namespace?: string;
  /** Bound on every store call of a node, in ms. Defaults to 100. */
  readonly timeoutMs?: number;
  /** How often nodes re-read every verdict (the backstop for missed messages). Defaults to 1000. */
  readonly pollMs?: number;
  /** A node that has not synced for this long is not live, in whole ms (up to 2^31 − 1). Defaults to 3 × `pollMs`, rounded up. */
  readonly nodeTtlMs?: number;
  /** The local clock, only to estimate Redis's for command deadlines. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

/** The client's own check is `clientOption` (it names what a client lacks); here, any value passes. */
const RedisClient = check('a Redis client', (_client: unknown): _client is RedisClientLike => true);
const RedisSubscriber = check(
  'a Redis subscriber connection: node-redis (subscribe(channel, listener), unsubscribe) or ioredis (call, subscribe, unsubscribe, on, off)',
  isSubscriber,
);

/** A namespace: the keys' Cluster hash tag is `{namespace}`, so a `}` would make it empty or cut it short. */
const Namespace = check(
  'a non-empty string without "}" (the keys\' Cluster hash tag is {namespace})',
  (u): u is string => NonEmptyString.is(u) && !u.includes('}'),
);

/** Option checks shared by both Redis stores (`nodeTtlMs` in whole ms: the scripts pass it to PEXPIRE). */
export const redisStoreProps = { client: RedisClient, namespace: Namespace, timeoutMs: PositiveNumber, nodeTtlMs: PositiveIntegerMs, scheduler: Scheduler };
const props = { ...redisStoreProps, subscriber: RedisSubscriber, pollMs: PositiveNumber };

/**
 * What a store that runs one Lua script per operation is made of (`RedisRateLimitStore`,
 * `RedisSpendStore`): its options checked ({@link redisStoreProps}, an `InvalidOptionError` naming
 * `target`), the client's commands with `body` on them, and the defaults — `timeoutMs` the store's
 * own, `nodeTtlMs` 60 000, `namespace` `'rxheal'`.
 *
 * @example
 * ```ts
 * const { timeoutMs, nodeTtlMs, namespace, script } = scriptStore('RedisSpendStore', options, SPEND_SCRIPT, 250);
 * ```
 */
export function scriptStore(
  target: string,
  options: {
    readonly client: RedisClientLike;
    readonly namespace?: string;
    readonly timeoutMs?: number;
    readonly nodeTtlMs?: number;
    readonly scheduler?: SchedulerLike;
  },
  body: string,
  defaultTimeoutMs: number,
): { timeoutMs: number; nodeTtlMs: number; namespace: string; script: Script } {
  const o = validateOptions(target, redisStoreProps, options);
  const timeoutMs = o.timeoutMs ?? defaultTimeoutMs;
  const script = new Script(clientOption(target, o.client), body, o.scheduler ?? asyncScheduler, timeoutMs);
  return { timeoutMs, nodeTtlMs: o.nodeTtlMs ?? 60_000, namespace: o.namespace ?? 'rxheal', script };
}

const STATES: readonly FleetState[] = ['closed', 'open', 'isolated'];
const REASONS: readonly FleetReason[] = ['none', 'quorum', 'rate_limit', 'probe_failure', 'probe_success', 'isolated', 'reset'];

/** A verdict from 5 reply fields: generation, state, reason, remaining (-1: Infinity), lease remaining (-1: none). */
function verdictOf(name: string, f: readonly unknown[]): FleetVerdict {
  const state = f[1] as FleetState;
  const reason = f[2] as FleetReason;
  if (!STATES.includes(state) || !REASONS.includes(reason)) throw new Error(`unexpected verdict from Redis: ${JSON.stringify(f)}`);
  const remaining = num(f[3]);
  const lease = f[4] === undefined ? -1 : num(f[4]);
  const base = { name, generation: num(f[0]), state, reason, remainingMs: remaining < 0 ? Infinity : remaining };
  return lease >= 0 ? { ...base, leaseRemainingMs: lease } : base;
}

/**
 * The fleet's breaker store on Redis (≥ 5; Valkey works too). Give it to the `fleet` option of
 * `CircuitBreakerRegistry` or `CircuitBreaker`; `close()` it before closing the client.
 *
 * @example
 * ```ts
 * import { createClient } from 'redis';
 * import { CircuitBreakerRegistry } from 'rxheal';
 * import { RedisBreakerStore } from 'rxheal/redis';
 *
 * const client = await createClient({ url: 'redis://127.0.0.1:6379', disableOfflineQueue: true }).on('error', () => {}).connect();
 * const subscriber = await client.duplicate().on('error', () => {}).connect();
 * const store = new RedisBreakerStore({ client, subscriber });
 * const breakers = new CircuitBreakerRegistry({ fleet: { store, quorum: { minNodes: 2 } } });
 * ```
 */
export class RedisBreakerStore implements BreakerStore {
  /** The fleet's node logic, which breakers given this store run. */
  // set in the constructor: a computed class field would keep the class (and the fleet code) in every bundle
  declare readonly [FLEET_NODE]: FleetNode;
  readonly timeoutMs: number;
  readonly pollMs: number;
  readonly changes$: Observable<FleetVerdict>;
  readonly resync$: Observable<void>;
  private readonly subject = new Subject<FleetVerdict>();
  private readonly resync = new Subject<void>();
  private readonly script: Script;
  private readonly namespace: string;
  private readonly channel: string;
  private readonly nodeTtlMs: number;
  private readonly subscriber: ChannelSubscriber | undefined;
  /** A cluster client: a script call may touch one slot, so a sync goes breaker by breaker. */
  private readonly cluster: boolean;
  private readonly listener = (message: string): void => this.onMessage(message);
  private readonly onReady = (): void => {
    if (!this.subscribed) this.subscribe();
    this.resync.next();
  };
  private closed = false;
  private subscribed = false;

  constructor(options: RedisBreakerStoreOptions) {
    const o = validateOptions('RedisBreakerStore', props, options);
    const commands = clientOption('RedisBreakerStore', o.client);
    (this as { [FLEET_NODE]: FleetNode })[FLEET_NODE] = fleetNode;
    registerFleetNode(fleetNode);
    const namespace = o.namespace ?? 'rxheal';
    this.timeoutMs = o.timeoutMs ?? 100;
    this.pollMs = o.pollMs ?? 1000;
    // whole ms (PEXPIRE), whatever pollMs is
    this.nodeTtlMs = o.nodeTtlMs ?? Math.min(Math.ceil(3 * this.pollMs), 2 ** 31 - 1);
    this.namespace = namespace;
    this.channel = `${namespace}:fleet`;
    this.cluster = commands.cluster;
    this.script = new Script(commands, BREAKER_SCRIPT, o.scheduler ?? asyncScheduler, this.timeoutMs);
    this.changes$ = this.subject.asObservable();
    this.resync$ = this.resync.asObservable();
    this.subscriber = o.subscriber === undefined ? undefined : listenerSubscriber(o.subscriber);
    if (this.subscriber) {
      this.subscriber.on?.('ready', this.onReady);
      this.subscribe();
    }
  }

  /** SUBSCRIBE; if it fails (Redis down now), the poll carries on and the next `ready` tries again (node-redis re-subscribes by itself after that). */
  private subscribe(): void {
    this.subscriber?.subscribe(this.channel, this.listener).then(
      () => (this.subscribed = !this.closed),
      () => undefined,
    );
  }

  /** Stops listening (`changes$` completes, nodes stop polling). Does not close the clients. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.subject.complete();
    this.resync.complete();
    if (this.subscriber) {
      this.subscriber.off?.('ready', this.onReady);
      await this.subscriber.unsubscribe(this.channel, this.listener).catch(() => undefined);
    }
  }

  sync(node: string, names: readonly string[]): Observable<readonly FleetVerdict[]> {
    const syncOf = (batch: readonly string[]): Observable<FleetVerdict[]> =>
      this.run(
        batch.flatMap((name) => this.keys(name).filter((_, i) => i !== 1)),
        'sync',
        node,
        [],
      ).pipe(map((r) => batch.map((name, i) => verdictOf(name, r.slice(i * 5, i * 5 + 5)))));
    // one server: one command for every breaker; a cluster: one per breaker (each its own slot), sent at once
    if (!this.cluster || names.length <= 1) return syncOf(names);
    return forkJoin(names.map((name) => syncOf([name]))).pipe(map((batches) => batches.flat()));
  }

  vote(node: string, name: string, quorum: Quorum, openMs: number): Observable<FleetVerdict> {
    return this.verdict(name, this.call('vote', node, name, [quorum.minNodes, quorum.minFraction, quorum.windowMs, openMs]));
  }

  fact(node: string, name: string, openMs: number): Observable<FleetVerdict> {
    return this.verdict(name, this.call('fact', node, name, [openMs]));
  }

  acquireProbe(node: string, name: string, leaseMs: number): Observable<ProbeLease> {
    return this.call('acquire', node, name, [leaseMs]).pipe(map((r) => ({ granted: num(r[0]) === 1, verdict: verdictOf(name, r.slice(1)) })));
  }

  probeResult(node: string, name: string, success: boolean, openMs: number): Observable<FleetVerdict> {
    return this.verdict(name, this.call('result', node, name, [success ? 1 : 0, openMs]));
  }

  isolate(node: string, name: string): Observable<FleetVerdict> {
    return this.verdict(name, this.call('isolate', node, name, []));
  }

  reset(node: string, name: string): Observable<FleetVerdict> {
    return this.verdict(name, this.call('reset', node, name, []));
  }

  /** A breaker's keys, all under its own hash tag: its verdict (a hash), its votes and its live nodes. */
  private keys(name: string): [string, string, string] {
    const tag = hashTag(this.namespace, 'b', name);
    return [tag, `${tag}:votes`, `${tag}:nodes`];
  }

  /** One breaker's operation: its three keys, its name (as published), the operation's arguments. */
  private call(op: string, node: string, name: string, args: readonly (string | number)[]): Observable<unknown[]> {
    return this.run(this.keys(name), op, node, [name, ...args]);
  }

  private run(keys: readonly string[], op: string, node: string, args: readonly (string | number)[]): Observable<unknown[]> {
    return this.script.run(keys, [this.channel, Number.isFinite(this.nodeTtlMs) ? this.nodeTtlMs : 0, op, node, ...args]);
  }

  private verdict(name: string, reply$: Observable<unknown[]>): Observable<FleetVerdict> {
    return reply$.pipe(map((r) => verdictOf(name, r)));
  }

  private onMessage(message: string): void {
    let v: unknown;
    try {
      v = JSON.parse(message);
    } catch {
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    const m = v as Record<string, unknown>;
    if (typeof m['name'] !== 'string') return;
    try {
      this.subject.next(verdictOf(m['name'], [m['generation'], m['state'], m['reason'], m['remainingMs']]));
    } catch {
      // a malformed message is dropped: the poll brings the truth
    }
  }
}
