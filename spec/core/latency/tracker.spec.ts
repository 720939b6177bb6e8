/**
 * LatencyTracker, LatencyDeadline and LatencyRegistry: what the histograms give back for known
 * samples (within HdrHistogram's 2 significant digits), the two windows, `track()` on the
 * virtual clock, derived deadlines (default, floor, ceiling, factor), and the option checks.
 */
import { expect } from 'chai';
import { VirtualTimeScheduler } from 'rxjs';
import { InvalidOptionError } from '../../../src/core/errors/errors.js';
import { LatencyRegistry } from '../../../src/core/latency/registry.js';
import { isDeadlineSource, LatencyDeadline, LatencyTracker } from '../../../src/core/latency/tracker.js';
import type { HealEvent } from '../../../src/core/events/events.js';
import { HealHub } from '../../../src/core/hub/hub.js';
import { testScheduler } from '../../support/marbles.js';

/**
 * Within the histogram's precision (2 significant digits: 1 %); a quantile is its bucket's highest
 * equivalent value, HdrHistogram's rule.
 */
function near(actual: number | undefined, expected: number): void {
  expect(actual, `${actual} ≈ ${expected}`).to.be.a('number');
  expect(Math.abs(actual! - expected)).to.be.at.most(Math.max(1, expected * 0.01));
}

