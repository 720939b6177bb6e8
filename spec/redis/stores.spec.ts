/**
 * One contract (spec/support/storeContract.ts), two stores: every rule of the fleet's breaker
 * store and of the shared rate-limit store, run against the reference model (MemoryBreakerStore /
 * MemoryRateLimitStore) and against the Lua scripts on a real redis-server (started here on a free
 * port, stopped by pid) through node-redis. And the spend store contract
 * (spec/support/spendStoreContract.ts) on MemorySpendStore and RedisSpendStore, with what only
 * Redis shows: its keys' expiry, the node TTL, an ended window's adjustment in that window's field.
 */
import { expect } from 'chai';
import { firstValueFrom, of, timeout } from 'rxjs';
import { setTimeout as sleep } from 'node:timers/promises';
import { MemoryBreakerStore } from '../../src/core/fleet/fleetStore.js';
import { MemoryRateLimitStore } from '../../src/core/rate-limit/rateLimitStore.js';
import { MemorySpendStore } from '../../src/core/money/memorySpendStore.js';
import { RateLimiter } from '../../src/core/rate-limit/rateLimit.js';
import { HealHub } from '../../src/core/hub/hub.js';
import type { HealEvent } from '../../src/core/events/events.js';
import { rateLimit } from '../../src/operators/rateLimit.js';
import { RedisBreakerStore, RedisRateLimitStore, RedisSpendStore, SPEND_KEEP_MS } from '../../src/redis/index.js';
import { hashTag } from '../../src/redis/keys.js';
import { useRedisServer } from '../support/redisServer.js';
import { contract } from '../support/storeContract.js';
import { spendStoreContract } from '../support/spendStoreContract.js';
import { outageCases } from '../support/outageCases.js';

let unique = 0;
const fresh = (): string => `model:${process.pid}-s${++unique}`;

contract(
  'MemoryBreakerStore / MemoryRateLimitStore',
  // the rate-limit model with a network's latency, as Redis has: a command is in flight for 2 ms;
  // in real time, so the deadline is far (a loaded machine once delayed an arrival past 100 ms)
  async () => ({ breakers: new MemoryBreakerStore({ timeoutMs: 10_000 }), limits: new MemoryRateLimitStore({ latencyMs: 2, timeoutMs: 10_000 }) }),
  async () => undefined,
);

// the spend store's reference model, a command in flight for 2 ms as on Redis, in real time (its windows roll over while a case waits)
spendStoreContract(
  'MemorySpendStore',
  async () => new MemorySpendStore({ latencyMs: 2, timeoutMs: 10_000 }),
  async () => undefined,
);

describe('RedisBreakerStore and its subscriber connection', () => {
  it('a SUBSCRIBE that failed (Redis down at start) is made again on the next ready; changes then arrive', async () => {
    const listeners: ((message: string, channel: string) => unknown)[] = [];
    let ready: (() => void) | undefined;
    let attempts = 0;
    const subscriber = {
      subscribe: async (_channel: string, listener: (message: string, channel: string) => unknown) => {
        if (++attempts === 1) throw new Error('The client is offline');
        listeners.push(listener);
      },
      unsubscribe: async () => undefined,
      on: (_event: 'ready', listener: () => void) => void (ready = listener),
      off: () => undefined,
    };
    const store = new RedisBreakerStore({ client: { sendCommand: async () => [0] }, subscriber });
    const resyncs: unknown[] = [];
    store.resync$.subscribe((r) => resyncs.push(r));
    const seen = firstValueFrom(store.changes$);
    await sleep(1);
    expect(listeners).to.have.length(0);
    ready!();
    await sleep(1);
    expect(attempts).to.equal(2);
    expect(resyncs, 'a ready asks the nodes to re-sync').to.have.length(1);
    listeners[0]!(JSON.stringify({ name: 'model:x', generation: 7, state: 'open', reason: 'quorum', remainingMs: 500 }), 'rxheal:fleet');
    expect(await seen).to.deep.equal({ name: 'model:x', generation: 7, state: 'open', reason: 'quorum', remainingMs: 500 });
    listeners[0]!('not json', 'rxheal:fleet');
    listeners[0]!(JSON.stringify({ name: 'model:x', generation: 'x' }), 'rxheal:fleet');
    await store.close();
  });
});

