/**
 * What the Redis stores need of a client, and how they run their Lua scripts: `EVALSHA` with
 * `EVAL` when the script cache was lost (a restart), the server's clock read from every reply
 * (each script returns Redis `TIME`; on a cluster, each master's clock from its own replies), and a deadline on every command in server time — from the
 * first one on: before any reply, a probe of the clock goes first — so a command that reaches
 * Redis after its caller gave up (a stalled server, `CLIENT PAUSE`) changes nothing.
 *
 * @module
 */
// Node-only module (node-redis is Node-only): the library's build has no ambient Node types
/// <reference types="node" />
import { createHash } from 'node:crypto';
import { Observable, type SchedulerLike } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import { after } from '../core/rx/wait.js';
import { keySlot } from './keys.js';

/**
 * node-redis's single client (`createClient()`, v5 or v6): one command as an array of strings.
 *
 * @example
 * ```ts
 * const client: RedisSendCommandClient = await createClient({ url: 'redis://127.0.0.1:6379', disableOfflineQueue: true }).on('error', () => {}).connect();
 * ```
 */
export interface RedisSendCommandClient {
  /** Sends one command (`['EVALSHA', sha, …]`) and resolves with its reply. */
  sendCommand(args: string[]): Promise<unknown>;
}

/**
 * node-redis's cluster client (`createCluster()`, v5 or v6): a command goes to the master of its
 * first key's slot, following `MOVED` and `ASK` itself. Told apart from a single client by
 * `getSlotMaster`, which only the cluster client has.
 *
 * @example
 * ```ts
 * const client: RedisClusterSendCommandClient = await createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }).on('error', () => {}).connect();
 * ```
 */
export interface RedisClusterSendCommandClient {
  /** Sends one command to the master of `firstKey`'s slot and resolves with its reply. */
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  /** The master of a slot (only the cluster client has it: how the stores know they talk to a cluster). */
  getSlotMaster(slot: number): unknown;
}

/**
 * node-redis's Sentinel client (`createSentinel()`, v5 or v6): a command goes to the primary the
 * sentinels name (`isReadonly` false), following a failover itself. Told apart by
 * `getMasterNode`, which only the Sentinel client has.
 *
 * @example
 * ```ts
 * const client: RedisSentinelSendCommandClient = await createSentinel({ name: 'mymaster', sentinelRootNodes: [{ host: '127.0.0.1', port: 26379 }] })
 *   .on('error', () => {})
 *   .connect();
 * ```
 */
export interface RedisSentinelSendCommandClient {
  /** Sends one command to the primary (`isReadonly` false) and resolves with its reply. */
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  /** The primary the sentinels name (only the Sentinel client has it: how the stores know it is one). */
  getMasterNode(): unknown;
}

/**
 * ioredis 5 (`new Redis()`, `new Cluster()`): a command by name and arguments. Its
 * `sendCommand` takes an ioredis `Command` object, not arguments: the stores use `call`.
 * `isCluster` (true for a `Cluster`) tells the two apart.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const client: RedisCallClient = new Redis('redis://127.0.0.1:6379', { enableOfflineQueue: false });
 * ```
 */
export interface RedisCallClient {
  /** Sends `command` with `args` and resolves with its reply. */
  call(command: string, args: string[]): Promise<unknown>;
  /** True for an ioredis `Cluster`. */
  readonly isCluster?: boolean;
}

/**
 * The client the Redis stores use, told apart by shape: node-redis's `createClient()`
 * ({@link RedisSendCommandClient}), `createCluster()` ({@link RedisClusterSendCommandClient}) or
 * `createSentinel()` ({@link RedisSentinelSendCommandClient}), or ioredis's `Redis` (with or
 * without `sentinels`) or `Cluster` ({@link RedisCallClient}), each as it is. A client of none of
 * these shapes is refused at construction, the error naming what it lacks. Create it without an
 * offline queue (node-redis `disableOfflineQueue: true`, ioredis `enableOfflineQueue: false`), so
 * a command sent while Redis is unreachable fails at once instead of waiting in memory, and give it
 * an `error` listener.
 *
 * @example
 * ```ts
 * import { createClient } from 'redis';
 * const client: RedisClientLike = await createClient({ url: 'redis://127.0.0.1:6379', disableOfflineQueue: true }).on('error', () => {}).connect();
 * ```
 */
