/**
 * MemorySpendStore in virtual time: the SpendStore rule (grant while `used + nanos ≤ limitNanos`,
 * nothing written on a refusal), fixed windows aligned on the store's clock, adjustments clamped at
 * 0 and confined to their window, live nodes per key, a dead or slow store with Redis's window, and
 * ended windows dropped.
 */
import { expect } from 'chai';
import { map, mergeMap } from 'rxjs';
import { InvalidOptionError } from '../../../src/core/errors/errors.js';
import { MemorySpendStore } from '../../../src/core/money/memorySpendStore.js';
import type { SpendGrant, SpendRequest } from '../../../src/core/money/spendStore.js';
import { virtual } from '../../support/marbles.js';

const request = (nanos: number, extra: Partial<SpendRequest> = {}): SpendRequest => ({ key: 'k', node: 'n1', windowMs: 10, limitNanos: 100, nanos, ...extra });
/** A grant in a letter's worth: `g<used>@<window>` granted, `r<used>@<window>` refused, with the live nodes. */
const label = (g: SpendGrant): string => `${g.granted ? 'g' : 'r'}${g.usedNanos}@${g.window}/${g.liveNodes}`;

describe('core/money/MemorySpendStore (virtual time)', () => {
  it('grants up to the limit exactly, then refuses without writing anything', () => {
    virtual((run) => {
      const store = new MemorySpendStore();
      const asks = run.hot('a b c d', { a: 60, b: 40, c: 1, d: 0 });
      run
        .expectObservable(asks.pipe(mergeMap((n) => store.reserve(request(n)).pipe(map(label)))))
        .toBe('a b c d', { a: 'g60@0/1', b: 'g100@0/1', c: 'r100@0/1', d: 'g100@0/1' });
    });
  });

  it('windows are fixed, aligned on the clock at multiples of windowMs: a new window starts empty', () => {
    virtual((run) => {
      const store = new MemorySpendStore();
      // 100 at 3 (window 0), refused at 9, granted at 10 (window 10), refused at 19, granted at 25 (window 20)
      const asks = run.hot('3ms a 5ms b c 8ms d 5ms e', { a: 100, b: 1, c: 100, d: 1, e: 100 });
      run
        .expectObservable(asks.pipe(mergeMap((n) => store.reserve(request(n)).pipe(map(label)))))
        .toBe('3ms a 5ms b c 8ms d 5ms e', { a: 'g100@0/1', b: 'r100@0/1', c: 'g100@10/1', d: 'r100@10/1', e: 'g100@20/1' });
    });
  });

  it('adjust: a negative delta gives back (never below 0), a positive one charges, in the named window only', () => {
    virtual((run) => {
      const store = new MemorySpendStore();
      const steps = run.hot('a b c d e f', {
        a: () => store.reserve(request(80)).pipe(map(label)),
        b: () => store.adjust({ key: 'k', window: 0, windowMs: 10, deltaNanos: -30 }).pipe(map(() => `${store.usedNanos('k', 10)}`)),
        c: () => store.adjust({ key: 'k', window: 0, windowMs: 10, deltaNanos: 25 }).pipe(map(() => `${store.usedNanos('k', 10)}`)),
        d: () => store.adjust({ key: 'k', window: 0, windowMs: 10, deltaNanos: -500 }).pipe(map(() => `${store.usedNanos('k', 10)}`)),
        // an adjustment of another key, or of the window of another length, is its own
        e: () => store.adjust({ key: 'other', window: 0, windowMs: 10, deltaNanos: 7 }).pipe(map(() => `${store.usedNanos('k', 10)}`)),
        f: () => store.reserve(request(100)).pipe(map(label)),
      });
      run.expectObservable(steps.pipe(mergeMap((step) => step()))).toBe('a b c d e f', { a: 'g80@0/1', b: '50', c: '75', d: '0', e: '0', f: 'g100@0/1' });
    });
  });

  it('an adjustment of a window that has ended changes nothing (the current window keeps its number)', () => {
    virtual((run) => {
      const store = new MemorySpendStore();
      run.at(1, () => store.reserve(request(90)).subscribe());
      run.at(12, () => store.reserve(request(40)).subscribe());
      // at 13, the refund of window 0's 90 arrives: window 10 still holds 40, window 0 is gone
      run.at(13, () => store.adjust({ key: 'k', window: 0, windowMs: 10, deltaNanos: -90 }).subscribe());
      run.expectObservable(run.hot('14ms a').pipe(map(() => [store.usedNanos('k', 10), store.usedNanos('k', 10, 5)]))).toBe('14ms a', { a: [40, 0] });
    });
  });

  it('counts the live nodes of a key within nodeTtlMs, this one included', () => {
    virtual((run) => {
      const store = new MemorySpendStore({ nodeTtlMs: 50 });
      const asks = run.hot('a b c 47ms d e', { a: 'n1', b: 'n2', c: 'n1', d: 'n3', e: 'n3' });
      // at 50, n2 (last seen at 1) is still live; n1 was last seen at 2. At 51 n2 has expired (1 ≤ 51 − 50)
      run
        .expectObservable(asks.pipe(mergeMap((node) => store.reserve(request(0, { node, windowMs: 1000 })).pipe(map((g) => g.liveNodes)))))
        .toBe('a b c 47ms d e', { a: 1, b: 2, c: 2, d: 3, e: 2 });
    });
  });

  it('a dead store errors every operation and writes nothing; it answers again once up', () => {
    virtual((run) => {
      const store = new MemorySpendStore();
      store.down = true;
      run.at(5, () => (store.down = false));
      const asks = run.hot('a 4ms b', { a: 50, b: 50 });
      run.expectObservable(asks.pipe(mergeMap((n) => store.reserve(request(n)).pipe(map(label))))).toBe('# ', undefined, new Error('the memory store is down'));
      run.expectObservable(run.hot('5ms a', { a: 70 }).pipe(mergeMap((n) => store.reserve(request(n)).pipe(map(label))))).toBe('5ms a', { a: 'g70@0/1' });
    });
  });

  it('a slow store: the operation runs latencyMs after the call even if its caller left, and its answer comes replyLatencyMs later', () => {
    virtual((run) => {
      const store = new MemorySpendStore({ latencyMs: 3, replyLatencyMs: 4 });
      // the caller leaves at 1: the reservation still lands at 3
      run.expectObservable(store.reserve(request(60)).pipe(map(label)), '-!').toBe('');
      run.expectObservable(run.hot('5ms a').pipe(map(() => store.usedNanos('k', 10)))).toBe('5ms a', { a: 60 });
      // a second one, listened to: runs at 3 + 3 = 6 against 60 used, answers at 10
      run.expectObservable(run.hot('3ms a', { a: 40 }).pipe(mergeMap((n) => store.reserve(request(n)).pipe(map(label))))).toBe('10ms a', { a: 'g100@0/1' });
    });
  });

  it('an operation reaching the store after its caller’s timeout has no effect', () => {
    virtual((run) => {
      const store = new MemorySpendStore({ latencyMs: 20, timeoutMs: 10 });
      run.expectObservable(store.reserve(request(60))).toBe('20ms #', undefined, new Error('the operation reached the memory store after its deadline'));
      run.expectObservable(run.hot('30ms a').pipe(map(() => store.usedNanos('k', 10, 0)))).toBe('30ms a', { a: 0 });
    });
  });

  it('drops the windows that have ended and the keys left with no window and no live node', () => {
    virtual((run) => {
      const store = new MemorySpendStore({ nodeTtlMs: 15 });
      const counts: number[] = [];
      run.at(0, () => {
        for (let k = 0; k < 50; k++) store.reserve(request(1, { key: `k${k}` })).subscribe();
        counts.push(store.windowCount);
      });
      // at 10 the windows have ended (kept until the next operation); at 20 the nodes have expired too
      run.at(10, () => {
        store.adjust({ key: 'k0', window: 0, windowMs: 10, deltaNanos: -1 }).subscribe();
        counts.push(store.windowCount);
      });
      run.at(20, () => {
        store.reserve(request(1, { key: 'fresh' })).subscribe();
        counts.push(store.windowCount, (store as unknown as { keys: Map<string, unknown> }).keys.size);
      });
      run.flush();
      expect(counts).to.deep.equal([50, 0, 1, 1]);
    });
  });

  it('validates its options, naming the option and the value', () => {
    expect(() => new MemorySpendStore({ latencyMs: -1 })).to.throw(InvalidOptionError, 'option "latencyMs" must be a finite number >= 0, got -1');
    expect(() => new MemorySpendStore({ timeoutMs: 0 })).to.throw(InvalidOptionError, 'option "timeoutMs"');
    expect(() => new MemorySpendStore({ nodeTtl: 5 } as never)).to.throw(InvalidOptionError, 'option "nodeTtl"');
  });
});
