/**
 * (a) The happy-path guarded call: `circuitBreak` + `retryWithBackoff` around an async function,
 * against a raw call and the peers doing the same work (retry + breaker around the same function).
 * The headline is the shape users write, `defer(() => fn(i)).pipe(retryWithBackoff(o),
 * circuitBreak(b))` with the operators made once, against cockatiel's `execute(() => fn(i))`.
 */
import { defer, lastValueFrom, retry, timer } from 'rxjs';
import { ConsecutiveBreaker, ExponentialBackoff, circuitBreaker, handleAll, retry as cockatielRetry, wrap } from 'cockatiel';
import Opossum from 'opossum';
import { retryBackoff } from 'backoff-rxjs';
import { interleave, rowsOf, type Case, type Row, type Samples } from '../lib/harness.js';
import { lib } from '../lib/rxheal.js';

const { CircuitBreaker, callPolicy, circuitBreak, retryWithBackoff, passThrough } = lib;

export const FIGURE = 'a. guarded call';

/** The headline: the shape users write, operators made once, a pipeline per call. */
export const HEADLINE = 'rxheal defer(() => fn(i)).pipe(retryWithBackoff(o), circuitBreak(b)), operators made once';
/** What every row is compared with. */
export const BASELINE = 'cockatiel wrap(retry, breaker).execute(() => fn(i))';
export const POLICY = 'rxheal callPolicy(…).call(() => fn(i))';

export async function guardedCall(options: { n: number; reps: number; warmup: number; mainOnly?: boolean }): Promise<{ rows: Row[]; samples: Samples }> {
  const fn = async (i: number): Promise<number> => i;
  const fn0 = async (): Promise<number> => 42;
  const o = { maxRetries: 3, initialBackoffMs: 500 } as const;

  // policies and operators are made once, as an application would; each call makes what the
  // shape says and awaits it
  const retryOp = retryWithBackoff<number>(o);
  const breakOp = circuitBreak<number>(new CircuitBreaker());
  const policy = callPolicy?.({ retry: o, breaker: new CircuitBreaker() });
  const breaker = new CircuitBreaker();
  const guarded$ = defer(fn0).pipe(retryWithBackoff(), circuitBreak(breaker));
  const perCallBreaker = new CircuitBreaker();
  const plain$ = defer(fn0);
  const floor$ = defer(fn0).pipe(passThrough(), passThrough());
  const floor1$ = defer(fn0).pipe(passThrough());
  const rxRetry$ = defer(fn0).pipe(retry({ count: 3, delay: (_e, n) => timer(500 * 2 ** (n - 1)) }));
  const backoff$ = defer(fn0).pipe(retryBackoff({ initialInterval: 500, maxRetries: 3 }));
  const cockatiel = wrap(
    cockatielRetry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() }),
    circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
  );
  const opossumNoTimeout = new Opossum(fn0, { timeout: false });
  const opossumDefault = new Opossum(fn0);

  const cases: Case[] = [
    {
      name: 'raw await fn(i)',
      run: async (n) => {
        for (let i = 0; i < n; i++) await fn(i);
      },
    },
    {
      name: HEADLINE,
      run: async (n) => {
        for (let i = 0; i < n; i++) await lastValueFrom(defer(() => fn(i)).pipe(retryOp, breakOp));
      },
    },
    ...(policy
      ? [
          {
            name: POLICY,
            run: async (n: number) => {
              for (let i = 0; i < n; i++) await lastValueFrom(policy.call(() => fn(i)));
            },
          },
        ]
      : []),
    {
      name: BASELINE,
      run: async (n) => {
        for (let i = 0; i < n; i++) await cockatiel.execute(() => fn(i));
      },
    },
    {
      name: 'rxheal retryWithBackoff+circuitBreak',
      run: async (n) => {
        for (let i = 0; i < n; i++) await lastValueFrom(guarded$);
      },
    },
    {
      name: 'rxheal, pipeline built per call',
      run: async (n) => {
        for (let i = 0; i < n; i++) await lastValueFrom(defer(fn0).pipe(retryWithBackoff(), circuitBreak(perCallBreaker)));
      },
    },
    {
      // the operators made per call too, options checked each time
      name: 'rxheal, pipeline built per call with options',
      run: async (n) => {
        for (let i = 0; i < n; i++)
          await lastValueFrom(defer(fn0).pipe(retryWithBackoff({ maxRetries: 2, initialBackoffMs: 100, jitter: 'full' }), circuitBreak(perCallBreaker)));
      },
    },
    {
      name: 'cockatiel wrap(retry, breaker).execute(fn)',
      run: async (n) => {
        for (let i = 0; i < n; i++) await cockatiel.execute(fn0);
      },
    },
    {
      name: 'opossum fire() (timeout off)',
      run: async (n) => {
        for (let i = 0; i < n; i++) await opossumNoTimeout.fire();
      },
    },
    {
      name: 'opossum fire() (default 10 s timeout)',
      run: async (n) => {
        for (let i = 0; i < n; i++) await opossumDefault.fire();
      },
    },
    {
      name: 'RxJS retry({count, delay})',
      run: async (n) => {
        for (let i = 0; i < n; i++) await lastValueFrom(rxRetry$);
      },
    },
    {
      name: 'backoff-rxjs retryBackoff',
      run: async (n) => {
        for (let i = 0; i < n; i++) await lastValueFrom(backoff$);
      },
    },
    {
      name: 'RxJS, no operator',
      run: async (n) => {
        for (let i = 0; i < n; i++) await lastValueFrom(plain$);
      },
    },
  ];
  const notes = {
    [HEADLINE]: 'the shape users write: operators made once, defer + pipe per call',
    [POLICY]: 'the same retry and breaker, one observable per call (callPolicy)',
    'rxheal retryWithBackoff+circuitBreak': 'defer(fn).pipe(…) built once, subscribed per call',
  };
  const samples = await interleave(cases, options);
  opossumNoTimeout.shutdown();
  opossumDefault.shutdown();
  if (options.mainOnly) return { rows: rowsOf(FIGURE, 'ns/call', samples, BASELINE, notes), samples };
  // The floor runs after the main group: one more Subscriber subclass flowing through RxJS's
  // shared code makes its call sites more polymorphic for every RxJS case measured after it.
  const floorCases: Case[] = [
    {
      name: 'rxheal (again, after the main group)',
      run: async (n) => {
        for (let i = 0; i < n; i++) await lastValueFrom(guarded$);
      },
    },
    {
      name: 'RxJS, two pass-through operators (floor)',
      run: async (n) => {
        for (let i = 0; i < n; i++) await lastValueFrom(floor$);
      },
    },
    {
      name: 'RxJS, one pass-through operator',
      run: async (n) => {
        for (let i = 0; i < n; i++) await lastValueFrom(floor1$);
      },
    },
    {
      name: 'RxJS, no operator (again)',
      run: async (n) => {
        for (let i = 0; i < n; i++) await lastValueFrom(plain$);
      },
    },
  ];
  const floorSamples = await interleave(floorCases, options);
  const floorNotes = { 'RxJS, two pass-through operators (floor)': 'two Subscriber subclasses that only forward: what any two operators cost' };
  return {
    rows: [
      ...rowsOf(FIGURE, 'ns/call', samples, BASELINE, notes),
      ...rowsOf(FIGURE, 'ns/call', floorSamples, 'RxJS, two pass-through operators (floor)', floorNotes),
    ],
    samples,
  };
}