export type RedisClientLike = RedisSendCommandClient | RedisClusterSendCommandClient | RedisSentinelSendCommandClient | RedisCallClient;

/** What the stores need of a client, whatever its shape: where a command goes, and how. */
export interface Commands {
  /** A cluster client: one script call may only touch one slot. */
  readonly cluster: boolean;
  /** Sends `args` (`[name, …]`); `firstKey` routes it on a cluster. */
  send(firstKey: string | undefined, args: readonly string[]): Promise<unknown>;
  /**
   * The server a command with this first key goes to now, as the client routes it (a cluster's
   * master of the key's slot: its `host:port`, or the slot when the client does not say): each
   * has its own clock. Absent: one server (or a Sentinel's primary), one clock.
   */
  server?(firstKey: string | undefined): string;
}

const isFunction = (u: unknown): boolean => typeof u === 'function';
const field = (u: unknown, key: string): unknown =>
  (typeof u === 'object' || typeof u === 'function') && u !== null ? (u as Record<string, unknown>)[key] : undefined;

/**
 * Why `client` cannot be the stores' client (what it lacks), or undefined when it can: the one
 * check both stores' constructors make.
 *
 * @example
 * ```ts
 * clientProblem({}); // 'a Redis client: … (it has neither sendCommand nor call)'
 * ```
 */
export function clientProblem(client: unknown): string | undefined {
  const shapes = 'a Redis client: node-redis createClient(), createCluster() or createSentinel() (sendCommand), or ioredis 5 Redis or Cluster (call)';
  if (isFunction(field(client, 'call'))) return undefined;
  // ioredis before 5 has sendCommand(Command) and no call(): every command would throw
  if (isFunction(field(client, 'defineCommand')))
    return `${shapes} (it looks like ioredis, whose sendCommand takes a Command object, and has no call(): ioredis 5 or later)`;
  if (isFunction(field(client, 'sendCommand'))) return undefined;
  return `${shapes} (it has neither sendCommand nor call)`;
}

/**
 * The `client` option of a store as {@link Commands}: refused, naming the option and what the
 * client lacks, when it is missing or of no shape the stores can use.
 *
 * @throws {InvalidOptionError} naming `client`.
 * @example
 * ```ts
 * const commands = clientOption('RedisBreakerStore', options.client);
 * ```
 */
export function clientOption(target: string, client: unknown): Commands {
  const problem = client === undefined ? 'a Redis client (it is required)' : clientProblem(client);
  if (problem !== undefined) throw new InvalidOptionError(target, 'client', client, problem);
  return commandsOf(client as RedisClientLike);
}

/**
 * The stores' view of a client that passed {@link clientProblem}.
 *
 * @example
 * ```ts
 * const commands = commandsOf(client);
 * await commands.send('{rxheal:b:model}', ['PING']);
 * ```
 */
export function commandsOf(client: RedisClientLike): Commands {
  if (isFunction(field(client, 'call'))) {
    const c = client as RedisCallClient;
    const send: Commands['send'] = (_firstKey, [command, ...args]) => c.call(command!, args);
    // ioredis's Cluster: `slots[slot]` lists the slot's nodes, its master first (`host:port`)
    return c.isCluster === true
      ? {
          cluster: true,
          send,
          server: masterBy(
            (slot) => field(field(c, 'slots'), String(slot)),
            (nodes) => field(nodes, '0'),
          ),
        }
      : { cluster: false, send };
  }
  if (isFunction(field(client, 'getSlotMaster'))) {
    const c = client as RedisClusterSendCommandClient;
    return {
      cluster: true,
      send: (firstKey, args) => c.sendCommand(firstKey, false, [...args]),
      server: masterBy(
        (slot) => c.getSlotMaster(slot),
        (master) => field(master, 'address'),
      ),
    };
  }
  if (isFunction(field(client, 'getMasterNode'))) {
    const c = client as RedisSentinelSendCommandClient;
    return { cluster: false, send: (_firstKey, args) => c.sendCommand(false, [...args]) };
  }
  const c = client as RedisSendCommandClient;
  return { cluster: false, send: (_firstKey, args) => c.sendCommand([...args]) };
}

