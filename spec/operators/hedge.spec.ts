/**
 * hedge and HedgeBudget: when a hedge starts, who wins, that every loser is unsubscribed in the
 * frame the winner delivers (expectSubscriptions), maxHedges, the budget, open breakers skipped,
 * failures while another attempt runs, the consumer leaving, derived deadlines, the hub events,
 * and the option checks. Each attempt is its own cold source (subscribed in turn through
 * `attempts`), so its subscriptions show when it started and when it was cancelled. That two
 * attempts' output never mixes, for any timelines, is spec/property/hedge.spec.ts.
 */
import { expect } from 'chai';
import { defer, map, Observable, of, tap, throwError } from 'rxjs';
import { CircuitBreaker, type CircuitPermit } from '../../src/core/breaker/CircuitBreaker.js';
import { BudgetExceededError, CircuitOpenError, HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { HealEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { LatencyTracker } from '../../src/core/latency/tracker.js';
import { hedge } from '../../src/operators/hedge.js';
import { HedgeBudget } from '../../src/operators/hedgeBudget.js';
import { streamModel, type BudgetMeter, type Model, type ModelContext, type ModelRequest } from '../../src/core/model/model.js';
import type { TurnEvent } from '../../src/core/events/events.js';
import { describeEvent, scriptedModel } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';
import type { RunHelpers, TestScheduler } from 'rxjs/testing';

const e503 = new HttpError(503);

/** Subscribes the n-th time to the n-th observable (the last one repeats). */
function attempts<T>(...list: Observable<T>[]): Observable<T> {
  let n = 0;
  return defer(() => list[Math.min(n++, list.length - 1)]!);
}

/** The hub's events as `kind#attempt@time`. */
function hedgeLog(hub: HealHub): string[] {
  const log: string[] = [];
  hub.events$.subscribe((e: HealEvent) => {
    if (e.type === 'hedge')
      log.push(`${e.kind}#${e.attempt}@${e.at}${e.afterMs === undefined ? '' : ` after ${e.afterMs}`}${e.target === 'hedge' ? '' : ` ${e.target}`}`);
  });
  return log;
}

describe('hedge', () => {
  it('a first attempt that delivers before `after` is never hedged, and no wait is left behind', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('--a-b|');
      const second = cold('-x|');
      expectObservable(attempts(first, second).pipe(hedge({ after: 3, hub }))).toBe('--a-b|');
      expectSubscriptions(first.subscriptions).toBe('^----!');
      expectSubscriptions(second.subscriptions).toBe([]);
    });
    expect(log).to.deep.equal([]);
    expect(ts.actions.length).to.equal(0);
  });

  it('a hedge that delivers first wins: the first attempt is unsubscribed in that frame, before the item goes on', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('------a-b|');
      const second = cold('-xy|');
      expectObservable(attempts(first, second).pipe(hedge({ after: 3, hub }))).toBe('----xy|');
      expectSubscriptions(first.subscriptions).toBe('^---!');
      expectSubscriptions(second.subscriptions).toBe('---^--!');
    });
    expect(log).to.deep.equal(['started#1@3 after 3', 'won#1@4', 'cancelled#0@4']);
  });

  it('the first attempt may still win after a hedge started: the hedge is cancelled at once', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('----a-b|');
      const second = cold('--x|');
      expectObservable(attempts(first, second).pipe(hedge({ after: 3, hub }))).toBe('----a-b|');
      expectSubscriptions(first.subscriptions).toBe('^------!');
      expectSubscriptions(second.subscriptions).toBe('---^!');
    });
    expect(log).to.deep.equal(['started#1@3 after 3', 'won#0@4', 'cancelled#1@4']);
  });

  it('maxHedges: one hedge every `after` ms from the last start, no more than maxHedges', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const a0 = cold('20ms a|');
      const a1 = cold('20ms b|');
      const a2 = cold('9ms c|');
      const a3 = cold('-d|');
      expectObservable(attempts(a0, a1, a2, a3).pipe(hedge({ after: 5, maxHedges: 2 }))).toBe('19ms c|');
      expectSubscriptions(a0.subscriptions).toBe('^ 18ms !');
      expectSubscriptions(a1.subscriptions).toBe('5ms ^ 13ms !');
      expectSubscriptions(a2.subscriptions).toBe('10ms ^ 9ms !');
      expectSubscriptions(a3.subscriptions).toBe([]);
    });
  });

  it('the budget: each call puts ratio in, each hedge takes a whole token; without one the hedge is denied', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    const budget = new HedgeBudget({ ratio: 0.5, maxTokens: 1, initialTokens: 0 });
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const slow = cold('10ms a|');
      const fast = cold('-x|');
      const hedged = attempts(slow, slow, fast).pipe(hedge({ after: 2, budget, hub }));
      expectObservable(hedged).toBe('10ms a|'); // 0.5 token: denied
      expectObservable(hedged, '20ms ^').toBe('20ms ---x|'); // 1 token: hedged at 22
      expectSubscriptions(fast.subscriptions).toBe('22ms ^-!');
    });
    expect(log).to.deep.equal(['denied#1@2', 'started#1@22 after 2', 'won#1@23', 'cancelled#0@23']);
    expect(budget.tokens).to.equal(0);
  });

  it('an open breaker is skipped: the next hedge of the list takes its place', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const open = new CircuitBreaker({ name: 'model:claude', scheduler: ts });
      open.isolate();
      const gpt = cold('10ms a|');
      const claude = cold('-c|');
      const local = cold('-l|');
      const hedges = [
        { source: claude, target: 'model:claude', breaker: open },
        { source: local, target: 'model:local' },
      ];
      expectObservable(gpt.pipe(hedge({ after: 2, hedges, hub, target: 'model:gpt' }))).toBe('---l|');
      expectSubscriptions(claude.subscriptions).toBe([]);
      expectSubscriptions(local.subscriptions).toBe('--^-!');
      expectSubscriptions(gpt.subscriptions).toBe('^--!');
    });
    expect(log).to.deep.equal(['skipped#1@2 model:claude', 'started#1@2 after 2 model:local', 'won#1@3 model:local', 'cancelled#0@3 model:gpt']);
  });

  it('no hedge at all when the source’s own breaker is open and it is the only candidate', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    ts.run(({ cold, expectObservable }) => {
      const breaker = new CircuitBreaker({ name: 'model:gpt', failureThreshold: 1, resetTimeoutMs: 1000, scheduler: ts });
      const first = cold('-#', undefined, e503);
      // the first call fails and opens the breaker; the second is rejected by it (never hedged)
      const calls = attempts(first).pipe(hedge({ after: 5, breaker, hub, target: 'model:gpt' }));
      expectObservable(calls).toBe('-#', undefined, e503);
      expectObservable(calls, '3ms ^').toBe('3ms #', undefined, new CircuitOpenError('model:gpt', 998));
    });
    expect(log).to.deep.equal([]);
  });

  it('a hedge its half-open breaker would refuse (every probe slot taken) is skipped, and spends no token', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    const budget = new HedgeBudget({ ratio: 0.5, maxTokens: 1 });
    let breaker!: CircuitBreaker;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      // open, with its reset timeout over at once: half-open, one probe at a time
      breaker = new CircuitBreaker({ name: 'model:gpt', failureThreshold: 1, resetTimeoutMs: 0, halfOpenTimeoutMs: Infinity, scheduler: ts });
      (breaker.acquire() as CircuitPermit).failure(e503);
      const first = cold('10ms a|');
      const second = cold('-x|');
      // the first attempt is the probe; a hedge on the same model would be refused by the breaker
      expectObservable(attempts(first, second).pipe(hedge({ after: 2, breaker, budget, hub, target: 'model:gpt' }))).toBe('10ms a|');
      expectSubscriptions(first.subscriptions).toBe('^ 10ms !');
      expectSubscriptions(second.subscriptions).toBe([]);
    });
    expect(log).to.deep.equal(['skipped#1@2 model:gpt']);
    expect(budget.tokens, 'the token the refused hedge would have spent').to.equal(1);
    expect(breaker.state, 'the probe (the first attempt) succeeded').to.equal('closed');
  });

  it('a refused hedge gives its place to the next of the list; a half-open breaker with a probe slot free runs its hedge as the probe', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    const budget = new HedgeBudget({ ratio: 0.5, maxTokens: 2, initialTokens: 1 });
    const halfOpen = (name: string): CircuitBreaker => {
      const breaker = new CircuitBreaker({ name, failureThreshold: 1, resetTimeoutMs: 0, halfOpenTimeoutMs: Infinity, scheduler: ts });
      (breaker.acquire() as CircuitPermit).failure(e503);
      return breaker;
    };
    let claudeBreaker!: CircuitBreaker;
    let localBreaker!: CircuitBreaker;
    let held!: CircuitPermit | CircuitOpenError;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      claudeBreaker = halfOpen('model:claude');
      held = claudeBreaker.acquire(); // another call holds claude's one probe slot
      localBreaker = halfOpen('model:local');
      const gpt = cold('10ms a|');
      const claude = cold('-c|');
      const local = cold('-l|');
      const hedges = [
        { source: claude, target: 'model:claude', breaker: claudeBreaker },
        { source: local, target: 'model:local', breaker: localBreaker },
      ];
      expectObservable(gpt.pipe(hedge({ after: 2, hedges, budget, hub, target: 'model:gpt' }))).toBe('---l|');
      expectSubscriptions(claude.subscriptions).toBe([]);
      expectSubscriptions(local.subscriptions).toBe('--^-!');
    });
    expect(held).to.not.be.instanceOf(CircuitOpenError);
    expect(log).to.deep.equal(['skipped#1@2 model:claude', 'started#1@2 after 2 model:local', 'won#1@3 model:local', 'cancelled#0@3 model:gpt']);
    expect(budget.tokens, 'one token, for the hedge on local').to.equal(0.5);
    expect([claudeBreaker.state, localBreaker.state], 'local’s hedge was its probe, and closed it').to.deep.equal(['half-open', 'closed']);
  });

  it('a hedge denied by the budget takes no probe slot of a half-open breaker', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    let breaker!: CircuitBreaker;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      breaker = new CircuitBreaker({ name: 'model:claude', failureThreshold: 1, resetTimeoutMs: 0, halfOpenTimeoutMs: Infinity, scheduler: ts });
      (breaker.acquire() as CircuitPermit).failure(e503);
      const claude = cold('-c|');
      const hedges = [{ source: claude, target: 'model:claude', breaker }];
      expectObservable(cold('5ms a|').pipe(hedge({ after: 2, hedges, budget: new HedgeBudget({ initialTokens: 0 }), hub, target: 'model:gpt' }))).toBe(
        '5ms a|',
      );
      expectSubscriptions(claude.subscriptions).toBe([]);
    });
    expect(log).to.deep.equal(['denied#1@2 model:claude']);
    expect(breaker.acquire(), 'its probe slot is still free').to.not.be.instanceOf(CircuitOpenError);
  });

  it('a hedge refused by the run’s budget (BudgetExceededError) fails the call at once, every other attempt cancelled', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    const crossed = new BudgetExceededError('modelCalls', 1, 2);
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('10ms a|');
      const refused = throwError(() => crossed);
      expectObservable(attempts(first, refused).pipe(hedge({ after: 2, hub }))).toBe('--#', undefined, crossed);
      expectSubscriptions(first.subscriptions).toBe('^-!');
    });
    expect(log).to.deep.equal(['started#1@2 after 2', 'cancelled#0@2']);
    expect(ts.actions.length).to.equal(0);
  });

  it('a hedge that fails while another runs does not fail the call', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('-----#', undefined, e503);
      const second = cold('----x|');
      expectObservable(attempts(first, second).pipe(hedge({ after: 2, hub }))).toBe('------x|');
      expectSubscriptions(first.subscriptions).toBe('^----!');
      expectSubscriptions(second.subscriptions).toBe('--^----!');
    });
    expect(log).to.deep.equal(['started#1@2 after 2', 'failed#0@5', 'won#1@6']);
  });

  it('the call fails with the error of the last attempt running, and the wait is cancelled', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('-#', undefined, e503);
      const second = cold('-x|');
      expectObservable(attempts(first, second).pipe(hedge({ after: 5 }))).toBe('-#', undefined, e503);
      expectSubscriptions(second.subscriptions).toBe([]);
    });
    expect(ts.actions.length).to.equal(0);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('---#', undefined, new HttpError(500));
      const second = cold('--#', undefined, e503);
      // the first fails at 3 while the hedge runs; the hedge, last, fails at 4: the call's error
      expectObservable(attempts(first, second).pipe(hedge({ after: 2 }))).toBe('----#', undefined, e503);
      expectSubscriptions(second.subscriptions).toBe('--^-!');
    });
  });

  it('after the win, the winner’s error is the call’s', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      expectObservable(attempts(cold('-a#', undefined, e503)).pipe(hedge({ after: 5 }))).toBe('-a#', undefined, e503);
    });
  });

  it('the consumer leaving cancels every attempt at once, and the wait', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log = hedgeLog(hub);
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('20ms a|');
      const second = cold('20ms b|');
      expectObservable(attempts(first, second).pipe(hedge({ after: 3, maxHedges: 3, hub })), '^ 5ms !').toBe('');
      expectSubscriptions(first.subscriptions).toBe('^ 5ms !');
      expectSubscriptions(second.subscriptions).toBe(['3ms ^ 2ms !']);
    });
    expect(log).to.deep.equal(['started#1@3 after 3', 'cancelled#0@6', 'cancelled#1@6']);
    expect(ts.actions.length).to.equal(0);
  });

  it('an attempt that completes without items wins too (a tool with no result)', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('10ms |');
      const second = cold('-|');
      expectObservable(attempts(first, second).pipe(hedge({ after: 1 }))).toBe('--|');
      expectSubscriptions(first.subscriptions).toBe('^-!');
    });
  });

  it('after: a DeadlineSource, read when each wait is armed (a tracker’s p95 once it has samples)', () => {
    const ts = testScheduler();
    const tracker = new LatencyTracker('model:gpt', { scheduler: ts });
    const after = tracker.deadline({ quantile: 0.95, defaultMs: 8, minSamples: 5 });
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const slow = cold('20ms a|');
      const fast = cold('-x|');
      const hedged = attempts(slow, fast, slow, fast).pipe(hedge({ after, budget: new HedgeBudget({ ratio: 1 }) }));
      expectObservable(hedged).toBe('9ms x|'); // the default, 8 ms
      ts.schedule(() => {
        for (let i = 0; i < 5; i++) tracker.record('first', 3);
      }, 30);
      expectObservable(hedged, '40ms ^').toBe('40ms ----x|'); // p95 of 3 ms
      expectSubscriptions(fast.subscriptions).toBe(['8ms ^-!', '43ms ^-!']);
    });
  });

  it('a DeadlineSource that throws or gives a bad value fails the call, with every attempt cancelled', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('10ms a|');
      expectObservable(
        first.pipe(
          hedge({
            after: {
              deadlineMs: () => {
                throw new Error('boom');
              },
            },
          }),
        ),
      ).toBe('#', undefined, new Error('boom'));
      expectObservable(first.pipe(hedge({ after: { deadlineMs: () => NaN } }))).toBe(
        '#',
        undefined,
        new InvalidOptionError('hedge', 'after.deadlineMs()', NaN, 'a number >= 0 (ms) or Infinity'),
      );
      expectSubscriptions(first.subscriptions).toBe(['(^!)', '(^!)']);
    });
  });

  it('after: Infinity never hedges; a synchronous source wins at once', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      expectObservable(attempts(cold('50ms a|'), cold('-x|')).pipe(hedge({ after: Infinity }))).toBe('50ms a|');
      expectObservable(of(1, 2).pipe(hedge({ after: 0 }))).toBe('(ab|)', { a: 1, b: 2 });
    });
    expect(ts.actions.length).to.equal(0);
  });

  it('rejects bad options, naming them', () => {
    expect(() => hedge({} as never)).to.throw(InvalidOptionError, /after/);
    expect(() => hedge({ after: -1 })).to.throw(InvalidOptionError, /after/);
    expect(() => hedge({ after: NaN })).to.throw(InvalidOptionError, /after/);
    expect(() => hedge({ after: 5, maxHedges: 0 })).to.throw(InvalidOptionError, /maxHedges/);
    expect(() => hedge({ after: 5, maxHedges: 11 })).to.throw(InvalidOptionError, /maxHedges/);
    expect(() => hedge({ after: 5, hedges: [] })).to.throw(InvalidOptionError, /hedges/);
    expect(() => hedge({ after: 5, hedges: [{ source: 'x' } as never] })).to.throw(InvalidOptionError, /hedges\[0\]/);
    expect(() => hedge({ after: 5, hedges: [{ source: of(1), breaker: {} as never }] })).to.throw(InvalidOptionError, /hedges\[0\]\.breaker/);
    expect(() => hedge({ after: 5, budget: { ratio: 1 } as never })).to.throw(InvalidOptionError, /budget/);
    expect(() => hedge({ after: 5, aftr: 3 } as never)).to.throw(InvalidOptionError, /aftr/);
  });
});

