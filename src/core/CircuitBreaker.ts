/**
 * The circuit breaker state machine, the one place its rules live. The `circuitBreak` operator
 * drives it; users may share one instance among many pipelines, or get one per tool or model from
 * a {@link CircuitBreakerRegistry}.
 *
 * @module
 */
import { asyncScheduler, Observable, Subject, type SchedulerLike, type Subscription } from 'rxjs';
import { classifyError, isServiceFailure } from './classify.js';
import type { CircuitPermit } from './permit.js';
import { CircuitOpenError, InvalidOptionError } from './errors.js';
import {
  Func,
  NonEmptyString,
  NonNegativeNumber,
  NonNegativeOrInfinity,
  PositiveInteger,
  PositiveNumber,
  Ratio,
  Scheduler,
  check,
  validateOptions,
} from './options.js';

/** The breaker's state. */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** A failure-rate window: open when, over the last `windowMs`, at least `minimumCalls` calls
 * finished and the share of failures reached `failureRateThreshold`. */
export interface FailureRateWindow {
  /** Share of failed calls, in (0, 1], that opens the breaker. */
  readonly failureRateThreshold: number;
  /** Calls that must have finished in the window before the rate is judged. */
  readonly minimumCalls: number;
  /** Length of the sliding window in ms (kept in 10 buckets). */
  readonly windowMs: number;
}

/** Options of {@link CircuitBreaker}. */
export interface CircuitBreakerOptions {
  /** Name shown in errors and events. Defaults to `'circuit'`. */
  readonly name?: string;
  /** Consecutive failures that open the breaker (with `window: 'consecutive'`). Defaults to 5. */
  readonly failureThreshold?: number;
  /** How long the breaker stays open before it admits a probe, in ms. Defaults to 60 000. */
  readonly resetTimeoutMs?: number;
  /** Concurrent probes admitted while half-open, and successes needed to close. Defaults to 1. */
  readonly halfOpenMaxCalls?: number;
  /**
   * A probe still running after this many ms re-opens the breaker, so a hung probe cannot wedge
   * it half-open. Defaults to `resetTimeoutMs`; `Infinity` disables the guard.
   */
  readonly halfOpenTimeoutMs?: number;
  /**
   * Which errors count as failures. Others are ignored: neither failure nor success. Defaults to
   * transient service failures per the classifier ({@link isServiceFailure}): not bad requests,
   * validation or programming errors, nor cancellation.
   */
  readonly isFailure?: (error: unknown) => boolean;
  /** `'consecutive'` (default) or a {@link FailureRateWindow}. */
  readonly window?: 'consecutive' | FailureRateWindow;
  /** Where time is read and the half-open notice scheduled. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

/** Why the breaker changed state. */
export type TransitionReason =
  | 'failure_threshold'
  | 'failure_rate'
  | 'reset_timeout'
  | 'probe_success'
  | 'probe_failure'
  | 'probe_timeout'
  | 'isolated'
  | 'reset'
  | 'restored';

/** One state change, as emitted by {@link CircuitBreaker.events$}. */
export interface CircuitEvent {
  readonly breaker: string;
  readonly from: CircuitState;
  readonly to: CircuitState;
  /** Scheduler time of the change. */
  readonly at: number;
  readonly reason: TransitionReason;
  /** Failures counted when the breaker opened (consecutive, or in the window); else 0. */
  readonly failures: number;
  /** On opening (not by `isolate()` or `restore()`): ms until it admits a probe, i.e. `resetTimeoutMs`. */
  readonly retryAfterMs?: number;
}

/** A breaker's state as plain JSON, for {@link CircuitBreaker.snapshot} / `restore`. */
export interface CircuitSnapshot {
  readonly version: 1;
  readonly name: string;
  readonly state: CircuitState;
  readonly isolated: boolean;
  /** Scheduler time at which an open breaker admits a probe; `null` unless open. */
  readonly openUntil: number | null;
  readonly consecutiveFailures: number;
  /** Failure-rate window contents, when the breaker uses one. */
  readonly window: { readonly latest: number; readonly calls: readonly number[]; readonly failures: readonly number[] } | null;
}

export type { CircuitPermit } from './permit.js';

const BUCKETS = 10;

/** Calls and failures over a sliding time window, in fixed buckets; no timers. */
class RateWindow {
  private readonly width: number;
  latest = -Infinity;
  calls = new Array<number>(BUCKETS).fill(0);
  failures = new Array<number>(BUCKETS).fill(0);

