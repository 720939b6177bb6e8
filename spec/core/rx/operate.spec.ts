import { expect } from 'chai';
import { defer, NEVER, Observable, of, Subscription, take, tap, type Observer, type Subscriber } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { Link, operate, subscribeWithin } from '../../../src/core/rx/operate.js';

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

  describe('Link: an observer that is its own subscription', () => {
    /** Doubles values on; logs its handlers and its teardown. */
    class Doubler extends Link<number> {
      constructor(
        private readonly out: Subscriber<number>,
        private readonly log: string[] = [],
      ) {
        super();
      }
      protected onNext(x: number): void {
        this.out.next(2 * x);
      }
      protected onError(e: unknown): void {
        this.log.push('error');
        this.out.error(e);
      }
      protected onComplete(): void {
        this.log.push('complete');
        this.out.complete();
      }
      override unsubscribe(): void {
        if (this.closed) return;
        super.unsubscribe();
        this.log.push('teardown');
      }
    }
    const doubled = (log?: string[]) => operate<number>((source, subscriber) => void subscribeWithin(subscriber, source, new Doubler(subscriber, log)));

    it('in marbles, as a subscriber would: values on, then the end; the source unsubscribed at its end, and when downstream leaves', () => {
      new TestScheduler((a, b) => void expect(a).to.deep.equal(b)).run(({ cold, expectObservable, expectSubscriptions }) => {
        const ends = cold('-a-b-|', { a: 1, b: 2 });
        expectObservable(ends.pipe(doubled())).toBe('-x-y-|', { x: 2, y: 4 });
        expectSubscriptions(ends.subscriptions).toBe('^----!');
        const fails = cold('-a-#', { a: 1 });
        expectObservable(fails.pipe(doubled())).toBe('-x-#', { x: 2 });
        expectSubscriptions(fails.subscriptions).toBe('^--!');
        const long = cold('-a-b-c-d-|', { a: 1, b: 2, c: 3, d: 4 });
        expectObservable(long.pipe(doubled()), '^--!').toBe('-x-', { x: 2 });
        expectSubscriptions(long.subscriptions).toBe('^--!');
      });
    });

    it('RxJS subscribes it as it is (no subscriber of its own around it); nothing is delivered after an end or a teardown', () => {
      let seen: unknown;
      const log: string[] = [];
      const values: number[] = [];
      const sloppy = new Observable<number>((subscriber) => {
        seen = subscriber;
        subscriber.next(1);
        subscriber.complete();
        // a source that does not keep the contract: ignored
        subscriber.next(2);
        subscriber.error(new Error('late'));
        subscriber.complete();
      });
      const holder = new Subscription();
      const link = new Doubler(
        { next: (x: number) => values.push(x), error: () => log.push('out error'), complete: () => log.push('out complete') } as unknown as Subscriber<number>,
        log,
      );
      subscribeWithin(holder, sloppy, link);
      expect(seen).to.equal(link);
      expect(values).to.deep.equal([2]);
      expect(log).to.deep.equal(['complete', 'out complete', 'teardown']);
      expect(link.closed).to.equal(true);
      // and a link torn down from outside delivers nothing more
      const quiet = new Doubler({ next: (x: number) => values.push(x) } as unknown as Subscriber<number>);
      let push: ((x: number) => void) | undefined;
      subscribeWithin(holder, new Observable<number>((s) => void (push = (x) => s.next(x))), quiet);
      push!(5);
      holder.unsubscribe();
      push!(6);
      expect(values).to.deep.equal([2, 10]);
    });

    it("an error runs the handler, then the teardown: the source's first, then the link's own", () => {
      const log: string[] = [];
      const source = new Observable<number>((subscriber) => {
        queueMicrotask(() => subscriber.error(new Error('x')));
        return () => log.push('source teardown');
      });
      return new Promise<void>((done) => {
        source.pipe(doubled(log)).subscribe({
          error: () => {
            log.push('downstream error');
            queueMicrotask(() => {
              expect(log).to.deep.equal(['error', 'downstream error', 'source teardown', 'teardown']);
              done();
            });
          },
        });
      });
    });

    it('downstream leaving tears the link down once; a link whose source ended at once is closed, its holder still open', () => {
      const log: string[] = [];
      const sub = NEVER.pipe(doubled(log)).subscribe();
      sub.unsubscribe();
      sub.unsubscribe();
      expect(log).to.deep.equal(['teardown']);
      const holder = new Subscription();
      const link = new Doubler({ complete: () => undefined } as unknown as Subscriber<number>);
      subscribeWithin(holder, of(1).pipe(take(0)), link);
      expect(link.closed).to.equal(true);
      expect(holder.closed).to.equal(false);
    });

    it('a source whose subscribe throws outside its own try: the error reaches the link (its handler, then its teardown), not the caller', () => {
      const log: string[] = [];
      const errors: unknown[] = [];
      const boom = new Error('subscribe threw');
      const thrower = Object.assign(Object.create(Observable.prototype) as Observable<number>, {
        subscribe: () => {
          throw boom;
        },
      });
      const holder = new Subscription();
      const link = new Doubler({ error: (e: unknown) => errors.push(e) } as unknown as Subscriber<number>, log);
      expect(() => subscribeWithin(holder, thrower, link)).to.not.throw();
      expect(errors).to.deep.equal([boom]);
      expect(log).to.deep.equal(['error', 'teardown']);
      expect(link.closed).to.equal(true);
    });
  });
});
