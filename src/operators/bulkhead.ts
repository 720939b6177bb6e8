import type { MonoTypeOperatorFunction, Observable, Subscriber, Subscription } from 'rxjs';
import { operate, subscribeWithin } from '../core/rx/operate.js';
import { Bulkhead, type BulkheadEntrant, type BulkheadOptions } from '../core/bulkhead/bulkhead.js';
import type { BulkheadRejectedError } from '../core/errors/errors.js';

/**
 * Runs each subscription as one call under a {@link Bulkhead}: at most `maxConcurrent` at once;
 * up to `maxQueue` more wait their turn (first in, first out; the source is subscribed when a
 * slot frees), at most `queueTimeoutMs`; a call beyond errors with `BulkheadRejectedError`
 * (`reason: 'full'`, at once; `'queue_timeout'`, after its wait) without the source ever being
 * subscribed. The classifier makes that error worth a fallback and never a retry, and breakers
 * do not count it.
 *
 * A call leaves the bulkhead when it completes, errors (before the error goes on: a retry
 * downstream finds the slot free) or is unsubscribed; a call unsubscribed while waiting gives
 * its queue place back, and its queue timeout is cancelled.
 *
 * ```
 * bulkhead({ maxConcurrent: 1, maxQueue: 1 }), three calls at 0:
 * call a:   --a|           (runs)
 * call b:     --b|         (waits 2 ms, then runs)
 * call c:   #              (BulkheadRejectedError 'full', at once)
 * ```
 *
 * Pass a {@link Bulkhead} to share it (across pipelines, or from a `BulkheadRegistry`), or
 * options to create one that every subscription to the result shares.
 *
 * @example
 * ```ts
 * const bulkheads = new BulkheadRegistry({ maxConcurrent: 8, maxQueue: 16, queueTimeoutMs: 2000, hub });
 * const answer$ = streamModel(gpt, request).pipe(bulkhead(bulkheads.get('model:gpt')));
 * const withFallback$ = answer$.pipe(fallbackTo(streamModel(claude, request))); // a full bulkhead falls back, never retries
 * ```
 * @throws {InvalidOptionError} at once, for invalid bulkhead options.
 */
export function bulkhead<T>(bulkheadOrOptions: Bulkhead | BulkheadOptions = {}): MonoTypeOperatorFunction<T> {
  const b = bulkheadOrOptions instanceof Bulkhead ? bulkheadOrOptions : new Bulkhead(bulkheadOrOptions);
  return operate<T>((source, subscriber) => {
    const call = new BulkheadCall(source, subscriber, b);
    b.enter(call);
    return call;
  });
}

/** One subscription under a bulkhead: what it does when admitted or refused, and its teardown. */
class BulkheadCall<T> implements BulkheadEntrant {
  private inner: Subscription | undefined = undefined;
  private left = false;

  constructor(
    private readonly source: Observable<T>,
    private readonly subscriber: Subscriber<T>,
    private readonly bulkhead: Bulkhead,
  ) {}

  admit(): void {
    const { subscriber } = this;
    // a consumer gone already (RxJS subscribed us for a closed subscriber): the slot goes back at once
    if (subscriber.closed || this.left) {
      this.left = true;
      this.bulkhead.leave(this);
      return;
    }
    this.inner = subscribeWithin(subscriber, this.source, {
      next: (value) => subscriber.next(value),
      error: (error: unknown) => {
        this.leave();
        subscriber.error(error);
      },
      complete: () => {
        this.leave();
        subscriber.complete();
      },
    });
  }

  reject(error: BulkheadRejectedError): void {
    this.left = true;
    this.subscriber.error(error);
  }

  /** Teardown: the source is unsubscribed and the slot or queue place given back. */
  unsubscribe(): void {
    this.leave();
    this.inner?.unsubscribe();
  }

  private leave(): void {
    if (this.left) return;
    this.left = true;
    this.bulkhead.leave(this);
  }
}
