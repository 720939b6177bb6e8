/**
 * Observed latency: {@link LatencyTracker} keeps, for one model or tool, the time to the first
 * item of each call and the gap between items, on the scheduler's clock, in HdrHistogram
 * histograms (`hdr-histogram-js`: 2 significant digits, growing as values need), over a sliding
 * pair of windows; {@link LatencyDeadline} is a deadline derived from a quantile of them
 * (`p99 × 2`, with a floor, a ceiling and a default until enough samples). The registry of
 * trackers, one per name, is in registry.ts.
 *
 * @module
 */
import { asyncScheduler, type MonoTypeOperatorFunction, type Observer, type SchedulerLike, type Subscriber } from 'rxjs';
import hdr from 'hdr-histogram-js/dist/Int32Histogram.js';
import { InvalidOptionError } from '../errors/errors.js';
import { check, Hub, NonEmptyString, PositiveInteger, Scheduler, validateOptions } from '../errors/options.js';
import type { HealHub } from '../hub/hub.js';
import { operate, subscribeWithin } from '../rx/operate.js';
import type { DeadlineSource } from './deadline.js';

export { isDeadlineSource, type DeadlineSource } from './deadline.js';

/** The histogram class (the package is CommonJS: its default export is `exports.default`, however it is loaded). */
type HistogramClass = typeof hdr extends { default: infer C } ? C : typeof hdr;
const Histogram: HistogramClass = ((hdr as unknown as { default?: HistogramClass }).default ?? hdr) as HistogramClass;
type Histogram = InstanceType<HistogramClass>;

/**
 * What a tracker measures: `'first'`, the time from subscription to a call's first item (time
 * to first token, for a model turn; to the result, for a tool); `'gap'`, the time between two
 * items of a call.
 */
export type LatencyKind = 'first' | 'gap';

/**
 * Options of a {@link LatencyTracker} (and the defaults of a `LatencyRegistry`).
 *
 * @example
 * ```ts
 * const options: LatencyTrackerOptions = { windowMs: 60_000, scheduler: testScheduler };
 * ```
 */
export interface LatencyTrackerOptions {
  /** Where time is read. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * How long one window lasts, in ms: quantiles are read over the window running now and the one
   * before it (so what a provider did an hour ago is forgotten). `Infinity`: never forget.
   * Defaults to 300 000 (5 minutes).
   */
  readonly windowMs?: number;
  /** Significant decimal digits the histograms keep (1–5): 2 means within 1 %. Defaults to 2. */
  readonly significantDigits?: number;
  /** Where the quantiles are reported, as `latency` events, every `reportEvery` samples of a kind. None by default. */
  readonly hub?: HealHub;
  /** Samples of one kind between two `latency` events on `hub` (a positive integer). Defaults to 100. */
  readonly reportEvery?: number;
}

/**
 * What a deadline derived from observed latency is made of: `quantile × factor`, kept between
 * `floorMs` and `ceilingMs`, and `defaultMs` while fewer than `minSamples` samples were seen.
 *
 * @example
 * ```ts
 * const spec: DerivedDeadlineOptions = { of: 'first', quantile: 0.99, factor: 2, floorMs: 500, ceilingMs: 30_000, defaultMs: 10_000 };
 * ```
 */
export interface DerivedDeadlineOptions {
  /** Which latency: time to first item (`'first'`, the default) or the gap between items (`'gap'`). */
  readonly of?: LatencyKind;
  /** The quantile, in (0, 1): `0.99` for p99. Required. */
  readonly quantile: number;
  /** What the quantile is multiplied by (> 0). Defaults to 1. */
  readonly factor?: number;
  /** The least the deadline is, in ms (>= 0). Defaults to 0. */
  readonly floorMs?: number;
  /** The most the deadline is, in ms (>= floorMs, may be `Infinity`). Defaults to `Infinity`. */
  readonly ceilingMs?: number;
  /** The deadline while too few samples were seen, in ms (> 0, may be `Infinity`). Required. */
  readonly defaultMs: number;
  /** Samples needed before the quantile is trusted (a positive integer). Defaults to 20. */
  readonly minSamples?: number;
}

/**
 * The quantiles of one kind of latency, in ms (as the histogram keeps them: within its
 * precision), over the tracker's windows; `count` samples (every quantile is `undefined` at 0).
 *
 * @example
 * ```ts
 * const first: LatencyQuantiles = tracker.snapshot().first; // { count: 120, p50: 410, p90: 880, … }
 * ```
 */
