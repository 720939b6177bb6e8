import { expect } from 'chai';
import { defer, of, Subscription, take, tap, type Observer } from 'rxjs';
import { operate, subscribeWithin } from '../../../src/core/rx/operate.js';

/** An observer that doubles each value on to `subscriber`'s side (a plain class, as the operators' are). */
class Doubling implements Observer<number> {
  constructor(private readonly subscriber: { next(x: number): void; error(e: unknown): void; complete(): void }) {}
  next(x: number): void {
    this.subscriber.next(2 * x);
  }
  error(e: unknown): void {
    this.subscriber.error(e);
  }
  complete(): void {
    this.subscriber.complete();
  }
}

const double = operate<number>((source, subscriber) => void subscribeWithin(subscriber, source, new Doubling(subscriber)));

describe('operate and subscribeWithin', () => {
  it('runs init once per subscription, with the source and the downstream subscriber', () => {
    let subscriptions = 0;
    const source = defer(() => {
      subscriptions++;
      return of(1, 2, 3);
    });
    const seen: number[] = [];
    const doubled = source.pipe(double);
    doubled.subscribe((x) => seen.push(x));
    doubled.subscribe((x) => seen.push(x));
    expect(seen).to.deep.equal([2, 4, 6, 2, 4, 6]);
    expect(subscriptions).to.equal(2);
  });

  it('links first: a take(1) downstream stops a synchronous source at its first value', () => {
    let emitted = 0;
    const seen: number[] = [];
    of(1, 2, 3, 4, 5)
      .pipe(
        tap(() => emitted++),
        double,
        take(1),
      )
      .subscribe((x) => seen.push(x));
    expect(seen).to.deep.equal([2]);
    expect(emitted).to.equal(1);
  });

  it('unsubscribing the holder unsubscribes the source; an inner subscription that ends lets go of its holder', () => {
    const holder = new Subscription();
    let completedTornDown = 0;
    const done = subscribeWithin(holder, of(1).pipe(tap({ finalize: () => completedTornDown++ })), {});
    expect(done.closed, 'completed on its own').to.equal(true);
    expect(completedTornDown).to.equal(1);
    let left = 0;
    const waiting = subscribeWithin(holder, defer(() => new Promise<number>(() => undefined)).pipe(tap({ finalize: () => left++ })), {});
    expect(waiting.closed).to.equal(false);
    holder.unsubscribe();
    expect(waiting.closed).to.equal(true);
    expect(left).to.equal(1);
  });

  it('a holder already closed unsubscribes the inner subscription at once, before the source is subscribed', () => {
    const holder = new Subscription();
    holder.unsubscribe();
    const seen: number[] = [];
    const inner = subscribeWithin(holder, of(1, 2), { next: (x) => seen.push(x) });
    expect(inner.closed).to.equal(true);
    expect(seen).to.deep.equal([]);
  });

  it('a throw in init errors the subscriber (RxJS’s rule for a subscribe function)', () => {
    const boom = new Error('boom');
    const errors: unknown[] = [];
    of(1)
      .pipe(
        operate<number>(() => {
          throw boom;
        }),
      )
      .subscribe({ error: (e: unknown) => errors.push(e) });
    expect(errors).to.deep.equal([boom]);
  });
});
