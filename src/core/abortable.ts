import { from, Observable, Subscriber, type ObservableInput, type TeardownLogic } from 'rxjs';

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
  return new Abortable(work);
}

/**
 * What {@link abortable} returns. A class rather than `new Observable(fn)`, and a promise is
 * subscribed to directly rather than through `from()`: a guarded call runs one of these per
 * attempt, so each allocation saved is saved on every call (see `callPolicy`).
 *
 * @internal
 */
export class Abortable<T> extends Observable<T> {
  constructor(private readonly work: (context: AbortContext) => ObservableInput<T>) {
    super();
  }

  /** One run of `work` (RxJS calls this for each subscription, and errors a synchronous throw). */
  protected _subscribe(subscriber: Subscriber<T>): TeardownLogic {
    const run = new AbortRun();
    return subscribeResult(this.work(run), run, subscriber);
  }
}

/**
 * Subscribes `subscriber` to what one run of the work returned; returns the run, the teardown
 * that aborts its signal if the consumer leaves before it finished.
 *
 * @internal
 */
export function subscribeResult<T>(result: ObservableInput<T>, run: AbortRun, subscriber: Subscriber<T>): AbortRun {
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
  run.inner = from(result).subscribe(new Finishing(subscriber, run));
  return run;
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
  inner: { unsubscribe(): void } | undefined = undefined;
  private controller: AbortController | undefined = undefined;

  get signal(): AbortSignal {
    return (this.controller ??= new AbortController()).signal;
  }

  unsubscribe(): void {
    this.inner?.unsubscribe();
    const controller = this.controller;
    if (!this.finished && controller && !controller.signal.aborted) {
      controller.abort(new DOMException('The consumer unsubscribed', 'AbortError'));
    }
  }
}

/** Forwards to the consumer and marks the run finished on error or completion. */
class Finishing<T> extends Subscriber<T> {
  constructor(
    destination: Subscriber<T>,
    private readonly run: AbortRun,
  ) {
    super(destination);
  }

  protected override _error(error: unknown): void {
    this.run.finished = true;
    super._error(error);
  }

  protected override _complete(): void {
    this.run.finished = true;
    super._complete();
  }
}
