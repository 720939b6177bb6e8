/**
 * Helpers of the breaker's specs (CircuitBreaker.spec.ts, persist.spec.ts): virtual time with the
 * breaker's own timers counted apart, and calls admitted, rejected, failed or succeeded by hand.
 */
import { expect } from 'chai';
import type { Subscription } from 'rxjs';
import type { RunHelpers, TestScheduler } from 'rxjs/testing';
import type { CircuitBreaker, CircuitEvent, CircuitPermit } from '../../../src/core/breaker/CircuitBreaker.js';
import { CircuitOpenError, HttpError } from '../../../src/core/errors/errors.js';
import { testScheduler } from '../../support/marbles.js';

export interface Virtual extends RunHelpers {
  /** The TestScheduler of this run (1 frame = 1 ms). */
  readonly ts: TestScheduler;
  /** Runs `fn` at absolute virtual time `t`. Actions made here are not counted as the breaker's. */
  readonly at: (t: number, fn: () => void) => void;
  /** Pending scheduler actions that were not made by `at` (i.e. the breaker's timers). */
  readonly breakerActions: () => number;
}

/** Runs `body` in virtual time with a fresh TestScheduler. */
export function virtual(body: (v: Virtual) => void): void {
  const ts = testScheduler();
  const mine = new Set<unknown>();
  ts.run((helpers) => {
    const at = (t: number, fn: () => void): void => {
      const action: Subscription = ts.schedule(() => {
        mine.delete(action);
        fn();
      }, t - ts.now());
      mine.add(action);
    };
    const breakerActions = (): number => ts.actions.filter((a) => !mine.has(a)).length;
    body({ ...helpers, ts, at, breakerActions });
  });
}

export const e503 = (): HttpError => new HttpError(503);

/** Acquires a permit, failing the test if the breaker rejects the call. */
export function admit(breaker: CircuitBreaker): CircuitPermit {
  const permit = breaker.acquire();
  if (permit instanceof CircuitOpenError) throw new Error(`expected the call to be admitted, got: ${permit.message}`);
  return permit;
}

/** Acquires, expecting a rejection, and returns the CircuitOpenError. */
export function reject(breaker: CircuitBreaker): CircuitOpenError {
  const result = breaker.acquire();
  expect(result).to.be.instanceOf(CircuitOpenError);
  return result as CircuitOpenError;
}

/** `n` calls that each fail with `error()`. */
export function fail(breaker: CircuitBreaker, n: number, error: () => unknown = e503): void {
  for (let i = 0; i < n; i++) admit(breaker).failure(error());
}

/** `n` calls that each succeed. */
export function succeed(breaker: CircuitBreaker, n = 1): void {
  for (let i = 0; i < n; i++) admit(breaker).success();
}

/** Records a breaker's events as compact tuples [at, from, to, reason, failures]. */
export function recordEvents(breaker: { events$: CircuitBreaker['events$'] }): (string | number)[][] {
  const log: (string | number)[][] = [];
  breaker.events$.subscribe((e: CircuitEvent) => log.push([e.at, e.from, e.to, e.reason, e.failures]));
  return log;
}

export function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected the call to throw');
}
