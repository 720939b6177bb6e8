/**
 * SpendLimiter in virtual time: grants and refusals at the edge of the limit, fixed windows, holds
 * settled below or above what they reserved, refunds, a second settlement ignored, a late grant
 * given back when its caller left, the local share while the store is down or slow (and the
 * shared store again once it answers), kept adjustments sent again, a key callback that throws,
 * option validation, the events; and a property over random interleavings of callers.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { catchError, map, mergeMap, type Observable, of, type SchedulerAction } from 'rxjs';
import { BudgetExceededError, InvalidOptionError } from '../../../src/core/errors/errors.js';
import type { HealEvent } from '../../../src/core/events/events.js';
import { HealHub } from '../../../src/core/hub/hub.js';
import { MemorySpendStore } from '../../../src/core/money/memorySpendStore.js';
import type { SpendContext, SpendHold } from '../../../src/core/money/spendGate.js';
import { SpendLimiter, type SpendLimitHold, type SpendLimiterOptions } from '../../../src/core/money/spendLimiter.js';
import { NANOS_PER_USD } from '../../../src/core/money/spendStore.js';
import { virtual, type VirtualRun } from '../../support/marbles.js';

const context: SpendContext = { runId: 'run-1', model: 'gpt-5-mini', tags: { team: 'search' } };
const WINDOW = 10_000;

const limiter = (options: Partial<SpendLimiterOptions> = {}): SpendLimiter => new SpendLimiter({ name: 'team', usd: 1, per: WINDOW, ...options });

const label = (e: unknown): string => (e instanceof BudgetExceededError ? `refused:${e.limit}:${e.used}` : String(e));

/** One reservation of `usd`: `held:<usd>`, or what refused it. Each hold is kept in `holds`. */
function reserve(l: SpendLimiter, usd: number, holds: SpendHold[] = []): Observable<string> {
  return l.reserve(usd, context).pipe(
    map((hold) => {
      holds.push(hold);
      return `held:${hold.usd}`;
    }),
    catchError((e: unknown) => of(label(e))),
  );
}

/** Reservations at each letter of `marbles` (the letter's value: the dollars). */
function reservations(run: VirtualRun, l: SpendLimiter, marbles: string, usd: Record<string, number>, holds: SpendHold[] = []): Observable<string> {
  return run.hot(marbles, usd).pipe(mergeMap((n) => reserve(l, n, holds)));
}

