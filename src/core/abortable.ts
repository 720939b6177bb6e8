import { from, Observable, type ObservableInput } from 'rxjs';

/** The context handed to work that may be cancelled. */
export interface AbortContext {
  /** Aborted when the consumer unsubscribes before the work finished. */
  readonly signal: AbortSignal;
}

/**
 * A cold observable of `work({ signal })`. Unsubscribing before it finishes aborts the signal
 * with an `AbortError`. The `AbortController` is created only if `work` reads `signal` (an
 * `abort()` costs microseconds; most calls never need one).
 *
 * @example
 * ```ts
 * const body$ = abortable(({ signal }) => fetch(url, { signal }).then((r) => r.text()));
 * ```
 */
export function abortable<T>(work: (context: AbortContext) => ObservableInput<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    let controller: AbortController | undefined;
    let finished = false;
    const context: AbortContext = {
      get signal() {
        return (controller ??= new AbortController()).signal;
      },
    };
    const inner = from(work(context)).subscribe({
      next: (value) => subscriber.next(value),
      error: (error: unknown) => {
        finished = true;
        subscriber.error(error);
      },
      complete: () => {
        finished = true;
        subscriber.complete();
      },
    });
    return () => {
      inner.unsubscribe();
      if (!finished && controller && !controller.signal.aborted) {
        controller.abort(new DOMException('The consumer unsubscribed', 'AbortError'));
      }
    };
  });
}
