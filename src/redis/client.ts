/**
 * What the Redis stores need of a client, and how they run their Lua scripts: `EVALSHA` with
 * `EVAL` when the script cache was lost (a restart), the server's clock read from every reply
 * (each script returns Redis `TIME`), and a deadline on every command in server time — from the
 * first one on: before any reply, a probe of the clock goes first — so a command that reaches
 * Redis after its caller gave up (a stalled server, `CLIENT PAUSE`) changes nothing.
 *
 * @module
 */
// Node-only module (node-redis is Node-only): the library's build has no ambient Node types
/// <reference types="node" />
import { createHash } from 'node:crypto';
import { Observable, type SchedulerLike } from 'rxjs';

/**
 * The client the Redis stores use: node-redis's `createClient()` (v5 or v6) fits as is. Create
 * it with `disableOfflineQueue: true`, so a command sent while Redis is unreachable fails at once
 * instead of waiting in memory, and give it an `error` listener.
 *
 * @example
 * ```ts
 * import { createClient } from 'redis';
 * const client: RedisClientLike = await createClient({ url: 'redis://127.0.0.1:6379', disableOfflineQueue: true }).on('error', () => {}).connect();
 * ```
 */
export interface RedisClientLike {
  /** Sends one command (`['EVALSHA', sha, …]`) and resolves with its reply. */
  sendCommand(args: string[]): Promise<unknown>;
}

/**
 * A connection in subscriber mode, for the fleet's pub/sub channel: node-redis's
 * `client.duplicate()`, connected. Optional: without one, changes arrive by the poll only.
 *
 * @example
 * ```ts
 * const subscriber: RedisSubscriberLike = await client.duplicate().on('error', () => {}).connect();
 * ```
 */
export interface RedisSubscriberLike {
  subscribe(channel: string, listener: (message: string, channel: string) => unknown): Promise<unknown>;
  unsubscribe(channel: string, listener?: (message: string, channel: string) => unknown): Promise<unknown>;
  /** node-redis emits `ready` on every (re)connection: the store re-syncs then. */
  on?(event: 'ready', listener: () => void): unknown;
  off?(event: 'ready', listener: () => void): unknown;
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

/**
 * One Lua script: run with `EVALSHA`, re-sent with `EVAL` after `NOSCRIPT`. Replies start with
 * Redis's time in ms (kept to estimate the server clock) and `'expired'` when the command came
 * past its deadline. Every command carries a deadline, the first one included: until a reply has
 * shown Redis's clock, a command waits for a probe of it (the script sent with a deadline already
 * past, which the prelude turns away before anything runs), and one whose deadline passed
 * meanwhile is never sent.
 */
export class Script {
  private readonly source: string;
  private readonly sha: string;
  /** Server time minus local time, from the last reply (undefined before any). */
  private offset: number | undefined;
  /** The probe of Redis's clock under way, while there is no offset yet. */
  private clock: Promise<void> | undefined;

  constructor(
    private readonly client: RedisClientLike,
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
        if (this.offset === undefined) await this.learnClock(keys);
        if (!live) return undefined;
        if (this.scheduler.now() - calledAt > this.timeoutMs) throw new ExpiredCommandError('the command was not sent: Redis\'s clock arrived after its deadline');
        const deadline = Math.ceil(calledAt + this.offset! + this.timeoutMs);
        const reply = this.read(await this.send(keys, [String(deadline), ...args.map(String)]));
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

  /** Checks a reply's leading time and keeps the clock offset it shows. */
  private read(reply: unknown): unknown[] {
    if (!Array.isArray(reply) || typeof reply[0] !== 'number') throw new Error(`unexpected reply from Redis: ${String(reply)}`);
    this.offset = reply[0] - this.scheduler.now();
    return reply;
  }

  /** Redis's clock, from a probe that cannot run the script (deadline 1: long past); one at a time, again after a failure. */
  private learnClock(keys: readonly string[]): Promise<void> {
    return (this.clock ??= this.send(keys, ['1']).then(
      (reply) => void this.read(reply),
      (error: unknown) => {
        this.clock = undefined;
        throw error;
      },
    ));
  }

  private async send(keys: readonly string[], argv: readonly string[]): Promise<unknown> {
    const rest = [String(keys.length), ...keys, ...argv];
    try {
      return await this.client.sendCommand(['EVALSHA', this.sha, ...rest]);
    } catch (error) {
      if (!String((error as { message?: unknown } | undefined)?.message ?? error).startsWith('NOSCRIPT')) throw error;
      return this.client.sendCommand(['EVAL', this.source, ...rest]);
    }
  }
}

/**
 * A name as one part of a Redis key (a breaker's name, a rate limiter's key, a limit's id): the
 * one rule both stores build their keys with. `%`, `:`, `{` and `}` are percent-escaped (`%25`,
 * `%3A`, `%7B`, `%7D`), so an escaped name holds no `:` and no brace, and a key — the hash tag
 * (see {@link hashTag}) and fixed suffixes (`:votes`, `:nodes`, `:<limit id>`), joined by `:` —
 * reads back one way: no two names ever share a key (the breaker `tool:x:votes` is not `tool:x`'s
 * vote set), nor a hash tag. Names with none of these characters keep their text as it is.
 *
 * @example
 * ```ts
 * keyPart('tool:x:votes'); // 'tool%3Ax%3Avotes'
 * keyPart('gpt-4o'); // 'gpt-4o'
 * ```
 */
export function keyPart(name: string): string {
  return name.replace(/[%:{}]/g, (c) => ESCAPES[c]!);
}
const ESCAPES: Readonly<Record<string, string>> = { '%': '%25', ':': '%3A', '{': '%7B', '}': '%7D' };

/**
 * `{namespace:kind:name}`: the hash tag of one breaker (`kind` `b`) or one rate-limit key (`rl`),
 * which begins every key of it. Redis Cluster hashes only the text inside the braces, so all the
 * keys of one breaker (its verdict, votes, node set) share one slot — one script may touch them
 * all — while two breakers' keys spread over the cluster's slots (no one hot slot for a whole
 * fleet). The name is one {@link keyPart} (no `:`, no brace) and the namespace has no `}`, so the
 * tag ends where it should and reads back one way.
 *
 * @example
 * ```ts
 * hashTag('rxheal', 'b', 'model:gpt-4o'); // '{rxheal:b:model%3Agpt-4o}'
 * ```
 */
export function hashTag(namespace: string, kind: 'b' | 'rl', name: string): string {
  return `{${namespace}:${kind}:${keyPart(name)}}`;
}

/** A reply field as a number (Redis integers arrive as numbers, bulk strings as strings). */
export function num(value: unknown): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isFinite(n)) throw new Error(`unexpected number from Redis: ${String(value)}`);
  return n;
}