describe('core/money/SpendLimiter (virtual time)', () => {
  it('grants up to the limit exactly, and refuses the nanodollar past it with BudgetExceededError (usd, limit, used + asked)', () => {
    virtual((run) => {
      const l = limiter();
      run
        .expectObservable(reservations(run, l, 'a b c', { a: 0.6, b: 0.4, c: 1e-9 }))
        .toBe('a b c', { a: 'held:0.6', b: 'held:0.4', c: 'refused:1:1.000000001' });
    });
  });

  it('the limit is rounded down, reservations up: a limit of 1.5 nanodollars admits one nanodollar', () => {
    virtual((run) => {
      const l = limiter({ usd: 1.5e-9 });
      run.expectObservable(reservations(run, l, 'a b', { a: 1e-9, b: 1e-10 })).toBe('a b', { a: 'held:1e-9', b: 'refused:1e-9:2e-9' });
    });
  });

  it('windows are fixed on the clock: a new window starts empty', () => {
    virtual((run) => {
      const l = limiter({ per: 1000 });
      run
        .expectObservable(reservations(run, l, 'a 998ms b c', { a: 1, b: 0.5, c: 0.5 }))
        .toBe('a 998ms b c', { a: 'held:1', b: 'refused:1:1.5', c: 'held:0.5' });
    });
  });

  it("'hour' and 'day' are windows of 3 600 000 and 86 400 000 ms", () => {
    expect(limiter({ per: 'hour' }).windowMs).to.equal(3_600_000);
    expect(limiter({ per: 'day' }).windowMs).to.equal(86_400_000);
  });

  it('a hold settled below what it reserved gives the rest back; one settled above charges the excess', () => {
    virtual((run) => {
      const below = limiter();
      const holds: SpendHold[] = [];
      run.at(1, () => holds[0]!.settle(0.3));
      run
        .expectObservable(reservations(run, below, 'a 1ms b c', { a: 0.8, b: 0.7, c: 0.01 }, holds))
        .toBe('a 1ms b c', { a: 'held:0.8', b: 'held:0.7', c: 'refused:1:1.01' });
      const above = limiter();
      const more: SpendHold[] = [];
      run.at(1, () => more[0]!.settle(0.9));
      run
        .expectObservable(reservations(run, above, 'a 1ms b c', { a: 0.5, b: 0.1, c: 0.01 }, more))
        .toBe('a 1ms b c', { a: 'held:0.5', b: 'held:0.1', c: 'refused:1:1.01' });
    });
  });

  it('a refund gives it all back; a second settle or refund is ignored', () => {
    virtual((run) => {
      const refunded = limiter();
      const holds: SpendHold[] = [];
      run.at(1, () => holds[0]!.refund());
      run.expectObservable(reservations(run, refunded, 'a 1ms b', { a: 1, b: 1 }, holds)).toBe('a 1ms b', { a: 'held:1', b: 'held:1' });
      const once = limiter();
      const first: SpendHold[] = [];
      run.at(1, () => {
        first[0]!.settle(0.2);
        first[0]!.settle(0);
        first[0]!.refund();
      });
      run
        .expectObservable(reservations(run, once, 'a 1ms b c', { a: 1, b: 0.8, c: 0.01 }, first))
        .toBe('a 1ms b c', { a: 'held:1', b: 'held:0.8', c: 'refused:1:1.01' });
    });
  });

  it('a caller that leaves before the grant arrives: the late grant is given back, and a later call gets the whole limit', () => {
    virtual((run) => {
      // a store 5 ms away each way: the reservation sent at 0 lands at 5, its answer comes at 10
      const store = new MemorySpendStore({ latencyMs: 5, replyLatencyMs: 5 });
      const l = limiter({ store });
      run.expectObservable(reserve(l, 1), '--!').toBe('');
      // the store granted it at 5 (nobody listens); the answer at 10 is refunded (lands at 15)
      run.expectObservable(run.hot('12ms a 3ms b').pipe(map(() => store.usedNanos('team:all', WINDOW)))).toBe('12ms a 3ms b', { a: NANOS_PER_USD, b: 0 });
      run.expectObservable(reservations(run, l, '20ms a', { a: 1 })).toBe('30ms a', { a: 'held:1' });
    });
  });

  it('the store down: each reservation is decided on the local share (limit ÷ expectedNodes), never unlimited; the store again once it answers', () => {
    virtual((run) => {
      const store = new MemorySpendStore();
      store.down = true;
      const hub = new HealHub();
      const events: HealEvent[] = [];
      hub.events$.subscribe((e) => events.push(e));
      const l = limiter({ store, expectedNodes: 2, hub });
      run.at(2000, () => (store.down = false));
      run
        .expectObservable(reservations(run, l, 'a b c 1997ms d e', { a: 0.25, b: 0.25, c: 0.01, d: 0.5, e: 0.01 }))
        .toBe('a b c 1997ms d e', { a: 'held:0.25', b: 'held:0.25', c: 'refused:0.5:0.51', d: 'held:0.5', e: 'refused:1:1.01' });
      run.flush();
      // what the local share held is owed to the store: sent with the reservation at 2000 (the breaker let one through again)
      expect(store.usedNanos('team:all', WINDOW)).to.equal(NANOS_PER_USD);
      expect(events.filter((e) => e.type.startsWith('spend-'))).to.deep.equal([
        { type: 'spend-local', limiter: 'team', key: 'team:all', share: 0.5 },
        { type: 'spend-local', limiter: 'team', key: 'team:all', share: 0.5 },
        { type: 'spend-local', limiter: 'team', key: 'team:all', share: 0.5 },
        { type: 'spend-refused', limiter: 'team', key: 'team:all', usd: 0.01, limitUsd: 0.5, usedUsd: 0.51 },
        { type: 'spend-refused', limiter: 'team', key: 'team:all', usd: 0.01, limitUsd: 1, usedUsd: 1.01 },
      ]);
    });
  });

  it('the local share counts what this node reserved on the shared store in the window, and divides by the live nodes the store reported', () => {
    virtual((run) => {
      const store = new MemorySpendStore();
      // two nodes on the store: each one's share is 0.5 once the store is down
      const other = limiter({ store, node: 'b' });
      const l = limiter({ store, node: 'a' });
      run.at(5, () => (store.down = true));
      run.expectObservable(reservations(run, other, 'a', { a: 0.1 })).toBe('a', { a: 'held:0.1' });
      run
        .expectObservable(reservations(run, l, '-a 4ms b c', { a: 0.3, b: 0.2, c: 0.01 }))
        .toBe('-a 4ms b c', { a: 'held:0.3', b: 'held:0.2', c: 'refused:0.5:0.51' });
    });
  });

  it("once the store answered in the window, the local share is this node's part of what the store had left then (not a whole share)", () => {
    virtual((run) => {
      const store = new MemorySpendStore();
      const other = limiter({ store, node: 'b' });
      const l = limiter({ store, node: 'a' });
      run.at(5, () => (store.down = true));
      // b spends 0.8 through the store; a's grant of 0.1 hears the store at 0.9 used: 0.1 left, a's part 0.05 (2 live nodes)
      run.expectObservable(reservations(run, other, 'a', { a: 0.8 })).toBe('a', { a: 'held:0.8' });
      run
        .expectObservable(reservations(run, l, '-a 4ms b c', { a: 0.1, b: 0.05, c: 0.01 }))
        .toBe('-a 4ms b c', { a: 'held:0.1', b: 'held:0.05', c: 'refused:0.15:0.16' });
    });
  });

  it('the store slow past its timeoutMs: decided on the local share at the timeout; the late grant holds that hold on the store, and its settlement reaches it', () => {
    virtual((run) => {
      // the reservation lands at once, but its answer takes 200 ms; the limiter waits 100
      const store = new MemorySpendStore({ replyLatencyMs: 200, timeoutMs: 100 });
      const l = limiter({ store });
      const holds: SpendHold[] = [];
      run.expectObservable(reservations(run, l, 'a', { a: 0.3 }, holds)).toBe('100ms a', { a: 'held:0.3' });
      // settled at 260 for 0.1: what it owes the store (0.1 − the 0.3 granted) goes with the next call, at 300
      run.at(260, () => holds[0]!.settle(0.1));
      run.at(300, () => (store.replyLatencyMs = 0));
      run.at(300, () => void l.reserve(0, context).subscribe((h) => h.refund()));
      run
        .expectObservable(run.hot('150ms a 99ms b 99ms c').pipe(map(() => store.usedNanos('team:all', WINDOW))))
        .toBe('150ms a 99ms b 99ms c', { a: 300_000_000, b: 300_000_000, c: 100_000_000 });
    });
  });

  it('a give-back the store never received (its breaker open) is kept and sent before the next shared reservation', () => {
    virtual((run) => {
      const store = new MemorySpendStore();
      const l = limiter({ store });
      const holds: SpendHold[] = [];
      run.at(1, () => (store.down = true));
      // two failures open the store's breaker (for 1 s): the settlement at 4 is not sent, but kept
      run.at(4, () => holds[0]!.settle(0.25));
      run.at(1500, () => (store.down = false));
      run
        // the store then holds the settled 0.25 and the local holds b and c (owed to it): 0.45, and d's 0.55 fills it
        .expectObservable(reservations(run, l, 'a 1ms b c 1496ms d e', { a: 0.5, b: 0.1, c: 0.1, d: 0.55, e: 0.01 }, holds))
        .toBe('a 1ms b c 1496ms d e', { a: 'held:0.5', b: 'held:0.1', c: 'held:0.1', d: 'held:0.55', e: 'refused:1:1.01' });
      run.flush();
      expect(store.usedNanos('team:all', WINDOW)).to.equal(NANOS_PER_USD);
    });
  });

  it('keys the budget by the key callback; a key that throws errors the reservation at once (no hang)', () => {
    virtual((run) => {
      const byTeam = limiter({ key: (c) => c.tags?.['team'] ?? 'none' });
      run.expectObservable(reservations(run, byTeam, 'a b', { a: 1, b: 1 })).toBe('a b', { a: 'held:1', b: 'refused:1:2' });
      const other: SpendContext = { ...context, tags: { team: 'ads' } };
      run.expectObservable(byTeam.reserve(1, other).pipe(map((h) => h.usd))).toBe('(a|)', { a: 1 });
      const boom = new Error('no team');
      const throwing = limiter({
        key: () => {
          throw boom;
        },
      });
      run.expectObservable(throwing.reserve(0.1, context)).toBe('#', undefined, boom);
    });
  });

  it('refuses a reservation that is not a finite number >= 0', () => {
    virtual((run) => {
      run
        .expectObservable(reserve(limiter(), Number.NaN))
        .toBe('(a|)', { a: 'InvalidOptionError: SpendLimiter team: option "usd" must be a finite number >= 0, got NaN' });
    });
  });

  it('validates its options at construction, naming the option and the value', () => {
    const bad: [Partial<SpendLimiterOptions> | Record<string, unknown>, string][] = [
      [{ name: '' }, 'option "name" must be a non-empty string, got ""'],
      [{ usd: 0 }, 'option "usd" must be a finite number > 0, got 0'],
      [{ usd: Infinity }, 'option "usd" must be a finite number > 0, got Infinity'],
      [{ per: 'week' }, 'option "per" must be "hour" | "day" | a positive integer of ms, got "week"'],
      [{ per: 1.5 }, 'option "per" must be "hour" | "day" | a positive integer of ms, got 1.5'],
      [{ key: 'team' }, 'option "key" must be a function, got "team"'],
      [{ expectedNodes: 0 }, 'option "expectedNodes" must be a positive integer, got 0'],
      [{ store: {} }, 'option "store" must be a SpendStore (reserve, adjust)'],
      [{ limit: 5 }, 'option "limit" must be one of the known options'],
    ];
    for (const [options, message] of bad) expect(() => limiter(options as Partial<SpendLimiterOptions>)).to.throw(InvalidOptionError, message);
    expect(() => new SpendLimiter({ usd: 1, per: 'day' } as SpendLimiterOptions)).to.throw(InvalidOptionError, 'option "name"');
    expect(() => new SpendLimiter({ name: 'x', per: 'day' } as SpendLimiterOptions)).to.throw(InvalidOptionError, 'option "usd"');
    expect(() => new SpendLimiter({ name: 'x', usd: 1 } as SpendLimiterOptions)).to.throw(InvalidOptionError, 'option "per"');
  });
});