describe('LatencyTracker', () => {
  it('gives the quantiles of the samples recorded, within 1 %', () => {
    const tracker = new LatencyTracker('model:gpt', { scheduler: new VirtualTimeScheduler() });
    for (let ms = 1; ms <= 1000; ms++) tracker.record('first', ms);
    expect(tracker.count('first')).to.equal(1000);
    near(tracker.quantile('first', 0.5), 500);
    near(tracker.quantile('first', 0.99), 990);
    near(tracker.quantile('first', 1), 1000);
    expect(tracker.count('gap')).to.equal(0);
    expect(tracker.quantile('gap', 0.5)).to.equal(undefined);
  });

  it('keeps values far above its first range (the histograms grow) and ignores negative or non-finite ones', () => {
    const tracker = new LatencyTracker('tool:slow', { scheduler: new VirtualTimeScheduler() });
    tracker.record('first', 3_600_000);
    tracker.record('first', -1);
    tracker.record('first', NaN);
    tracker.record('first', Infinity);
    expect(tracker.count('first')).to.equal(1);
    near(tracker.quantile('first', 0.5), 3_600_000);
  });

  it('forgets what is older than the previous window', () => {
    const ts = new VirtualTimeScheduler();
    const tracker = new LatencyTracker('model:gpt', { scheduler: ts, windowMs: 1000 });
    const at = (t: number, f: () => void): void => void ts.schedule(f, t);
    at(0, () => tracker.record('first', 100));
    at(1500, () => tracker.record('first', 200)); // second window: the first is the previous one
    let inSecond = 0;
    let inThird = 0;
    let inFifth = 0;
    at(1999, () => (inSecond = tracker.count('first')));
    at(2500, () => (inThird = tracker.count('first'))); // third window: only the second's sample
    at(4100, () => (inFifth = tracker.count('first'))); // two windows later: nothing
    ts.flush();
    expect([inSecond, inThird, inFifth]).to.deep.equal([2, 1, 0]);
  });

  it('track(): time to the first item and the gaps between items, on the scheduler clock; values pass unchanged', () => {
    const ts = testScheduler();
    const tracker = new LatencyTracker('model:gpt', { scheduler: ts });
    ts.run(({ cold, expectObservable }) => {
      expectObservable(cold('100ms a 49ms b 9ms c|').pipe(tracker.track())).toBe('100ms a 49ms b 9ms c|');
      expectObservable(cold('300ms a|').pipe(tracker.track())).toBe('300ms a|');
      expectObservable(cold('50ms #').pipe(tracker.track())).toBe('50ms #'); // no item: no sample
    });
    expect(tracker.count('first')).to.equal(2);
    expect(tracker.quantile('first', 0)).to.equal(100);
    near(tracker.quantile('first', 1), 300); // a bucket's highest equivalent value: 301
    // b 50 ms after a, c 10 ms after b
    expect([tracker.count('gap'), tracker.quantile('gap', 0), tracker.quantile('gap', 1)]).to.deep.equal([2, 10, 50]);
  });

  it('track(): a subscription cut before its first item leaves no sample', () => {
    const ts = testScheduler();
    const tracker = new LatencyTracker('model:gpt', { scheduler: ts });
    ts.run(({ cold, expectObservable }) => {
      expectObservable(cold('500ms a|').pipe(tracker.track()), '^ 99ms !').toBe('');
    });
    expect(tracker.count('first')).to.equal(0);
  });

  it('snapshot(): counts, p50 … p99.9 and max of both kinds', () => {
    const tracker = new LatencyTracker('model:gpt', { scheduler: new VirtualTimeScheduler() });
    for (let ms = 1; ms <= 100; ms++) tracker.record('gap', ms);
    const { name, first, gap } = tracker.snapshot();
    expect(name).to.equal('model:gpt');
    expect(first).to.deep.equal({ count: 0, p50: undefined, p90: undefined, p95: undefined, p99: undefined, p999: undefined, max: undefined });
    expect([gap.count, gap.p50, gap.p90, gap.p95, gap.p99, gap.p999, gap.max]).to.deep.equal([100, 50, 90, 95, 99, 100, 100]);
  });

  it('with a hub: its quantiles as a latency event every reportEvery samples of a kind', () => {
    const hub = new HealHub();
    const events: HealEvent[] = [];
    hub.events$.subscribe((e) => events.push(e));
    const tracker = new LatencyTracker('model:gpt', { scheduler: new VirtualTimeScheduler(), hub, reportEvery: 50 });
    for (let ms = 1; ms <= 120; ms++) tracker.record('first', ms);
    for (let i = 0; i < 49; i++) tracker.record('gap', 5);
    expect(events).to.deep.equal([
      { type: 'latency', target: 'model:gpt', kind: 'first', count: 50, p50: 25, p95: 48, p99: 50 },
      { type: 'latency', target: 'model:gpt', kind: 'first', count: 100, p50: 50, p95: 95, p99: 99 },
    ]);
  });

  it('rejects a bad name or option, naming it', () => {
    expect(() => new LatencyTracker('')).to.throw(InvalidOptionError, /name/);
    expect(() => new LatencyTracker('x', { windowMs: 0 })).to.throw(InvalidOptionError, /windowMs/);
    expect(() => new LatencyTracker('x', { significantDigits: 6 })).to.throw(InvalidOptionError, /significantDigits/);
    expect(() => new LatencyTracker('x', { scheduler: {} as never })).to.throw(InvalidOptionError, /scheduler/);
    expect(() => new LatencyTracker('x', { windwMs: 5 } as never)).to.throw(InvalidOptionError, /windwMs/);
    expect(() => new LatencyTracker('x', { reportEvery: 0 })).to.throw(InvalidOptionError, /reportEvery/);
    expect(() => new LatencyTracker('x', { hub: {} as never })).to.throw(InvalidOptionError, /hub/);
    expect(() => new LatencyTracker('x').quantile('first', 1.5)).to.throw(InvalidOptionError, /q/);
    expect(() => new LatencyTracker('x').count('ttft' as never)).to.throw(InvalidOptionError, /kind/);
  });
});

