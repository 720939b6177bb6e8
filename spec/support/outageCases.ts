/**
 * Redis paused and restarted, as one set of cases for every topology and client the Redis specs
 * start (one server, a 3-master cluster, a Sentinel set; node-redis, ioredis): a command reaching
 * a paused Redis after its caller gave up changes nothing; callers' calls through fleet breakers
 * neither fail nor wait while Redis is paused, and the store answers again after; a restart (data
 * and script cache gone) heals, and generations keep growing. Register them last in a describe:
 * the restart leaves the data node empty.
 */
import { expect } from 'chai';
import { catchError, firstValueFrom, type Observable, of } from 'rxjs';
import { setTimeout as sleep } from 'node:timers/promises';
import { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import type { FleetVerdict } from '../../src/core/breaker/fleetSeam.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { RedisBreakerStore } from '../../src/redis/index.js';
import { hashTag } from '../../src/redis/keys.js';
import type { RedisClientLike, RedisSubscriberLike } from '../../src/redis/index.js';

const get = <T>(o: Observable<T>): Promise<T> => firstValueFrom(o);
let unique = 0;

/** A store's connections. */
export interface StoreClients {
  readonly client: RedisClientLike;
  readonly subscriber: RedisSubscriberLike;
  close(): Promise<void>;
}

/** What the cases do to Redis. */
export interface Outage {
  /** `CLIENT PAUSE <ms> <mode>` on every data node the stores write to (a cluster's masters, a Sentinel set's primary). */
  pause(ms: number, mode: 'ALL' | 'WRITE'): Promise<void>;
  /** Kills the data node holding `key` (its hash slot's master, the primary) and starts it again, empty. */
  restart(key: string): Promise<void>;
}

export function outageCases(kind: string, connect: () => Promise<StoreClients>, outage: () => Outage): void {
  describe(`${kind}: Redis paused and restarted`, () => {
    const closers: (() => Promise<void>)[] = [];
    const store = async (namespace: string): Promise<RedisBreakerStore> => {
      const clients = await connect();
      const s = new RedisBreakerStore({ client: clients.client, subscriber: clients.subscriber, namespace, timeoutMs: 100, pollMs: 200 });
      closers.push(async () => {
        await s.close();
        await clients.close();
      });
      // the store learns Redis's clock (and, on a cluster, the client its masters)
      for (let i = 0; i < 20; i++)
        if (
          await get(
            s.sync(
              'warm-up',
              Array.from({ length: 20 }, (_, j) => `warm-up:${j}`),
            ),
          ).then(
            () => true,
            () => false,
          )
        )
          break;
      return s;
    };
    after(async () => {
      for (const close of closers.splice(0)) await close();
    });

    it('a command reaching a paused Redis after its caller gave up has no effect (CLIENT PAUSE WRITE)', async function () {
      this.timeout(15_000);
      const s = await store('late');
      const name = `model:${process.pid}-late-${++unique}`;
      await get(s.sync('a', [name]));
      await outage().pause(400, 'WRITE');
      const late = await get(s.fact('a', name, 60_000)).then(
        () => 'answered',
        (e: unknown) => (e as Error).name,
      );
      expect(late).to.be.oneOf(['ExpiredCommandError', 'TimeoutError']);
      await sleep(500);
      expect((await get(s.sync('a', [name])))[0]!.state, 'the late fact changed nothing').to.equal('closed');
    });

    it('paused (CLIENT PAUSE ALL): callers through fleet breakers neither fail nor wait; the store answers again after', async function () {
      this.timeout(15_000);
      const s = await store('paused');
      const breaker = new CircuitBreaker({ name: `model:${process.pid}-paused-${++unique}`, failureThreshold: 1, fleet: { store: s, node: 'a' } });
      await outage().pause(700, 'ALL');
      const started = performance.now();
      let slowest = 0;
      const seen = new Set<string>();
      let calls = 0;
      while (performance.now() - started < 900) {
        const t = performance.now();
        seen.add(
          await get(
            of('ok').pipe(
              circuitBreak(breaker),
              catchError((e: unknown) => of((e as Error).name)),
            ),
          ),
        );
        slowest = Math.max(slowest, performance.now() - t);
        calls++;
        await sleep(5);
      }
      expect([...seen], 'what callers saw').to.deep.equal(['ok']);
      expect(calls).to.be.greaterThan(20);
      expect(slowest, 'the slowest call, ms (acquire() is local)').to.be.below(250);
      let answered = false;
      for (let i = 0; i < 60 && !answered; i++) {
        answered = await get(s.sync('a', [breaker.name])).then(
          () => true,
          () => false,
        );
        if (!answered) await sleep(50);
      }
      expect(answered, 'the store answers after the pause').to.equal(true);
    });

    it('restarted (its data and script cache gone): store calls work again and generations keep growing', async function () {
      this.timeout(30_000);
      const s = await store('restart');
      const name = `model:${process.pid}-restart-${++unique}`;
      const before = await get(s.isolate('a', name));
      await outage().restart(hashTag('restart', 'b', name));
      let after: FleetVerdict | undefined;
      for (let i = 0; i < 200 && after === undefined; i++) {
        after = await get(s.isolate('a', name)).catch(() => undefined);
        if (after === undefined) await sleep(50);
      }
      expect(after, 'the store answers again').to.not.equal(undefined);
      expect(after!.generation).to.be.greaterThan(before.generation);
    });
  });
}