describe('on a real redis-server', function () {
  const closers: (() => Promise<void>)[] = [];
  const { redis, server: running } = useRedisServer(async () => {
    for (const close of closers.splice(0)) await close();
  });

  const connect = redis.connect;

  contract(
    'RedisBreakerStore / RedisRateLimitStore',
    async () => {
      const client = await connect();
      const subscriber = await connect();
      const breakers = new RedisBreakerStore({ client, subscriber, namespace: 'contract' });
      closers.push(() => breakers.close());
      await sleep(50); // SUBSCRIBE acknowledged
      return { breakers, limits: new RedisRateLimitStore({ client, namespace: 'contract' }) };
    },
    async () => undefined,
  );

  // the same contract as MemorySpendStore's, above
  spendStoreContract(
    'RedisSpendStore (node-redis createClient)',
    async () => new RedisSpendStore({ client: await connect(), namespace: 'contract', timeoutMs: 10_000 }),
    async () => undefined,
  );

  describe('RedisSpendStore on Redis itself', () => {
    const request = (key: string, nanos: number, node = 'a', windowMs = 60_000) => ({ key, node, windowMs, limitNanos: 1_000, nanos });

    it("its keys: the node set and the windows' hash under one hash tag, integer nanodollars, kept until the window's end + SPEND_KEEP_MS", async () => {
      const client = await connect();
      const store = new RedisSpendStore({ client, namespace: 'spend-keys', nodeTtlMs: 5_000 });
      const key = fresh();
      const grant = await firstValueFrom(store.reserve(request(key, 300)));
      const tag = hashTag('spend-keys', 'sp', key);
      expect((await client.keys(`${tag}*`)).sort()).to.deep.equal([tag, `${tag}:60000`]);
      expect(await client.hGetAll(`${tag}:60000`)).to.deep.equal({ [String(grant.window)]: '300' });
      const [time] = (await client.sendCommand(['TIME'])) as [string, string];
      const ttl = await client.pTTL(`${tag}:60000`);
      const end = grant.window + 60_000 + SPEND_KEEP_MS - Number(time) * 1000;
      expect(ttl, "the window's end + the margin, in Redis time").to.be.within(end - 1_100, end);
      expect(await client.pTTL(tag), 'the node set: the node TTL').to.be.within(4_000, 5_000);
      // an adjustment of an older window never shortens what the newest one keeps
      await firstValueFrom(store.adjust({ key, window: grant.window - 60_000, windowMs: 60_000, deltaNanos: 5 }));
      expect(await client.pTTL(`${tag}:60000`)).to.be.at.least(ttl - 1_000);
      expect((await client.hGetAll(`${tag}:60000`))[String(grant.window - 60_000)], 'an ended window still kept').to.equal('5');
    });

    it("an ended window's adjustment lands in that window's field; one past its keep writes nothing", async () => {
      const client = await connect();
      const store = new RedisSpendStore({ client, namespace: 'spend-ended' });
      const key = fresh();
      const tag = hashTag('spend-ended', 'sp', key);
      const windowMs = 200;
      const first = await firstValueFrom(store.reserve(request(key, 400, 'a', windowMs)));
      let now = first;
      while (now.window === first.window) {
        await sleep(20);
        now = await firstValueFrom(store.reserve(request(key, 0, 'a', windowMs)));
      }
      await firstValueFrom(store.reserve(request(key, 100, 'a', windowMs)));
      await firstValueFrom(store.adjust({ key, window: first.window, windowMs, deltaNanos: -150 }));
      const fields = await client.hGetAll(`${tag}:${windowMs}`);
      expect(fields[String(first.window)], 'the ended window').to.equal('250');
      expect(fields[String(now.window)], 'the current one').to.equal('100');
      // a window long past its keep (the epoch's first): not written back
      await firstValueFrom(store.adjust({ key, window: 0, windowMs, deltaNanos: 70 }));
      expect(await client.hGet(`${tag}:${windowMs}`, '0')).to.equal(null);
    });

    it('a node that has not reserved within nodeTtlMs is no longer live', async () => {
      const store = new RedisSpendStore({ client: await connect(), namespace: 'spend-nodes', nodeTtlMs: 150 });
      const key = fresh();
      await firstValueFrom(store.reserve(request(key, 1, 'a')));
      expect((await firstValueFrom(store.reserve(request(key, 1, 'b')))).liveNodes).to.equal(2);
      await sleep(250);
      expect((await firstValueFrom(store.reserve(request(key, 1, 'c')))).liveNodes, 'a and b expired').to.equal(1);
    });
  });

  it('a rate-limit script refused at a key midway (its slot mid-migration), then sent again, changes each limit once: adjust and reserve read every key before their first write', async () => {
    const client = await connect();
    // a slot mid-migration refuses a script at the first key it reaches that has moved, after what
    // the script wrote before it (Lua has no rollback); here the real script is stopped at a key
    // by its type (WRONGTYPE), and the refusal is the one Redis 7.0 gives mid-migration, after
    // which the key is readable (it has "arrived"): Script.send sends the script again
    let unreadable: string | undefined;
    const refusing = {
      sendCommand: async (args: string[]) => {
        try {
          return await client.sendCommand(args);
        } catch (error) {
          if (unreadable === undefined || !String((error as Error).message).includes('WRONGTYPE')) throw error;
          await client.sendCommand(['DEL', unreadable]);
          unreadable = undefined;
          throw new Error('ERR Script attempted to access a non local key in a cluster node script: 0000, on @user_script:9.', { cause: error });
        }
      },
    };
    const limits = new RedisRateLimitStore({ client: refusing, namespace: 'refused', timeoutMs: 2_000 });
    const key = fresh();
    const tag = hashTag('refused', 'rl', key);
    const requests = { id: 'requests', limit: 10, periodMs: 60_000 }; // one request is 6 000 ms of the limit
    const tokens = { id: 'tokens', limit: 100, periodMs: 60_000 };
    const tatOf = async (id: string): Promise<number> => Number(await client.get(`${tag}:${id}`));
    const makeUnreadable = async (id: string): Promise<void> => {
      unreadable = `${tag}:${id}`;
      await client.sendCommand(['DEL', unreadable]); // (an arrival time of its own, if it has one: a string)
      await client.sendCommand(['HSET', unreadable, 'moved', '1']);
    };
    await firstValueFrom(limits.reserve({ key, node: 'a', maxWaitMs: 0, limits: [{ ...requests, cost: 5 }] }));
    const reserved = await tatOf('requests');

    // a cancel gives back one request and one token: the first limit's delta applied once
    await makeUnreadable('tokens');
    expect(
      await firstValueFrom(
        limits.adjust({
          key,
          limits: [
            { ...requests, delta: -1 },
            { ...tokens, delta: -1 },
          ],
        }),
      ),
    ).to.equal(true);
    expect(unreadable, 'the script was refused once').to.equal(undefined);
    expect(reserved - (await tatOf('requests')), 'one request given back, not two').to.equal(6_000);

    // a reservation of both: the request reserved once
    await makeUnreadable('tokens');
    const before = await tatOf('requests');
    expect(
      await firstValueFrom(
        limits.reserve({
          key,
          node: 'a',
          maxWaitMs: 600_000,
          limits: [
            { ...requests, cost: 1 },
            { ...tokens, cost: 1 },
          ],
        }),
      ),
    ).to.include({ granted: true });
    expect(unreadable, 'the script was refused once').to.equal(undefined);
    expect((await tatOf('requests')) - before, 'one request reserved, not two').to.equal(6_000);
  });

  it('rateLimit: calls cancelled while their reservations are in flight give back what Redis reserved (2/min: two cancelled at once, the third starts at once)', async function () {
    this.timeout(10_000);
    const client = await connect();
    let answered = 0;
    const counting = {
      sendCommand: async (args: string[]) => {
        const reply = await client.sendCommand(args);
        answered++;
        return reply;
      },
    };
    const hub = new HealHub();
    const events: HealEvent[] = [];
    hub.events$.subscribe((e) => events.push(e));
    const limiter = new RateLimiter({ name: fresh(), requestsPerMinute: 2, store: new RedisRateLimitStore({ client: counting, namespace: 'cancelled' }) });
    const call = (value: string) => of(value).pipe(rateLimit(limiter, { hub }));
    // sent, then unsubscribed before Redis answers: the scripts run anyway
    call('a').subscribe().unsubscribe();
    call('b').subscribe().unsubscribe();
    // the client's first clock probe, their answers, then the two refunds they call for (NOSCRIPT
    // errors are not answers): wait until Redis has answered everything sent
    for (let i = 0, seen = -1; i < 200 && (answered < 4 || answered !== seen); i++) {
      seen = answered;
      await sleep(50);
    }
    expect(answered, 'two reservations and two refunds answered (and a clock probe before them)').to.be.within(4, 5);
    expect(await firstValueFrom(call('c').pipe(timeout({ first: 3_000 }))), 'no wait for calls that never started').to.equal('c');
    expect(events.filter((e) => e.type === 'rate-limited')).to.deep.equal([]);
  });

  // paused and restarted: the same cases as on every topology and client (spec/support/outageCases.ts)
  outageCases(
    'node-redis createClient',
    async () => ({ client: await connect(), subscriber: await connect(), close: async () => undefined }),
    () => ({
      pause: async (ms, mode) => void (await running().command(`CLIENT PAUSE ${ms} ${mode}`)),
      restart: async () => {
        await running().kill();
        await running().restart();
      },
    }),
  );
});
