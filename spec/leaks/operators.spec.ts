import { expect } from 'chai';
import { defer, of, Subject, take, tap, type MonoTypeOperatorFunction, type Observable, type OperatorFunction, type Subscription } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { snapshotBreaker } from '../../src/core/breaker/persist.js';
import { HttpError, ToolError } from '../../src/core/errors/errors.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { fallbackTo } from '../../src/operators/fallbackTo.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';

/**
 * After a subscription ends — unsubscribed, completed or errored — nothing may be left: no
 * scheduled action on the scheduler the operator was given (`TestScheduler.actions` empty), no
 * subscription on any source (hot `Subject`s report `observed`), no observer on a breaker's
 * events. Each operator is checked alone and all five composed, for each way of ending.
 */

/** A TestScheduler used as an operator's scheduler (outside `run`): `flush()` runs every action. */
const scheduler = (): TestScheduler => {
  const ts = new TestScheduler((a, b) => {
    expect(a).to.deep.equal(b);
  });
  ts.maxFrames = Infinity;
  return ts;
};

/** What a case needs: the operator under test and every hot source it may subscribe to. */
interface Rig {
  readonly ts: TestScheduler;
  readonly source: Subject<unknown>;
  /** Alternatives that a fallback may subscribe to. */
  readonly others: Subject<unknown>[];
  readonly op: OperatorFunction<unknown, unknown>;
}

const toolError = (cause: unknown): ToolError =>
  new ToolError({ toolName: 'search', callId: 'c1', phase: 'execute', args: {}, idempotent: true, message: 'bad units', cause });

const RIGS: Record<string, () => Rig> = {
  retryWithBackoff: () => {
    const ts = scheduler();
    return {
      ts,
      source: new Subject(),
      others: [],
      op: retryWithBackoff({ scheduler: ts, jitter: 'none', maxRetries: 2 }) as MonoTypeOperatorFunction<unknown>,
    };
  },
  'retryWithBackoff (totalTimeoutMs, restart)': () => {
    const ts = scheduler();
    const op = retryWithBackoff<unknown>({
      scheduler: ts,
      jitter: 'none',
      maxRetries: 2,
      totalTimeoutMs: 60_000,
      afterEmit: 'restart',
      onRestart: () => 'reset',
    });
    return { ts, source: new Subject(), others: [], op };
  },
  circuitBreak: () => {
    const ts = scheduler();
    const breaker = new CircuitBreaker({ scheduler: ts, failureThreshold: 1, resetTimeoutMs: 1_000 });
    return { ts, source: new Subject(), others: [], op: circuitBreak(breaker) };
  },
  'retryWithBackoff → circuitBreak (totalTimeoutMs, restart)': () => {
    const ts = scheduler();
    const breaker = new CircuitBreaker({ scheduler: ts, failureThreshold: 1, resetTimeoutMs: 1_000 });
    const retry = retryWithBackoff<unknown>({
      scheduler: ts,
      jitter: 'none',
      maxRetries: 2,
      totalTimeoutMs: 60_000,
      afterEmit: 'restart',
      onRestart: () => 'reset',
    });
    const op: MonoTypeOperatorFunction<unknown> = (s) => s.pipe(retry, circuitBreak(breaker));
    return { ts, source: new Subject(), others: [], op };
  },
  reflectOnError: () => ({ ts: scheduler(), source: new Subject(), others: [], op: reflectOnError() }),
  fallbackTo: () => {
    const alternative = new Subject<unknown>();
    return { ts: scheduler(), source: new Subject(), others: [alternative], op: fallbackTo<unknown>(alternative) };
  },
  'fallbackTo (guarded alternative, restart)': () => {
    const ts = scheduler();
    const alternative = new Subject<unknown>();
    const breaker = new CircuitBreaker({ scheduler: ts, failureThreshold: 1, resetTimeoutMs: 1_000 });
    const op = fallbackTo<unknown>({ name: 'backup', source: alternative, breaker }, { midStream: 'restart', onRestart: () => 'reset' });
    return { ts, source: new Subject(), others: [alternative], op };
  },
  degradeAfter: () => {
    const ts = scheduler();
    return {
      ts,
      source: new Subject(),
      others: [],
      op: degradeAfter({ firstMs: 1_000, idleMs: 500 }, 'degraded', { scheduler: ts, onError: (e) => e instanceof HttpError && e.status === 503 }),
    };
  },
  'all five composed': () => {
    const ts = scheduler();
    const alternative = new Subject<unknown>();
    const breaker = new CircuitBreaker({ scheduler: ts, failureThreshold: 1, resetTimeoutMs: 1_000 });
    const five: OperatorFunction<unknown, unknown> = (s: Observable<unknown>) =>
      s.pipe(
        retryWithBackoff({ scheduler: ts, jitter: 'none', maxRetries: 1, afterEmit: 'resubscribe' }),
        circuitBreak(breaker),
        reflectOnError(),
        fallbackTo(alternative),
        degradeAfter(5_000, 'degraded', { scheduler: ts }),
      );
    return { ts, source: new Subject(), others: [alternative], op: five };
  },
};

