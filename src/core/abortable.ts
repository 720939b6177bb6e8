import { from, Observable, type ObservableInput } from 'rxjs';

/** The context handed to work that may be cancelled. */
export interface AbortContext {
  /**
   * Aborted when the consumer unsubscribes before the work finished. Read it whenever you need
   * it — before or after an `await`: a signal first read after the consumer left is already
   * aborted.
   */
  readonly signal: AbortSignal;
}

/** The reason every signal handed out here is aborted with. */
const unsubscribed = (): DOMException => new DOMException('The consumer unsubscribed', 'AbortError');

/**
 * A cold observable of `work({ signal })`. Unsubscribing before it finishes aborts the signal
 * with an `AbortError` — also a signal first read later (after an `await`): it is handed out
 * already aborted. The `AbortController` is created only if `work` reads `signal` (an
 * `abort()` costs microseconds; most calls never need one).
 *
 * @example
 * ```ts
 * const body$ = abortable(({ signal }) => fetch(url, { signal }).then((r) => r.text()));
 * const late$ = abortable(async (ctx) => {
 *   const token = await auth();
 *   return fetch(url, { headers: { authorization: token }, signal: ctx.signal }); // aborted if the consumer left during auth()
 * });
 * ```
 */
export function abortable<T>(work: (context: AbortContext) => ObservableInput<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    let controller: AbortController | undefined;
    let finished = false;
    /** The consumer left before the work finished: every signal, however late, is aborted. */
    let cancelled = false;
    const context: AbortContext = {
      get signal() {
        if (controller === undefined) {
          controller = new AbortController();
          if (cancelled) controller.abort(unsubscribed());
        }
        return controller.signal;
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
      if (finished) return;
      cancelled = true;
      if (controller && !controller.signal.aborted) controller.abort(unsubscribed());
    };
  });
}