/** One caller: when it reserves, on which node, how much, and what it does with the hold. */
interface Caller {
  readonly node: number;
  readonly at: number;
  /** Thousandths of a dollar reserved. */
  readonly milli: number;
  /** settle (with `actualMilli` ≤ `milli`), refund, or cancel (unsubscribe; a hold already there is refunded). */
  readonly outcome: 'settle' | 'refund' | 'cancel';
  readonly actualMilli: number;
  /** A cancel comes this long after `at`; a settle or refund this long after the hold (odd: never the same moment as a store event). */
  readonly afterMs: number;
}

interface Scenario {
  readonly nodes: number;
  readonly latencyMs: number;
  readonly replyLatencyMs: number;
  /** [from, to) spans the store is down. */
  readonly down: readonly (readonly [number, number])[];
  /** [from, to) spans its answers take 150 ms (past the limiter's 100 ms timeout: its breaker opens). */
  readonly slow: readonly (readonly [number, number])[];
  readonly callers: readonly Caller[];
}

const callerArb = (nodes: number): fc.Arbitrary<Caller> =>
  fc
    .record({
      node: fc.integer({ min: 0, max: nodes - 1 }),
      at: fc.integer({ min: 0, max: 150 }).map((n) => 2 * n),
      milli: fc.integer({ min: 0, max: 400 }),
      outcome: fc.constantFrom<Caller['outcome']>('settle', 'settle', 'refund', 'cancel'),
      ratio: fc.double({ min: 0, max: 1, noNaN: true }),
      afterMs: fc.integer({ min: 0, max: 120 }).map((n) => 2 * n + 1),
    })
    .map(({ ratio, ...c }) => ({ ...c, actualMilli: Math.floor(c.milli * ratio) }));