export interface LatencyQuantiles {
  /** Samples in the windows. */
  readonly count: number;
  /** The median. */
  readonly p50: number | undefined;
  /** The 90th percentile. */
  readonly p90: number | undefined;
  /** The 95th percentile. */
  readonly p95: number | undefined;
  /** The 99th percentile. */
  readonly p99: number | undefined;
  /** The 99.9th percentile. */
  readonly p999: number | undefined;
  /** The largest sample. */
  readonly max: number | undefined;
}

/**
 * A tracker's quantiles, both kinds.
 *
 * @example
 * ```ts
 * const { name, first, gap }: LatencySnapshot = tracker.snapshot();
 * ```
 */
export interface LatencySnapshot {
  /** The tracker's name (`model:gpt`). */
  readonly name: string;
  /** Time to the first item. */
  readonly first: LatencyQuantiles;
  /** Gaps between items. */
  readonly gap: LatencyQuantiles;
}

const Window = check('a number > 0 (ms) or Infinity', (u): u is number => typeof u === 'number' && u > 0);
const Digits = check('an integer from 1 to 5', (u): u is number => Number.isInteger(u) && (u as number) >= 1 && (u as number) <= 5);
export const latencyTrackerOptionProps = { scheduler: Scheduler, windowMs: Window, significantDigits: Digits, hub: Hub, reportEvery: PositiveInteger };

const Quantile = check('a number in (0, 1)', (u): u is number => typeof u === 'number' && u > 0 && u < 1);
const Factor = check('a finite number > 0', (u): u is number => typeof u === 'number' && Number.isFinite(u) && u > 0);
const Floor = check('a finite number >= 0 (ms)', (u): u is number => typeof u === 'number' && Number.isFinite(u) && u >= 0);
const Ms = check('a number > 0 (ms) or Infinity', (u): u is number => typeof u === 'number' && u > 0);
const deadlineProps = {
  of: check("'first' or 'gap'", (u): u is LatencyKind => u === 'first' || u === 'gap'),
  quantile: Quantile,
  factor: Factor,
  floorMs: Floor,
  ceilingMs: Ms,
  defaultMs: Ms,
  minSamples: PositiveInteger,
};

/** One kind's two windows: what the one running now holds, and the one before it. */
class Windows {
  private current: Histogram;
  private previous: Histogram;
  /** A histogram the two are added into to read quantiles (made at the first read). */
  private merged: Histogram | undefined = undefined;
  private startedAt: number;

  constructor(
    private readonly digits: number,
    private readonly windowMs: number,
    now: number,
  ) {
    this.current = make(digits);
    this.previous = make(digits);
    this.startedAt = now;
  }

  /** Moves the windows on to `now`: one window past, the current one becomes the previous; two or more, both are empty. */
  private roll(now: number): void {
    if (this.windowMs === Infinity || now - this.startedAt < this.windowMs) return;
    const passed = Math.floor((now - this.startedAt) / this.windowMs);
    const old = this.previous;
    old.reset();
    if (passed === 1) {
      this.previous = this.current;
      this.current = old;
    } else this.current.reset();
    this.startedAt += passed * this.windowMs;
  }

  record(ms: number, now: number): void {
    this.roll(now);
    // the histograms keep integers: a virtual clock's ms are integers, a real one's are rounded
    this.current.recordValue(Math.max(0, Math.round(ms)));
  }

  /** Both windows as one histogram (the current one alone when the previous is empty). */
  read(now: number): Histogram {
    this.roll(now);
    if (this.previous.totalCount === 0) return this.current;
    const merged = (this.merged ??= make(this.digits));
    merged.reset();
    merged.add(this.previous);
    merged.add(this.current);
    return merged;
  }
}

function make(digits: number): Histogram {
  const histogram = new Histogram(1, 1024, digits);
  histogram.autoResize = true;
  return histogram;
}