/**
 * A cluster client's {@link Commands.server}: the master of a key's slot, by the client's map of
 * slots (`nodesOf(slot)`, then its `host:port`, `addressOf`) — or the slot itself while the client
 * has no map (before its first connection): a name that is never a master's.
 */
function masterBy(nodesOf: (slot: number) => unknown, addressOf: (nodes: unknown) => unknown): (firstKey: string | undefined) => string {
  return (firstKey) => {
    const slot = keySlot(firstKey ?? '');
    let address: unknown;
    try {
      address = addressOf(nodesOf(slot));
    } catch {
      address = undefined;
    }
    return typeof address === 'string' ? address : `slot ${slot}`;
  };
}

/**
 * A connection in subscriber mode, for the fleet's pub/sub channel: node-redis's
 * `client.duplicate()` (or a cluster's), connected — `subscribe(channel, listener)`. Optional:
 * without one, changes arrive by the poll only. An ioredis connection fits too
 * ({@link RedisCallSubscriber}).
 *
 * @example
 * ```ts
 * const subscriber: RedisSubscriberLike = await client.duplicate().on('error', () => {}).connect();
 * ```
 */
export interface RedisListenerSubscriber {
  subscribe(channel: string, listener: (message: string, channel: string) => unknown): Promise<unknown>;
  /**
   * Called with the channel and the listener given to `subscribe` (the listener left untyped here:
   * node-redis's cluster client types it as a generic over Buffers and strings).
   */
  unsubscribe(channel: string, ...listener: never[]): Promise<unknown>;
  /** node-redis emits `ready` on every (re)connection: the store re-syncs then. */
  on?(event: 'ready', listener: () => void): unknown;
  off?(event: 'ready', listener: () => void): unknown;
}

/**
 * An ioredis connection (`Redis` or `Cluster`) for the fleet's channel: `subscribe(channel)`, its
 * messages as `message` events (ioredis's `subscribe` callback is not a listener: it is called
 * once, when subscribed). ioredis re-subscribes after a reconnection and emits `ready`: the store
 * re-syncs then.
 *
 * @example
 * ```ts
 * const subscriber: RedisCallSubscriber = new Redis('redis://127.0.0.1:6379');
 * ```
 */
export interface RedisCallSubscriber {
  /** How an ioredis connection is told apart from a node-redis one. */
  call(command: string, args: string[]): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
  off(event: 'message', listener: (channel: string, message: string) => void): unknown;
  off(event: 'ready', listener: () => void): unknown;
}

/**
 * The fleet's subscriber connection: node-redis's ({@link RedisListenerSubscriber}) or ioredis's
 * ({@link RedisCallSubscriber}), told apart by `call`.
 *
 * @example
 * ```ts
 * const subscriber: RedisSubscriberLike = await client.duplicate().on('error', () => {}).connect();
 * ```
 */
export type RedisSubscriberLike = RedisListenerSubscriber | RedisCallSubscriber;

/**
 * Whether `u` can be the subscriber connection: the check of the `subscriber` option.
 *
 * @example
 * ```ts
 * isSubscriber(await client.duplicate().connect()); // true
 * ```
 */
export function isSubscriber(u: unknown): u is RedisSubscriberLike {
  if (!isFunction(field(u, 'subscribe')) || !isFunction(field(u, 'unsubscribe'))) return false;
  return !isFunction(field(u, 'call')) || (isFunction(field(u, 'on')) && isFunction(field(u, 'off')));
}

/** A channel listener, as the stores give one to a subscriber. */
type ChannelListener = (message: string, channel: string) => unknown;

/** What the stores do with a subscriber connection, whatever its shape. */
export interface ChannelSubscriber {
  subscribe(channel: string, listener: ChannelListener): Promise<unknown>;
  unsubscribe(channel: string, listener: ChannelListener): Promise<unknown>;
  on?(event: 'ready', listener: () => void): unknown;
  off?(event: 'ready', listener: () => void): unknown;
}

