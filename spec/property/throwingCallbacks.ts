/**
 * Property: a user callback that throws never hangs a pipeline. Random operator (alone, or
 * retryWithBackoff piped into circuitBreak, or all of them composed), a random callback of it
 * that throws on its n-th call (behaving normally before), and a random script of source
 * attempts (synchronous or later, values, then completion, a 503 or a 400), run in virtual time.
 * Every run must end (error or completion); nothing may escape (`flush()` throwing, RxJS's
 * unhandled-error or stopped-notification hooks); nothing may stay scheduled or subscribed; no
 * breaker may keep a permit; and when the callback threw and its rule is that the throw goes
 * downstream (predicates, hooks, classifiers), the run errors with it (or an error carrying it).
 * A throwing factory instead fails its alternative, judged like any error of it.
 *
 * Used by `throwingCallbacks.spec.ts` (a few hundred runs) and `bench/soak.ts` (tens of thousands).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { defer, Observable, VirtualTimeScheduler, type OperatorFunction } from 'rxjs';
import { CapabilityRegistry } from '../../src/core/capabilities/CapabilityRegistry.js';
import { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { classifyError, isServiceFailure } from '../../src/core/errors/classify.js';
import { CircuitOpenError, HttpError, ToolError } from '../../src/core/errors/errors.js';
import type { TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type Model } from '../../src/core/model/model.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { fallbackTo } from '../../src/operators/fallbackTo.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { Boom, carries, watchRxjs } from '../support/guards.js';

/** One subscription to a scripted source. */
export interface Step {
  readonly sync: boolean;
  readonly latency: number;
  readonly values: number;
  readonly end: 'complete' | '503' | '400';
}

export const stepArb: fc.Arbitrary<Step> = fc.record({
  sync: fc.boolean(),
  latency: fc.integer({ min: 1, max: 50 }),
  values: fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 2 }) }),
  end: fc.constantFrom<Step['end']>('complete', '503', '503', '400'),
});

/** The rigs and the callbacks each calls; `surfaces`: its throw must reach the end as the error. */
const RIGS = {
  retry: { classifier: true, random: true, shouldRetry: true, onRetry: true, onRestart: true },
  'retry → circuitBreak': { classifier: true, random: true, shouldRetry: true, onRetry: true, onRestart: true, isFailure: true },
  circuitBreak: { isFailure: true },
  fallbackTo: { shouldFallback: true, classifier: true, onRestart: true, factory: false, isFailure: false },
  degradeAfter: { onError: true, degraded: true, describe: true },
  reflectOnError: { shouldReflect: true, classifier: true },
  fallbackModel: { adapt: true, shouldFallback: true, classifier: true, isFailure: false, stream: false },
  // composed, a throw may be healed further down (a fallback): only the no-hang rules apply
  'all five composed': { classifier: false, random: false, onRetry: false, isFailure: false, shouldFallback: false, onError: false, shouldReflect: false },
} as const satisfies Record<string, Record<string, boolean>>;
type RigName = keyof typeof RIGS;

export interface Scenario {
  readonly rig: RigName;
  readonly callback: string;
  /** The callback throws on this call (1-based) and on every later one. */
  readonly throwAt: number;
  readonly script: readonly Step[];
}

export const scenarioArb: fc.Arbitrary<Scenario> = fc.constantFrom(...(Object.keys(RIGS) as RigName[])).chain((rig) =>
  fc.record({
    rig: fc.constant(rig),
    callback: fc.constantFrom(...Object.keys(RIGS[rig])),
    throwAt: fc.integer({ min: 1, max: 3 }),
    script: fc.array(stepArb, { minLength: 1, maxLength: 5 }),
  }),
);

/** One run's result. */
export interface Outcome {
  readonly threw: boolean;
  readonly boom: Boom;
  readonly values: unknown[];
  readonly error: unknown;
  readonly errored: boolean;
  readonly completed: boolean;
  readonly pendingAtEnd: number;
  readonly pendingAtTerminal: number;
  readonly noticesAtTerminal: number;
  readonly live: number;
  readonly unhandled: unknown[];
  readonly stopped: string[];
  readonly flushError: unknown;
  readonly leakedPermit: boolean;
}

