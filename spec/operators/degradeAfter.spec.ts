import { expect } from 'chai';
import { defer, NEVER, Observable, of, throwError, VirtualTimeScheduler } from 'rxjs';
import type { TestScheduler } from 'rxjs/testing';
import { CapabilityRegistry, type CapabilityEvent } from '../../src/core/capabilities/CapabilityRegistry.js';
import { HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { HealEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { LatencyTracker } from '../../src/core/latency/tracker.js';
import { degradeAfter, type DegradeAfterOptions, type DegradeReason } from '../../src/operators/degradeAfter.js';
import { Boom, expectThrowDownstream, failingSource, KINDS, thrower } from '../support/guards.js';
import { testScheduler } from '../support/marbles.js';
import { NodeTimerScheduler } from '../support/nodeTimers.js';

const e503 = new HttpError(503);

/** Subscribes the n-th time to the n-th observable (the last one repeats). */
function attempts<T>(...list: Observable<T>[]): Observable<T> {
  let n = 0;
  return defer(() => list[Math.min(n++, list.length - 1)]!);
}

/** How many actions are scheduled at virtual time `t` (other than this probe). */
function pendingAt(ts: TestScheduler, t: number): () => number {
  let n = -1;
  ts.schedule(() => (n = ts.actions.length), t);
  return () => n;
}

/** Records events with their virtual time. */
function timed<E>(ts: TestScheduler, events$: Observable<E>): [number, E][] {
  const log: [number, E][] = [];
  events$.subscribe((e) => log.push([ts.now(), e]));
  return log;
}

describe('degradeAfter', () => {
  describe('deadline until the first item (a number)', () => {
    it('passes a source that answers in time through unchanged, and leaves no timer behind', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('100ms a-b|');
        const empty = cold('100ms |');
        expectObservable(source.pipe(degradeAfter(3000, 'd'))).toBe('100ms a-b|');
        expectObservable(empty.pipe(degradeAfter(3000, 'd'))).toBe('100ms |');
        expectSubscriptions(source.subscriptions).toBe('^ 102ms !');
        // the deadline (due at 3000) is gone once the first item arrives, or at completion
        const pending = pendingAt(ts, 200);
        ts.flush();
        expect(pending()).to.equal(0);
      });
    });

    it('the reference: a search slower than 3000 ms is unsubscribed at 3000 ms; the degraded value is emitted, then completion', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const search = cold('3500ms (r|)');
        expectObservable(search.pipe(degradeAfter(3000, 'd'))).toBe('3000ms (d|)');
        expectSubscriptions(search.subscriptions).toBe('^ 2999ms !');
      });
    });

    it('only the first item is timed: later gaps are free', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('10ms a 5000ms b|');
        expectObservable(source.pipe(degradeAfter(100, 'd'))).toBe('10ms a 5000ms b|');
      });
    });
  });

  describe('idle deadline ({ firstMs, idleMs })', () => {
    it('catches a stream that stalls after its first items; what it emitted stays, then the degraded value', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('-a 99ms b 1000ms c|');
        expectObservable(source.pipe(degradeAfter({ firstMs: 500, idleMs: 300 }, 'd'))).toBe('-a 99ms b 299ms (d|)');
        expectSubscriptions(source.subscriptions).toBe('^ 400ms !');
      });
    });

    it('items within idleMs of each other keep the stream alive, however long it runs', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const source = cold('-a 79ms b 79ms c 79ms d 79ms e 79ms f|');
        expectObservable(source.pipe(degradeAfter({ firstMs: 100, idleMs: 100 }, 'x'))).toBe('-a 79ms b 79ms c 79ms d 79ms e 79ms f|');
        // completion at 402 cancels the pending deadline check (due at 421: re-armed lazily, per item)
        const pending = pendingAt(ts, 410);
        ts.flush();
        expect(pending()).to.equal(0);
      });
    });

    it('an idle deadline shorter than the first one applies from the first item', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('10ms a 500ms b|');
        expectObservable(source.pipe(degradeAfter({ firstMs: 3000, idleMs: 100 }, 'd'))).toBe('10ms a 99ms (d|)');
      });
    });

    it('firstMs defaults to idleMs', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        expectObservable(cold('200ms a|').pipe(degradeAfter({ idleMs: 100 }, 'd'))).toBe('100ms (d|)');
      });
    });

    it('firstMs: Infinity waits for the first item as long as it takes, then times the gaps', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('5000ms a 50ms b 200ms c|');
        expectObservable(source.pipe(degradeAfter({ firstMs: Infinity, idleMs: 100 }, 'd'))).toBe('5000ms a 50ms b 99ms (d|)');
      });
    });
  });

  describe('what is emitted instead', () => {
    it('an observable: its values, then its completion', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const slow = cold<string>('5000ms a|');
        expectObservable(slow.pipe(degradeAfter(3000, cold('-x-y|')))).toBe('3000ms -x-y|');
      });
    });

    it("an observable's error passes on", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        expectObservable(cold('5000ms a|').pipe(degradeAfter(3000, cold('-#', undefined, e503)))).toBe('3000ms -#', undefined, e503);
      });
    });

    it('a factory is given the reason: first', () => {
      const reasons: DegradeReason[] = [];
      testScheduler().run(({ cold, expectObservable }) => {
        const result = cold('5000ms a|').pipe(degradeAfter(3000, (r) => (reasons.push(r), 'd')));
        expectObservable(result).toBe('3000ms (d|)');
      });
      expect(reasons).to.deep.equal([{ kind: 'first', afterMs: 3000 }]);
    });

    it('a factory is given the reason: idle, measured from the last item', () => {
      const reasons: DegradeReason[] = [];
      testScheduler().run(({ cold, expectObservable }) => {
        const result = cold('-a 1000ms b|').pipe(degradeAfter({ idleMs: 300 }, (r) => (reasons.push(r), cold('-z|'))));
        expectObservable(result).toBe('-a 299ms -z|');
      });
      expect(reasons).to.deep.equal([{ kind: 'idle', afterMs: 300 }]);
    });

    it('errors with what the factory throws', () => {
      const bug = new Error('factory bug');
      testScheduler().run(({ cold, expectObservable }) => {
        const result = cold('5000ms a|').pipe(
          degradeAfter(3000, () => {
            throw bug;
          }),
        );
        expectObservable(result).toBe('3000ms #', undefined, bug);
      });
    });
  });

  describe('errors (onError)', () => {
    it('by default an error passes through unchanged, and the deadline goes with it', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        expectObservable(cold('-a-#', undefined, e503).pipe(degradeAfter(3000, 'd'))).toBe('-a-#', undefined, e503);
        const pending = pendingAt(ts, 10);
        ts.flush();
        expect(pending()).to.equal(0);
      });
    });

    it('onError: true degrades instead, with kind "error"', () => {
      const reasons: DegradeReason[] = [];
      testScheduler().run(({ cold, expectObservable }) => {
        const result = cold('-a-#', undefined, e503).pipe(degradeAfter(3000, (r) => (reasons.push(r), 'd'), { onError: true }));
        expectObservable(result).toBe('-a-(d|)');
      });
      expect(reasons).to.have.length(1);
      expect(reasons[0]!.kind).to.equal('error');
      expect(reasons[0]!.afterMs).to.equal(3);
      expect(reasons[0]!.error).to.equal(e503);
    });

    it('onError as a predicate: only the errors it accepts degrade', () => {
      const bad = new HttpError(400);
      const onError = (e: unknown): boolean => e instanceof HttpError && e.status >= 500;
      testScheduler().run(({ cold, expectObservable }) => {
        expectObservable(cold('-#', undefined, e503).pipe(degradeAfter(3000, 'd', { onError }))).toBe('-(d|)');
        expectObservable(cold('-#', undefined, bad).pipe(degradeAfter(3000, 'd', { onError }))).toBe('-#', undefined, bad);
      });
    });

    it('errors with what the predicate throws', () => {
      const bug = new Error('predicate bug');
      testScheduler().run(({ cold, expectObservable }) => {
        const onError = (): boolean => {
          throw bug;
        };
        expectObservable(cold('-#', undefined, e503).pipe(degradeAfter(3000, 'd', { onError }))).toBe('-#', undefined, bug);
      });
    });

    it('a source failing synchronously degrades synchronously', () => {
      const values: string[] = [];
      throwError(() => e503)
        .pipe(degradeAfter(3000, 'd', { onError: true }))
        .subscribe((v) => values.push(v));
      expect(values).to.deep.equal(['d']);
    });
  });

  describe('cancellation', () => {
    it('unsubscribing unsubscribes the source and leaves no timer behind', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('-a 10000ms b|');
        expectObservable(source.pipe(degradeAfter({ firstMs: 3000, idleMs: 3000 }, 'd')), '^ 5ms !').toBe('-a');
        expectSubscriptions(source.subscriptions).toBe('^ 5ms !');
        const pending = pendingAt(ts, 10);
        ts.flush();
        expect(pending()).to.equal(0);
      });
    });

    it('unsubscribing from the degraded observable unsubscribes it', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const replacement = cold('-x 100ms y|');
        expectObservable(NEVER.pipe(degradeAfter(10, replacement)), '^ 50ms !').toBe('10ms -x');
        expectSubscriptions(replacement.subscriptions).toBe('10ms ^ 40ms !');
      });
    });

    it('a synchronous source completes without ever scheduling a timer that outlives it', () => {
      const ts = testScheduler();
      ts.run(({ expectObservable }) => {
        expectObservable(of(1, 2).pipe(degradeAfter(3000, 0))).toBe('(ab|)', { a: 1, b: 2 });
        const pending = pendingAt(ts, 1);
        ts.flush();
        expect(pending()).to.equal(0);
      });
    });
  });

  describe('capabilities: a degraded tool marked unavailable, the model told, restored after an on-time success', () => {
    it('a knowledge search slower than 3000 ms: degraded emitted, capability disabled; a later fast search restores it', () => {
      const ts = testScheduler();
      const capabilities = new CapabilityRegistry();
      const suffixes: string[] = [];
      ts.run(({ cold, expectObservable, expectSubscriptions }) => {
        const events = timed<CapabilityEvent>(ts, capabilities.events$);
        const slow = cold('3500ms (r|)');
        const fast = cold('200ms (r|)');
        const search = attempts(slow, fast).pipe(degradeAfter(3000, 'd', { capability: 'knowledge_search', capabilities }));
        expectObservable(search).toBe('3000ms (d|)');
        expectObservable(search, '5000ms ^').toBe('5200ms (r|)');
        expectSubscriptions(slow.subscriptions).toBe('^ 2999ms !');
        expectSubscriptions(fast.subscriptions).toBe('5000ms ^ 199ms !');
        ts.schedule(() => suffixes.push(capabilities.systemPromptSuffix()), 4000);
        ts.schedule(() => suffixes.push(capabilities.systemPromptSuffix()), 6000);
        ts.flush();
        expect(events).to.deep.equal([
          [3000, { type: 'degraded', capability: 'knowledge_search', reason: 'no result within 3000 ms' }],
          [5200, { type: 'restored', capability: 'knowledge_search' }],
        ]);
      });
      expect(suffixes[0]).to.contain('- knowledge_search: no result within 3000 ms');
      expect(suffixes[1]).to.equal('');
      expect(capabilities.isAvailable('knowledge_search')).to.equal(true);
    });

    it('disables before the degraded value reaches the consumer (so the next prompt knows)', () => {
      const capabilities = new CapabilityRegistry();
      const seenAvailable: boolean[] = [];
      testScheduler().run(({ cold, flush }) => {
        cold('5000ms a|')
          .pipe(degradeAfter(3000, 'd', { capability: 'knowledge_search', capabilities }))
          .subscribe(() => seenAvailable.push(capabilities.isAvailable('knowledge_search')));
        flush();
      });
      expect(seenAvailable).to.deep.equal([false]);
    });

    it('only an on-time completion restores: a failed or slow attempt does not, and repeated misses report once', () => {
      const ts = testScheduler();
      const capabilities = new CapabilityRegistry();
      ts.run(({ cold, expectObservable }) => {
        const events = timed<CapabilityEvent>(ts, capabilities.events$);
        const search = attempts(cold('500ms a|'), cold('-#', undefined, e503), cold('500ms a|'), cold('-a|'));
        const op = search.pipe(degradeAfter(100, 'd', { capability: 'search', capabilities }));
        expectObservable(op).toBe('100ms (d|)');
        expectObservable(op, '1000ms ^').toBe('1001ms #', undefined, e503);
        expectObservable(op, '2000ms ^').toBe('2100ms (d|)');
        expectObservable(op, '3000ms ^').toBe('3001ms a|');
        ts.flush();
        expect(events).to.deep.equal([
          [100, { type: 'degraded', capability: 'search', reason: 'no result within 100 ms' }],
          [3002, { type: 'restored', capability: 'search' }],
        ]);
      });
    });

    it('reason texts: idle, and error by category (never the error message)', () => {
      const capabilities = new CapabilityRegistry();
      const reasons: string[] = [];
      capabilities.events$.subscribe((e) => e.type === 'degraded' && reasons.push(e.reason));
      testScheduler().run(({ cold, flush }) => {
        cold('-a 500ms b|')
          .pipe(degradeAfter({ firstMs: 1000, idleMs: 200 }, 'd', { capability: 'a', capabilities }))
          .subscribe();
        const secret = new HttpError(503, {}, 'token=abc123 overloaded');
        cold('-#', undefined, secret)
          .pipe(degradeAfter(1000, 'd', { capability: 'b', capabilities, onError: true }))
          .subscribe();
        cold('5000ms a|')
          .pipe(degradeAfter(1000, 'd', { capability: 'c', capabilities, describe: (r) => `custom ${r.kind} ${r.afterMs}` }))
          .subscribe();
        flush();
      });
      expect(reasons).to.deep.equal(['failed (service_unavailable)', 'stalled: no data for 200 ms', 'custom first 1000']);
    });
  });

  describe('hub', () => {
    const recordHub = (hub: HealHub): HealEvent[] => {
      const log: HealEvent[] = [];
      hub.events$.subscribe((e) => log.push(e));
      return log;
    };

    it('without a registry: degraded once per change, restored after the next on-time success', () => {
      const hub = new HealHub();
      const log = recordHub(hub);
      testScheduler().run(({ cold, expectObservable }) => {
        const op = attempts(cold('500ms a|'), cold('500ms a|'), cold('-a|')).pipe(degradeAfter(100, 'd', { capability: 'search', hub }));
        expectObservable(op).toBe('100ms (d|)');
        expectObservable(op, '1000ms ^').toBe('1100ms (d|)');
        expectObservable(op, '2000ms ^').toBe('2001ms a|');
      });
      expect(log).to.deep.equal([
        { type: 'degraded', capability: 'search', reason: 'no result within 100 ms' },
        { type: 'restored', capability: 'search' },
      ]);
    });

    it('with a registry reporting to the same hub: each event once', () => {
      const hub = new HealHub();
      const log = recordHub(hub);
      const capabilities = new CapabilityRegistry({ hub });
      testScheduler().run(({ cold, flush }) => {
        cold('500ms a|')
          .pipe(degradeAfter(100, 'd', { capability: 'search', capabilities, hub }))
          .subscribe();
        flush();
      });
      expect(log).to.deep.equal([{ type: 'degraded', capability: 'search', reason: 'no result within 100 ms' }]);
    });

    it('with a registry that has no hub (or another one): the operator reports its changes to its hub', () => {
      const hub = new HealHub();
      const log = recordHub(hub);
      const capabilities = new CapabilityRegistry();
      testScheduler().run(({ cold, expectObservable }) => {
        const op = attempts(cold('500ms a|'), cold('-a|')).pipe(degradeAfter(100, 'd', { capability: 'search', capabilities, hub }));
        expectObservable(op).toBe('100ms (d|)');
        expectObservable(op, '1000ms ^').toBe('1001ms a|');
      });
      expect(log).to.deep.equal([
        { type: 'degraded', capability: 'search', reason: 'no result within 100 ms' },
        { type: 'restored', capability: 'search' },
      ]);
    });
  });

  describe('deadlines derived from observed latency (a DeadlineSource)', () => {
    it('is read when each subscription starts: a LatencyTracker p99 × 2 after enough samples, its default before', () => {
      const ts = testScheduler();
      const tracker = new LatencyTracker('tool:search', { scheduler: ts });
      const deadline = tracker.deadline({ quantile: 0.99, factor: 2, defaultMs: 50, minSamples: 3 });
      ts.run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('30ms a|');
        const guarded = source.pipe(degradeAfter({ firstMs: deadline }, 'd'));
        expectObservable(guarded).toBe('30ms a|'); // 50 ms: in time
        ts.schedule(() => [10, 10, 10].forEach((ms) => tracker.record('first', ms)), 40);
        expectObservable(guarded, '50ms ^').toBe('50ms 20ms (d|)'); // p99 of 10 ms × 2
        expectSubscriptions(source.subscriptions).toBe(['^ 30ms !', '50ms ^ 19ms !']);
      });
    });

    it('as the whole deadline, and for idleMs; the default reason text names the value used', () => {
      const ts = testScheduler();
      const capabilities = new CapabilityRegistry();
      ts.run(({ cold, expectObservable }) => {
        const first = cold('100ms a|').pipe(degradeAfter({ deadlineMs: () => 7 }, 'd', { capability: 'search', capabilities }));
        expectObservable(first).toBe('7ms (d|)');
        const idle = cold('-a 20ms b|').pipe(degradeAfter({ firstMs: 5, idleMs: { deadlineMs: () => 10 } }, 'd'));
        expectObservable(idle).toBe('-a 9ms (d|)');
      });
      expect(capabilities.degraded()).to.deep.equal(new Map([['search', 'no result within 7 ms']]));
    });

    it('a source that throws or gives a bad value errors that subscription, the source never subscribed', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('5ms a|');
        expectObservable(
          source.pipe(
            degradeAfter(
              {
                deadlineMs: () => {
                  throw new Boom('deadlineMs');
                },
              },
              'd',
            ),
          ),
        ).toBe('#', undefined, new Boom('deadlineMs'));
        expectObservable(source.pipe(degradeAfter({ firstMs: 5, idleMs: { deadlineMs: () => 0 } }, 'd'))).toBe(
          '#',
          undefined,
          new InvalidOptionError('degradeAfter', 'deadline', 0, 'from deadlineMs(), a number > 0 (ms) or Infinity'),
        );
        expectSubscriptions(source.subscriptions).toBe([]);
      });
    });
  });

  describe('validation (at construction)', () => {
    const bad: [string, unknown, string | RegExp][] = [
      ['0', 0, /"deadline" must be a finite number > 0/],
      ['-1', -1, /"deadline" must be a finite number > 0/],
      ['NaN', NaN, /"deadline"/],
      ['Infinity', Infinity, /"deadline" must be a finite number/],
      ['a string', '3000', /"deadline".*got "3000"/],
      ['{}', {}, /"deadline" must be a deadline with firstMs or idleMs/],
      ['{ firstMs: 0 }', { firstMs: 0 }, /"deadline.firstMs" must be a number > 0 \(ms\), Infinity, or a DeadlineSource, got 0/],
      ['{ idleMs: -5 }', { idleMs: -5 }, /"deadline.idleMs"/],
      ['{ idle: 5 }', { idle: 5 }, /"deadline.idle"/],
    ];
    for (const [label, value, message] of bad) {
      it(`rejects deadline ${label}`, () => {
        expect(() => degradeAfter(value as never, 'd')).to.throw(InvalidOptionError, message);
      });
    }

    it('rejects bad options, naming them', () => {
      const cases: [object, RegExp][] = [
        [{ onError: 'yes' }, /"onError" must be a boolean or a function/],
        [{ capability: '' }, /"capability" must be a non-empty string/],
        [{ capabilities: {} }, /"capabilities" must be a CapabilityRegistry/],
        [{ hub: {} }, /"hub" must be a HealHub/],
        [{ describe: 'x' }, /"describe" must be a function/],
        [{ scheduler: {} }, /"scheduler"/],
        [{ capabilites: 1 }, /"capabilites"/],
      ];
      for (const [options, message] of cases) expect(() => degradeAfter(100, 'd', options as never)).to.throw(InvalidOptionError, message);
    });

    it('requires a capability name with capabilities or hub', () => {
      expect(() => degradeAfter(100, 'd', { capabilities: new CapabilityRegistry() })).to.throw(
        InvalidOptionError,
        /"capability" must be a non-empty string when capabilities is given/,
      );
      expect(() => degradeAfter(100, 'd', { hub: new HealHub() })).to.throw(InvalidOptionError, /"capability" must be a non-empty string when hub is given/);
    });
  });
});