describe('HedgeBudget', () => {
  it('a token bucket: ratio per call, one per hedge, at most maxTokens', () => {
    const budget = new HedgeBudget({ ratio: 0.25, maxTokens: 2, initialTokens: 1 });
    expect(budget.withdraw()).to.equal(true);
    expect(budget.withdraw()).to.equal(false);
    for (let i = 0; i < 4; i++) budget.deposit();
    expect(budget.withdraw()).to.equal(true);
    for (let i = 0; i < 100; i++) budget.deposit();
    expect(budget.tokens).to.equal(2);
    const twentieths = new HedgeBudget({ ratio: 0.05, initialTokens: 0 });
    for (let i = 0; i < 20; i++) twentieths.deposit();
    expect(twentieths.withdraw(), '20 × 0.05 is a whole token').to.equal(true);
    expect([new HedgeBudget().ratio, new HedgeBudget().maxTokens, new HedgeBudget().tokens]).to.deep.equal([0.05, 10, 10]);
  });

  it('rejects bad options, naming them', () => {
    expect(() => new HedgeBudget({ ratio: 0 })).to.throw(InvalidOptionError, /ratio/);
    expect(() => new HedgeBudget({ ratio: 1.5 })).to.throw(InvalidOptionError, /ratio/);
    expect(() => new HedgeBudget({ maxTokens: 0.5 })).to.throw(InvalidOptionError, /maxTokens/);
    expect(() => new HedgeBudget({ maxTokens: 2, initialTokens: 3 })).to.throw(InvalidOptionError, /initialTokens/);
  });
});

