/**
 * (a) The happy-path guarded call: `circuitBreak` + `retryWithBackoff` around an async function,
 * against a raw call and the peers doing the same work (retry + breaker around the same function).
 */
import { defer, lastValueFrom, retry, timer } from 'rxjs';
import { ConsecutiveBreaker, ExponentialBackoff, circuitBreaker, handleAll, retry as cockatielRetry, wrap } from 'cockatiel';
import Opossum from 'opossum';
import { retryBackoff } from 'backoff-rxjs';
import { interleave, rowsOf, type Case, type Row, type Samples } from '../lib/harness.js';
import { lib } from '../lib/rxheal.js';

const { CircuitBreaker, circuitBreak, retryWithBackoff, passThrough } = lib;

export const FIGURE = 'a. guarded call';

export async function guardedCall(options: { n: number; reps: number; warmup: number; mainOnly?: boolean }): Promise<{ rows: Row[]; samples: Samples }> {
  const fn = async (): Promise<number> => 42;

  // every pipeline and policy is built once, as an application would; each call subscribes / executes
  const breaker = new CircuitBreaker();
  const guarded$ = defer(fn).pipe(retryWithBackoff(), circuitBreak(breaker));
  const perCallBreaker = new CircuitBreaker();
  const plain$ = defer(fn);
  const floor$ = defer(fn).pipe(passThrough(), passThrough());
  const floor1$ = defer(fn).pipe(passThrough());
  const rxRetry$ = defer(fn).pipe(retry({ count: 3, delay: (_e, n) => timer(500 * 2 ** (n - 1)) }));
  const backoff$ = defer(fn).pipe(retryBackoff({ initialInterval: 500, maxRetries: 3 }));
  const cockatiel = wrap(
    cockatielRetry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() }),
    circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
  );
  const opossumNoTimeout = new Opossum(fn, { timeout: false });
  const opossumDefault = new Opossum(fn);

  const cases: Case[] = [
    { name: 'raw await fn()', run: async (n) => { for (let i = 0; i < n; i++) await fn(); } },
    { name: 'rxheal retryWithBackoff+circuitBreak', run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(guarded$); } },
    {
      name: 'rxheal, pipeline built per call',
      run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(defer(fn).pipe(retryWithBackoff(), circuitBreak(perCallBreaker))); },
    },
    {
      // the documented shape, `defer(() => call(args)).pipe(retryWithBackoff({…}), circuitBreak(breaker))`
      name: 'rxheal, pipeline built per call with options',
      run: async (n) => {
        for (let i = 0; i < n; i++) await lastValueFrom(defer(fn).pipe(retryWithBackoff({ maxRetries: 2, initialBackoffMs: 100, jitter: 'full' }), circuitBreak(perCallBreaker)));
      },
    },
    { name: 'cockatiel wrap(retry, breaker)', run: async (n) => { for (let i = 0; i < n; i++) await cockatiel.execute(fn); } },
    { name: 'opossum fire() (timeout off)', run: async (n) => { for (let i = 0; i < n; i++) await opossumNoTimeout.fire(); } },
    { name: 'opossum fire() (default 10 s timeout)', run: async (n) => { for (let i = 0; i < n; i++) await opossumDefault.fire(); } },
    { name: 'RxJS retry({count, delay})', run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(rxRetry$); } },
    { name: 'backoff-rxjs retryBackoff', run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(backoff$); } },
    { name: 'RxJS, no operator', run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(plain$); } },
  ];
  const samples = await interleave(cases, options);
  opossumNoTimeout.shutdown();
  opossumDefault.shutdown();
  if (options.mainOnly) return { rows: rowsOf(FIGURE, 'ns/call', samples, 'cockatiel wrap(retry, breaker)'), samples };
  // The floor runs after the main group: one more Subscriber subclass flowing through RxJS's
  // shared code makes its call sites more polymorphic for every RxJS case measured after it.
  const floorCases: Case[] = [
    { name: 'rxheal (again, after the main group)', run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(guarded$); } },
    { name: 'RxJS, two pass-through operators (floor)', run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(floor$); } },
    { name: 'RxJS, one pass-through operator', run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(floor1$); } },
    { name: 'RxJS, no operator (again)', run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(plain$); } },
  ];
  const floorSamples = await interleave(floorCases, options);
  const notes = { 'RxJS, two pass-through operators (floor)': 'two Subscriber subclasses that only forward: what any two operators cost' };
  return {
    rows: [...rowsOf(FIGURE, 'ns/call', samples, 'cockatiel wrap(retry, breaker)'), ...rowsOf(FIGURE, 'ns/call', floorSamples, 'RxJS, two pass-through operators (floor)', notes)],
    samples,
  };
}