describe('degradeAfter: a user callback that throws (the guard rule)', () => {
  /** A registry whose own methods throw (a subclass: what a custom registry might do). */
  class ThrowingRegistry extends CapabilityRegistry {
    constructor(
      private readonly boom: Boom,
      private readonly which: 'disable' | 'enable',
    ) {
      super();
    }
    override disable(name: string, reason: string): boolean {
      if (this.which === 'disable') throw this.boom;
      return super.disable(name, reason);
    }
    override enable(name: string): boolean {
      if (this.which === 'enable') throw this.boom;
      return super.enable(name);
    }
  }
  // `on`: what makes the operator call the callback — the source failing, or the deadline
  const cases: [string, 'error' | 'deadline', (boom: Boom) => { degraded: unknown; options: DegradeAfterOptions }][] = [
    ['onError (predicate)', 'error', (boom) => ({ degraded: 'd', options: { onError: thrower(boom) } })],
    ['degraded (factory), on error', 'error', (boom) => ({ degraded: thrower(boom), options: { onError: true } })],
    ['degraded (factory), on the deadline', 'deadline', (boom) => ({ degraded: thrower(boom), options: {} })],
    [
      'describe, on error',
      'error',
      (boom) => ({ degraded: 'd', options: { onError: true, capability: 'search', capabilities: new CapabilityRegistry(), describe: thrower(boom) } }),
    ],
    [
      'describe, on the deadline',
      'deadline',
      (boom) => ({ degraded: 'd', options: { capability: 'search', capabilities: new CapabilityRegistry(), describe: thrower(boom) } }),
    ],
    [
      'a registry whose disable() throws',
      'deadline',
      (boom) => ({ degraded: 'd', options: { capability: 'search', capabilities: new ThrowingRegistry(boom, 'disable') } }),
    ],
  ];
  for (const [callback, on, make] of cases) {
    for (const kind of on === 'error' ? KINDS : (['async'] as const)) {
      it(`${callback} throws → the error downstream (${kind} source)`, () => {
        const scheduler = new VirtualTimeScheduler();
        const boom = new Boom(callback);
        const { degraded, options } = make(boom);
        const { source, live, subscriptions } =
          on === 'error'
            ? failingSource(kind, scheduler, e503)
            : { source: new Observable<never>(() => () => undefined), live: () => 0, subscriptions: () => 1 };
        expectThrowDownstream(source.pipe(degradeAfter(100, degraded, { ...options, scheduler })), boom, { scheduler, live, subscriptions });
      });
    }
  }

  it('a registry whose enable() throws (on completion within the deadline) → the error downstream', () => {
    const scheduler = new VirtualTimeScheduler();
    const boom = new Boom('enable');
    const result = of('r').pipe(degradeAfter(100, 'd', { capability: 'search', capabilities: new ThrowingRegistry(boom, 'enable'), scheduler }));
    const run = expectThrowDownstream(result, boom, { scheduler });
    expect(run.values).to.deep.equal(['r']);
  });
});

