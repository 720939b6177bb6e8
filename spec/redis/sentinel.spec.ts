/**
 * The fleet through Redis Sentinel (spec/support/redisSentinel.ts: one primary, one replica and
 * three sentinels on loopback, sentinels run as `redis-server <conf> --sentinel`), with ioredis
 * (`sentinels`, `name`) and node-redis (`createSentinel`): `SENTINEL failover` mid-traffic — no
 * caller's call waits on the store, store calls are bounded by the guard, verdicts made before the
 * failover survive it with their generations (replicated to the replica the sentinels promote),
 * and the fleet works on the new primary: a quorum there opens a node that never failed; and a
 * tokens/min limit shared by three nodes stays within its allowance plus the documented error (the
 * local shares while the nodes decide alone) across the failover: the bucket survives it.
 */
import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { asyncScheduler, catchError, firstValueFrom, type Observable, of, throwError } from 'rxjs';
import { Redis } from 'ioredis';
import { createSentinel } from 'redis';
import { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { StoreGuard, storeBreakerOptions } from '../../src/core/fleet/storeGuard.js';
import { HttpError } from '../../src/core/errors/errors.js';
import { RateLimiter, type RateLimitReservation } from '../../src/core/rate-limit/rateLimit.js';
import { RedisBreakerStore, RedisRateLimitStore, RedisSpendStore } from '../../src/redis/index.js';
import type { FleetVerdict } from '../../src/core/breaker/fleetSeam.js';
import type { RedisClientLike, RedisSubscriberLike } from '../../src/redis/index.js';
import { ioredisPair } from '../support/ioredisPair.js';
import { requireProgram } from '../support/systemPackage.js';
import { startRedisSentinels, type RedisSentinels } from '../support/redisSentinel.js';
import { contract } from '../support/storeContract.js';
import { spendStoreContract } from '../support/spendStoreContract.js';
import { outageCases } from '../support/outageCases.js';

const get = <T>(o: Observable<T>): Promise<T> => firstValueFrom(o);

interface Clients {
  readonly client: RedisClientLike;
  readonly subscriber: RedisSubscriberLike;
  close(): Promise<void>;
}

const kinds: Record<string, (s: RedisSentinels) => Promise<Clients>> = {
  'ioredis (sentinels)': (s) =>
    ioredisPair(
      () =>
        new Redis({ sentinels: s.sentinels.map((port) => ({ host: '127.0.0.1', port })), name: s.name, enableOfflineQueue: false, maxRetriesPerRequest: 1 }),
    ),
  'node-redis createSentinel': async (s) => {
    const client = createSentinel({ name: s.name, sentinelRootNodes: s.sentinels.map((port) => ({ host: '127.0.0.1', port })) });
    client.on('error', () => undefined);
    await client.connect();
    return { client, subscriber: client, close: () => client.close() };
  },
};

const LIMIT = 3_000;
const COST = 30;
const LIMIT_NODES = 3;

/**
 * Three nodes sharing a tokens/min limit on `client`, two callers each, back to back (a call
 * starts after its wait and uses its estimate) until `stop()`, which reports each start.
 */
function limitTraffic(client: RedisClientLike, key: string): { stop(): Promise<{ at: number; local: boolean }[]> } {
  const limiters = Array.from(
    { length: LIMIT_NODES },
    (_, i) =>
      new RateLimiter({
        name: key,
        tokensPerMinute: LIMIT,
        maxWaitMs: 1_000,
        store: new RedisRateLimitStore({ client, namespace: 'sentinel-limit' }),
        node: `n${i}`,
      }),
  );
  const starts: { at: number; local: boolean }[] = [];
  let running = true;
  const callers = limiters.flatMap((limiter) =>
    [0, 1].map(async () => {
      while (running) {
        const r: RateLimitReservation | undefined = await get(limiter.reserve(COST)).catch(() => undefined);
        if (r === undefined) {
          await sleep(50); // refused (its wait past maxWaitMs): try again a little later
          continue;
        }
        await sleep(r.waitMs);
        if (!running) {
          r.cancel();
          break;
        }
        starts.push({ at: performance.now(), local: r.local });
        r.settle(COST);
      }
    }),
  );
  return {
    stop: async () => {
      running = false;
      await Promise.all(callers);
      return starts;
    },
  };
}

describe('the fleet through Redis Sentinel, failed over mid-traffic', function () {
  this.timeout(90_000);
  let sentinels: RedisSentinels | undefined;
  before(async function () {
    const server = requireProgram(this, {
      name: 'redis-server',
      command: 'redis-server',
      install: 'apt-get install redis-server (.ci/run does; a sentinel is redis-server --sentinel)',
    });
    const cli = requireProgram(this, { name: 'redis-cli', command: 'redis-cli', install: 'apt-get install redis-server (.ci/run does; it ships redis-cli)' });
    sentinels = await startRedisSentinels(server, cli);
  });
  after(async () => {
    await sentinels?.stop();
  });

  for (const [kind, connect] of Object.entries(kinds)) {
    it(`${kind}: calls never wait on the store, verdicts and generations survive, the fleet works on the new primary, a shared tokens/min limit stays within allowance + the failover's error`, async () => {
      const clients = await connect(sentinels!);
      const store = new RedisBreakerStore({ client: clients.client, subscriber: clients.subscriber, namespace: kind.replace(/\W/g, '-'), pollMs: 200 });
      let limit: ReturnType<typeof limitTraffic> | undefined;
      try {
        // the store's first commands wait for a probe of Redis's clock: on a loaded machine they can
        // come past their 100 ms deadline (ExpiredCommandError), so until one answers
        let kept: FleetVerdict | undefined;
        for (let i = 0; i < 20 && kept === undefined; i++) kept = await get(store.isolate('admin', `model:${kind}:kept`)).catch(() => undefined);
        if (kept === undefined) expect.fail('the store never answered before the failover');
        const limitStarted = performance.now();
        limit = limitTraffic(clients.client, `openai:${kind.replace(/\W/g, '-')}`);
        const name = `model:${kind}:fleet`;
        const node = (id: string) =>
          new CircuitBreaker({ name, failureThreshold: 1, resetTimeoutMs: 60_000, fleet: { store, node: id, quorum: { minNodes: 2, minFraction: 0 } } });
        const [a, b, c] = [node('a'), node('b'), node('c')];
        // callers' calls through every node, all along: none may fail, none may wait
        let running = true;
        let calls = 0;
        let slowest = 0;
        const failures: string[] = [];
        const traffic = (async () => {
          while (running) {
            for (const breaker of [a, b, c]) {
              const started = performance.now();
              const out = await get(
                of('ok').pipe(
                  circuitBreak(breaker),
                  catchError((e: unknown) => of((e as Error).name)),
                ),
              );
              slowest = Math.max(slowest, performance.now() - started);
              calls++;
              if (out !== 'ok') failures.push(out);
            }
            await sleep(5);
          }
        })();
        // store calls through the guard every fleet call goes through: each answers or fails within timeoutMs, never hangs
        const guard = new StoreGuard(new CircuitBreaker(storeBreakerOptions('fleet-store', asyncScheduler)), store.timeoutMs, asyncScheduler);
        const bounded: number[] = [];
        const storeTraffic = (async () => {
          while (running) {
            const started = performance.now();
            await get(guard.run(() => store.sync('probe', [name]))).catch(() => undefined);
            bounded.push(performance.now() - started);
            await sleep(20);
          }
        })();
        await sleep(300);
        const failingOver = performance.now();
        await sentinels!.failover();
        const promoted = performance.now();
        await sleep(500);
        running = false;
        await Promise.all([traffic, storeTraffic]);
        expect(failures, 'no caller saw a store error').to.deep.equal([]);
        expect(calls).to.be.greaterThan(30);
        // acquire() is local: a call never waits on Redis (a loaded machine's scheduling aside)
        expect(slowest, 'the slowest caller call, ms').to.be.below(250);

        // the verdict made before the failover, on the new primary: the same generation
        let after: { state: string; generation: number } | undefined;
        for (let i = 0; i < 100 && after === undefined; i++) {
          after = await get(store.sync('admin', [`model:${kind}:kept`])).then(
            (v) => v[0],
            () => undefined,
          );
          if (after === undefined) await sleep(100);
        }
        expect(after, 'the store answers on the new primary').to.not.equal(undefined);
        const slowestStoreCall = Math.max(...bounded);
        console.log(
          `      ${kind}: SENTINEL failover took ${Math.round(promoted - failingOver)} ms; the store answered on the new primary ${Math.round(performance.now() - promoted)} ms after it; ${calls} caller calls, the slowest ${Math.round(slowest)} ms; the slowest guarded store call ${Math.round(slowestStoreCall)} ms`,
        );
        expect(slowestStoreCall, "a guarded store call answers or fails within its bound (timeoutMs 100, and a loaded machine's slack)").to.be.below(600);
        expect(after).to.include({ state: 'isolated', generation: kept.generation });

        // the fleet on the new primary: two nodes open by quorum, the third follows
        const fail = (breaker: CircuitBreaker) =>
          get(
            throwError(() => new HttpError(503)).pipe(
              circuitBreak(breaker),
              catchError((e: unknown) => of((e as Error).name)),
            ),
          );
        await sleep(1_200); // a node's guard that opened during the failover tries the store again after 1 s
        expect(await fail(a)).to.equal('HttpError');
        expect(await fail(b)).to.equal('HttpError');
        for (let i = 0; i < 150 && c.state !== 'open'; i++) await sleep(20);
        expect(c.state, 'the third node, by the fleet verdict on the new primary').to.equal('open');

        // the shared limit: the allowance, plus the documented error — tokens granted by the old
        // primary after the replica's last sync are lost (at most the limit's pace over the
        // failover: from the sync check to the promotion), and a node deciding alone serves its
        // share (the limit ÷ the live nodes, no burst: together at most the limit's pace)
        const starts = await limit.stop();
        const last = Math.max(...starts.map((s) => s.at));
        const tokens = starts.length * COST;
        const allowance = LIMIT + (LIMIT * (last - limitStarted)) / 60_000;
        const local = starts.filter((s) => s.local).map((s) => s.at);
        const aloneMs = local.length ? Math.max(...local) - Math.min(...local) + (60_000 * COST * LIMIT_NODES) / LIMIT : 0;
        const error = (LIMIT * (promoted - failingOver + aloneMs)) / 60_000;
        console.log(
          `      ${kind}: tokens/min ${LIMIT} shared by ${LIMIT_NODES} nodes: ${tokens} tokens in ${Math.round(last - limitStarted)} ms (allowance ${allowance.toFixed(0)}; error bound ${error.toFixed(0)}: ${local.length} calls on local shares over ${Math.round(aloneMs)} ms)`,
        );
        expect(tokens, 'tokens served').to.be.at.most(allowance + error);
        // the bucket survived: a state rebuilt empty on the new primary would serve a second burst
        expect(tokens, 'no second burst').to.be.below(allowance + LIMIT / 2);
        expect(
          starts.some((s) => !s.local && s.at > promoted),
          'shared grants on the new primary',
        ).to.equal(true);
      } finally {
        await limit?.stop();
        await store.close();
        await clients.close();
      }
    });
  }

  // every rule of both stores through each Sentinel client, on whichever node is primary now
  for (const [kind, connect] of Object.entries(kinds)) {
    const closers: (() => Promise<void>)[] = [];
    contract(
      `${kind}: RedisBreakerStore / RedisRateLimitStore`,
      async () => {
        const clients = await connect(sentinels!);
        const namespace = `contract-${kind.replace(/\W/g, '-')}`;
        const breakers = new RedisBreakerStore({ client: clients.client, subscriber: clients.subscriber, namespace });
        closers.push(async () => {
          await breakers.close();
          await clients.close();
        });
        for (let i = 0; i < 20; i++)
          if (
            await get(breakers.sync('warm-up', ['warm-up'])).then(
              () => true,
              () => false,
            )
          )
            break;
        await sleep(100); // SUBSCRIBE acknowledged
        return { breakers, limits: new RedisRateLimitStore({ client: clients.client, namespace }) };
      },
      async () => {
        for (const close of closers.splice(0)) await close();
      },
    );
  }

  // the spend store's rules through each Sentinel client
  for (const [kind, connect] of Object.entries(kinds)) {
    const closers: (() => Promise<void>)[] = [];
    spendStoreContract(
      `${kind}: RedisSpendStore`,
      async () => {
        const clients = await connect(sentinels!);
        closers.push(() => clients.close());
        const store = new RedisSpendStore({ client: clients.client, namespace: `spend-${kind.replace(/\W/g, '-')}`, timeoutMs: 10_000 });
        await get(store.reserve({ key: 'warm-up', node: 'warm-up', windowMs: 60_000, limitNanos: 1, nanos: 0 }));
        return store;
      },
      async () => {
        for (const close of closers.splice(0)) await close();
      },
    );
  }

  // last: the restart empties the primary
  for (const [kind, connect] of Object.entries(kinds)) {
    outageCases(
      kind,
      () => connect(sentinels!),
      () => ({
        pause: async (ms, mode) => void (await sentinels!.cli(await sentinels!.primary(), 'CLIENT', 'PAUSE', String(ms), mode)),
        restart: () => sentinels!.restartPrimary(),
      }),
    );
  }
});
