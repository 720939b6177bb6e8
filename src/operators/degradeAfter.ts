import { asyncScheduler, isObservable, type Observable, type OperatorFunction, type SchedulerLike, type Subscriber, type Subscription } from 'rxjs';
import { CapabilityRegistry } from '../core/capabilities/CapabilityRegistry.js';
import { classifyError } from '../core/errors/classify.js';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { HealHub } from '../core/hub/hub.js';
import { check, Func, Hub, NonEmptyString, Scheduler, validateOptions } from '../core/errors/options.js';
import { guard, Thrown } from '../core/rx/guard.js';
import { Link, operate, subscribeWithin } from '../core/rx/operate.js';
import { afterWith } from '../core/rx/wait.js';
import { isDeadlineSource, type DeadlineSource } from '../core/latency/deadline.js';

/**
 * The deadlines of {@link degradeAfter}. Each is in ms; `Infinity` means "no deadline". Each may
 * be a {@link DeadlineSource} instead — `tracker.deadline({ quantile: 0.99, factor: 2, … })`, a
 * deadline derived from observed latency — read once per subscription, when it starts.
 *
 * @example
 * ```ts
 * const streaming: DegradeDeadline = { firstMs: 15_000, idleMs: 5_000 }; // first token, then gaps
 * const learned: DegradeDeadline = { firstMs: gpt.deadline({ quantile: 0.99, factor: 2, floorMs: 1000, ceilingMs: 30_000, defaultMs: 15_000 }) };
 * ```
 */
export interface DegradeDeadline {
  /** Longest wait from subscription to the first item. Defaults to `idleMs`. */
  readonly firstMs?: number | DeadlineSource;
  /**
   * Longest gap between two items, measured from the previous item: catches a stream that stalls
   * after its headers or first chunks. No idle deadline by default.
   */
  readonly idleMs?: number | DeadlineSource;
}

/**
 * Why {@link degradeAfter} degraded.
 *
 * @example
 * ```ts
 * degradeAfter({ idleMs: 500 }, (r: DegradeReason) => (r.kind === 'idle' ? '[stalled]' : '[unavailable]'));
 * ```
 */
export interface DegradeReason {
  /** `'first'`: no item before `firstMs`; `'idle'`: no item for `idleMs`; `'error'`: the source failed (and `onError` accepted it). */
  readonly kind: 'first' | 'idle' | 'error';
  /** Milliseconds (scheduler time) since subscription (`first`, `error`) or since the last item (`idle`). */
  readonly afterMs: number;
  /** The source's error, for kind `'error'`. */
  readonly error?: unknown;
}

/**
 * What {@link degradeAfter} emits instead: a value, an observable (its values, then its
 * completion or error), or a factory given the {@link DegradeReason}. A function is always taken
 * as a factory; if it throws, the operator errors with what it threw.
 *
 * @example
 * ```ts
 * const noDocs: Degraded<Doc[]> = [];
 * const fromCache: Degraded<Doc[]> = () => cache.lookup(query); // an Observable<Doc[]>
 * ```
 */
export type Degraded<D> = D | Observable<D> | ((reason: DegradeReason) => D | Observable<D>);

/**
 * Options of {@link degradeAfter}.
 *
 * @example
 * ```ts
 * const options: DegradeAfterOptions = { capability: 'knowledge_search', capabilities, onError: true };
 * ```
 */