describe('hedge of model turns (streamModel inside a model)', () => {
  /**
   * A turn of a model that hedges gpt (its answer at 6 ms) on claude (its answer 1 ms after it
   * starts) after 3 ms, through streamModel with the run's hub and budget; each model's abort
   * signal kept in `signals`.
   */
  function hedgedTurn(
    cold: RunHelpers['cold'],
    ts: TestScheduler,
    hub: HealHub,
    budget: BudgetMeter,
    signals: Record<string, AbortSignal>,
  ): Observable<TurnEvent> {
    const values = {
      a: { type: 'text-delta', text: 'slow answer' },
      x: { type: 'text-delta', text: 'fast answer' },
      f: { type: 'finish', reason: 'stop' },
    } as const;
    const turn = (name: string, marbles: string) => (_request: ModelRequest, context: ModelContext) => {
      signals[name] = context.signal;
      return cold<TurnEvent>(marbles, values);
    };
    const gpt = scriptedModel('gpt', [turn('gpt', '------a-(f|)')]);
    const claude = scriptedModel('claude', [turn('claude', '-x-(f|)')]);
    const hedged: Model = {
      id: 'hedged',
      stream: (request, context) =>
        streamModel(gpt, request, context).pipe(
          hedge({
            after: 3,
            hedges: [{ source: streamModel(claude, request, context), target: 'model:claude' }],
            hub: context.hub,
            target: 'model:gpt',
            scheduler: context.scheduler,
          }),
        ),
    };
    return streamModel(hedged, { messages: [{ role: 'user', content: 'hi' }], tools: [] }, { hub, budget, scheduler: ts, callId: 'step-1.1', step: 1 });
  }

  it('the loser’s request is aborted, the hedge is a model call for the budget, and only the winner’s events reach the consumer', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log: string[] = [];
    hub.events$.subscribe((e) => {
      if (e.type === 'call-start' || e.type === 'call-end' || e.type === 'hedge') log.push(describeEvent(e));
    });
    let modelCalls = 0;
    const budget = { modelCall: () => void modelCalls++, usage: () => undefined };
    const signals: Record<string, AbortSignal> = {};
    const seen: TurnEvent[] = [];
    ts.run(({ cold, expectObservable }) => {
      const turn$ = hedgedTurn(cold, ts, hub, budget, signals);
      expectObservable(
        turn$.pipe(
          tap((e) => seen.push(e)),
          map((e) => (e.type === 'text-delta' ? e.text : e.type)),
        ),
      ).toBe('----x-(f|)', { x: 'fast answer', f: 'finish' });
    });
    expect(seen).to.deep.equal([
      { type: 'text-delta', text: 'fast answer' },
      { type: 'finish', reason: 'stop' },
    ]);
    expect(signals['gpt']!.aborted, 'the loser’s request is aborted').to.equal(true);
    expect(signals['claude']!.aborted, 'the winner ran to its end').to.equal(false);
    expect(modelCalls, 'the call itself (its first attempt is that count) and the hedge').to.equal(2);
    expect(log.filter((l) => !l.startsWith('call-')).slice(0, 3)).to.deep.equal([
      'hedge:model:claude#1:started',
      'hedge:model:claude#1:won',
      'hedge:model:gpt#0:cancelled',
    ]);
    expect(log.filter((l) => l.startsWith('call-end')).slice(0, 3)).to.deep.equal([
      'call-end:model:gpt:cancelled',
      'call-end:model:claude:success',
      'call-end:model:hedged:success',
    ]);
  });

  it('a hedge the run’s budget refuses ends the turn with BudgetExceededError, the first attempt’s request aborted', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const log: string[] = [];
    hub.events$.subscribe((e) => {
      if (e.type === 'hedge') log.push(describeEvent(e));
    });
    let modelCalls = 0;
    const budget = {
      modelCall: () => {
        if (++modelCalls > 1) throw new BudgetExceededError('modelCalls', 1, modelCalls);
      },
      usage: () => undefined,
    };
    const signals: Record<string, AbortSignal> = {};
    ts.run(({ cold, expectObservable }) => {
      const turn$ = hedgedTurn(cold, ts, hub, budget, signals);
      expectObservable(turn$).toBe('---#', undefined, new BudgetExceededError('modelCalls', 1, 2));
    });
    expect(signals['gpt']!.aborted, 'the first attempt’s request is aborted').to.equal(true);
    expect(signals['claude'], 'the hedge was never made').to.equal(undefined);
    expect(log).to.deep.equal(['hedge:model:claude#1:started', 'hedge:model:gpt#0:cancelled']);
  });
});
