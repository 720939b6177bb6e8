/**
 * The Redis client layer both stores run their scripts through (src/redis/client.ts): names in
 * keys (no two names ever share a key: a property over names, and on a real redis-server), and a
 * deadline in Redis time on every command, the very first one included — a node that starts while
 * Redis is stalled must not have its commands applied late.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { asyncScheduler, firstValueFrom, type Observable, type SchedulerLike } from 'rxjs';
import { RedisBreakerStore, RedisRateLimitStore } from '../../src/redis/index.js';
import { Script } from '../../src/redis/client.js';
import { hashTag, keyPart, keySlot } from '../../src/redis/keys.js';
import { hashTagOf } from '../support/redisKeys.js';
import { useRedisServer } from '../support/redisServer.js';

const get = <T>(o: Observable<T>): Promise<T> => firstValueFrom(o);
/** What a call came to: 'answered', or the error's name. */
const outcome = (o: Observable<unknown>): Promise<string> =>
  get(o).then(
    () => 'answered',
    (e: unknown) => (e as Error).name,
  );
let unique = 0;
const fresh = (kind: string): string => `${kind}:${process.pid}-${++unique}`;

/** Short names over the characters an escaping rule can trip on, suffixes of the layouts included. */
const name = fc.oneof(
  fc.string({ unit: fc.constantFrom(':', '%', '3', 'A', 'a', '2', '5', '}', '{'), maxLength: 8 }),
  fc.constantFrom('tool:x', 'tool:x:votes', 'tool:x:nodes', 'tool%3Ax', 'x:requests', 'x:nodes', 'nodes', ''),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
);

/**
 * Every key of the stores' layouts, as the stores build them from each name's hash tag and the
 * escaped parts (breakers: hash, `:votes`, `:nodes`; rate limits: the node set, one key per limit id).
 */
const breakerKeys = (ns: string, n: string): string[] => ['', ':votes', ':nodes'].map((suffix) => `${hashTag(ns, 'b', n)}${suffix}`);
const limitKeys = (ns: string, key: string, ids: readonly string[]): string[] => [
  hashTag(ns, 'rl', key),
  ...ids.map((id) => `${hashTag(ns, 'rl', key)}:${keyPart(id)}`),
];

describe('names in Redis keys (keyPart: one rule for both stores)', () => {
  it('an escaped name never contains ":" or a brace, and two names never escape alike (property)', () => {
    fc.assert(
      fc.property(name, name, (a, b) => {
        expect(keyPart(a)).not.to.match(/[:{}]/);
        if (a !== b) expect(keyPart(a)).not.to.equal(keyPart(b));
      }),
      { numRuns: 5_000 },
    );
  });

  it('no two names share a key: two breakers, two limiters, a breaker and a limiter (property)', () => {
    fc.assert(
      fc.property(name, name, fc.uniqueArray(name, { maxLength: 3 }), (a, b, ids) => {
        const keys = (n: string): string[] => [...breakerKeys('ns', n), ...limitKeys('ns', n, ids)];
        // one name's own keys are distinct
        expect(new Set(keys(a)).size).to.equal(keys(a).length);
        if (a === b) return;
        const theirs = new Set(keys(b));
        expect(keys(a).filter((k) => theirs.has(k))).to.deep.equal([]);
      }),
      { numRuns: 5_000 },
    );
  });

  it("one hash tag per name: a breaker's keys share it, a limiter key's keys share it, no two names (or kinds) share one (property)", () => {
    fc.assert(
      fc.property(name, name, fc.uniqueArray(name, { maxLength: 3 }), (a, b, ids) => {
        for (const keys of [breakerKeys('ns', a), limitKeys('ns', a, ids)]) expect(new Set(keys.map(hashTagOf)).size).to.equal(1);
        expect(hashTagOf(hashTag('ns', 'b', a))).not.to.equal(hashTagOf(hashTag('ns', 'rl', a)));
        if (a !== b) expect(hashTagOf(hashTag('ns', 'b', a))).not.to.equal(hashTagOf(hashTag('ns', 'b', b)));
      }),
      { numRuns: 5_000 },
    );
  });

  it('leaves names without ":", "%" or braces as they are', () => {
    fc.assert(
      fc.property(
        fc.string().filter((n) => !/[%:{}]/.test(n)),
        (n) => {
          expect(keyPart(n)).to.equal(n);
        },
      ),
    );
  });
});

