/**
 * The spend store contract: every rule of `SpendStore` (src/core/money/spendStore.ts) as one set of
 * cases any store runs — whole nanodollars, fixed windows on the store's clock (real time here:
 * windows of 200 ms roll over while a case waits), a reservation granted iff `used + nanos ≤
 * limitNanos` and atomic under concurrency, an adjustment `used = max(0, used + delta)` in the
 * window it names, the live nodes of a key. Run against RedisSpendStore on every client and
 * topology the Redis specs start (one server, a cluster, Sentinel; node-redis, ioredis), and
 * against the reference model, MemorySpendStore (spec/redis/stores.spec.ts).
 */
import { expect } from 'chai';
import { firstValueFrom, type Observable } from 'rxjs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SpendGrant, SpendStore } from '../../src/core/money/spendStore.js';

let unique = 0;
const fresh = (): string => `team:${process.pid}-sp${++unique}`;
const get = <T>(o: Observable<T>): Promise<T> => firstValueFrom(o);

/** Registers the contract's cases for the store `make` builds (once), `done` after them. */
export function spendStoreContract(kind: string, make: () => Promise<SpendStore>, done: () => Promise<void>): void {
  describe(`${kind}: the spend store contract`, function () {
    this.timeout(20_000);
    let store: SpendStore;
    before(async () => {
      store = await make();
    });
    after(done);

    const HOUR = 3_600_000;
    const on = (key: string, windowMs = HOUR, limitNanos = 100) => ({
      reserve: (nanos: number, node = 'a'): Promise<SpendGrant> => get(store.reserve({ key, node, windowMs, limitNanos, nanos })),
      adjust: (window: number, deltaNanos: number): Promise<true> => get(store.adjust({ key, window, windowMs, deltaNanos })),
    });
    /** Waits until a window of `windowMs` has begun since `window` began (on the store's clock, read by a reservation of nothing). */
    const nextWindow = async (key: ReturnType<typeof on>, window: number): Promise<SpendGrant> => {
      for (let i = 0; i < 100; i++) {
        const peek = await key.reserve(0);
        if (peek.window !== window) return peek;
        await sleep(20);
      }
      throw new Error('the window never rolled over');
    };

    it('granted iff used + nanos ≤ limitNanos: at the edge granted, one nanodollar past it refused, and a refusal writes nothing', async () => {
      const k = on(fresh());
      const first = await k.reserve(60);
      expect(first).to.include({ granted: true, usedNanos: 60, liveNodes: 1 });
      expect(first.window % HOUR, 'the window starts at a multiple of windowMs').to.equal(0);
      expect(await k.reserve(41), 'one past the limit').to.include({ granted: false, usedNanos: 60, window: first.window });
      expect(await k.reserve(40), 'exactly at the limit').to.include({ granted: true, usedNanos: 100, window: first.window });
      expect(await k.reserve(1)).to.include({ granted: false, usedNanos: 100 });
      expect(await k.reserve(0), 'nothing more fits, nothing is nothing').to.include({ granted: true, usedNanos: 100 });
      expect((await on(fresh()).reserve(101)).granted, 'more than the whole limit, on a fresh key').to.equal(false);
    });

    it('200 reservations at once never grant more than the limit between them (and grant up to it)', async () => {
      const k = on(fresh(), HOUR, 1_000);
      const grants = await Promise.all(Array.from({ length: 200 }, (_, i) => k.reserve(7, `n${i % 8}`)));
      const granted = grants.filter((g) => g.granted);
      // a burst at an hour's boundary would straddle two windows: the rule holds in each
      const windows = new Set(grants.map((g) => g.window));
      for (const window of windows) {
        const inWindow = granted.filter((g) => g.window === window).length;
        expect(inWindow * 7, `granted × nanos in window ${window}`).to.be.at.most(1_000);
        if (windows.size === 1) expect(inWindow, 'up to the limit: 142 × 7 = 994').to.equal(Math.floor(1_000 / 7));
      }
      const used = granted.map((g) => `${g.window}:${g.usedNanos}`);
      expect(new Set(used).size, "each grant saw the others' before it: distinct used").to.equal(used.length);
      expect(grants.filter((g) => !g.granted).every((g) => g.usedNanos + 7 > 1_000)).to.equal(true);
    });

    it('adjust: a settle below the hold gives back, a charge above it takes more (used may pass the limit), in the named window', async () => {
      const k = on(fresh());
      const held = await k.reserve(90);
      expect(await k.adjust(held.window, -30)).to.equal(true);
      expect(await k.reserve(0)).to.include({ usedNanos: 60 });
      await k.adjust(held.window, 50); // the call cost more than it held
      expect(await k.reserve(0), 'over the limit: even nothing is refused').to.include({ granted: false, usedNanos: 110 });
      await k.adjust(held.window, -10);
      expect(await k.reserve(0)).to.include({ granted: true, usedNanos: 100 });
    });

    it('a refund floors at 0: more given back than was held leaves nothing to borrow against', async () => {
      const k = on(fresh());
      const held = await k.reserve(50);
      await k.adjust(held.window, -80);
      expect(await k.reserve(0)).to.include({ usedNanos: 0 });
      expect((await k.reserve(101)).granted, 'not 130 of room').to.equal(false);
      expect(await k.reserve(100)).to.include({ granted: true, usedNanos: 100 });
      // a refund of a window with nothing in it writes nothing either
      const other = on(fresh());
      await other.adjust(held.window, -5);
      expect(await other.reserve(0)).to.include({ usedNanos: 0 });
    });

    it("windows roll over on the store's clock (200 ms): the next window grants anew; an ended window's adjustment leaves the current one alone", async () => {
      const windowMs = 200;
      // the two first calls in one window: on a loaded machine a window may end between them (then again, on a fresh key)
      let k = on(fresh(), windowMs, 100);
      let full = await k.reserve(100);
      let over = await k.reserve(1);
      for (let i = 0; i < 5 && over.window !== full.window; i++) {
        k = on(fresh(), windowMs, 100);
        full = await k.reserve(100);
        over = await k.reserve(1);
      }
      expect(full.granted).to.equal(true);
      expect(full.window % windowMs).to.equal(0);
      expect(over).to.include({ granted: false, window: full.window });
      const next = await nextWindow(k, full.window);
      expect(next.window).to.be.greaterThan(full.window);
      expect(next.window % windowMs).to.equal(0);
      expect(next.usedNanos, 'a new window starts empty').to.equal(0);
      const held = await k.reserve(70);
      expect(held).to.include({ granted: true, usedNanos: 70 });
      // the first window's call settles late: its refund and its overcharge go to the first window
      await k.adjust(full.window, -100);
      await k.adjust(full.window, 500);
      const peek = await k.reserve(0);
      expect(peek.usedNanos, 'the current window, untouched').to.equal(peek.window === held.window ? 70 : 0);
      if (peek.window === held.window) await k.adjust(held.window, -20);
      if (peek.window === held.window) expect(await k.reserve(0)).to.include({ usedNanos: 50 });
    });

    it('liveNodes: the nodes that reserved on this key, each once, refused reservations included; keys apart', async () => {
      const key = fresh();
      const k = on(key);
      expect((await k.reserve(1, 'a')).liveNodes).to.equal(1);
      expect((await k.reserve(1, 'b')).liveNodes).to.equal(2);
      expect((await k.reserve(1, 'a')).liveNodes, 'the same node twice').to.equal(2);
      expect(await k.reserve(1_000, 'c'), 'a refusal counts its node').to.include({ granted: false, liveNodes: 3 });
      expect((await on(fresh()).reserve(1, 'a')).liveNodes, 'another key').to.equal(1);
      // another window length is another limit on the same key: its own used
      expect(await on(key, 60_000).reserve(100, 'a')).to.include({ granted: true, usedNanos: 100 });
    });

    it('a reservation is a command sent: unsubscribing before its answer stops listening, not the reservation (it lands)', async () => {
      const key = fresh();
      const request = { key, node: 'a', windowMs: HOUR, limitNanos: 100, nanos: 30 };
      store.reserve(request).subscribe().unsubscribe();
      store.reserve(request).subscribe().unsubscribe();
      await sleep(50);
      expect(await get(store.reserve(request)), 'both cancelled reservations were made').to.include({ granted: true, usedNanos: 90 });
    });
  });
}