/**
 * Observed latency of one model or tool, on the scheduler's clock: the time to a call's first
 * item and the gaps between items, kept in HdrHistogram histograms (`hdr-histogram-js`) over the
 * window running now and the one before it (`windowMs`). Feed it with {@link LatencyTracker.track}
 * (an operator on each call) or {@link LatencyTracker.record}; read it with `quantile`, `count`,
 * `snapshot`, or through a {@link LatencyDeadline} (`deadline()`), which `hedge` and
 * `degradeAfter` take for a delay. With a `hub`, its quantiles are reported there as `latency`
 * events every `reportEvery` samples of a kind (`instrumentLatency` in rxheal/otel exports them
 * as gauges).
 *
 * A call unsubscribed before its first item gives no sample (its latency is not known, only that
 * it was longer than it ran): a tracker that only sees cancelled slow calls underestimates, so
 * track the calls that ran to their end, or every attempt of a hedge (the losers are cut short
 * once another delivered, which is after the winner's time: their samples are not taken).
 *
 * @example
 * ```ts
 * const gpt = new LatencyTracker('model:gpt', { windowMs: 60_000 });
 * streamModel(model, request).pipe(gpt.track()).subscribe(render);
 * gpt.quantile('first', 0.95); // e.g. 850 (ms), undefined before any sample
 * const deadline = gpt.deadline({ quantile: 0.99, factor: 2, floorMs: 1000, ceilingMs: 30_000, defaultMs: 10_000 });
 * deadline.deadlineMs(); // 10 000 until 20 samples, then clamp(p99 × 2, 1000, 30 000)
 * ```
 * @throws {InvalidOptionError} at construction, for an empty name or an invalid option.
 */
export class LatencyTracker {
  /** What is tracked (`model:<id>`, `tool:<name>`). */
  readonly name: string;
  /** Where time is read. */
  readonly scheduler: SchedulerLike;
  private readonly first: Windows;
  private readonly gap: Windows;
  private readonly hub: HealHub | undefined;
  private readonly reportEvery: number;
  /** Samples recorded of each kind, for the hub's reports. */
  private recorded = { first: 0, gap: 0 };

  constructor(name: string, options?: LatencyTrackerOptions) {
    if (!NonEmptyString.is(name)) throw new InvalidOptionError('LatencyTracker', 'name', name, NonEmptyString.name);
    const o = validateOptions('LatencyTracker', latencyTrackerOptionProps, options);
    this.name = name;
    this.scheduler = o.scheduler ?? asyncScheduler;
    const windowMs = o.windowMs ?? 300_000;
    const digits = o.significantDigits ?? 2;
    const now = this.scheduler.now();
    this.first = new Windows(digits, windowMs, now);
    this.gap = new Windows(digits, windowMs, now);
    this.hub = o.hub as HealHub | undefined;
    this.reportEvery = o.reportEvery ?? 100;
  }

  /** Records one sample of `kind`, `ms` long (a negative or non-finite value is ignored). */
  record(kind: LatencyKind, ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    const windows = this.windows(kind);
    windows.record(ms, this.scheduler.now());
    if (this.hub && ++this.recorded[kind] % this.reportEvery === 0) {
      const h = windows.read(this.scheduler.now());
      this.hub.report({
        type: 'latency',
        target: this.name,
        kind,
        count: h.totalCount,
        p50: h.getValueAtPercentile(50),
        p95: h.getValueAtPercentile(95),
        p99: h.getValueAtPercentile(99),
      });
    }
  }

  /** Samples of `kind` in the tracker's windows. */
  count(kind: LatencyKind): number {
    return this.windows(kind).read(this.scheduler.now()).totalCount;
  }

  /**
   * The `q` quantile (in [0, 1]) of `kind`, in ms, over the tracker's windows; `undefined` with no
   * sample. Within the histograms' precision (`significantDigits`).
   */
  quantile(kind: LatencyKind, q: number): number | undefined {
    if (typeof q !== 'number' || !(q >= 0 && q <= 1)) throw new InvalidOptionError('LatencyTracker.quantile', 'q', q, 'a number in [0, 1]');
    const histogram = this.windows(kind).read(this.scheduler.now());
    return histogram.totalCount === 0 ? undefined : histogram.getValueAtPercentile(q * 100);
  }

  /** Both kinds' counts and main quantiles, now. */
  snapshot(): LatencySnapshot {
    return { name: this.name, first: this.quantiles('first'), gap: this.quantiles('gap') };
  }

  /**
   * A deadline derived from this tracker: `clamp(quantile × factor, floorMs, ceilingMs)` once
   * `minSamples` samples of `of` are in the windows, `defaultMs` before. Read each time a wait is
   * armed, so it follows the provider.
   *
   * @throws {InvalidOptionError} at once, for an invalid option.
   */
  deadline(options: DerivedDeadlineOptions): LatencyDeadline {
    return new LatencyDeadline(this, options);
  }