describe('degradeAfter: deadlines above 2³¹−1 ms (Node clamps such a timer to 1 ms)', () => {
  it('degradeAfter(3e9) degrades at 3e9 ms, arming one timer, with no TimeoutOverflowWarning', () => {
    const scheduler = new NodeTimerScheduler();
    const seen: [number, unknown][] = [];
    NEVER.pipe(degradeAfter(3e9, 'd', { scheduler })).subscribe((v) => seen.push([scheduler.now(), v]));
    scheduler.advanceTo(3e9 - 1);
    expect(seen).to.deep.equal([]);
    scheduler.advanceTo(3e9);
    expect(seen).to.deep.equal([[3e9, 'd']]);
    expect(scheduler.warnings).to.deep.equal([]);
    expect(scheduler.actions.length).to.equal(0);
  });

  it('an idle deadline of 3e9 ms after the first item', () => {
    const scheduler = new NodeTimerScheduler();
    const seen: [number, unknown][] = [];
    const source = new Observable<string>((s) => void scheduler.schedule(() => s.next('a'), 10));
    source.pipe(degradeAfter({ firstMs: 100, idleMs: 3e9 }, 'd', { scheduler })).subscribe((v) => seen.push([scheduler.now(), v]));
    scheduler.advanceTo(3e9 + 10);
    expect(seen).to.deep.equal([
      [10, 'a'],
      [3e9 + 10, 'd'],
    ]);
    expect(scheduler.warnings).to.deep.equal([]);
  });
});