/** Ways a subscription ends. Each drives the rig, flushing virtual time as it goes. */
const ENDINGS: Record<string, (rig: Rig, sub: Subscription) => void> = {
  'unsubscribed before any value': (_rig, sub) => sub.unsubscribe(),
  'unsubscribed after a value': (rig, sub) => {
    rig.source.next(1);
    sub.unsubscribe();
  },
  completed: (rig) => {
    rig.source.next(1);
    rig.source.complete();
    for (const o of rig.others) o.complete();
  },
  'errored (a bad request: not retried)': (rig) => {
    rig.source.error(new HttpError(400));
    for (const o of rig.others) o.error(new HttpError(400));
    rig.ts.flush();
  },
  'errored (a 503: retried until exhausted)': (rig) => {
    rig.source.error(new HttpError(503));
    for (let i = 0; i < 5; i++) {
      rig.ts.flush();
      if (rig.source.observed) rig.source.error(new HttpError(503));
    }
    for (const o of rig.others) if (o.observed) o.error(new HttpError(503));
    rig.ts.flush();
  },
  'errored with a tool error (reflected)': (rig) => {
    rig.source.error(toolError(new Error('bad units')));
    for (const o of rig.others) o.complete();
    rig.ts.flush();
  },
  'unsubscribed while waiting to retry': (rig, sub) => {
    rig.source.error(new HttpError(503));
    sub.unsubscribe();
  },
  'left to its deadlines': (rig) => {
    rig.ts.flush();
    for (const o of rig.others) o.complete();
  },
};

/** Who follows a breaker's transitions: the observers of its one channel (`events$`, hubs, registries, its fleet). */
function followers(breaker: CircuitBreaker): number {
  return (breaker as unknown as { subject?: { observers: unknown[] } }).subject?.observers.length ?? 0;
}