/** Runs one scenario to the end of virtual time. */
export function runScenario(s: Scenario): Outcome {
  const scheduler = new VirtualTimeScheduler();
  const boom = new Boom(`${s.rig}: ${s.callback}`);
  let calls = 0;
  let threw = false;
  /** The callback `name`: `normal` until its `throwAt`-th call, then throwing `boom`. */
  const cb = <A extends unknown[], R>(name: string, normal: (...args: A) => R): ((...args: A) => R) =>
    name !== s.callback
      ? normal
      : (...args: A): R => {
          if (++calls >= s.throwAt) {
            threw = true;
            throw boom;
          }
          return normal(...args);
        };

  let subscriptions = 0;
  let live = 0;
  const tool = s.rig === 'reflectOnError';
  const errorOf = (end: Step['end']): unknown => {
    const http = new HttpError(end === '503' ? 503 : 400);
    return tool
      ? new ToolError({ toolName: 't', callId: 'c', args: {}, phase: end === '400' ? 'validate' : 'execute', idempotent: true, message: `${end}`, cause: http })
      : http;
  };
  /** The scripted source: the n-th subscription plays the n-th step (the last repeats). */
  const scripted = <V>(value: (i: number) => V, last?: V): Observable<V> =>
    new Observable<V>((subscriber) => {
      const step = s.script[Math.min(subscriptions++, s.script.length - 1)]!;
      live++;
      const play = (): void => {
        for (let i = 0; i < step.values; i++) subscriber.next(value(i));
        if (step.end === 'complete') {
          if (last !== undefined) subscriber.next(last);
          subscriber.complete();
        } else subscriber.error(errorOf(step.end));
      };
      const action = step.sync ? (play(), undefined) : scheduler.schedule(play, step.latency);
      return () => {
        live--;
        action?.unsubscribe();
      };
    });
  const source = scripted<unknown>((i) => `v${i}`);

  const breakers: CircuitBreaker[] = [];
  const breaker = (): CircuitBreaker => {
    const b = new CircuitBreaker({
      scheduler,
      failureThreshold: 1,
      resetTimeoutMs: 30,
      halfOpenTimeoutMs: Infinity,
      isFailure: cb('isFailure', (e: unknown) => isServiceFailure(classifyError(e))),
    });
    breakers.push(b);
    return b;
  };
  const retry = (): OperatorFunction<unknown, unknown> =>
    retryWithBackoff<unknown>({
      scheduler,
      maxRetries: 2,
      initialBackoffMs: 10,
      jitter: 'full',
      random: cb('random', () => 0.5),
      classifier: cb('classifier', classifyError),
      shouldRetry: cb('shouldRetry', (e: unknown) => classifyError(e).retryable),
      onRetry: cb('onRetry', () => undefined),
      afterEmit: 'restart',
      onRestart: cb('onRestart', () => 'reset'),
    });

  let result: Observable<unknown>;
  switch (s.rig) {
    case 'retry':
      result = source.pipe(retry());
      break;
    case 'retry → circuitBreak':
      result = source.pipe(retry(), circuitBreak(breaker()));
      break;
    case 'circuitBreak':
      result = source.pipe(circuitBreak(breaker()));
      break;
    case 'fallbackTo':
      result = source.pipe(
        fallbackTo<unknown>(
          cb('factory', () => scripted((i) => `a${i}`)),
          { name: 'guarded', source: defer(() => scripted((i) => `b${i}`)), breaker: breaker() },
          {
            shouldFallback: cb('shouldFallback', (e: unknown) => classifyError(e).fallback),
            classifier: cb('classifier', classifyError),
            midStream: 'restart',
            onRestart: cb('onRestart', () => 'reset'),
          },
        ),
      );
      break;
    case 'degradeAfter':
      result = source.pipe(
        degradeAfter(
          25,
          cb('degraded', () => 'degraded'),
          {
            scheduler,
            onError: cb('onError', (e: unknown) => e instanceof HttpError && e.status === 503),
            capability: 'search',
            capabilities: new CapabilityRegistry(),
            describe: cb('describe', () => 'slow'),
          },
        ),
      );
      break;
    case 'reflectOnError':
      result = source.pipe(
        reflectOnError({ shouldReflect: cb('shouldReflect', (e: ToolError) => e.phase === 'validate'), classifier: cb('classifier', classifyError) }),
      );
      break;
    case 'fallbackModel': {
      const turn = (): Observable<TurnEvent> => scripted<TurnEvent>((i) => ({ type: 'text-delta', text: `t${i}` }), { type: 'finish', reason: 'stop' });
      const models: Model[] = [
        { id: 'a', stream: cb('stream', turn) },
        { id: 'b', stream: turn },
      ];
      const registry = new CircuitBreakerRegistry({
        scheduler,
        failureThreshold: 1,
        resetTimeoutMs: 30,
        halfOpenTimeoutMs: Infinity,
        isFailure: cb('isFailure', (e: unknown) => isServiceFailure(classifyError(e))),
      });
      const model = fallbackModel(models, {
        breakers: registry,
        adapt: cb('adapt', (r) => r),
        shouldFallback: cb('shouldFallback', (e: unknown) => classifyError(e).fallback),
        classifier: cb('classifier', classifyError),
      });
      // the registry made one breaker per model with the composite
      breakers.push(...registry.names().map((n) => registry.get(n)));
      result = streamModel(model, { messages: [{ role: 'user', content: 'x' }], tools: [] });
      break;
    }
    case 'all five composed': {
      const alternative = defer(() => scripted((i) => `a${i}`));
      result = source.pipe(
        retry(),
        circuitBreak(breaker()),
        reflectOnError({ shouldReflect: cb('shouldReflect', () => true) }),
        fallbackTo<unknown>(alternative, { shouldFallback: cb('shouldFallback', (e: unknown) => classifyError(e).fallback) }),
        degradeAfter(200, 'degraded', { scheduler, onError: cb('onError', () => false) }),
      );
      break;
    }
  }

  const out = { values: [] as unknown[], error: undefined as unknown, errored: false, completed: false, pendingAtTerminal: -1, noticesAtTerminal: 0 };
  const atTerminal = (): void => {
    out.pendingAtTerminal = scheduler.actions.length;
    out.noticesAtTerminal = breakers.filter((b) => b.state === 'open').length;
  };
  const {
    unhandled,
    stopped,
    thrown: flushError,
  } = watchRxjs(() => {
    result.subscribe({
      next: (v) => out.values.push(v),
      error: (e: unknown) => {
        out.error = e;
        out.errored = true;
        atTerminal();
      },
      complete: () => {
        out.completed = true;
        atTerminal();
      },
    });
    scheduler.flush();
  });
  // a permit never settled keeps a half-open breaker's only probe slot (no probe deadline here)
  let leakedPermit = false;
  for (const b of breakers) {
    if (b.state !== 'half-open') continue;
    const admission = b.acquire();
    if (admission instanceof CircuitOpenError) leakedPermit = true;
    else admission.release();
  }
  return { threw, boom, ...out, pendingAtEnd: scheduler.actions.length, live, unhandled, stopped, flushError, leakedPermit };
}