/**
 * Any subscriber connection as node-redis's shape: an ioredis one gets its `message` events
 * filtered by channel and passed to the listener.
 *
 * @example
 * ```ts
 * const sub = listenerSubscriber(subscriber);
 * await sub.subscribe('rxheal:fleet', (message) => console.log(message));
 * ```
 */
export function listenerSubscriber(subscriber: RedisSubscriberLike): ChannelSubscriber {
  if (!isFunction(field(subscriber, 'call'))) return subscriber as unknown as ChannelSubscriber;
  const s = subscriber as RedisCallSubscriber;
  const handlers = new Map<ChannelListener, (channel: string, message: string) => void>();
  return {
    subscribe: async (channel, listener) => {
      await s.subscribe(channel);
      if (handlers.has(listener)) return;
      const handler = (ch: string, message: string): void => void (ch === channel && listener(message, ch));
      handlers.set(listener, handler);
      s.on('message', handler);
    },
    unsubscribe: async (channel, listener) => {
      const handler = handlers.get(listener);
      if (handler) s.off('message', handler);
      handlers.delete(listener);
      await s.unsubscribe(channel);
    },
    on: (event, listener) => s.on(event, listener),
    off: (event, listener) => s.off(event, listener),
  };
}

/** The prelude every script starts with: Redis time, the caller's deadline. Keys come in `KEYS` only. */
const PRELUDE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(ARGV[1])
if now > deadline then return {now, 'expired'} end
`;

/**
 * A command that reached Redis after its caller's deadline: it had no effect. Node-side, it is
 * one more store failure (the node decides alone); it never reaches a user's call.
 *
 * @example
 * ```ts
 * store.fact('node-a', 'model:gpt-4o', 60_000).subscribe({ error: (e) => e instanceof ExpiredCommandError && console.log('too late') });
 * ```
 */
export class ExpiredCommandError extends Error {
  override readonly name = 'ExpiredCommandError';
}

/** How long a script refused with `TRYAGAIN` (a slot mid-migration) waits before it is sent again. */
const TRY_AGAIN_MS = 10;

/** A reply saying the script's slot is being migrated (see `Script.send`): try again shortly. */
const migrating = (message: string): boolean => message.startsWith('TRYAGAIN') || message.includes('Script attempted to access a non local key');

/** An error's message (a reply error's text), or the thrown value as text. */
function messageOf(error: unknown): string {
  return String((error as { message?: unknown } | undefined)?.message ?? error);
}

/**
 * One Lua script: run with `EVALSHA`, re-sent with `EVAL` after `NOSCRIPT`. Replies start with
 * Redis's time in ms (kept to estimate the server clock) and `'expired'` when the command came
 * past its deadline. Every command carries a deadline, the first one included: until a reply has
 * shown Redis's clock, a command waits for a probe of it (the script sent with a deadline already
 * past, which the prelude turns away before anything runs), and one whose deadline passed
 * meanwhile is never sent. On a cluster each master's clock is its own (they may differ by more
 * than `timeoutMs`): one estimate per master, from its own replies, and a probe of each.
 */
export class Script {
  private readonly source: string;
  private readonly sha: string;
  /** Per server ({@link Commands.server}; `''` for one server): its time minus local time, from its last reply. */
  private readonly offsets = new Map<string, number>();
  /** Per server: the probe of its clock under way, while there is no offset for it yet. */
  private readonly clocks = new Map<string, Promise<number>>();

  constructor(
    private readonly client: Commands,
    body: string,
    private readonly scheduler: SchedulerLike,
    private readonly timeoutMs: number,
  ) {
    this.source = PRELUDE + body;
    this.sha = createHash('sha1').update(this.source).digest('hex');
  }

  /**
   * Runs the script with `keys` (every key it touches: Redis Cluster routes the command by them,
   * and they must share one slot there) and `args` after the deadline (`ARGV[1]`: the call's
   * time plus `timeoutMs`, in Redis time): a cold Observable of the reply after its leading time
   * (and never a late effect). Unsubscribing before it is sent means it is never sent.
   */
  run(keys: readonly string[], args: readonly (string | number)[]): Observable<unknown[]> {
    return new Observable<unknown[]>((subscriber) => {
      let live = true;
      const calledAt = this.scheduler.now();
      const call = async (): Promise<unknown[] | undefined> => {
        const server = this.client.server?.(keys[0]) ?? '';
        const offset = this.offsets.get(server) ?? (await this.learnClock(server, keys));
        if (!live) return undefined;
        if (this.scheduler.now() - calledAt > this.timeoutMs)
          throw new ExpiredCommandError("the command was not sent: Redis's clock arrived after its deadline");
        const deadline = Math.ceil(calledAt + offset + this.timeoutMs);
        const reply = this.read(server, await this.send(keys, [String(deadline), ...args.map(String)]));
        if (reply[1] === 'expired') throw new ExpiredCommandError('the command reached Redis after its deadline');
        return reply.slice(1);
      };
      call().then(
        (reply) => {
          if (!live || reply === undefined) return;
          subscriber.next(reply);
          subscriber.complete();
        },
        (error: unknown) => {
          if (live) subscriber.error(error);
        },
      );
      return () => {
        live = false;
      };
    });
  }

  /**
   * Checks a reply's leading time and keeps the clock offset it shows, as `server`'s (where the
   * command was routed; a command redirected to another master mid-migration misattributes one
   * reply, which that master's next reply corrects).
   */
  private read(server: string, reply: unknown): unknown[] {
    if (!Array.isArray(reply) || typeof reply[0] !== 'number') throw new Error(`unexpected reply from Redis: ${String(reply)}`);
    this.offsets.set(server, reply[0] - this.scheduler.now());
    return reply;
  }

  /** `server`'s clock offset, from a probe that cannot run the script (deadline 1: long past); one at a time per server, again after a failure. */
  private learnClock(server: string, keys: readonly string[]): Promise<number> {
    let clock = this.clocks.get(server);
    if (clock === undefined) {
      clock = this.send(keys, ['1']).then(
        (reply) => {
          this.clocks.delete(server);
          this.read(server, reply);
          return this.offsets.get(server)!;
        },
        (error: unknown) => {
          this.clocks.delete(server);
          throw error;
        },
      );
      this.clocks.set(server, clock);
    }
    return clock;
  }

  /**
   * `EVALSHA`, then `EVAL` after `NOSCRIPT` (a node's script cache is its own: a failover, a
   * `SCRIPT FLUSH`, a slot moved to a node that never ran it). A slot being migrated refuses it
   * in two ways — `TRYAGAIN` (some of its keys already moved: the script did not run), or, from
   * inside the script, Redis 7.0's "Script attempted to access a non local key" (a key it reaches
   * is on the other side of the migration) — and either way it is sent again every
   * {@link TRY_AGAIN_MS} while the call's `timeoutMs` lasts (node-redis retries neither; ioredis
   * only `TRYAGAIN`). What a refused script did before the refusal is safe to do twice: each script
   * reads every key before its first write of a breaker's verdict or a limit's arrival time, and
   * its earlier writes (a node's liveness, its vote) are idempotent.
   */
  private async send(keys: readonly string[], argv: readonly string[]): Promise<unknown> {
    const rest = [String(keys.length), ...keys, ...argv];
    const sentAt = this.scheduler.now();
    for (;;) {
      try {
        try {
          return await this.client.send(keys[0], ['EVALSHA', this.sha, ...rest]);
        } catch (error) {
          if (!messageOf(error).startsWith('NOSCRIPT')) throw error;
          return await this.client.send(keys[0], ['EVAL', this.source, ...rest]);
        }
      } catch (error) {
        if (!migrating(messageOf(error)) || this.scheduler.now() + TRY_AGAIN_MS - sentAt >= this.timeoutMs) throw error;
        await new Promise<void>((resolve) => after(TRY_AGAIN_MS, this.scheduler, resolve));
      }
    }
  }
}

/** A reply field as a number (Redis integers arrive as numbers, bulk strings as strings). */
export function num(value: unknown): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isFinite(n)) throw new Error(`unexpected number from Redis: ${String(value)}`);
  return n;
}
