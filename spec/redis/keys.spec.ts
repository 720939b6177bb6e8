/**
 * The Redis stores' key layout, as Redis Cluster and strict proxies need it: one hash tag per
 * breaker and per rate-limit key (so a fleet's keys spread over the cluster's slots instead of one
 * hot slot), every key a script touches passed in `KEYS` (none built inside Lua), all the keys of
 * one command in one slot; and what a sync costs in commands for 1, 10 and 1 000 breakers. Checked
 * on a real redis-server through a client that records every command the stores send. And a
 * key's Redis Cluster slot, as Redis computes it (keySlot).
 */
import { expect } from 'chai';
import { firstValueFrom, type Observable } from 'rxjs';
import { RedisBreakerStore, RedisRateLimitStore, RedisSpendStore } from '../../src/redis/index.js';
import { hashTag, keySlot } from '../../src/redis/keys.js';
import { useRedisServer } from '../support/redisServer.js';
import { hashTagOf, keysOf } from '../support/redisKeys.js';

const get = <T>(o: Observable<T>): Promise<T> => firstValueFrom(o);

describe("the Redis stores' keys, on a real redis-server", function () {
  this.timeout(20_000);
  const { redis } = useRedisServer();

  /** A client that records every command it sends. */
  async function recording(): Promise<{ client: { sendCommand(args: string[]): Promise<unknown> }; sent: string[][] }> {
    const inner = await redis.connect();
    const sent: string[][] = [];
    return { client: { sendCommand: (args: string[]) => (sent.push(args), inner.sendCommand(args)) }, sent };
  }

  it("one hash tag per breaker and per rate-limit key; every key a script touches is in KEYS, each command's keys in one slot", async () => {
    const { client, sent } = await recording();
    const namespace = 'layout';
    const breakers = new RedisBreakerStore({ client, namespace });
    const limits = new RedisRateLimitStore({ client, namespace });
    const quorum = { minNodes: 2, minFraction: 0, windowMs: 60_000 };
    // every operation of both scripts, on names that escaping has to keep apart
    const names = ['model:a', 'model:a:votes', 'tool{x}', 'tool}x'];
    for (const name of names) {
      await get(breakers.vote('n1', name, quorum, 20));
      await get(breakers.vote('n2', name, quorum, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 40));
    await get(breakers.acquireProbe('n1', names[0]!, 5_000));
    await get(breakers.probeResult('n1', names[0]!, false, 1_000));
    await get(breakers.fact('n1', names[1]!, 60_000));
    await get(breakers.isolate('n1', names[2]!));
    await get(breakers.reset('n1', names[3]!));
    await get(breakers.sync('n3', names));
    const limit = (id: string) => ({ id, limit: 10, periodMs: 60_000 });
    for (const key of ['openai:prod', 'openai:prod:requests']) {
      await get(
        limits.reserve({
          key,
          node: 'n1',
          maxWaitMs: 0,
          limits: [
            { ...limit('requests'), cost: 1 },
            { ...limit('tokens'), cost: 5 },
          ],
        }),
      );
      await get(
        limits.adjust({
          key,
          limits: [
            { ...limit('tokens'), delta: -2 },
            { ...limit('requests'), floorMs: 1_000 },
          ],
        }),
      );
    }
    await breakers.close();

    const scripts = sent.filter((args) => args[0] === 'EVALSHA' || args[0] === 'EVAL');
    expect(scripts.length).to.be.greaterThan(20);
    const declared = new Set(scripts.flatMap(keysOf));
    // each command's keys share one hash tag (a sync of several breakers aside: see the round-trip case)
    for (const args of scripts.filter((a) => !a.includes('sync'))) {
      const tags = new Set(keysOf(args).map(hashTagOf));
      expect([...tags], `one hash tag: ${keysOf(args).join(' ')}`).to.have.length(1);
    }
    // every key left in Redis was declared in KEYS by some command (none built inside Lua)
    const stored = (await (await redis.connect()).keys('*')).sort();
    expect(stored.length).to.be.greaterThan(10);
    expect(
      stored.filter((k) => !declared.has(k)),
      'keys no command declared',
    ).to.deep.equal([]);
    // one hash tag per breaker and per rate-limit key: 4 breakers and 2 limiter keys, 6 tags, none the namespace's alone
    const tags = new Set(stored.map(hashTagOf));
    expect(tags.size, [...tags].join(' ')).to.equal(6);
    expect([...tags].every((t) => t.startsWith(`${namespace}:`))).to.equal(true);
  });

  it('RedisSpendStore: one hash tag per spend key; every key its script touches is in KEYS, one tag per command', async () => {
    const { client, sent } = await recording();
    const namespace = 'spend-layout';
    const store = new RedisSpendStore({ client, namespace });
    // names that escaping has to keep apart, two window lengths
    const names = ['team:a', 'team:a:60000', 'user{x}', 'user}x'];
    for (const key of names)
      for (const windowMs of [60_000, 3_600_000]) {
        const grant = await get(store.reserve({ key, node: 'n1', windowMs, limitNanos: 1_000, nanos: 400 }));
        await get(store.reserve({ key, node: 'n2', windowMs, limitNanos: 1_000, nanos: 700 }));
        await get(store.adjust({ key, window: grant.window, windowMs, deltaNanos: -500 }));
        await get(store.adjust({ key, window: grant.window - windowMs, windowMs, deltaNanos: 5 }));
      }
    const scripts = sent.filter((args) => args[0] === 'EVALSHA' || args[0] === 'EVAL');
    const declared = new Set(scripts.flatMap(keysOf));
    for (const args of scripts) expect(new Set(keysOf(args).map(hashTagOf)).size, keysOf(args).join(' ')).to.equal(1);
    const stored = (await (await redis.connect()).keys(`{${namespace}:*`)).sort();
    expect(stored, 'a node set and one hash per window length, for each key').to.have.length(names.length * 3);
    expect(stored.filter((k) => !declared.has(k))).to.deep.equal([]);
    expect(new Set(stored.map(hashTagOf)).size, 'one hash tag per key').to.equal(names.length);
  });

  it('a sync on one server is one command whatever the number of breakers (1, 10, 1 000)', async () => {
    const { client, sent } = await recording();
    const breakers = new RedisBreakerStore({ client, namespace: 'trips' });
    await get(breakers.sync('n', ['warm-up'])); // the store learns Redis's clock
    for (const n of [1, 10, 1000]) {
      const names = Array.from({ length: n }, (_, i) => `model:${n}:${i}`);
      sent.length = 0;
      const verdicts = await get(breakers.sync('n', names));
      expect(verdicts.map((v) => v.name)).to.deep.equal(names);
      expect(sent.length, `${n} breakers`).to.equal(1);
      expect(keysOf(sent[0]!), "each breaker's verdict and node set").to.have.length(2 * n);
    }
    await breakers.close();
  });
});

describe('keySlot: the Redis Cluster slot of a key', () => {
  it('is what CLUSTER KEYSLOT answers (values read from redis-server 7.0), hash tags included', () => {
    const slots = {
      '123456789': 12739,
      somekey: 11058,
      'foo{hash_tag}': 2515,
      'foo{}{bar}': 8363,
      'foo{{bar}}zap': 4015,
      'foo{bar}{zap}': 5061,
      '{skew:rl:openai}': 9427,
      'é{ü}': 9552,
      '': 0,
    };
    expect(Object.fromEntries(Object.keys(slots).map((key) => [key, keySlot(key)]))).to.deep.equal(slots);
    expect(keySlot(`${hashTag('rxheal', 'b', 'model:gpt')}:votes`)).to.equal(keySlot(hashTag('rxheal', 'b', 'model:gpt')));
  });
});
