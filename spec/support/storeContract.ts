/**
 * The store contract: every rule of the fleet's breaker store and of the shared rate-limit store,
 * as one set of cases any pair of stores runs — the reference models (MemoryBreakerStore /
 * MemoryRateLimitStore) and the Redis stores on every client and topology the specs start (one
 * server, a cluster; node-redis, ioredis).
 */
import { expect } from 'chai';
import { filter, firstValueFrom, type Observable, take, toArray } from 'rxjs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BreakerStore, FleetVerdict, Quorum } from '../../src/core/breaker/fleetSeam.js';
import type { RateLimitStore } from '../../src/core/rate-limit/rateLimitStore.js';

const quorum: Quorum = { minNodes: 2, minFraction: 0.25, windowMs: 60_000 };
let unique = 0;
const fresh = (): string => `model:${process.pid}-${++unique}`;
const get = <T>(o: Observable<T>): Promise<T> => firstValueFrom(o);

/** The two stores a contract run checks. */
export interface Stores {
  readonly breakers: BreakerStore;
  readonly limits: RateLimitStore;
}

/** Registers both contracts' cases for the stores `make` builds (once per contract), `done` after each. */
export function contract(kind: string, make: () => Promise<Stores>, done: () => Promise<void>): void {
  describe(`${kind}: the breaker store contract`, () => {
    let s: Stores;
    before(async () => {
      s = await make();
    });
    after(done);

    it("a vote alone opens nothing; a second node's vote opens the verdict for openMs (reason quorum)", async () => {
      const name = fresh();
      const one = await get(s.breakers.vote('a', name, quorum, 60_000));
      expect(one).to.include({ state: 'closed', reason: 'none' });
      const again = await get(s.breakers.vote('a', name, quorum, 60_000));
      expect(again.state, 'the same node twice is one vote').to.equal('closed');
      const two = await get(s.breakers.vote('b', name, quorum, 60_000));
      expect(two).to.include({ state: 'open', reason: 'quorum' });
      expect(two.remainingMs).to.be.within(59_000, 60_000);
      expect(two.generation).to.be.greaterThan(one.generation);
    });

    it('minFraction counts the live nodes (those that synced)', async () => {
      const name = fresh();
      await get(s.breakers.sync('n1', [name]));
      await get(s.breakers.sync('n2', [name]));
      await get(s.breakers.sync('n3', [name]));
      await get(s.breakers.sync('n4', [name]));
      const strict = { ...quorum, minFraction: 0.75 };
      expect((await get(s.breakers.vote('n1', name, strict, 1000))).state).to.equal('closed');
      expect((await get(s.breakers.vote('n2', name, strict, 1000))).state).to.equal('closed');
      expect((await get(s.breakers.vote('n3', name, strict, 1000))).state).to.equal('open');
    });

    it('a fact opens at once; a shorter one never shortens the deadline, a longer one extends it', async () => {
      const name = fresh();
      const long = await get(s.breakers.fact('a', name, 10_000));
      expect(long).to.include({ state: 'open', reason: 'rate_limit' });
      const short = await get(s.breakers.fact('b', name, 1_000));
      expect(short.generation, 'no change').to.equal(long.generation);
      expect(short.remainingMs).to.be.greaterThan(9_000);
      const longer = await get(s.breakers.fact('b', name, 20_000));
      expect(longer.generation).to.be.greaterThan(long.generation);
      expect(longer.remainingMs).to.be.greaterThan(19_000);
    });

    it('one prober: no lease before the deadline; then one holder; another node only once the lease ran out', async () => {
      const name = fresh();
      await get(s.breakers.fact('a', name, 40));
      expect((await get(s.breakers.acquireProbe('a', name, 60))).granted, 'before the deadline').to.equal(false);
      await sleep(60);
      const a = await get(s.breakers.acquireProbe('a', name, 60));
      expect(a.granted).to.equal(true);
      const b = await get(s.breakers.acquireProbe('b', name, 60));
      expect(b.granted).to.equal(false);
      expect(b.verdict.leaseRemainingMs).to.be.within(1, 60);
      await sleep(80);
      expect((await get(s.breakers.acquireProbe('b', name, 60))).granted, 'after the lease').to.equal(true);
    });

    it("only the lease holder's result counts: success closes, failure re-opens", async () => {
      const name = fresh();
      await get(s.breakers.fact('a', name, 1));
      await sleep(10);
      expect((await get(s.breakers.acquireProbe('a', name, 5_000))).granted).to.equal(true);
      const ignored = await get(s.breakers.probeResult('b', name, true, 1_000));
      expect(ignored.state, 'not the holder').to.equal('open');
      const failed = await get(s.breakers.probeResult('a', name, false, 1_000));
      expect(failed).to.include({ state: 'open', reason: 'probe_failure' });
      expect(failed.remainingMs).to.be.within(900, 1_000);
      expect(failed.leaseRemainingMs, 'the lease ends with the result').to.equal(undefined);
      const second = fresh();
      await get(s.breakers.fact('a', second, 1));
      await sleep(10);
      await get(s.breakers.acquireProbe('c', second, 5_000));
      expect(await get(s.breakers.probeResult('c', second, true, 1_000))).to.include({ state: 'closed', reason: 'probe_success' });
    });

    it("a stale open verdict (its period over, its prober's lease run out without a result): a new quorum opens it anew for openMs", async () => {
      const name = fresh();
      await get(s.breakers.vote('a', name, quorum, 40));
      const opened = await get(s.breakers.vote('b', name, quorum, 40));
      expect(opened).to.include({ state: 'open', reason: 'quorum' });
      await sleep(60);
      expect((await get(s.breakers.acquireProbe('prober', name, 60))).granted).to.equal(true);
      await sleep(80); // the prober never reports; its lease runs out
      const one = await get(s.breakers.vote('a', name, quorum, 60_000));
      expect(one.generation, 'one vote is no quorum').to.equal(opened.generation);
      const two = await get(s.breakers.vote('b', name, quorum, 60_000));
      expect(two).to.include({ state: 'open', reason: 'quorum' });
      expect(two.generation).to.be.greaterThan(opened.generation);
      expect(two.remainingMs).to.be.within(59_000, 60_000);
      expect(two.leaseRemainingMs, 'a new period, no lease').to.equal(undefined);
      expect((await get(s.breakers.acquireProbe('prober', name, 60))).granted, 'the new period is not over').to.equal(false);
    });

    it('a stale open verdict whose probe lease was never taken: a new quorum opens it anew too, and so does a fact', async () => {
      const name = fresh();
      await get(s.breakers.vote('a', name, quorum, 40));
      const opened = await get(s.breakers.vote('b', name, quorum, 40));
      await sleep(60);
      await get(s.breakers.vote('a', name, quorum, 60_000));
      const two = await get(s.breakers.vote('b', name, quorum, 60_000));
      expect(two).to.include({ state: 'open', reason: 'quorum' });
      expect(two.generation).to.be.greaterThan(opened.generation);
      expect(two.remainingMs).to.be.within(59_000, 60_000);
      const stale = fresh();
      await get(s.breakers.vote('a', stale, quorum, 40));
      const old = await get(s.breakers.vote('b', stale, quorum, 40));
      await sleep(60);
      expect((await get(s.breakers.acquireProbe('prober', stale, 1))).granted).to.equal(true);
      await sleep(20);
      const fact = await get(s.breakers.fact('c', stale, 10_000));
      expect(fact).to.include({ state: 'open', reason: 'rate_limit' });
      expect(fact.generation).to.be.greaterThan(old.generation);
      expect(fact.remainingMs).to.be.within(9_000, 10_000);
    });

    it('while the prober holds its lease, votes do not re-open the verdict (the probe is in progress): its result still counts', async () => {
      const name = fresh();
      await get(s.breakers.vote('a', name, quorum, 40));
      const opened = await get(s.breakers.vote('b', name, quorum, 40));
      await sleep(60);
      expect((await get(s.breakers.acquireProbe('prober', name, 5_000))).granted).to.equal(true);
      await get(s.breakers.vote('a', name, quorum, 60_000));
      const two = await get(s.breakers.vote('b', name, quorum, 60_000));
      expect(two).to.include({ state: 'open', reason: 'quorum', generation: opened.generation, remainingMs: 0 });
      expect(two.leaseRemainingMs, 'the lease is untouched').to.be.within(4_000, 5_000);
      expect(await get(s.breakers.probeResult('prober', name, true, 1_000))).to.include({ state: 'closed', reason: 'probe_success' });
    });

    it('isolate and reset by hand; every change is published on changes$ with its generation', async () => {
      const name = fresh();
      // Only this name's changes: an earlier spec's publication may still be on its way.
      const published = firstValueFrom(
        s.breakers.changes$.pipe(
          filter((v: FleetVerdict) => v.name === name),
          take(2),
          toArray(),
        ),
      );
      const isolated = await get(s.breakers.isolate('a', name));
      expect(isolated).to.include({ state: 'isolated', remainingMs: Infinity });
      const reset = await get(s.breakers.reset('b', name));
      expect(reset).to.include({ state: 'closed', reason: 'reset' });
      const seen = await published;
      expect(seen.map((v) => [v.state, v.generation])).to.deep.equal([
        ['isolated', isolated.generation],
        ['closed', reset.generation],
      ]);
    });

    it("sync answers every name's verdict in order", async () => {
      const [x, y] = [fresh(), fresh()];
      await get(s.breakers.isolate('a', y));
      const verdicts = await get(s.breakers.sync('a', [x, y]));
      expect(verdicts.map((v) => [v.name, v.state])).to.deep.equal([
        [x, 'closed'],
        [y, 'isolated'],
      ]);
    });
  });

  describe(`${kind}: the rate-limit store contract`, () => {
    let s: Stores;
    before(async () => {
      s = await make();
    });
    after(done);
    const minute = (id: string, limit: number, cost: number) => ({ id, limit, periodMs: 60_000, cost });

    it("GCRA: a period's burst at once, then waits of period/limit per unit; past maxWaitMs, not granted and nothing reserved", async () => {
      const key = fresh();
      const reserve = (node: string, cost: number) => get(s.limits.reserve({ key, node, maxWaitMs: 30_000, limits: [minute('requests', 2, cost)] }));
      expect(await reserve('a', 1)).to.include({ granted: true, waitMs: 0 });
      expect(await reserve('b', 1)).to.include({ granted: true, waitMs: 0, liveNodes: 2 });
      const third = await reserve('a', 1);
      expect(third.granted).to.equal(true);
      expect(third.waitMs).to.be.within(29_900, 30_000);
      const refused = await reserve('a', 1);
      expect(refused.granted).to.equal(false);
      expect(refused.waitMs).to.be.within(59_900, 60_000);
      expect((await reserve('a', 1)).waitMs, 'the refusal reserved nothing').to.be.within(59_900, 60_000);
    });

    it('every limit at once: granted only if all fit; cost > 1 for tokens', async () => {
      const key = fresh();
      const both = (tokens: number) =>
        get(s.limits.reserve({ key, node: 'a', maxWaitMs: 0, limits: [minute('requests', 100, 1), minute('tokens', 1000, tokens)] }));
      expect((await both(900)).granted).to.equal(true);
      expect((await both(200)).granted, 'tokens would wait').to.equal(false);
      expect((await both(100)).granted).to.equal(true);
    });

    it('adjust: a refund (negative delta) and a floor from provider headers', async () => {
      const key = fresh();
      const tokens = (cost: number, maxWaitMs = 0) => get(s.limits.reserve({ key, node: 'a', maxWaitMs, limits: [minute('tokens', 1000, cost)] }));
      expect((await tokens(1000)).granted).to.equal(true);
      expect((await tokens(500)).granted).to.equal(false);
      await get(s.limits.adjust({ key, limits: [{ id: 'tokens', limit: 1000, periodMs: 60_000, delta: -600 }] }));
      expect((await tokens(500)).granted, 'after the refund').to.equal(true);
      await get(s.limits.adjust({ key, limits: [{ id: 'tokens', limit: 1000, periodMs: 60_000, floorMs: 60_000 }] }));
      const after = await tokens(10, 60_000);
      expect(after.waitMs, 'the provider said nothing remains').to.be.within(500, 600);
    });

    it('a reservation is a command sent: unsubscribing before its answer stops listening, not the reservation (it lands)', async () => {
      const key = fresh();
      const request = { key, node: 'a', maxWaitMs: 60_000, limits: [minute('requests', 2, 1)] };
      s.limits.reserve(request).subscribe().unsubscribe();
      s.limits.reserve(request).subscribe().unsubscribe();
      await sleep(50);
      const third = await get(s.limits.reserve(request));
      expect(third.waitMs, 'both cancelled reservations were made').to.be.within(29_900, 30_000);
    });
  });
}
