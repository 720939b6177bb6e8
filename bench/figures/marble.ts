/**
 * (f) A marble test that simulates an hour of outage and the recovery: a client calls a model
 * every 5 s through `retryWithBackoff` + `circuitBreak`; the provider fails every attempt with a
 * 503 for the first hour, then answers. The breaker's `state$` must match, to the millisecond, the
 * transitions a small independent model of the rules predicts, and every call must end as that
 * model says. Wall time is measured around the whole `TestScheduler.run` (assertions included).
 */
import { expect } from 'chai';
import { asyncScheduler, catchError, concatMap, defer, interval, map, mergeMap, of, take, throwError, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { stats, type Row, type Stats } from '../lib/harness.js';
import { lib } from '../lib/rxheal.js';

export const FIGURE = 'f. 1 h outage marble test';

const OUTAGE_END = 3_600_000;
const PERIOD = 5_000;
const CALLS = 840; // 70 minutes
const LATENCY = 100;
const THRESHOLD = 5;
const RESET = 60_000;
/** Attempt offsets within a call: retries after 500 and 1 000 ms (jitter none), 100 ms each. */
const ATTEMPTS = [0, 600, 1_700];

interface Expected {
  transitions: [number, string][];
  outcomes: string[];
  attempts: number;
}

/** What the rules say should happen, computed without the library. */
function predict(): Expected {
  const transitions: [number, string][] = [[0, 'closed']];
  const outcomes: string[] = [];
  let state: 'closed' | 'open' | 'half-open' = 'closed';
  let failures = 0;
  let openUntil = 0;
  let attempts = 0;
  for (let k = 1; k <= CALLS; k++) {
    const t = k * PERIOD;
    if (state === 'open' && t >= openUntil) state = 'half-open';
    if (state === 'open') {
      outcomes.push('r');
      continue;
    }
    let ok: number | undefined;
    for (const offset of ATTEMPTS) {
      attempts++;
      if (t + offset >= OUTAGE_END) {
        ok = t + offset + LATENCY;
        break;
      }
    }
    if (ok !== undefined) {
      outcomes.push('s');
      failures = 0;
      if (state === 'half-open') {
        state = 'closed';
        transitions.push([ok, 'closed']);
      }
      continue;
    }
    outcomes.push('f');
    const end = t + ATTEMPTS[ATTEMPTS.length - 1]! + LATENCY;
    if (state === 'half-open' || ++failures >= THRESHOLD) {
      state = 'open';
      failures = 0;
      openUntil = end + RESET;
      transitions.push([end, 'open'], [openUntil, 'half-open']);
    }
  }
  return { transitions, outcomes, attempts };
}

/** A marble string with one value at each of `times` (distinct, increasing). */
function marbles(times: readonly number[], names: readonly string[]): string {
  let out = '';
  let at = 0;
  times.forEach((t, i) => {
    if (t > at) out += `${out ? ' ' : ''}${t - at}ms `;
    out += names[i];
    at = t + 1;
  });
  return out;
}

/** The marble test itself; throws on any mismatch. */
export function hourOfOutage(): void {
  const expected = predict();
  const letter: Record<string, string> = { closed: 'c', open: 'o', 'half-open': 'h' };
  const outcomes: string[] = [];
  let attempts = 0;
  new TestScheduler((a, b) => {
    expect(a).to.deep.equal(b);
  }).run(({ expectObservable }) => {
    const breaker = new lib.CircuitBreaker({ name: 'model', failureThreshold: THRESHOLD, resetTimeoutMs: RESET });
    const provider$ = defer(() => {
      attempts++;
      const up = asyncScheduler.now() >= OUTAGE_END;
      return timer(LATENCY).pipe(mergeMap(() => (up ? of('answer') : throwError(() => new lib.HttpError(503)))));
    });
    const call$ = provider$.pipe(lib.retryWithBackoff({ jitter: 'none', maxRetries: 2 }), lib.circuitBreak(breaker));
    interval(PERIOD)
      .pipe(
        take(CALLS),
        concatMap(() =>
          call$.pipe(
            map(() => 's'),
            catchError((e: unknown) => of(e instanceof lib.CircuitOpenError ? 'r' : 'f')),
          ),
        ),
      )
      .subscribe((o) => outcomes.push(o));
    const end = (CALLS + 1) * PERIOD;
    expectObservable(breaker.state$, `^ ${end}ms !`).toBe(
      marbles(
        expected.transitions.map(([t]) => t),
        expected.transitions.map(([, s]) => letter[s]!),
      ),
      { c: 'closed', o: 'open', h: 'half-open' },
    );
    expectObservable(timer(end)).toBe(`${end}ms (x|)`, { x: 0 });
  });
  // run() flushes when the callback returns: every call has ended by now
  expect(outcomes).to.deep.equal(expected.outcomes);
  expect(attempts).to.equal(expected.attempts);
}

/** Wall time of the test: the first run (cold) and the median of the next `reps`. */
export function marbleWallTime(reps = 10): { cold: number; warm: Stats; rows: Row[] } {
  const time = (): number => {
    const t0 = process.hrtime.bigint();
    hourOfOutage();
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  const cold = time();
  const warm = stats(Array.from({ length: reps }, time));
  const p = predict();
  const note = `${CALLS} calls, ${p.attempts} provider attempts, ${p.transitions.length} breaker transitions, all checked`;
  return {
    cold,
    warm,
    rows: [
      { figure: FIGURE, name: 'first run in this process (after the other figures)', unit: 'ms', value: cold, note },
      { figure: FIGURE, name: `median of ${reps} more runs`, unit: 'ms', value: warm.median, min: warm.min, max: warm.max },
    ],
  };
}