  /**
   * An operator that measures each subscription: the time from subscribing to the first item
   * (`'first'`), then the time between items (`'gap'`). Values, errors and completion pass
   * through unchanged; an error after items still leaves their samples.
   */
  track<T>(): MonoTypeOperatorFunction<T> {
    return operate<T>((source, subscriber) => void subscribeWithin(subscriber, source, new TrackingObserver(subscriber, this)));
  }

  private windows(kind: LatencyKind): Windows {
    if (kind !== 'first' && kind !== 'gap') throw new InvalidOptionError('LatencyTracker', 'kind', kind, "'first' or 'gap'");
    return kind === 'gap' ? this.gap : this.first;
  }

  private quantiles(kind: LatencyKind): LatencyQuantiles {
    const h = this.windows(kind).read(this.scheduler.now());
    const count = h.totalCount;
    const at = (p: number): number | undefined => (count === 0 ? undefined : h.getValueAtPercentile(p));
    return { count, p50: at(50), p90: at(90), p95: at(95), p99: at(99), p999: at(99.9), max: count === 0 ? undefined : h.maxValue };
  }
}

/** One subscription measured by {@link LatencyTracker.track}. */
class TrackingObserver<T> implements Observer<T> {
  private last: number;
  private seen = false;

  constructor(
    private readonly subscriber: Subscriber<T>,
    private readonly tracker: LatencyTracker,
  ) {
    this.last = tracker.scheduler.now();
  }

  next(value: T): void {
    const now = this.tracker.scheduler.now();
    this.tracker.record(this.seen ? 'gap' : 'first', now - this.last);
    this.seen = true;
    this.last = now;
    this.subscriber.next(value);
  }

  error(error: unknown): void {
    this.subscriber.error(error);
  }

  complete(): void {
    this.subscriber.complete();
  }
}

/**
 * A deadline derived from a {@link LatencyTracker}: see {@link LatencyTracker.deadline}. A
 * {@link DeadlineSource}: `hedge({ after })` and `degradeAfter` read it each time they arm a wait.
 *
 * @example
 * ```ts
 * const firstToken: LatencyDeadline = tracker.deadline({ quantile: 0.95, defaultMs: 2000, floorMs: 200 });
 * streamModel(model, request).pipe(degradeAfter({ firstMs: firstToken }, fallbackTurn));
 * ```
 * @throws {InvalidOptionError} at construction, for an invalid option.
 */
export class LatencyDeadline implements DeadlineSource {
  /** Which latency is read (see {@link DerivedDeadlineOptions}, as every field here). */
  readonly of: LatencyKind;
  /** The quantile read. */
  readonly quantile: number;
  /** What it is multiplied by. */
  readonly factor: number;
  /** The least deadline. */
  readonly floorMs: number;
  /** The most deadline. */
  readonly ceilingMs: number;
  /** The deadline before `minSamples` samples. */
  readonly defaultMs: number;
  /** Samples needed before the quantile is trusted. */
  readonly minSamples: number;

  constructor(
    /** The tracker read. */
    readonly tracker: LatencyTracker,
    options: DerivedDeadlineOptions,
  ) {
    if (!(tracker instanceof LatencyTracker)) throw new InvalidOptionError('LatencyDeadline', 'tracker', tracker, 'a LatencyTracker');
    const o = validateOptions('LatencyDeadline', deadlineProps, options);
    if (o.quantile === undefined) throw new InvalidOptionError('LatencyDeadline', 'quantile', undefined, Quantile.name);
    if (o.defaultMs === undefined) throw new InvalidOptionError('LatencyDeadline', 'defaultMs', undefined, Ms.name);
    this.of = o.of ?? 'first';
    this.quantile = o.quantile;
    this.factor = o.factor ?? 1;
    this.floorMs = o.floorMs ?? 0;
    this.ceilingMs = o.ceilingMs ?? Infinity;
    if (this.ceilingMs < this.floorMs) throw new InvalidOptionError('LatencyDeadline', 'ceilingMs', this.ceilingMs, `>= floorMs (${this.floorMs})`);
    this.defaultMs = o.defaultMs;
    this.minSamples = o.minSamples ?? 20;
  }

  /** The deadline now, in ms; never below 1 ms (a quantile of 0 ms, with a floor of 0, is 1 ms). */
  deadlineMs(): number {
    if (this.tracker.count(this.of) < this.minSamples) return this.defaultMs;
    const q = this.tracker.quantile(this.of, this.quantile)!;
    return Math.max(1, Math.min(this.ceilingMs, Math.max(this.floorMs, q * this.factor)));
  }
}
