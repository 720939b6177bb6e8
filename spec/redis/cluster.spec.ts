/**
 * The Redis stores on a real, changing Redis Cluster (a local 3-master cluster started and stopped
 * here), through node-redis's `createCluster` and ioredis's `Cluster`: slots moved mid-traffic —
 * `MOVED` once a slot has moved, `ASK` while it is half-migrated — and every master's script cache
 * flushed mid-traffic (`NOSCRIPT`) heal without one failed store call (so nothing even reaches the
 * fleet's guard, let alone a caller); and a fleet of breakers on the cluster opens by quorum after
 * its slot moved, as on one server.
 */
import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { catchError, firstValueFrom, type Observable, of, tap, throwError } from 'rxjs';
import { Cluster } from 'ioredis';
import { createCluster } from 'redis';
import { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { HttpError } from '../../src/core/errors/errors.js';
import { RedisBreakerStore, RedisRateLimitStore, RedisSpendStore } from '../../src/redis/index.js';
import type { RedisClientLike, RedisSubscriberLike } from '../../src/redis/index.js';
import { ioredisPair } from '../support/ioredisPair.js';
import { requireProgram } from '../support/systemPackage.js';
import { startRedisCluster, type RedisClusterServers } from '../support/redisCluster.js';

const get = <T>(o: Observable<T>): Promise<T> => firstValueFrom(o);

interface Clients {
  readonly client: RedisClientLike;
  readonly subscriber: RedisSubscriberLike;
  close(): Promise<void>;
}

const kinds: Record<string, (servers: RedisClusterServers) => Promise<Clients>> = {
  'node-redis createCluster': async (servers) => {
    const client = createCluster({ rootNodes: servers.nodes.map((n) => ({ url: n.url })), defaults: { disableOfflineQueue: true } });
    client.on('error', () => undefined);
    await client.connect();
    return { client, subscriber: client, close: () => client.close() };
  },
  'ioredis Cluster': (servers) =>
    ioredisPair(
      () =>
        new Cluster(
          servers.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
          { enableOfflineQueue: false, redisOptions: { maxRetriesPerRequest: 1 } },
        ),
    ),
};

describe('the Redis stores on a changing 3-master Redis Cluster', function () {
  this.timeout(60_000);
  let servers: RedisClusterServers | undefined;
  before(async function () {
    const server = requireProgram(this, { name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server (.ci/run does)' });
    const cli = requireProgram(this, { name: 'redis-cli', command: 'redis-cli', install: 'apt-get install redis-server (.ci/run does; it ships redis-cli)' });
    servers = await startRedisCluster(server, cli, 3);
  });
  after(async () => {
    await servers?.stop();
  });

  for (const [kind, connect] of Object.entries(kinds)) {
    describe(kind, () => {
      let clients: Clients;
      let breakers: RedisBreakerStore;
      let limits: RedisRateLimitStore;
      let spend: RedisSpendStore;
      const namespace = kind.replace(/\W/g, '-');
      before(async () => {
        clients = await connect(servers!);
        // timeouts far from a loaded machine's latencies: this counts failures of commands, not their speed
        breakers = new RedisBreakerStore({ client: clients.client, subscriber: clients.subscriber, namespace, timeoutMs: 5_000, pollMs: 200 });
        limits = new RedisRateLimitStore({ client: clients.client, namespace, timeoutMs: 5_000 });
        spend = new RedisSpendStore({ client: clients.client, namespace, timeoutMs: 5_000 });
        // every master's connection open, the script in every cache
        for (let i = 0; i < 20; i++)
          if (
            await get(
              breakers.sync(
                'warm-up',
                Array.from({ length: 60 }, (_, j) => `warm-up:${j}`),
              ),
            ).then(
              () => true,
              () => false,
            )
          )
            break;
      });
      after(async () => {
        await breakers.close();
        await clients.close();
      });

      /** Store calls on `name` and `key` one after another until `stop()`: how many answered, and every error. */
      function traffic(name: string, key: string): { stop(): Promise<{ answered: number; errors: string[] }> } {
        let running = true;
        let answered = 0;
        const errors: string[] = [];
        const quorum = { minNodes: 5, minFraction: 0, windowMs: 60_000 };
        let window = 0;
        const ops: (() => Observable<unknown>)[] = [
          () => breakers.sync('n1', [name]),
          () => breakers.vote('n2', name, quorum, 60_000),
          () => breakers.acquireProbe('n3', name, 1_000),
          () => limits.reserve({ key, node: 'n1', maxWaitMs: 0, limits: [{ id: 'requests', limit: 1_000_000, periodMs: 60_000, cost: 1 }] }),
          () => limits.adjust({ key, limits: [{ id: 'requests', limit: 1_000_000, periodMs: 60_000, delta: -1 }] }),
          () => spend.reserve({ key, node: 'n1', windowMs: 60_000, limitNanos: 1e15, nanos: 1_000 }).pipe(tap((g) => (window = g.window))),
          () => spend.adjust({ key, window, windowMs: 60_000, deltaNanos: -1 }),
        ];
        const loop = (async () => {
          for (let i = 0; running; i++) {
            try {
              await get(ops[i % ops.length]!());
              answered++;
            } catch (e) {
              errors.push(String((e as Error).message ?? e));
            }
          }
        })();
        return {
          stop: async () => {
            running = false;
            await loop;
            return { answered, errors };
          },
        };
      }

      it('slots moved mid-traffic — MOVED after, ASK while half-migrated — heal: every store call answers', async () => {
        const name = `model:${kind}:moved`;
        const key = `openai:${kind}:moved`;
        const run = traffic(name, key);
        await sleep(200);
        const tags = [
          `{${namespace}:b:${name.replace(/:/g, '%3A')}}`,
          `{${namespace}:rl:${key.replace(/:/g, '%3A')}}`,
          `{${namespace}:sp:${key.replace(/:/g, '%3A')}}`,
        ];
        for (const tag of tags) {
          const slot = await servers!.slotOf(tag);
          const from = await servers!.owner(slot);
          const to = servers!.nodes.find((n) => n.id !== from.id)!;
          // halfway: keys still on the source, the slot migrating — new keys and moved ones answer ASK
          await servers!.moveSlot(slot, to, () => sleep(300));
          expect((await servers!.owner(slot)).id, 'the slot moved').to.equal(to.id);
          await sleep(300); // traffic after the move: MOVED, then the client's new slot map
        }
        const { answered, errors } = await run.stop();
        expect(errors.slice(0, 5), `failed store calls (${errors.length})`).to.deep.equal([]);
        expect(answered).to.be.greaterThan(20);
        // the moved breaker's state is whole: five votes of five nodes open it
        for (const node of ['a', 'b', 'c', 'd']) await get(breakers.vote(node, name, { minNodes: 5, minFraction: 0, windowMs: 60_000 }, 60_000));
        expect(await get(breakers.vote('e', name, { minNodes: 5, minFraction: 0, windowMs: 60_000 }, 60_000))).to.include({ state: 'open', reason: 'quorum' });
      });

      it('SCRIPT FLUSH on every master mid-traffic (NOSCRIPT everywhere): EVAL takes over, every store call answers', async () => {
        const run = traffic(`model:${kind}:flushed`, `openai:${kind}:flushed`);
        for (let i = 0; i < 3; i++) {
          await sleep(150);
          await servers!.flushScripts();
        }
        await sleep(150);
        const { answered, errors } = await run.stop();
        expect(errors.slice(0, 5), `failed store calls (${errors.length})`).to.deep.equal([]);
        expect(answered).to.be.greaterThan(20);
      });

      it("a fleet on the cluster, its slot moved: two nodes' breakers open by quorum, the third opens too (fleet_open) without a failure of its own; no store error reaches a call", async () => {
        const name = `model:${kind}:fleet`;
        const node = (id: string) =>
          new CircuitBreaker({
            name,
            failureThreshold: 1,
            resetTimeoutMs: 60_000,
            fleet: { store: breakers, node: id, quorum: { minNodes: 2, minFraction: 0 } },
          });
        const [a, b, c] = [node('a'), node('b'), node('c')];
        const slot = await servers!.slotOf(`{${namespace}:b:${name.replace(/:/g, '%3A')}}`);
        const from = await servers!.owner(slot);
        await servers!.moveSlot(
          slot,
          servers!.nodes.find((n) => n.id !== from.id)!,
        );
        const fail = (breaker: CircuitBreaker) =>
          get(
            throwError(() => new HttpError(503)).pipe(
              circuitBreak(breaker),
              catchError((e: unknown) => of((e as Error).name)),
            ),
          );
        expect(await fail(a)).to.equal('HttpError');
        expect(await fail(b)).to.equal('HttpError');
        for (let i = 0; i < 100 && c.state !== 'open'; i++) await sleep(20);
        expect(c.state, 'the third node, by the fleet verdict').to.equal('open');
        expect(
          await get(
            of('x').pipe(
              circuitBreak(c),
              catchError((e: unknown) => of((e as Error).name)),
            ),
          ),
        ).to.equal('CircuitOpenError');
      });
    });
  }
});