export interface DegradeAfterOptions {
  /**
   * Degrade instead of erroring when the source fails: `true` for every error, or a predicate.
   * Errors it rejects pass through unchanged. Defaults to `false`. If the predicate throws, the
   * operator errors with what it threw.
   */
  readonly onError?: boolean | ((error: unknown) => boolean);
  /** Name of what degrades (e.g. `'knowledge_search'`), for the registry and events. Required with `capabilities` or `hub`. */
  readonly capability?: string;
  /**
   * Registry to update: when the operator degrades, `capabilities.disable(capability, reason)`;
   * when a later subscription completes within its deadlines, `capabilities.enable(capability)`.
   * None by default.
   */
  readonly capabilities?: CapabilityRegistry;
  /**
   * Where `degraded` / `restored` events are reported (once per change, as the registry does).
   * When `capabilities` reports to the same hub already, nothing is reported twice. None by
   * default.
   */
  readonly hub?: HealHub;
  /**
   * The reason text given to the registry and in events. Defaults to `no result within {firstMs}
   * ms`, `stalled: no data for {idleMs} ms`, or `failed ({classifier category})` — never the
   * error's own message, which may carry secrets into a prompt. If it throws, the operator errors
   * with what it threw instead of degrading.
   */
  readonly describe?: (reason: DegradeReason) => string;
  /** Where deadlines are scheduled and time is read. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

const props = {
  onError: check('a boolean or a function', (u): u is boolean | ((error: unknown) => boolean) => typeof u === 'boolean' || typeof u === 'function'),
  capability: NonEmptyString,
  capabilities: check('a CapabilityRegistry', (u): u is CapabilityRegistry => u instanceof CapabilityRegistry),
  hub: Hub,
  describe: Func,
  scheduler: Scheduler,
};

const isDeadline = (u: unknown): u is number => typeof u === 'number' && u > 0 && !Number.isNaN(u);
const DEADLINE = 'a number > 0 (ms), Infinity, or a DeadlineSource';

/** A deadline as given: ms, or a source read once per subscription. */
type Ms = number | DeadlineSource;

function parseDeadline(deadline: unknown): { firstMs: Ms; idleMs: Ms } {
  if (isDeadlineSource(deadline)) return { firstMs: deadline, idleMs: Infinity };
  if (typeof deadline === 'number') {
    if (!isDeadline(deadline) || !Number.isFinite(deadline))
      throw new InvalidOptionError('degradeAfter', 'deadline', deadline, 'a finite number > 0 (ms) or { firstMs?, idleMs? }');
    return { firstMs: deadline, idleMs: Infinity };
  }
  const o: unknown = deadline;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) {
    throw new InvalidOptionError('degradeAfter', 'deadline', deadline, 'a finite number > 0 (ms) or { firstMs?, idleMs? }');
  }
  for (const key of Object.keys(o)) {
    if (key !== 'firstMs' && key !== 'idleMs')
      throw new InvalidOptionError('degradeAfter', `deadline.${key}`, (o as Record<string, unknown>)[key], 'absent (known: firstMs, idleMs)');
  }
  const { firstMs, idleMs } = o as DegradeDeadline;
  if (idleMs !== undefined && !isDeadline(idleMs) && !isDeadlineSource(idleMs))
    throw new InvalidOptionError('degradeAfter', 'deadline.idleMs', idleMs, DEADLINE);
  if (firstMs !== undefined && !isDeadline(firstMs) && !isDeadlineSource(firstMs))
    throw new InvalidOptionError('degradeAfter', 'deadline.firstMs', firstMs, DEADLINE);
  if (firstMs === undefined && idleMs === undefined) throw new InvalidOptionError('degradeAfter', 'deadline', deadline, 'a deadline with firstMs or idleMs');
  return { firstMs: firstMs ?? idleMs ?? Infinity, idleMs: idleMs ?? Infinity };
}

/**
 * Degrades gracefully when a source is too slow (or fails): instead of waiting on, or erroring,
 * it unsubscribes the source, emits a fallback result (`degraded`) and completes. For optional
 * work an agent can do without: a knowledge search, a reranker, a slow tool.
 *
 * - `deadline` as a number: ms until the first item. As `{ firstMs, idleMs }`: also the longest
 *   gap between items (a stream that stalls after its first chunks). Any of them may be a
 *   `DeadlineSource` (a `LatencyTracker`'s `deadline(…)`: `p99 × 2` of observed latency, with a
 *   floor, a ceiling and a default), read when each subscription starts; if it throws or gives
 *   anything but a number > 0, that subscription errors with what it threw or an
 *   `InvalidOptionError` (option `deadline`), and the source is not subscribed.
 * - On a missed deadline: the source is unsubscribed, `degraded` is emitted (after whatever the
 *   source had emitted), then completion.
 * - `onError`: degrade instead of erroring.
 * - With `{ capability, capabilities }`: degrading disables the capability (before the degraded
 *   value is emitted, so the next prompt already knows); the next subscription that completes
 *   within its deadlines enables it again.
 *
 * ```
 * source:   3500ms (r|)
 * result:   3000ms (d|)        degradeAfter(3000, 'd')
 * ```
 *
 * Deadlines are one scheduled action per subscription, re-armed lazily (an item only records
 * the time), and none is left behind after completion, error or unsubscription.
 *
 * @example
 * ```ts
 * const capabilities = new CapabilityRegistry();
 * const docs$ = searchKnowledge(query).pipe(
 *   degradeAfter(3000, { docs: [], note: 'search unavailable' }, { capability: 'knowledge_search', capabilities }),
 * );
 * ```
 * @example A stream that stalls after its first tokens
 * ```ts
 * tokens$.pipe(degradeAfter({ firstMs: 15_000, idleMs: 5_000 }, (reason) => `[stalled after ${reason.afterMs} ms]`));
 * ```
 * @throws {InvalidOptionError} at once, for an invalid deadline or option.
 */
