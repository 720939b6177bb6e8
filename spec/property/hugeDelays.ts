/**
 * Property: a delay means what it says at any size. Node clamps a timer above 2³¹−1 ms to 1 ms;
 * `NodeTimerScheduler` does the same in virtual time (and counts each clamp as a
 * `TimeoutOverflowWarning`). For random delays — small, around 2³¹, far above it — every wait in
 * rxheal fires exactly when due: `wait()`, a retry's server-requested wait, a retry budget,
 * `degradeAfter`'s first and idle deadlines, a breaker's half-open notice and probe deadline.
 * No clamp ever happens, and nothing stays scheduled once the run is over.
 *
 * Used by `hugeDelays.spec.ts` (a few hundred runs) and `bench/soak.ts` (tens of thousands).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { NEVER, Observable } from 'rxjs';
import { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { HttpError } from '../../src/core/errors/errors.js';
import { after } from '../../src/core/rx/wait.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { NODE_TIMEOUT_MAX, NodeTimerScheduler } from '../support/nodeTimers.js';

/** Delays in ms: small, just around Node's limit, and far above it (up to ~3 years). */
export const delayArb: fc.Arbitrary<number> = fc.oneof(
  fc.integer({ min: 1, max: 10_000 }),
  fc.integer({ min: NODE_TIMEOUT_MAX - 3, max: NODE_TIMEOUT_MAX + 3 }),
  fc.integer({ min: NODE_TIMEOUT_MAX + 1, max: 1e11 }),
);

export type Waiter = 'wait' | 'retry-after' | 'totalTimeoutMs' | 'degradeAfter first' | 'degradeAfter idle' | 'resetTimeoutMs' | 'halfOpenTimeoutMs';
export const WAITERS: readonly Waiter[] = [
  'wait',
  'retry-after',
  'totalTimeoutMs',
  'degradeAfter first',
  'degradeAfter idle',
  'resetTimeoutMs',
  'halfOpenTimeoutMs',
];

/**
 * Starts `waiter` with `delay` at virtual time 0 and returns when it fired (virtual ms; `undefined`
 * if it never did) and the scheduler, run to the end.
 */
export function fireTime(waiter: Waiter, delay: number): { at: number | undefined; due: number; scheduler: NodeTimerScheduler } {
  const scheduler = new NodeTimerScheduler(0);
  let at: number | undefined;
  const fired = (): void => void (at ??= scheduler.now());
  let due = delay;
  switch (waiter) {
    case 'wait':
      after(delay, scheduler, fired);
      break;
    case 'retry-after': {
      // fails at 0 asking for `delay`; the retry (second subscription) is what fires
      let n = 0;
      const source = new Observable<never>((s) => (n++ === 0 ? s.error(new HttpError(429, { 'retry-after-ms': String(delay) })) : fired()));
      source
        .pipe(retryWithBackoff({ scheduler, maxRetries: 1, initialBackoffMs: 0, jitter: 'none', maxRetryAfterMs: Infinity }))
        .subscribe({ error: () => undefined });
      break;
    }
    case 'totalTimeoutMs':
      NEVER.pipe(retryWithBackoff({ scheduler, totalTimeoutMs: delay })).subscribe({ error: fired });
      break;
    case 'degradeAfter first':
      NEVER.pipe(degradeAfter(delay, 'd', { scheduler })).subscribe(fired);
      break;
    case 'degradeAfter idle': {
      // one item at 5, then silence: degrades `delay` after it
      const items = new Observable<string>((s) => void scheduler.schedule(() => s.next('a'), 5));
      items.pipe(degradeAfter({ firstMs: 10, idleMs: delay }, 'd', { scheduler })).subscribe((v) => v === 'd' && fired());
      due = 5 + delay;
      break;
    }
    case 'resetTimeoutMs': {
      const breaker = new CircuitBreaker({ scheduler, failureThreshold: 1, resetTimeoutMs: delay });
      breaker.state$.subscribe((state) => state === 'half-open' && fired());
      const permit = breaker.acquire();
      if (!(permit instanceof Error)) permit.failure(new HttpError(503));
      break;
    }
    case 'halfOpenTimeoutMs': {
      // half-open at 1 (a 1 ms reset timeout): a probe that never ends is timed out `delay` later
      const breaker = new CircuitBreaker({ scheduler, failureThreshold: 1, resetTimeoutMs: 1, halfOpenTimeoutMs: delay });
      breaker.events$.subscribe((e) => e.reason === 'probe_timeout' && fired());
      const permit = breaker.acquire();
      if (!(permit instanceof Error)) permit.failure(new HttpError(503));
      scheduler.schedule(() => void breaker.acquire(), 1);
      due = 1 + delay;
      break;
    }
  }
  scheduler.flush();
  return { at, due, scheduler };
}

export const hugeDelaysProperty = fc.property(fc.constantFrom(...WAITERS), delayArb, (waiter, delay) => {
  const { at, due, scheduler } = fireTime(waiter, delay);
  expect(scheduler.warnings, `${waiter} ${delay}: no timer above 2³¹−1 ms`).to.deep.equal([]);
  expect(at, `${waiter} ${delay}: fires when due`).to.equal(due);
  expect(scheduler.actions.length, `${waiter} ${delay}: nothing left scheduled`).to.equal(0);
});
