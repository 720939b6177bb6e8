/**
 * (b) Synchronous values through all five operators on the happy path, against the RxJS
 * pipeline doing comparable work (retry + catchError + timeout + map).
 */
import { catchError, map, of, range, retry, timeout, timer, type Observable } from 'rxjs';
import { interleave, rowsOf, type Case, type Row, type Samples } from '../lib/harness.js';
import { lib } from '../lib/rxheal.js';

const { CircuitBreaker, circuitBreak, degradeAfter, fallbackTo, reflectOnError, retryWithBackoff } = lib;

export const FIGURE = 'b. 1e6 sync values';

function drain(source: Observable<unknown>): void {
  let sum = 0;
  source.subscribe((v) => {
    sum += v as number;
  });
  if (sum < 0) throw new Error('unreachable');
}

export async function throughput(options: { n: number; reps: number; warmup: number }): Promise<{ rows: Row[]; samples: Samples }> {
  const breaker = new CircuitBreaker();
  const five = (source: Observable<unknown>): Observable<unknown> =>
    source.pipe(retryWithBackoff({ afterEmit: 'resubscribe' }), circuitBreak(breaker), reflectOnError(), fallbackTo<unknown>(of(-1)), degradeAfter(60_000, -1));
  const rxjs = (source: Observable<unknown>): Observable<unknown> =>
    source.pipe(
      retry({ count: 3, delay: (_e, n) => timer(500 * 2 ** (n - 1)) }),
      catchError(() => of(-1)),
      timeout({ first: 60_000 }),
      map((x) => x),
    );
  const cases: Case[] = [
    { name: 'rxheal five operators', run: (n) => drain(five(range(0, n))) },
    { name: 'RxJS retry+catchError+timeout+map', run: (n) => drain(rxjs(range(0, n))) },
    { name: 'range alone', run: (n) => drain(range(0, n)) },
  ];
  const samples = await interleave(cases, options);
  return { rows: rowsOf(FIGURE, 'ns/value', samples, 'RxJS retry+catchError+timeout+map'), samples };
}
