/**
 * Cancellable work: {@link abortable} runs work handed an `AbortSignal` that unsubscribing aborts
 * (also a signal first read late), and the run/subscriber classes the model contract and tools
 * build on, so that leaving a call always aborts its request.
 *
 * @module
 */
import { from, Observable, type Subscriber, type ObservableInput, type TeardownLogic } from 'rxjs';
import { LeanSubscriber } from '../rx/leanSubscriber.js';

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
  // the run's subscriber is the lone teardown: leaving aborts the run after the source is torn down
  from(result).subscribe(new RunSubscriber(subscriber, run));
  return undefined;
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
 * Forwards to the consumer, marks the run finished on error or completion, and — unsubscribed
 * before that (after its source is) — aborts the run: one subscriber, the run's only teardown.
 * Linked to its destination once built (as `super(destination)` would, but after `run` is set): a
 * destination already closed unsubscribes it at once, and that aborts the run. `streamModel`'s
 * turn subscriber extends it with the finish contract.
 *
 * @internal
 */
export class RunSubscriber<T> extends LeanSubscriber<T> {
  constructor(
    destination: Subscriber<T>,
    protected readonly run: AbortRun,
  ) {
    super();
    this.destination = destination;
    destination.add(this);
  }

  protected override _error(error: unknown): void {
    this.run.finished = true;
    super._error(error);
  }

  protected override _complete(): void {
    this.run.finished = true;
    super._complete();
  }

  override unsubscribe(): void {
    if (this.closed) return;
    super.unsubscribe();
    this.run.unsubscribe();
  }
}