export function degradeAfter<T, D>(
  deadline: number | DeadlineSource | DegradeDeadline,
  degraded: Degraded<D>,
  options?: DegradeAfterOptions,
): OperatorFunction<T, T | D> {
  const { firstMs, idleMs } = parseDeadline(deadline);
  const o = validateOptions('degradeAfter', props, options);
  const capability = o.capability;
  if (capability === undefined && (o.capabilities !== undefined || o.hub !== undefined)) {
    throw new InvalidOptionError('degradeAfter', 'capability', capability, `a non-empty string when ${o.capabilities ? 'capabilities' : 'hub'} is given`);
  }
  const onError = o.onError ?? false;
  const scheduler = o.scheduler ?? asyncScheduler;
  const own = o.describe as ((reason: DegradeReason) => string) | undefined;
  const describe = (reason: DegradeReason, firstMs: number, idleMs: number): string =>
    own
      ? own(reason)
      : reason.kind === 'first'
        ? `no result within ${firstMs} ms`
        : reason.kind === 'idle'
          ? `stalled: no data for ${idleMs} ms`
          : `failed (${classifyError(reason.error).category})`;
  // Without a registry, a private one keeps "report once per change" for the hub.
  const hub = o.hub as HealHub | undefined;
  const registry = o.capabilities ?? (hub ? new CapabilityRegistry({ hub }) : undefined);
  const extraHub = o.capabilities && hub && o.capabilities.hub !== hub ? hub : undefined;

  const markDegraded = (reason: DegradeReason, firstMs: number, idleMs: number): void => {
    if (!registry || capability === undefined) return;
    const text = describe(reason, firstMs, idleMs);
    if (registry.disable(capability, text)) extraHub?.report({ type: 'degraded', capability, reason: text });
  };
  const markRestored = (): void => {
    if (!registry || capability === undefined) return;
    if (registry.enable(capability)) extraHub?.report({ type: 'restored', capability });
  };
  /** What to emit instead, once the capability is marked degraded. */
  const replacementFor = (reason: DegradeReason, firstMs: number, idleMs: number): D | Observable<D> => {
    markDegraded(reason, firstMs, idleMs);
    return typeof degraded === 'function' ? (degraded as (r: DegradeReason) => D | Observable<D>)(reason) : degraded;
  };

  const rules: DeadlineRules<D> = { firstMs, idleMs, scheduler, onError, replacementFor, markRestored };
  return operate<T, T | D>((source, subscriber) => {
    const first = read(rules.firstMs);
    if (first instanceof Thrown) return subscriber.error(first.error);
    const idle = read(rules.idleMs);
    if (idle instanceof Thrown) return subscriber.error(idle.error);
    // the watch is its own subscription (a Link): unsubscribing downstream takes its timer down, then the source
    subscribeWithin(subscriber, source, new DeadlineWatch<T, D>(subscriber, rules, first, idle));
  });
}

/** What every subscription of one `degradeAfter` shares: its deadlines and what it does when one is missed. */
interface DeadlineRules<D> {
  readonly firstMs: Ms;
  readonly idleMs: Ms;
  readonly scheduler: SchedulerLike;
  readonly onError: boolean | ((error: unknown) => boolean);
  /** Marks the capability degraded and gives what to emit instead (a throw: guarded by the caller). */
  readonly replacementFor: (reason: DegradeReason, firstMs: number, idleMs: number) => D | Observable<D>;
  /** Marks the capability restored (a throw: guarded by the caller). */
  readonly markRestored: () => void;
}

/** A deadline for one subscription: ms as given, a deadline source's value, or what went wrong reading it. */
function read(deadline: Ms): number | Thrown {
  if (typeof deadline === 'number') return deadline;
  const ms = guard(() => deadline.deadlineMs());
  return ms instanceof Thrown || isDeadline(ms)
    ? ms
    : new Thrown(new InvalidOptionError('degradeAfter', 'deadline', ms, 'from deadlineMs(), a number > 0 (ms) or Infinity'));
}

