/**
 * The one way rxheal's operators are built, in the spirit of RxJS's own `operate(source,
 * subscriber)`, on RxJS's public API only: each subscription to the result runs `init` with the
 * source and the downstream subscriber; `init` subscribes to the source with an observer of its
 * own (a plain object or class, never a `Subscriber` subclass) through {@link subscribeWithin},
 * which links it to `subscriber` with `subscriber.add`, so unsubscribing downstream tears it down. Finalisers are
 * RxJS's own (a `Subscription`'s), and no operator ever reads a subscriber's `destination`.
 *
 * @module
 */
import { Observable, type Observer, type OperatorFunction, type Subscriber, type Subscription, type TeardownLogic } from 'rxjs';

/**
 * An operator from what one subscription does: `init(source, subscriber)` runs once per
 * subscription to the result, and what it returns (a teardown) runs when that subscription ends.
 * A throw from `init` errors `subscriber` (RxJS's rule for a subscribe function).
 *
 * @example
 * ```ts
 * const double = operate<number, number>((source, subscriber) =>
 *   source.subscribe({ next: (x) => subscriber.next(2 * x), error: (e) => subscriber.error(e), complete: () => subscriber.complete() }),
 * );
 * ```
 */
export function operate<T, R = T>(init: (source: Observable<T>, subscriber: Subscriber<R>) => TeardownLogic): OperatorFunction<T, R> {
  return (source) => new Observable<R>((subscriber) => init(source, subscriber));
}

/**
 * Subscribes `observer` to `source` on behalf of `subscriber` (the downstream subscriber, or any
 * subscription that holds it), linked first: the subscriber RxJS
 * makes for `observer` is added to `subscriber` before `source` is subscribed, so unsubscribing
 * downstream reaches the source even while it is still emitting synchronously (a `take(1)`
 * downstream of `of(1, 2, 3)` stops it at the first value). The inner subscription lets go of
 * `subscriber` when it ends on its own. What every operator's `init` does with its source;
 * returns the inner subscription.
 *
 * @example
 * ```ts
 * operate<T>((source, subscriber) => void subscribeWithin(subscriber, source, new CountingObserver(subscriber)));
 * ```
 */
export function subscribeWithin<T>(subscriber: Subscription, source: Observable<T>, observer: Partial<Observer<T>>): Subscription {
  linkParent = subscriber;
  linkSource = source;
  return (LINK as Observable<T>).subscribe(observer);
}

/** The link {@link subscribeWithin} is making, handed to {@link LINK}'s subscribe function (which RxJS calls synchronously, before anything else runs). */
let linkParent: Subscription | undefined;
let linkSource: Observable<unknown> | undefined;

/**
 * One observable for every link: its subscribe function takes the link's parent and source (and
 * clears them, so a link made inside `source.subscribe` takes its own), links the subscriber RxJS
 * made for the observer to the parent, then subscribes it to the source. No observable, closure
 * or scope per link: a turn of a healing pipeline makes a dozen.
 */
const LINK = new Observable<unknown>((inner) => {
  const parent = linkParent!;
  const source = linkSource!;
  linkParent = linkSource = undefined;
  parent.add(inner);
  source.subscribe(inner);
});