  constructor(windowMs: number) {
    this.width = windowMs / BUCKETS;
  }

  /** Records one outcome and returns the totals over the window. */
  record(now: number, failed: boolean): { calls: number; failures: number } {
    const id = Math.floor(now / this.width);
    if (id > this.latest) {
      // clear the buckets that slid out; at most BUCKETS of them
      const from = Math.max(this.latest + 1, id - BUCKETS + 1);
      for (let b = from; b <= id; b++) {
        const slot = ((b % BUCKETS) + BUCKETS) % BUCKETS;
        this.calls[slot] = 0;
        this.failures[slot] = 0;
      }
      this.latest = id;
    }
    const slot = ((this.latest % BUCKETS) + BUCKETS) % BUCKETS;
    this.calls[slot] = (this.calls[slot] ?? 0) + 1;
    if (failed) this.failures[slot] = (this.failures[slot] ?? 0) + 1;
    let calls = 0;
    let failures = 0;
    for (let i = 0; i < BUCKETS; i++) {
      calls += this.calls[i] ?? 0;
      failures += this.failures[i] ?? 0;
    }
    return { calls, failures };
  }

  clear(): void {
    this.latest = -Infinity;
    this.calls.fill(0);
    this.failures.fill(0);
  }
}

// option checks are predicates (core/options.ts), not io-ts codecs: no decoder in the bundle
const windowCodec = check(
  '"consecutive" or { failureRateThreshold: (0, 1], minimumCalls: integer >= 1, windowMs: > 0 }',
  (u): u is 'consecutive' | FailureRateWindow =>
    u === 'consecutive' ||
    (typeof u === 'object' && u !== null && Ratio.is((u as FailureRateWindow).failureRateThreshold) && PositiveInteger.is((u as FailureRateWindow).minimumCalls) && PositiveNumber.is((u as FailureRateWindow).windowMs)),
);

/** Option checks of {@link CircuitBreakerOptions}; also used by `circuitBreak` and the registry. */
export const circuitBreakerOptionProps = {
  name: NonEmptyString,
  failureThreshold: PositiveInteger,
  resetTimeoutMs: NonNegativeNumber,
  halfOpenMaxCalls: PositiveInteger,
  halfOpenTimeoutMs: check('a number > 0 or Infinity', (u): u is number => typeof u === 'number' && u > 0),
  isFailure: Func,
  window: windowCodec,
  scheduler: Scheduler,
};

const isNumberOrNull = (u: unknown): boolean => u === null || typeof u === 'number';
const isNumbers = (u: unknown): boolean => Array.isArray(u) && u.every((x) => typeof x === 'number');
/** The shape of a {@link CircuitSnapshot} (JSON from storage: checked field by field). */
const isSnapshot = (u: unknown): u is CircuitSnapshot => {
  if (typeof u !== 'object' || u === null) return false;
  const s = u as Record<keyof CircuitSnapshot, unknown>;
  const w = s.window as Record<string, unknown> | null;
  return (
    s.version === 1 &&
    typeof s.name === 'string' &&
    (s.state === 'closed' || s.state === 'open' || s.state === 'half-open') &&
    typeof s.isolated === 'boolean' &&
    isNumberOrNull(s.openUntil) &&
    NonNegativeOrInfinity.is(s.consecutiveFailures) &&
    (w === null || (typeof w === 'object' && isNumberOrNull(w.latest) && isNumbers(w.calls) && isNumbers(w.failures)))
  );
};

/** The default `isFailure`: transient service failures per the classifier. */
const defaultIsFailure = (error: unknown): boolean => isServiceFailure(classifyError(error));

class Permit implements CircuitPermit {
  done = false;
  deadline: Subscription | undefined = undefined;
  constructor(
    private readonly breaker: CircuitBreaker,
    readonly generation: number,
    readonly probe: boolean,
  ) {}
  success(): void {
    this.breaker['settle'](this, 'success', undefined);
  }
  failure(error: unknown): void {
    this.breaker['settle'](this, 'failure', error);
  }
  release(): void {
    this.breaker['settle'](this, 'release', undefined);
  }
}

/**
 * A circuit breaker whose clock is an RxJS scheduler, so it runs in virtual time in tests.
 *
 * Closed → open after `failureThreshold` consecutive failures (or a failure rate over a window).
 * While open, calls are rejected with {@link CircuitOpenError} at once. After `resetTimeoutMs` it
 * is half-open: up to `halfOpenMaxCalls` concurrent probes pass, others are rejected; that many
 * successes close it, any probe failure (or a probe outliving `halfOpenTimeoutMs`) re-opens it.
 * Outcomes of calls admitted in an earlier state never change the current one. No timer runs
 * while closed; while open, one scheduled action announces half-open on `state$`.
 *
 * @example
 * ```ts
 * const breaker = new CircuitBreaker({ name: 'weather-api', failureThreshold: 5, resetTimeoutMs: 60_000 });
 * breaker.state$.subscribe((s) => console.log('weather-api is', s));
 * const weather$ = defer(() => fetchWeather()).pipe(circuitBreak(breaker));
 * ```
 */
export class CircuitBreaker {
  /** The breaker's name, as given (default `'circuit'`). */
  readonly name: string;
  private readonly failureThreshold: number;
  private readonly resetTimeoutMs: number;
  private readonly halfOpenMaxCalls: number;
  private readonly halfOpenTimeoutMs: number;
  private readonly isFailure: (error: unknown) => boolean;
  private readonly rate: FailureRateWindow | undefined;
  private readonly scheduler: SchedulerLike;