/**
 * One subscription of {@link degradeAfter}: the source's observer, its deadline (one scheduled
 * action, re-armed lazily: an item only records the time) and the degrading. A class rather than
 * closures: an idle subscription holds this object and its timer. Degrading unsubscribes the
 * source (`inner`), and `downstream` then gets the degraded value; added to `downstream`, it is
 * also the teardown that takes the deadline down.
 */
class DeadlineWatch<T, D> extends Link<T> {
  private readonly start: number;
  private last: number;
  private seen = false;
  private finished = false;
  private timer: Subscription | undefined = undefined;
  private armedAt = Infinity;

  constructor(
    private readonly downstream: Subscriber<T | D>,
    private readonly rules: DeadlineRules<D>,
    /** This subscription's deadlines, in ms (a deadline source's value when it started). */
    private readonly firstMs: number,
    private readonly idleMs: number,
  ) {
    super();
    this.start = this.last = rules.scheduler.now();
    this.arm(this.start + firstMs);
  }

  private arm(at: number): void {
    this.armedAt = at;
    this.timer = at === Infinity ? undefined : afterWith(this, Math.max(0, at - this.rules.scheduler.now()), this.rules.scheduler, onDeadline);
  }

  private disarm(): void {
    this.timer?.unsubscribe();
    this.timer = undefined;
    this.armedAt = Infinity;
  }

  /** The timer fired: degrade, unless items arrived since it was armed (then wait for the new deadline). */
  onTimer(): void {
    this.timer = undefined;
    if (this.finished) return;
    const now = this.rules.scheduler.now();
    const at = this.seen ? this.last + this.idleMs : this.start + this.firstMs;
    if (now < at) return this.arm(at);
    this.degrade(this.seen ? { kind: 'idle', afterMs: now - this.last } : { kind: 'first', afterMs: now - this.start });
  }

  private degrade(reason: DegradeReason): void {
    const downstream = this.downstream;
    // the source let go (this link torn down) before the replacement starts
    this.unsubscribe();
    const out = guard(this.rules.replacementFor, reason, this.firstMs, this.idleMs);
    if (out instanceof Thrown) return downstream.error(out.error);
    if (isObservable(out)) {
      const replacement = out.subscribe({
        next: (value) => downstream.next(value),
        error: (error: unknown) => downstream.error(error),
        complete: () => downstream.complete(),
      });
      downstream.add(replacement);
    } else {
      downstream.next(out);
      downstream.complete();
    }
  }

  protected onNext(value: T): void {
    if (this.finished) return;
    const { idleMs } = this;
    const { scheduler } = this.rules;
    // without an idle deadline only the first item's time matters (and not even that):
    // no clock read per item
    if (idleMs !== Infinity || !this.seen) this.last = scheduler.now();
    if (!this.seen) {
      this.seen = true;
      // the first item switches from the first deadline to the idle one, which may be sooner
      if (this.last + idleMs < this.armedAt) {
        this.disarm();
        this.arm(this.last + idleMs);
      } else if (idleMs === Infinity) {
        this.disarm();
      }
    }
    this.downstream.next(value);
  }

  protected onError(error: unknown): void {
    if (this.finished) return;
    const onError = this.rules.onError;
    const degradeIt = typeof onError === 'function' ? guard(onError, error) : onError;
    if (degradeIt instanceof Thrown) {
      this.finish();
      this.downstream.error(degradeIt.error);
    } else if (degradeIt) {
      this.degrade({ kind: 'error', afterMs: this.rules.scheduler.now() - this.start, error });
    } else {
      this.finish();
      this.downstream.error(error);
    }
  }

  protected onComplete(): void {
    if (this.finished) return;
    this.finish();
    const restored = guard(this.rules.markRestored);
    if (restored instanceof Thrown) this.downstream.error(restored.error);
    else this.downstream.complete();
  }

  /** Downstream left, or the watch ended: the deadline off first, then the source let go. */
  override unsubscribe(): void {
    if (this.closed) return;
    this.finish();
    super.unsubscribe();
  }

  private finish(): void {
    this.finished = true;
    this.disarm();
  }
}

/** Every deadline's timer work: one function for all of them. */
function onDeadline(watch: DeadlineWatch<unknown, unknown>): void {
  watch.onTimer();
}