/** The property's checks on one outcome. */
export function checkOutcome(s: Scenario, o: Outcome): void {
  const where = `${s.rig} / ${s.callback}`;
  expect(o.flushError, `${where}: nothing thrown out of the scheduler`).to.equal(undefined);
  expect(o.unhandled, `${where}: no unhandled error`).to.deep.equal([]);
  expect(o.stopped, `${where}: no notification to a stopped subscriber`).to.deep.equal([]);
  expect(o.errored || o.completed, `${where}: the run ends`).to.equal(true);
  expect(o.pendingAtTerminal, `${where}: nothing scheduled at the end but half-open notices`).to.be.at.most(o.noticesAtTerminal);
  expect(o.pendingAtEnd, `${where}: nothing left scheduled`).to.equal(0);
  expect(o.live, `${where}: no source subscription left`).to.equal(0);
  expect(o.leakedPermit, `${where}: no breaker keeps a permit`).to.equal(false);
  const surfaces = (RIGS[s.rig] as Record<string, boolean>)[s.callback] ?? false;
  if (o.threw && surfaces) {
    expect(o.errored, `${where}: the throw goes downstream`).to.equal(true);
    expect(carries(o.error, o.boom), `${where}: the error carries what the callback threw; got ${String(o.error)}`).to.equal(true);
  }
}

export const throwingCallbacksProperty = fc.property(scenarioArb, (s) => checkOutcome(s, runScenario(s)));