describe('leaks: nothing is left after a subscription ends', () => {
  for (const [name, make] of Object.entries(RIGS)) {
    describe(name, () => {
      for (const [ending, drive] of Object.entries(ENDINGS)) {
        it(`${ending}: no source subscribed, no action scheduled`, () => {
          const rig = make();
          const sub = rig.source.pipe(rig.op).subscribe({ error: () => undefined });
          drive(rig, sub);
          // whatever the stream's state now, ending it must release everything
          sub.unsubscribe();
          expect(rig.source.observed, 'source observed').to.equal(false);
          rig.others.forEach((o, i) => expect(o.observed, `alternative ${i + 1} observed`).to.equal(false));
          // (an open breaker nobody observes schedules no half-open notice either)
          expect(rig.ts.actions.length, 'scheduled actions').to.equal(0);
        });
      }
    });
  }

  describe('an open breaker holds one action only while observed, only until it turns half-open', () => {
    it('no notice while nobody observes; one while observed; none after the reset timeout; a probe’s deadline goes with the probe', () => {
      const ts = scheduler();
      const breaker = new CircuitBreaker({ scheduler: ts, failureThreshold: 1, resetTimeoutMs: 1_000 });
      of(1).pipe(circuitBreak(breaker)).subscribe();
      expect(ts.actions.length).to.equal(0);
      const failing = new Subject<number>();
      failing.pipe(circuitBreak(breaker)).subscribe({ error: () => undefined });
      failing.error(new HttpError(503));
      expect(breaker.state).to.equal('open');
      expect(ts.actions.length, 'nobody observes').to.equal(0);
      const watching = breaker.state$.subscribe();
      expect(ts.actions.length, 'observed').to.equal(1);
      watching.unsubscribe();
      expect(ts.actions.length, 'let go').to.equal(0);
      breaker.events$.subscribe();
      expect(ts.actions.length).to.equal(1);
      ts.flush();
      expect(breaker.state).to.equal('half-open');
      expect(ts.actions.length).to.equal(0);
      const probe = new Subject<number>();
      probe.pipe(circuitBreak(breaker)).subscribe();
      expect(ts.actions.length, 'the probe deadline').to.equal(1);
      probe.complete();
      expect(breaker.state).to.equal('closed');
      expect(ts.actions.length).to.equal(0);
    });
  });

  describe('breaker events: observers go when their subscriptions do', () => {
    it('state$ and events$ leave no observer behind', () => {
      const breaker = new CircuitBreaker({ scheduler: scheduler() });
      const subject = (breaker as unknown as { subject?: Subject<unknown> }).subject;
      const subs = [breaker.state$.subscribe(), breaker.events$.subscribe(), breaker.state$.pipe(take(1)).subscribe()];
      const inner = (breaker as unknown as { subject: Subject<unknown> }).subject;
      expect(subject === undefined || subject === inner).to.equal(true);
      expect(inner.observed).to.equal(true);
      subs.forEach((s) => s.unsubscribe());
      expect(inner.observed).to.equal(false);
    });

    it('circuitBreak subscribes nothing per call to the breaker (only a hub watches, once per breaker)', () => {
      const ts = scheduler();
      const hub = new HealHub();
      const breaker = new CircuitBreaker({ scheduler: ts });
      const source = new Subject<number>();
      const op = circuitBreak<number>(breaker, { hub });
      // a hub follows its breakers only while someone listens to it
      const listening = hub.events$.subscribe();
      const watchers = followers(breaker);
      for (let i = 0; i < 10; i++) source.pipe(op).subscribe().unsubscribe();
      expect(followers(breaker)).to.equal(watchers);
      expect(watchers).to.equal(1);
      listening.unsubscribe();
      expect(followers(breaker), 'nobody listens: the hub lets go').to.equal(0);
    });

    it('a registry forwards each breaker’s events through one subscription, made once, only while its events$ is observed', () => {
      const registry = new CircuitBreakerRegistry({ scheduler: scheduler() });
      const a = registry.get('a');
      registry.get('a');
      const observers = (): number => followers(a);
      expect(observers(), 'unobserved registry').to.equal(0);
      const one = registry.events$.subscribe();
      const two = registry.events$.subscribe();
      registry.get('a');
      expect(observers()).to.equal(1);
      one.unsubscribe();
      expect(observers()).to.equal(1);
      two.unsubscribe();
      expect(observers(), 'nobody observes the registry').to.equal(0);
    });
  });

  describe('synchronous sources', () => {
    it('take(1) downstream stops a synchronous source at once: unsubscription reaches it while it emits', () => {
      const ts = scheduler();
      const breaker = new CircuitBreaker({ scheduler: ts });
      let emitted = 0;
      const source = defer(() => of(1, 2, 3, 4, 5).pipe(tap(() => emitted++)));
      const values: number[] = [];
      source.pipe(retryWithBackoff({ scheduler: ts }), circuitBreak(breaker), take(1)).subscribe((v) => values.push(v));
      expect(values).to.deep.equal([1]);
      expect(emitted).to.equal(1);
      // unsubscribed after a value: a success
      expect(snapshotBreaker(breaker).consecutiveFailures).to.equal(0);
      expect(ts.actions.length).to.equal(0);
    });
  });
});
