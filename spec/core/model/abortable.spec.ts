import { expect } from 'chai';
import { NEVER, Observable, Subject } from 'rxjs';
import { abortable, type AbortContext } from '../../../src/core/model/abortable.js';
import { countControllers } from '../../support/abortControllers.js';
import { testScheduler } from '../../support/marbles.js';

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('abortable', () => {
  it('is cold: work runs once per subscription, never before', () => {
    let runs = 0;
    const work$ = abortable(() => (runs++, [runs]));
    expect(runs).to.equal(0);
    const seen: number[] = [];
    work$.subscribe((v) => seen.push(v));
    work$.subscribe((v) => seen.push(v));
    expect(runs).to.equal(2);
    expect(seen).to.deep.equal([1, 2]);
  });

  it('accepts any ObservableInput: arrays, promises, observables', async () => {
    const seen: unknown[] = [];
    abortable(() => ['a', 'b']).subscribe((v) => seen.push(v));
    abortable(() => Promise.resolve('p')).subscribe((v) => seen.push(v));
    abortable(() => new Observable<string>((s) => (s.next('o'), s.complete()))).subscribe((v) => seen.push(v));
    await settle();
    expect(seen).to.deep.equal(['a', 'b', 'o', 'p']);
  });

  it('passes values, completion and errors through in virtual time', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(abortable(() => cold('-a-b|'))).toBe('-a-b|');
      const boom = new Error('boom');
      expectObservable(abortable(() => cold('--a#', undefined, boom))).toBe('--a#', undefined, boom);
    });
  });

  it('a synchronous throw in work becomes an error notification', () => {
    const boom = new Error('sync');
    let caught: unknown;
    abortable(() => {
      throw boom;
    }).subscribe({ error: (e: unknown) => (caught = e) });
    expect(caught).to.equal(boom);
  });

  it('unsubscribing before the work finished aborts the signal with an AbortError DOMException', () => {
    let signal: AbortSignal | undefined;
    let reasonSeen: unknown;
    const subscription = abortable(({ signal: s }) => {
      signal = s;
      s.addEventListener('abort', () => (reasonSeen = s.reason));
      return NEVER;
    }).subscribe();
    expect(signal?.aborted).to.equal(false);
    subscription.unsubscribe();
    expect(signal?.aborted).to.equal(true);
    expect(reasonSeen).to.be.instanceOf(DOMException);
    expect((reasonSeen as DOMException).name).to.equal('AbortError');
  });

  it('unsubscribes the inner work and aborts when the consumer leaves, in virtual time', () => {
    let signal: AbortSignal | undefined;
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const inner = cold('-a-b-c|');
      expectObservable(
        abortable((c) => ((signal = c.signal), inner)),
        '^--!',
      ).toBe('-a-');
      expectSubscriptions(inner.subscriptions).toBe('^--!');
    });
    expect(signal?.aborted).to.equal(true);
  });

  it('does not abort after completion or error', () => {
    const signals: AbortSignal[] = [];
    const ok = abortable((c) => (signals.push(c.signal), ['done'])).subscribe();
    const failing = new Subject<never>();
    const ko = abortable((c) => (signals.push(c.signal), failing)).subscribe({ error: () => undefined });
    failing.error(new Error('boom'));
    ok.unsubscribe();
    ko.unsubscribe();
    expect(signals.map((s) => s.aborted)).to.deep.equal([false, false]);
  });

  it('gives each subscription its own signal', () => {
    const signals: AbortSignal[] = [];
    const work$ = abortable((c: AbortContext) => (signals.push(c.signal), NEVER));
    const first = work$.subscribe();
    const second = work$.subscribe();
    first.unsubscribe();
    expect(signals.length).to.equal(2);
    expect(signals[0]?.aborted).to.equal(true);
    expect(signals[1]?.aborted).to.equal(false);
    second.unsubscribe();
    expect(signals[1]?.aborted).to.equal(true);
  });

  it('creates the AbortController only when work reads signal', () => {
    const quiet = countControllers(() => {
      abortable(() => NEVER)
        .subscribe()
        .unsubscribe();
      abortable(() => [1]).subscribe();
    });
    expect(quiet.constructed).to.equal(0);
    const reading = countControllers(() => {
      abortable((c) => (void c.signal, void c.signal, NEVER))
        .subscribe()
        .unsubscribe();
    });
    expect(reading.constructed).to.equal(1);
  });
});

describe('abortable: a signal read late (after an await)', () => {
  it('work that reads signal only after an await is aborted when the consumer left during the await', async () => {
    let release!: () => void;
    const auth = new Promise<void>((resolve) => (release = resolve));
    let late: AbortSignal | undefined;
    const subscription = abortable(async (ctx) => {
      await auth;
      late = ctx.signal;
      return 'fetched';
    }).subscribe();
    subscription.unsubscribe();
    release();
    await settle();
    expect(late?.aborted).to.equal(true);
    expect((late?.reason as DOMException).name).to.equal('AbortError');
  });

  it('a read after teardown is already aborted, however many reads', () => {
    let ctx: AbortContext | undefined;
    const subscription = abortable((c) => ((ctx = c), NEVER)).subscribe();
    subscription.unsubscribe();
    expect(ctx!.signal.aborted).to.equal(true);
    expect(ctx!.signal).to.equal(ctx!.signal);
  });

  it('a late read after the work completed or failed is not aborted (nothing to cancel)', () => {
    let completed: AbortContext | undefined;
    abortable((c) => ((completed = c), ['done']))
      .subscribe()
      .unsubscribe();
    expect(completed!.signal.aborted).to.equal(false);
    let failed: AbortContext | undefined;
    const failures = new Subject<never>();
    const sub = abortable((c) => ((failed = c), failures)).subscribe({ error: () => undefined });
    failures.error(new Error('boom'));
    sub.unsubscribe();
    expect(failed!.signal.aborted).to.equal(false);
  });

  it('an async generator that reads signal after its first await is aborted too', async () => {
    const reads: boolean[] = [];
    async function* tokens(ctx: AbortContext): AsyncGenerator<string> {
      await settle();
      reads.push(ctx.signal.aborted);
      yield 'a';
    }
    const subscription = abortable((ctx) => tokens(ctx)).subscribe();
    subscription.unsubscribe();
    await settle();
    await settle();
    expect(reads).to.deep.equal([true]);
  });

  it('stays lazy: no AbortController when work never reads signal, on completion or unsubscription', () => {
    const { constructed } = countControllers(() => {
      abortable(() => ['x']).subscribe();
      abortable(() => NEVER)
        .subscribe()
        .unsubscribe();
    });
    expect(constructed).to.equal(0);
  });
});