  private current: CircuitState = 'closed';
  private isolatedByHand = false;
  private generation = 0;
  private consecutive = 0;
  private openUntil = 0;
  /** Probes admitted in the current half-open period and not yet settled. */
  private readonly probes = new Set<Permit>();
  private probeSuccesses = 0;
  private window: RateWindow | undefined;
  private wakeup: Subscription | undefined;
  private subject: Subject<CircuitEvent> | undefined;

  constructor(options: CircuitBreakerOptions = {}) {
    const o = validateOptions('CircuitBreaker', circuitBreakerOptionProps, options);
    this.name = o.name ?? 'circuit';
    this.failureThreshold = o.failureThreshold ?? 5;
    this.resetTimeoutMs = o.resetTimeoutMs ?? 60_000;
    this.halfOpenMaxCalls = o.halfOpenMaxCalls ?? 1;
    this.halfOpenTimeoutMs = o.halfOpenTimeoutMs ?? Math.max(this.resetTimeoutMs, 1);
    this.isFailure = (o.isFailure as ((e: unknown) => boolean) | undefined) ?? defaultIsFailure;
    this.rate = o.window === undefined || o.window === 'consecutive' ? undefined : o.window;
    this.scheduler = o.scheduler ?? asyncScheduler;
  }

  /** The current state, computed from `scheduler.now()` whenever read. */
  get state(): CircuitState {
    this.refresh();
    return this.current;
  }

  /** Whether {@link isolate} holds the breaker open. */
  get isolated(): boolean {
    return this.isolatedByHand;
  }

  /**
   * The state now, then every change as it happens (open → half-open is announced when the
   * reset timeout elapses, not at the next call).
   */
  get state$(): Observable<CircuitState> {
    return new Observable<CircuitState>((subscriber) => {
      subscriber.next(this.state);
      return this.events$.subscribe((e) => subscriber.next(e.to));
    });
  }

  /** Every transition, with from, to, scheduler time, reason and failure count. */
  get events$(): Observable<CircuitEvent> {
    this.subject ??= new Subject<CircuitEvent>();
    return this.subject.asObservable();
  }

  /**
   * Asks to start one call. Returns a {@link CircuitPermit} to settle when the call ends, or the
   * {@link CircuitOpenError} to fail the call with.
   *
   * @example
   * ```ts
   * const permit = breaker.acquire();
   * if (permit instanceof CircuitOpenError) throw permit;
   * try { const r = await call(); permit.success(); return r; } catch (e) { permit.failure(e); throw e; }
   * ```
   */
  acquire(): CircuitPermit | CircuitOpenError {
    this.refresh();
    switch (this.current) {
      case 'closed':
        return new Permit(this, this.generation, false);
      case 'open':
        return new CircuitOpenError(
          this.name,
          this.isolatedByHand ? Infinity : Math.max(0, this.openUntil - this.scheduler.now()),
        );
      case 'half-open': {
        if (this.probes.size >= this.halfOpenMaxCalls) return new CircuitOpenError(this.name, 0);
        const permit = new Permit(this, this.generation, true);
        this.probes.add(permit);
        if (Number.isFinite(this.halfOpenTimeoutMs)) {
          permit.deadline = this.scheduler.schedule(() => {
            if (permit.done || permit.generation !== this.generation) return;
            permit.done = true;
            this.open('probe_timeout', 0);
          }, this.halfOpenTimeoutMs);
        }
        return permit;
      }
    }
  }