describe('the Redis client layer, on a real redis-server', function () {
  this.timeout(20_000);
  const { redis, server: running } = useRedisServer();

  const connect = redis.connect;

  it('the breakers tool:x and tool:x:votes are two breakers: a vote on one breaks neither (no WRONGTYPE), each keeps its own verdict', async () => {
    const client = await connect();
    const store = new RedisBreakerStore({ client, namespace: 'names' });
    const quorum = { minNodes: 2, minFraction: 0, windowMs: 60_000 };
    await get(store.vote('a', 'tool:x', quorum, 60_000));
    expect(await get(store.vote('b', 'tool:x:votes', quorum, 60_000))).to.include({ state: 'closed' });
    expect(await get(store.vote('c', 'tool:x:votes', quorum, 60_000))).to.include({ state: 'open', reason: 'quorum' });
    expect(await get(store.fact('a', 'tool:x:nodes', 60_000))).to.include({ state: 'open', reason: 'rate_limit' });
    const verdicts = await get(store.sync('a', ['tool:x', 'tool:x:votes', 'tool:x:nodes', 'tool%3Ax']));
    expect(verdicts.map((v) => [v.name, v.state])).to.deep.equal([
      ['tool:x', 'closed'],
      ['tool:x:votes', 'open'],
      ['tool:x:nodes', 'open'],
      ['tool%3Ax', 'closed'],
    ]);
    await store.close();
  });

  it('no two names share a key on Redis: opening one breaker and exhausting one limiter leaves every other name untouched (property)', async () => {
    const client = await connect();
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(name, { minLength: 2, maxLength: 4 }), async (names) => {
        const namespace = `names-${process.pid}-${++round}`;
        const breakers = new RedisBreakerStore({ client, namespace });
        const limits = new RedisRateLimitStore({ client, namespace });
        const [first, ...others] = names as [string, ...string[]];
        const limit = (key: string) => get(limits.reserve({ key, node: 'a', maxWaitMs: 0, limits: [{ id: 'requests', limit: 1, periodMs: 60_000, cost: 1 }] }));
        await get(breakers.isolate('a', first));
        await get(breakers.vote('a', first, { minNodes: 1, minFraction: 0, windowMs: 60_000 }, 60_000));
        expect(await limit(first)).to.include({ granted: true });
        const verdicts = await get(breakers.sync('b', names));
        expect(verdicts.map((v) => v.state)).to.deep.equal(['isolated', ...others.map(() => 'closed')]);
        for (const key of others) expect(await limit(key), key).to.include({ granted: true });
        await breakers.close();
      }),
      { numRuns: 60 },
    );
  });

  it('commands sent before any reply (a node starting while Redis is stalled) carry a deadline too: neither store applies them late', async () => {
    const client = await connect();
    // new stores: no reply yet, so no estimate of Redis's clock
    const breakers = new RedisBreakerStore({ client, namespace: 'first', timeoutMs: 100 });
    const limits = new RedisRateLimitStore({ client, namespace: 'first', timeoutMs: 100 });
    const name = fresh('model');
    const key = fresh('openai');
    const reserve = (node: string) => limits.reserve({ key, node, maxWaitMs: 0, limits: [{ id: 'requests', limit: 1, periodMs: 60_000, cost: 1 }] });
    expect(await running().command('CLIENT PAUSE 400 WRITE')).to.equal('+OK');
    const [fact, vote, reserved] = await Promise.all([
      outcome(breakers.fact('a', name, 60_000)),
      outcome(breakers.vote('a', name, { minNodes: 1, minFraction: 0, windowMs: 60_000 }, 60_000)),
      outcome(reserve('a')),
    ]);
    expect([fact, vote, reserved]).to.deep.equal(['ExpiredCommandError', 'ExpiredCommandError', 'ExpiredCommandError']);
    // nothing landed: the verdict is closed, and the limit's one request a minute is still there
    expect((await get(breakers.sync('b', [name])))[0]).to.include({ state: 'closed', reason: 'none' });
    expect(await get(reserve('b'))).to.include({ granted: true, waitMs: 0 });
    await breakers.close();
  });

  it('commands sent before any reply, Redis answering: they run (once each), and later ones go at once', async () => {
    const client = await connect();
    const breakers = new RedisBreakerStore({ client, namespace: 'first-ok' });
    const name = fresh('model');
    const [one, two] = await Promise.all([get(breakers.fact('a', name, 60_000)), get(breakers.sync('b', [name]))]);
    expect(one).to.include({ state: 'open', reason: 'rate_limit' });
    expect(two[0]!.state).to.be.oneOf(['closed', 'open']);
    expect(await get(breakers.fact('a', name, 1_000)), 'a shorter fact changes nothing').to.include({ generation: one.generation });
    await breakers.close();
  });
});