describe('LatencyDeadline', () => {
  const filled = (n: number, ms: (i: number) => number): LatencyTracker => {
    const tracker = new LatencyTracker('model:gpt', { scheduler: new VirtualTimeScheduler() });
    for (let i = 0; i < n; i++) tracker.record('first', ms(i));
    return tracker;
  };

  it('is defaultMs until minSamples samples, then quantile × factor', () => {
    const tracker = filled(19, () => 400);
    const deadline = tracker.deadline({ quantile: 0.99, factor: 2, defaultMs: 10_000 });
    expect(isDeadlineSource(deadline)).to.equal(true);
    expect(deadline.deadlineMs()).to.equal(10_000);
    tracker.record('first', 400);
    near(deadline.deadlineMs(), 800); // p99 is 400's bucket's highest value (401), × 2
  });

  it('is kept between floorMs and ceilingMs', () => {
    expect(
      filled(20, () => 10)
        .deadline({ quantile: 0.99, factor: 2, floorMs: 500, defaultMs: 1000 })
        .deadlineMs(),
    ).to.equal(500);
    expect(
      filled(20, () => 20_000)
        .deadline({ quantile: 0.99, factor: 2, ceilingMs: 30_000, defaultMs: 1000 })
        .deadlineMs(),
    ).to.equal(30_000);
    expect(
      filled(20, () => 0)
        .deadline({ quantile: 0.5, defaultMs: 1000 })
        .deadlineMs(),
    ).to.equal(1); // never 0
  });

  it('reads the gaps with of: gap, and follows new samples', () => {
    const tracker = filled(5, () => 100);
    for (let i = 0; i < 5; i++) tracker.record('gap', 40);
    const deadline = new LatencyDeadline(tracker, { of: 'gap', quantile: 0.5, factor: 3, defaultMs: 5000, minSamples: 5 });
    expect(deadline.deadlineMs()).to.equal(120);
    for (let i = 0; i < 20; i++) tracker.record('gap', 80);
    near(deadline.deadlineMs(), 240);
  });

  it('rejects a bad option, naming it', () => {
    const tracker = filled(0, () => 0);
    expect(() => tracker.deadline({ defaultMs: 100 } as never)).to.throw(InvalidOptionError, /quantile/);
    expect(() => tracker.deadline({ quantile: 1, defaultMs: 100 })).to.throw(InvalidOptionError, /quantile/);
    expect(() => tracker.deadline({ quantile: 0.9 } as never)).to.throw(InvalidOptionError, /defaultMs/);
    expect(() => tracker.deadline({ quantile: 0.9, defaultMs: 0 })).to.throw(InvalidOptionError, /defaultMs/);
    expect(() => tracker.deadline({ quantile: 0.9, defaultMs: 10, factor: 0 })).to.throw(InvalidOptionError, /factor/);
    expect(() => tracker.deadline({ quantile: 0.9, defaultMs: 10, floorMs: 100, ceilingMs: 50 })).to.throw(InvalidOptionError, /ceilingMs/);
    expect(() => tracker.deadline({ quantile: 0.9, defaultMs: 10, minSamples: 0 })).to.throw(InvalidOptionError, /minSamples/);
    expect(() => tracker.deadline({ quantile: 0.9, defaultMs: 10, of: 'ttft' as never })).to.throw(InvalidOptionError, /of/);
    expect(() => new LatencyDeadline({} as never, { quantile: 0.9, defaultMs: 10 })).to.throw(InvalidOptionError, /tracker/);
  });
});

describe('LatencyRegistry', () => {
  it('makes one tracker per name with its defaults and snapshots them all', () => {
    const scheduler = new VirtualTimeScheduler();
    const registry = new LatencyRegistry({ scheduler, windowMs: 1000 });
    const gpt = registry.get('model:gpt');
    expect(registry.get('model:gpt')).to.equal(gpt);
    expect(gpt.scheduler).to.equal(scheduler);
    gpt.record('first', 42);
    registry.get('tool:search', { significantDigits: 3 });
    expect(registry.names()).to.deep.equal(['model:gpt', 'tool:search']);
    expect(registry.has('tool:search')).to.equal(true);
    expect(registry.snapshot().map((s) => [s.name, s.first.count, s.first.p50])).to.deep.equal([
      ['model:gpt', 1, 42],
      ['tool:search', 0, undefined],
    ]);
    expect(() => new LatencyRegistry({ windowMs: -1 })).to.throw(InvalidOptionError, /windowMs/);
    expect(() => registry.get('')).to.throw(InvalidOptionError, /name/);
  });
});
