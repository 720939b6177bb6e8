/**
 * bulkhead and Bulkhead: slots, the FIFO queue and its timeout, the typed refusal and how the
 * classifier takes it, cancellation freeing the slot and the queue place, hub events, the
 * registry, and the option checks. Marbles in TestScheduler.run; each call is its own source so
 * its subscriptions show when it was admitted.
 */
import { expect } from 'chai';
import { defer, of, repeat, Subject, throwError } from 'rxjs';
import { Bulkhead, BulkheadRegistry } from '../../src/core/bulkhead/bulkhead.js';
import { classifyError, isServiceFailure } from '../../src/core/errors/classify.js';
import { BulkheadRejectedError, HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { HealEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { bulkhead } from '../../src/operators/bulkhead.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { testScheduler } from '../support/marbles.js';

const full = (name = 'b', max = 1, queue = 0): BulkheadRejectedError => new BulkheadRejectedError(name, 'full', max, queue, 0);

describe('bulkhead', () => {
  it('runs maxConcurrent calls at once and refuses the next at once when there is no queue', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const b = new Bulkhead({ name: 'b', maxConcurrent: 2, scheduler: ts });
      const a1 = cold('---a|');
      const a2 = cold('---b|');
      const a3 = cold('---c|');
      const a4 = cold('-d|');
      expectObservable(a1.pipe(bulkhead(b))).toBe('---a|');
      expectObservable(a2.pipe(bulkhead(b)), '-^').toBe('----b|');
      expectObservable(a3.pipe(bulkhead(b)), '--^').toBe('--#', undefined, full('b', 2));
      expectObservable(a4.pipe(bulkhead(b)), '-----^').toBe('------d|'); // a1 was done at 4: a slot again
      expectSubscriptions(a1.subscriptions).toBe('^---!');
      expectSubscriptions(a2.subscriptions).toBe('-^---!');
      expectSubscriptions(a3.subscriptions).toBe([]);
      expectSubscriptions(a4.subscriptions).toBe('-----^-!');
    });
  });

  it('queues up to maxQueue calls, first in first out, each subscribed when a slot frees', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const b = new Bulkhead({ name: 'b', maxConcurrent: 1, maxQueue: 2, scheduler: ts });
      const a = cold('--a|');
      const c1 = cold('--b|');
      const c2 = cold('-c|');
      const c3 = cold('-d|');
      expectObservable(a.pipe(bulkhead(b))).toBe('--a|');
      expectObservable(c1.pipe(bulkhead(b)), '^').toBe('-----b|');
      expectObservable(c2.pipe(bulkhead(b)), '-^').toBe('-------c|');
      expectObservable(c3.pipe(bulkhead(b)), '-^').toBe('-#', undefined, full('b', 1, 2));
      expectSubscriptions(a.subscriptions).toBe('^--!');
      expectSubscriptions(c1.subscriptions).toBe('---^--!');
      expectSubscriptions(c2.subscriptions).toBe('------^-!');
      expectSubscriptions(c3.subscriptions).toBe([]);
    });
  });

  it('refuses a call that waited queueTimeoutMs, and the queue goes on', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const b = new Bulkhead({ name: 'b', maxConcurrent: 1, maxQueue: 1, queueTimeoutMs: 5, scheduler: ts });
      const slow = cold('10ms a|');
      const waiting = cold('-b|');
      const later = cold('-c|');
      expectObservable(slow.pipe(bulkhead(b))).toBe('10ms a|');
      expectObservable(waiting.pipe(bulkhead(b)), '-^').toBe('------#', undefined, new BulkheadRejectedError('b', 'queue_timeout', 1, 1, 5));
      expectObservable(later.pipe(bulkhead(b)), '7ms ^').toBe('11ms -c|'); // queued at 7, admitted at 11
      expectSubscriptions(waiting.subscriptions).toBe([]);
      expectSubscriptions(later.subscriptions).toBe('11ms ^-!');
    });
  });

  it('cancellation: a running call unsubscribed frees its slot for the first waiting call at once', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const b = new Bulkhead({ name: 'b', maxConcurrent: 1, maxQueue: 1, scheduler: ts });
      const long = cold('100ms a|');
      const next = cold('-b|');
      expectObservable(long.pipe(bulkhead(b)), '^ 4ms !').toBe('');
      expectObservable(next.pipe(bulkhead(b)), '-^').toBe('------b|');
      expectSubscriptions(long.subscriptions).toBe('^ 4ms !');
      expectSubscriptions(next.subscriptions).toBe('5ms ^-!');
    });
  });

  it('cancellation: a waiting call unsubscribed gives its queue place back and its timeout is cancelled', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const b = new Bulkhead({ name: 'b', maxConcurrent: 1, maxQueue: 1, queueTimeoutMs: 50, scheduler: ts });
      const long = cold('20ms a|');
      const gone = cold('-b|');
      const taken = cold('-c|');
      expectObservable(long.pipe(bulkhead(b))).toBe('20ms a|');
      expectObservable(gone.pipe(bulkhead(b)), '-^-!').toBe('');
      // the place `gone` held is free again at 3: `taken` waits in it, and gets the slot at 21
      expectObservable(taken.pipe(bulkhead(b)), '---^').toBe('21ms -c|');
      expectSubscriptions(gone.subscriptions).toBe([]);
      expectSubscriptions(taken.subscriptions).toBe('21ms ^-!');
    });
    expect(ts.actions.length).to.equal(0);
  });

  it('a freed slot drains a long queue of calls that each end at once, in a loop (no call stranded by a deep stack)', () => {
    // 2 500 waiting calls, each done as soon as it is subscribed (a cached answer): handing the
    // slot on from inside each call's end would nest one stack frame per call until the stack overflows
    const b = new Bulkhead({ name: 'b', maxConcurrent: 1, maxQueue: 5000 });
    const holder = new Subject<string>();
    holder.pipe(bulkhead(b)).subscribe();
    const n = 2500;
    const seen = { values: 0, completed: 0, failed: 0, errors: 0 };
    for (let i = 0; i < n; i++) {
      const call$ = i % 2 === 0 ? of(i) : throwError(() => new HttpError(500));
      call$
        .pipe(bulkhead(b))
        .subscribe({ next: () => seen.values++, complete: () => seen.completed++, error: () => (i % 2 === 0 ? seen.errors++ : seen.failed++) });
    }
    expect([b.active, b.queued]).to.deep.equal([1, n]);
    holder.complete();
    expect(seen).to.deep.equal({ values: n / 2, completed: n / 2, failed: n / 2, errors: 0 });
    expect([b.active, b.queued]).to.deep.equal([0, 0]);
  });

  it('a long queue drains even when each call re-enters as it ends (repeat): every round completes', () => {
    const b = new Bulkhead({ name: 'b', maxConcurrent: 2, maxQueue: 5000 });
    const holders = [new Subject<string>(), new Subject<string>()];
    for (const h of holders) h.pipe(bulkhead(b)).subscribe();
    const n = 2000;
    let values = 0;
    let completed = 0;
    for (let i = 0; i < n; i++)
      of(i)
        .pipe(bulkhead(b), repeat(3))
        .subscribe({ next: () => values++, complete: () => completed++ });
    for (const h of holders) h.complete();
    expect([values, completed, b.active, b.queued]).to.deep.equal([3 * n, n, 0, 0]);
  });

  it('a slot freed hands on to waiting calls in arrival order, all in the frame it frees', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const b = new Bulkhead({ name: 'b', maxConcurrent: 1, maxQueue: 3, scheduler: ts });
      const a = cold('--a|');
      const c1 = cold('(b|)');
      const c2 = cold('(c|)');
      const c3 = cold('-d|');
      expectObservable(a.pipe(bulkhead(b))).toBe('--a|');
      expectObservable(c1.pipe(bulkhead(b))).toBe('---(b|)');
      expectObservable(c2.pipe(bulkhead(b))).toBe('---(c|)');
      expectObservable(c3.pipe(bulkhead(b))).toBe('----d|');
      expectSubscriptions(a.subscriptions).toBe('^--!');
      expectSubscriptions(c1.subscriptions).toBe('---(^!)');
      expectSubscriptions(c2.subscriptions).toBe('---(^!)');
      expectSubscriptions(c3.subscriptions).toBe('---^-!');
    });
  });

  it('waiting calls that end as soon as they start run one after another, each ending before the next starts', () => {
    const b = new Bulkhead({ name: 'b', maxConcurrent: 1, maxQueue: 3 });
    const holder = new Subject<string>();
    holder.pipe(bulkhead(b)).subscribe();
    const log: string[] = [];
    for (const name of ['b', 'c', 'd']) {
      const call$ = defer(() => {
        log.push(`${name} subscribed`);
        return of(name);
      });
      call$.pipe(bulkhead(b)).subscribe({ complete: () => log.push(`${name} done`) });
    }
    holder.complete();
    expect(log).to.deep.equal(['b subscribed', 'b done', 'c subscribed', 'c done', 'd subscribed', 'd done']);
  });

  it('an error frees the slot before it goes on: a retry downstream finds it free', () => {
    const ts = testScheduler();
    ts.run(({ expectObservable }) => {
      const b = new Bulkhead({ name: 'b', maxConcurrent: 1, scheduler: ts });
      let n = 0;
      const flaky = defer(() => (n++ === 0 ? throwError(() => new HttpError(503)) : of('ok')));
      expectObservable(flaky.pipe(bulkhead(b), retryWithBackoff({ maxRetries: 1, initialBackoffMs: 0, jitter: 'none', scheduler: ts }))).toBe('(o|)', {
        o: 'ok',
      });
    });
  });

  it('a refusal is worth a fallback, never a retry, and breakers do not count it', () => {
    const refusal = full('model:gpt', 25, 0);
    expect(classifyError(refusal)).to.deep.equal({ retryable: false, fallback: true, category: 'bulkhead_full', strategy: 'fallback' });
    expect(isServiceFailure(classifyError(refusal))).to.equal(false);
    expect(refusal.message).to.equal("Bulkhead 'model:gpt' is full: 25 calls running and 0 waiting");
    const ts = testScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const b = new Bulkhead({ name: 'b', maxConcurrent: 1, scheduler: ts });
      const busy = cold('50ms a|');
      const refused = cold('-x|');
      expectObservable(busy.pipe(bulkhead(b))).toBe('50ms a|');
      // no retry: the refusal goes straight through the retry operator
      expectObservable(refused.pipe(bulkhead(b), retryWithBackoff({ maxRetries: 3, scheduler: ts })), '-^').toBe('-#', undefined, full());
      expectSubscriptions(refused.subscriptions).toBe([]);
    });
  });

  it('reports queued, admitted and rejected on its hub', () => {
    const ts = testScheduler();
    const hub = new HealHub();
    const events: [number, HealEvent][] = [];
    hub.events$.subscribe((e) => events.push([ts.now(), e]));
    ts.run(({ cold, expectObservable }) => {
      const b = new Bulkhead({ name: 'tool:search', maxConcurrent: 1, maxQueue: 1, queueTimeoutMs: 3, scheduler: ts, hub });
      expectObservable(cold('--a|').pipe(bulkhead(b))).toBe('--a|');
      expectObservable(cold('-----b|').pipe(bulkhead(b))).toBe('--------b|');
      expectObservable(cold('-c|').pipe(bulkhead(b))).toBe('#', undefined, full('tool:search', 1, 1));
      expectObservable(cold('-d|').pipe(bulkhead(b)), '4ms ^').toBe('7ms #', undefined, new BulkheadRejectedError('tool:search', 'queue_timeout', 1, 1, 3));
    });
    expect(events).to.deep.equal([
      [0, { type: 'bulkhead', bulkhead: 'tool:search', kind: 'queued', active: 1, queued: 1 }],
      [0, { type: 'bulkhead', bulkhead: 'tool:search', kind: 'rejected', active: 1, queued: 1, reason: 'full' }],
      [3, { type: 'bulkhead', bulkhead: 'tool:search', kind: 'admitted', active: 1, queued: 0, waitMs: 3 }],
      [4, { type: 'bulkhead', bulkhead: 'tool:search', kind: 'queued', active: 1, queued: 1 }],
      [7, { type: 'bulkhead', bulkhead: 'tool:search', kind: 'rejected', active: 1, queued: 0, reason: 'queue_timeout', waitMs: 3 }],
    ]);
  });

  it('options create one bulkhead that every subscription of the result shares', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const call$ = cold('--a|').pipe(bulkhead({ name: 'b', maxConcurrent: 1, scheduler: ts }));
      expectObservable(call$).toBe('--a|');
      expectObservable(call$, '-^').toBe('-#', undefined, full());
    });
  });

  it('rejects bad options, naming them', () => {
    expect(() => new Bulkhead({ maxConcurrent: 0 })).to.throw(InvalidOptionError, /maxConcurrent/);
    expect(() => new Bulkhead({ maxQueue: -1 })).to.throw(InvalidOptionError, /maxQueue/);
    expect(() => new Bulkhead({ maxQueue: 1.5 })).to.throw(InvalidOptionError, /maxQueue/);
    expect(() => new Bulkhead({ queueTimeoutMs: 0 })).to.throw(InvalidOptionError, /queueTimeoutMs/);
    expect(() => new Bulkhead({ name: '' })).to.throw(InvalidOptionError, /name/);
    expect(() => new Bulkhead({ maxConcurent: 3 } as never)).to.throw(InvalidOptionError, /maxConcurent/);
    expect(() => bulkhead({ hub: {} as never })).to.throw(InvalidOptionError, /hub/);
    const b = new Bulkhead();
    expect([b.name, b.maxConcurrent, b.maxQueue, b.queueTimeoutMs]).to.deep.equal(['bulkhead', 25, 0, Infinity]);
  });
});

describe('BulkheadRegistry', () => {
  it('keeps one bulkhead per name, made with the defaults and overrides on first use', () => {
    const registry = new BulkheadRegistry({ maxConcurrent: 4, maxQueue: 8 });
    const gpt = registry.get('model:gpt', { maxConcurrent: 2 });
    expect(registry.get('model:gpt')).to.equal(gpt);
    expect([gpt.name, gpt.maxConcurrent, gpt.maxQueue]).to.deep.equal(['model:gpt', 2, 8]);
    expect(registry.get('tool:search').maxConcurrent).to.equal(4);
    expect(registry.names()).to.deep.equal(['model:gpt', 'tool:search']);
    expect(registry.has('tool:x')).to.equal(false);
    expect(() => new BulkheadRegistry({ name: 'x' } as never)).to.throw(InvalidOptionError, /name/);
    expect(() => new BulkheadRegistry({ maxQueue: -2 })).to.throw(InvalidOptionError, /maxQueue/);
  });
});