describe('a script refused mid-migration of its slot (Script.send)', () => {
  /** A cluster client whose first run of the script fails with `refusal`, then answers; the clock probe answers at once. */
  const fake = (refusal: string) => {
    const sent: string[][] = [];
    let failed = false;
    const commands = {
      cluster: true,
      send: (_key: string | undefined, args: readonly string[]): Promise<unknown> => {
        sent.push([...args]);
        const deadline = args[4]; // EVALSHA sha numkeys key deadline …
        if (deadline === '1') return Promise.resolve([Date.now(), 'expired']);
        if (!failed) {
          failed = true;
          return Promise.reject(new Error(refusal));
        }
        return Promise.resolve([Date.now(), 'ok']);
      },
    };
    return { commands, sent };
  };
  for (const refusal of [
    'TRYAGAIN Multiple keys request during rehashing of slot',
    // Redis 7.0 inside a script whose slot is being migrated (seen on the 3-master cluster spec under ioredis)
    'ERR Script attempted to access a non local key in a cluster node script: 3e785d7270d6c260b8be31032203038f9c8fd049, on @user_script:9.',
  ]) {
    it(`${refusal.split(' ').slice(0, 5).join(' ')}…: sent again after a short wait, within the call's timeout; the caller gets the answer`, async () => {
      const { commands, sent } = fake(refusal);
      const script = new Script(commands, 'return {now, "ok"}', asyncScheduler, 1000);
      expect(await firstValueFrom(script.run(['{k}:a'], []))).to.deep.equal(['ok']);
      expect(sent.filter((a) => a[4] !== '1')).to.have.length(2);
    });
  }
});

describe("command deadlines on a cluster whose masters' clocks differ (one estimate of Redis's clock per master)", () => {
  const local = 1_000_000; // the node's clock, standing still: the fake masters answer at once
  const scheduler: SchedulerLike = { now: () => local, schedule: asyncScheduler.schedule.bind(asyncScheduler) };
  const timeoutMs = 100;
  /** Two masters, by slot; the second one's clock 5 s ahead of the first's, far more than timeoutMs. */
  const masters = [
    { address: '127.0.0.1:7000', skew: 0 },
    { address: '127.0.0.1:7001', skew: 5_000 },
  ] as const;
  const masterOf = (slot: number) => masters[slot < 8192 ? 0 : 1];
  /** Each master's slack: how long before its deadline (ARGV[1]) each script reached it. */
  let slack: Record<string, number[]>;
  /** A master's answer to `EVALSHA sha numkeys keys… deadline …`: expired past the deadline (or a clock probe), else a grant. */
  const answer = (args: readonly string[]): unknown[] => {
    const master = masterOf(keySlot(args[3]!));
    const time = local + master.skew;
    const deadline = Number(args[3 + Number(args[2])]);
    if (time > deadline) return [time, 'expired'];
    slack[master.address]!.push(deadline - time);
    return [time, 1, 0, 1];
  };
  const shapes = {
    'node-redis createCluster': () => ({
      getSlotMaster: (slot: number) => ({ address: masterOf(slot).address }),
      sendCommand: async (_firstKey: string | undefined, _readonly: boolean | undefined, args: string[]) => answer(args),
    }),
    'ioredis Cluster': () => ({
      isCluster: true,
      slots: Array.from({ length: 16384 }, (_, slot) => [masterOf(slot).address]),
      call: async (command: string, args: string[]) => answer([command, ...args]),
    }),
  };
  for (const [shape, client] of Object.entries(shapes)) {
    it(`${shape}: commands to either master, in turn, all run, each with exactly timeoutMs to reach it`, async () => {
      slack = Object.fromEntries(masters.map((m) => [m.address, []]));
      const limits = new RedisRateLimitStore({ client: client(), namespace: 'skew', timeoutMs, scheduler });
      // a rate-limit key whose slot is on each master
      const keys = masters.map((m) => Array.from({ length: 100 }, (_, i) => `openai-${i}`).find((k) => masterOf(keySlot(hashTag('skew', 'rl', k))) === m)!);
      const outcomes: string[] = [];
      for (let round = 0; round < 3; round++) {
        for (const key of keys)
          outcomes.push(await outcome(limits.reserve({ key, node: 'a', maxWaitMs: 0, limits: [{ id: 'requests', limit: 100, periodMs: 60_000, cost: 1 }] })));
      }
      // (one estimate for the whole cluster: every command to the second master expired, and those to the first had 5 100 ms)
      expect({ outcomes, slack }).to.deep.equal({
        outcomes: Array(6).fill('answered'),
        slack: Object.fromEntries(masters.map((m) => [m.address, [timeoutMs, timeoutMs, timeoutMs]])),
      });
    });
  }
});
