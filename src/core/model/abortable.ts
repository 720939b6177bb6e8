/**
 * Cancellable work: {@link abortable} runs work handed an `AbortSignal` that unsubscribing aborts
 * (also a signal first read late), and the run/subscriber classes the model contract and tools
 * build on, so that leaving a call always aborts its request.
 *
 * @module
 */
import { from, Observable, type Observer, type Subscriber, type ObservableInput } from 'rxjs';
import { subscribeWithin } from '../rx/operate.js';

/** The context handed to work that may be cancelled. */
export interface AbortContext {
  /**
   * Aborted when the consumer unsubscribes before the work finished. Read it whenever you need
   * it — before or after an `await`: a signal first read after the consumer left is already
   * aborted.
   */
  readonly signal: AbortSignal;
}

/** The reason every signal handed out here (and by a model call's observer) is aborted with. */
export const unsubscribed = (): DOMException => new DOMException('The consumer unsubscribed', 'AbortError');

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
  // RxJS errors the subscriber with a synchronous throw of `work`
  return new Observable<T>((subscriber) => {
    const run = new AbortRun();
    return subscribeResult(work(run), run, subscriber);
  });
}

/**
 * Subscribes `subscriber` to what one run of the work returned; returns the run, the teardown
 * that aborts its signal if the consumer leaves before it finished.
 *
 * @internal
 */
export function subscribeResult<T>(result: ObservableInput<T>, run: AbortRun, subscriber: Subscriber<T>): AbortRun | undefined {
  if (result instanceof Promise) {
    // what `from(promise)` does, without its Observable and subscriber
    (result as Promise<T>).then(
      (value) => {
        run.finished = true;
        if (!subscriber.closed) {
          subscriber.next(value);
          subscriber.complete();
        }
      },
      (error: unknown) => {
        run.finished = true;
        subscriber.error(error);
      },
    );
    return run;
  }
  runWithin(subscriber, from(result), new RunObserver(subscriber, run));
  return undefined;
}

/**
 * Subscribes `observer` (one run's) to `source` on behalf of `subscriber`: leaving tears the
 * source down, then aborts the run if it had not finished (also at once, for a consumer already gone).
 *
 * @internal
 */
export function runWithin<T>(subscriber: Subscriber<T>, source: Observable<T>, observer: RunObserver<T>): void {
  subscribeWithin(subscriber, source, observer);
  subscriber.add(observer.run);
}

/**
 * One run's context and its teardown (RxJS calls `unsubscribe()` when the subscription ends):
 * the `AbortController` is made when `signal` is first read, and aborted only if the work had not
 * finished when the consumer left.
 *
 * @internal
 */
export class AbortRun implements AbortContext {
  finished = false;
  private controller: AbortController | undefined = undefined;
  /** The consumer left before the work finished: every signal, however late, is aborted. */
  private cancelled = false;

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.cancelled) this.controller.abort(unsubscribed());
    }
    return this.controller.signal;
  }

  unsubscribe(): void {
    if (this.finished) return;
    this.cancelled = true;
    const controller = this.controller;
    if (controller && !controller.signal.aborted) controller.abort(unsubscribed());
  }
}

/**
 * One run's observer: forwards to the consumer and marks the run finished on error or
 * completion (so leaving afterwards aborts nothing). `streamModel`'s turn observer extends it
 * with the finish contract.
 *
 * @internal
 */
export class RunObserver<T> implements Observer<T> {
  constructor(
    protected readonly subscriber: Subscriber<T>,
    readonly run: AbortRun,
  ) {}

  next(value: T): void {
    this.subscriber.next(value);
  }

  error(error: unknown): void {
    this.run.finished = true;
    this.subscriber.error(error);
  }

  complete(): void {
    this.run.finished = true;
    this.subscriber.complete();
  }
}