  /** Forces the breaker open until {@link reset}: every call is rejected, no probe is made. */
  isolate(): void {
    this.refresh();
    const from = this.current;
    this.isolatedByHand = true;
    this.enter('open', 'isolated', 0, from, { openUntil: Infinity });
  }

  /** Closes the breaker and forgets every count (and any isolation). */
  reset(): void {
    this.refresh();
    const from = this.current;
    this.isolatedByHand = false;
    this.enter('closed', 'reset', 0, from);
  }

  /** The state as JSON, to persist across restarts. In-flight probes are not part of it. */
  snapshot(): CircuitSnapshot {
    this.refresh();
    const w = this.window;
    return {
      version: 1,
      name: this.name,
      state: this.current,
      isolated: this.isolatedByHand,
      openUntil: this.current === 'open' && !this.isolatedByHand ? this.openUntil : null,
      consecutiveFailures: this.consecutive,
      window: w ? { latest: Number.isFinite(w.latest) ? w.latest : null, calls: [...w.calls], failures: [...w.failures] } as CircuitSnapshot['window'] : null,
    };
  }

  /**
   * Takes the state from a {@link CircuitBreaker.snapshot | snapshot}. Times are scheduler times, so a snapshot taken with
   * `asyncScheduler` (epoch ms) stays valid across processes. Throws {@link InvalidOptionError}
   * for malformed input.
   */
  restore(snapshot: CircuitSnapshot): void {
    if (!isSnapshot(snapshot)) throw new InvalidOptionError('CircuitBreaker.restore', 'snapshot', snapshot, 'a CircuitSnapshot (version 1)');
    const s = snapshot;
    this.refresh();
    const from = this.current;
    this.isolatedByHand = s.isolated;
    const openUntil = s.isolated ? Infinity : s.state === 'open' ? (s.openUntil ?? this.scheduler.now()) : undefined;
    this.enter(s.isolated ? 'open' : s.state, 'restored', 0, from, { openUntil, consecutive: s.consecutiveFailures });
    if (this.rate && s.window && s.window.calls.length === BUCKETS && s.window.failures.length === BUCKETS) {
      this.window ??= new RateWindow(this.rate.windowMs);
      this.window.latest = s.window.latest ?? -Infinity;
      this.window.calls = [...s.window.calls];
      this.window.failures = [...s.window.failures];
    }
  }

  /** Open → half-open once the reset timeout has passed; read on every access. */
  private refresh(): void {
    if (this.current === 'open' && !this.isolatedByHand && this.scheduler.now() >= this.openUntil) {
      this.enter('half-open', 'reset_timeout', 0, 'open');
    }
  }

  private settle(permit: Permit, outcome: 'success' | 'failure' | 'release', error: unknown): void {
    if (permit.done) return;
    permit.done = true;
    permit.deadline?.unsubscribe();
    // An outcome from an earlier state (a call admitted before the last transition) changes nothing.
    if (permit.generation !== this.generation) return;
    if (permit.probe) this.probes.delete(permit);
    const failed = outcome === 'failure' && this.isFailureSafe(error);
    if (outcome === 'release' || (outcome === 'failure' && !failed)) return;
    if (this.current === 'half-open') {
      if (failed) this.open('probe_failure', 0);
      else if (++this.probeSuccesses >= this.halfOpenMaxCalls) this.enter('closed', 'probe_success', 0, 'half-open');
      return;
    }
    // closed
    if (this.rate) {
      this.window ??= new RateWindow(this.rate.windowMs);
      const totals = this.window.record(this.scheduler.now(), failed);
      if (totals.calls >= this.rate.minimumCalls && totals.failures / totals.calls >= this.rate.failureRateThreshold) {
        this.open('failure_rate', totals.failures);
      }
    } else if (failed) {
      if (++this.consecutive >= this.failureThreshold) this.open('failure_threshold', this.consecutive);
    } else {
      this.consecutive = 0;
    }
  }

  private isFailureSafe(error: unknown): boolean {
    try {
      return this.isFailure(error);
    } catch {
      // a throwing predicate must not wedge the breaker; count the call as failed
      return true;
    }
  }

  private open(reason: TransitionReason, failures: number): void {
    this.enter('open', reason, failures, this.current, {
      openUntil: this.scheduler.now() + this.resetTimeoutMs,
      retryAfterMs: this.resetTimeoutMs,
    });
  }

