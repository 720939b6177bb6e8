import { expect } from 'chai';
import { NEVER, Observable, Subject } from 'rxjs';
import { abortable, type AbortContext } from '../../src/core/abortable.js';
import { testScheduler } from '../support/marbles.js';

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Temporarily counts AbortController constructions. */
function countControllers<T>(body: () => T): { result: T; constructed: number } {
  const Original = globalThis.AbortController;
  let constructed = 0;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      constructed++;
    }
  };
  try {
    return { result: body(), constructed };
  } finally {
    globalThis.AbortController = Original;
  }
}

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
      expectObservable(abortable((c) => ((signal = c.signal), inner)), '^--!').toBe('-a-');
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
      abortable(() => NEVER).subscribe().unsubscribe();
      abortable(() => [1]).subscribe();
    });
    expect(quiet.constructed).to.equal(0);
    const reading = countControllers(() => {
      abortable((c) => (void c.signal, void c.signal, NEVER)).subscribe().unsubscribe();
    });
    expect(reading.constructed).to.equal(1);
  });
});