const spansArb = fc.array(
  fc.tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 1, max: 200 })).map(([from, length]) => [from, from + length] as const),
  { maxLength: 2 },
);

const scenarioArb: fc.Arbitrary<Scenario> = fc.integer({ min: 1, max: 3 }).chain((nodes) =>
  fc.record({
    nodes: fc.constant(nodes),
    latencyMs: fc.integer({ min: 0, max: 20 }),
    // past the limiter's 100 ms timeout at times: the answer comes late, the grant is given back
    replyLatencyMs: fc.constantFrom(0, 0, 5, 60, 150),
    slow: spansArb,
    down: fc.oneof(fc.constant([]), spansArb),
    callers: fc.array(callerArb(nodes), { minLength: 1, maxLength: 12 }),
  }),
);

/** Every caller has settled by then, and every store breaker has closed again. */
const END = 2_000;

/** Runs a scenario in virtual time: what the shared store holds at every ms, and at the end. */
function play(s: Scenario): { over: number[]; used: number; settledNanos: number; localNanos: number } {
  const over: number[] = [];
  let used = 0;
  let settledNanos = 0;
  // what holds decided on a local share held (owed to the store: the only way its window passes the limit)
  let localNanos = 0;
  virtual((run) => {
    const store = new MemorySpendStore({ latencyMs: s.latencyMs, replyLatencyMs: s.replyLatencyMs, timeoutMs: 100 });
    const nodes = Array.from({ length: s.nodes }, (_, i) => limiter({ store, node: `n${i}`, expectedNodes: s.nodes }));
    for (const [from, to] of s.down) {
      run.at(from, () => (store.down = true));
      run.at(to, () => (store.down = s.down.some(([f, t]) => f <= to && to < t)));
    }
    for (const [from, to] of s.slow) {
      run.at(from, () => (store.replyLatencyMs = 150));
      run.at(to, () => (store.replyLatencyMs = s.slow.some(([f, t]) => f <= to && to < t) ? 150 : s.replyLatencyMs));
    }
    for (const c of s.callers) {
      run.at(c.at, () => {
        let hold: SpendLimitHold | undefined;
        const sub = nodes[c.node]!.reserve(c.milli / 1000, context).subscribe({
          next: (h) => {
            hold = h;
            if (h.local) localNanos += c.milli * 1_000_000;
            // the attempt runs once the hold is there, and ends `afterMs` later
            if (c.outcome === 'cancel') return;
            run.at(run.ts.now() + c.afterMs, () => {
              if (c.outcome === 'refund') return h.refund();
              h.settle(c.actualMilli / 1000);
              settledNanos += c.actualMilli * 1_000_000;
            });
          },
          error: () => undefined,
        });
        // a cancel: the caller leaves at `afterMs` (a hold already there is refunded)
        if (c.outcome === 'cancel')
          run.at(c.at + c.afterMs, () => {
            sub.unsubscribe();
            hold?.refund();
          });
      });
    }
    // at every ms: the shared window holds no more than the limit, but for what local holds owed it (one action that reschedules itself)
    run.ts.schedule(function (this: SchedulerAction<undefined>) {
      if (store.usedNanos('team:all', WINDOW) > NANOS_PER_USD + localNanos) over.push(run.ts.now());
      if (run.ts.now() < END) this.schedule(undefined, 1);
    });
    // the end: the store up, each breaker closed again, each node's kept adjustments flushed by a reservation of 0
    run.at(END, () => {
      store.down = false;
      store.replyLatencyMs = 0;
      for (const n of nodes) n.reserve(0, context).subscribe({ next: (h) => h.refund(), error: () => undefined });
    });
    run.at(END + 1_000, () => (used = store.usedNanos('team:all', WINDOW)));
  });
  return { over, used, settledNanos, localNanos };
}

describe('core/money/SpendLimiter (property: random callers, a store randomly down or slow)', () => {
  it('the shared window holds no more than the limit but for what local holds owed it; once all settle, exactly the settled costs, local ones included (at least them when the store went down)', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { over, used, settledNanos, localNanos } = play(s);
        expect(over, 'instants the shared window held more than the limit and the local holds').to.deep.equal([]);
        if (s.down.length === 0) expect(used, 'nothing lost, nothing counted twice').to.equal(settledNanos);
        else expect(used).to.be.within(settledNanos, NANOS_PER_USD + localNanos);
      }),
      { numRuns: 200 },
    );
  });
});