  /**
   * The one place state changes: bumps the generation, clears counters, sets the open period
   * (and its half-open notice), and only then emits the event — a subscriber that reads `state`
   * while handling it sees the new state whole.
   */
  private enter(
    to: CircuitState,
    reason: TransitionReason,
    failures: number,
    from: CircuitState,
    extra: { openUntil?: number | undefined; retryAfterMs?: number; consecutive?: number } = {},
  ): void {
    this.current = to;
    this.generation++;
    this.consecutive = extra.consecutive ?? 0;
    // probes of the period that ends: their deadlines go with it (no timer survives a transition)
    for (const probe of this.probes) probe.deadline?.unsubscribe();
    this.probes.clear();
    this.probeSuccesses = 0;
    this.window?.clear();
    // the half-open notice belongs to one open period: a fresh one for a new period, none for isolation
    this.wakeup?.unsubscribe();
    this.wakeup = undefined;
    if (to === 'open' && extra.openUntil !== undefined) {
      const until = extra.openUntil;
      this.openUntil = until;
      if (Number.isFinite(until)) {
        this.wakeup = this.scheduler.schedule(() => {
          this.wakeup = undefined;
          this.refresh();
        }, Math.max(0, until - this.scheduler.now()));
      }
    }
    if (from !== to) {
      const at = this.scheduler.now();
      const { retryAfterMs } = extra;
      this.subject?.next(retryAfterMs === undefined ? { breaker: this.name, from, to, at, reason, failures } : { breaker: this.name, from, to, at, reason, failures, retryAfterMs });
    }
  }
}

/**
 * One breaker per name (a tool, a model), created on first use with shared defaults.
 *
 * @example
 * ```ts
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 30_000 });
 * const weather$ = callWeather().pipe(circuitBreak(breakers.get('tool:get_weather')));
 * const gpt$ = streamGpt().pipe(circuitBreak(breakers.get('model:gpt-4o', { failureThreshold: 5 })));
 * breakers.events$.subscribe((e) => console.log(e.breaker, e.from, '→', e.to));
 * ```
 */
export class CircuitBreakerRegistry {
  private readonly defaults: Omit<CircuitBreakerOptions, 'name'>;
  private readonly breakers = new Map<string, CircuitBreaker>();
  private readonly subject = new Subject<CircuitEvent>();

  /** Transitions of every breaker in the registry, including ones created later. */
  readonly events$: Observable<CircuitEvent> = this.subject.asObservable();

  constructor(defaults: Omit<CircuitBreakerOptions, 'name'> = {}) {
    validateOptions('CircuitBreakerRegistry', circuitBreakerOptionProps, defaults);
    if ('name' in defaults) throw new InvalidOptionError('CircuitBreakerRegistry', 'name', (defaults as { name?: unknown }).name, 'absent (names are given to get())');
    this.defaults = defaults;
  }

  /**
   * The breaker called `name`, created with the defaults and `overrides` on first use.
   * `overrides` are applied only when the breaker is created.
   */
  get(name: string, overrides?: Omit<CircuitBreakerOptions, 'name'>): CircuitBreaker {
    // no default `{}`: a lookup allocates nothing
    if (typeof overrides === 'object' && overrides !== null && 'name' in overrides) {
      throw new InvalidOptionError('CircuitBreakerRegistry.get', 'name', (overrides as { name?: unknown }).name, 'absent (the name is get()\'s first argument)');
    }
    let breaker = this.breakers.get(name);
    if (!breaker) {
      breaker = new CircuitBreaker({ ...this.defaults, ...overrides, name });
      breaker.events$.subscribe(this.subject);
      this.breakers.set(name, breaker);
    }
    return breaker;
  }

  /** Whether a breaker called `name` exists. */
  has(name: string): boolean {
    return this.breakers.has(name);
  }

  /** Names of every breaker created so far. */
  names(): string[] {
    return [...this.breakers.keys()];
  }

  /** Every breaker's {@link CircuitBreaker.snapshot}, by name. */
  snapshot(): Record<string, CircuitSnapshot> {
    const out: Record<string, CircuitSnapshot> = {};
    for (const [name, breaker] of this.breakers) out[name] = breaker.snapshot();
    return out;
  }

  /** Restores each named breaker (creating it with the defaults if needed). */
  restore(snapshots: Record<string, CircuitSnapshot>): void {
    for (const [name, snap] of Object.entries(snapshots)) this.get(name).restore(snap);
  }
}
