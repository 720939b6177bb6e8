/**
 * The floor of an intercepting RxJS operator: a pass-through whose subscriber forwards every
 * notification (a `Subscriber` subclass linked to downstream, as RxJS's own operators do). Two of
 * them show what two operators cost before any of their own logic runs.
 */
import { Observable, Subscriber, type MonoTypeOperatorFunction } from 'rxjs';

/** Forwards everything (Subscriber's own next/error/complete), linked to its destination. */
class Forward<T> extends Subscriber<T> {}

/** `source` through one intercepting layer that changes nothing. */
export function passThrough<T>(): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      source.subscribe(new Forward(subscriber));
    });
}
