/**
 * The circuit breaker state machine, the one place its rules live (one state machine: its
 * options, its permits and every transition). The `circuitBreak` operator drives it; users may
 * share one instance among many pipelines, or get one per tool or model from a
 * `CircuitBreakerRegistry` (breakerRegistry.ts).
 *
 * @module
 */
import { asyncScheduler, Observable, Subject, type SchedulerLike, type Subscription } from 'rxjs';
import { classifyError, isServiceFailure } from '../errors/classify.js';
import type { CircuitPermit } from '../circuit/permit.js';
import { CircuitOpenError } from '../errors/errors.js';
import { guard, Thrown } from '../rx/guard.js';
import { after } from '../rx/wait.js';
import type { CircuitEvent, CircuitState, TransitionReason } from '../circuit/state.js';
import { RateWindow } from './rateWindow.js';
import { FleetOptionsCheck, fleetNodeFor, type FleetBreaker, type FleetHook, type FleetOptions } from './fleetSeam.js';
import { Func, NonEmptyString, NonNegativeNumber, PositiveInteger, PositiveNumber, Ratio, Scheduler, check, validateOptions } from '../errors/options.js';

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
   * validation or programming errors, nor cancellation. If it throws, the call counts as a
   * failure and fails downstream with what it threw (never a hang; the permit is settled).
   */
  readonly isFailure?: (error: unknown) => boolean;
  /** `'consecutive'` (default) or a {@link FailureRateWindow}. */
  readonly window?: 'consecutive' | FailureRateWindow;
  /** Where time is read and the half-open notice scheduled. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * Share verdicts, the half-open probe and provider facts with the other processes using the
   * same store (see `marble-docs/fleet.md`). `acquire()` stays local and synchronous.
   */
  readonly fleet?: FleetOptions;
}

export type { CircuitPermit } from '../circuit/permit.js';
export type { CircuitEvent, CircuitState, TransitionReason } from '../circuit/state.js';
export type { CircuitSnapshot, CircuitSnapshotV1, CircuitSnapshotWindow } from './snapshot.js';

// option checks are predicates (core/errors/options.ts), not io-ts codecs: no decoder in the bundle
const windowCodec = check(
  '"consecutive" or { failureRateThreshold: (0, 1], minimumCalls: integer >= 1, windowMs: > 0 }',
  (u): u is 'consecutive' | FailureRateWindow =>
    u === 'consecutive' ||
    (typeof u === 'object' &&
      u !== null &&
      Ratio.is((u as FailureRateWindow).failureRateThreshold) &&
      PositiveInteger.is((u as FailureRateWindow).minimumCalls) &&
      PositiveNumber.is((u as FailureRateWindow).windowMs)),
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
  fleet: FleetOptionsCheck,
};

/** The default `isFailure`: transient service failures per the classifier. */
const defaultIsFailure = (error: unknown): boolean => isServiceFailure(classifyError(error));

class Permit implements CircuitPermit {
  done = false;
  deadline: Subscription | undefined = undefined;
  /** What `isFailure` threw when asked about this call's error, if it threw. */
  threw: Thrown | undefined = undefined;
  constructor(
    private readonly breaker: CircuitBreaker,
    readonly generation: number,
    readonly probe: boolean,
  ) {}
  success(): void {
    this.breaker['settle'](this, 'success', undefined);
  }
  failure(error: unknown): unknown {
    this.breaker['settle'](this, 'failure', error);
    return this.threw ? this.threw.error : error;
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
 * while closed; while open, one scheduled action announces half-open on `state$`, and only while
 * someone observes (`state$`, `events$`, a hub listened to, a registry's `events$` observed): an
 * open breaker nobody watches holds no timer, and in Node the notice never keeps a process alive.
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
  /**
   * The one channel of the breaker's transitions: `events$` (and so `state$`, hubs, registries)
   * and the fleet all listen on it. Made at the first listener: an idle breaker nobody follows holds none.
   */
  private subject: Subject<CircuitEvent> | undefined;
  /** Subscriptions to `events$`: while there is one, an open breaker's half-open notice is scheduled. */
  private watchers = 0;
  private readonly fleet: FleetHook | undefined;

  constructor(options: CircuitBreakerOptions = {}) {
    const o = validateOptions('CircuitBreaker', circuitBreakerOptionProps, options);
    // the fleet's node logic comes with its store: a breaker without one bundles none of it
    const fleet = o.fleet === undefined ? undefined : fleetNodeFor('CircuitBreaker', o.fleet);
    this.name = o.name ?? 'circuit';
    this.failureThreshold = o.failureThreshold ?? 5;
    this.resetTimeoutMs = o.resetTimeoutMs ?? 60_000;
    this.halfOpenMaxCalls = o.halfOpenMaxCalls ?? 1;
    this.halfOpenTimeoutMs = o.halfOpenTimeoutMs ?? Math.max(this.resetTimeoutMs, 1);
    this.isFailure = (o.isFailure as ((e: unknown) => boolean) | undefined) ?? defaultIsFailure;
    this.rate = o.window === undefined || o.window === 'consecutive' ? undefined : o.window;
    this.scheduler = o.scheduler ?? asyncScheduler;
    // the fleet listens on the transitions' channel, first (before any `events$` observer); it
    // needs no half-open notice, so it is not one of `watchers`
    this.fleet = fleet?.attach(this.fleetSide(), o.fleet!);
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
   * reset timeout elapses, not at the next call). Subscribing arms that announcement (see
   * {@link CircuitBreaker.events$ | events$}).
   */
  get state$(): Observable<CircuitState> {
    return new Observable<CircuitState>((subscriber) => {
      subscriber.next(this.state);
      // (an open breaker re-opened for a fresh period is no new state)
      return this.events$.subscribe((e) => {
        if (e.from !== e.to) subscriber.next(e.to);
      });
    });
  }

  /**
   * Every transition, with from, to, scheduler time, reason and failure count. While it has
   * observers (directly, through `state$`, a hub or a registry's `events$`), an open breaker
   * keeps one scheduled action to announce half-open when its reset timeout elapses; with none,
   * it holds no timer at all (an open breaker never keeps a process alive), and the state is
   * still computed from `scheduler.now()` whenever read.
   */
  get events$(): Observable<CircuitEvent> {
    return new Observable<CircuitEvent>((subscriber) => {
      // an open period that ended while nobody watched ends now, before this observer: it sees what comes next
      if (this.watchers === 0) this.refresh();
      this.watchers++;
      this.channel().subscribe(subscriber);
      this.arm();
      return () => {
        if (--this.watchers === 0) this.disarm();
      };
    });
  }

  /** The transitions' channel, made at the first listener. */
  private channel(): Subject<CircuitEvent> {
    return (this.subject ??= new Subject<CircuitEvent>());
  }

  /**
   * Asks to start one call. Returns a {@link CircuitPermit} to settle when the call ends, or the
   * {@link CircuitOpenError} to fail the call with.
   *
   * @example
   * ```ts
   * const permit = breaker.acquire();
   * if (permit instanceof CircuitOpenError) throw permit;
   * try { const r = await call(); permit.success(); return r; } catch (e) { throw permit.failure(e); }
   * ```
   */
  acquire(): CircuitPermit | CircuitOpenError {
    this.refresh(true);
    switch (this.current) {
      case 'closed':
        return new Permit(this, this.generation, false);
      case 'open':
        return new CircuitOpenError(this.name, this.isolatedByHand ? Infinity : Math.max(0, this.openUntil - this.scheduler.now()));
      case 'half-open': {
        if (this.probes.size >= this.halfOpenMaxCalls) return new CircuitOpenError(this.name, 0);
        // in a fleet, a probe only under the probe lease: without it the fleet may move the breaker
        // (back to open, waiting on another node's probe; closed by its result), asked again then
        if (this.fleet !== undefined && !this.fleet.probe()) return this.current === 'half-open' ? new CircuitOpenError(this.name, 0) : this.acquire();
        const permit = new Permit(this, this.generation, true);
        this.probes.add(permit);
        if (Number.isFinite(this.halfOpenTimeoutMs)) {
          permit.deadline = after(this.halfOpenTimeoutMs, this.scheduler, () => {
            if (permit.done || permit.generation !== this.generation) return;
            permit.done = true;
            this.open('probe_timeout', 0);
          });
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
    this.fleet?.admin('isolate');
  }

  /** Closes the breaker and forgets every count (and any isolation). */
  reset(): void {
    this.refresh();
    const from = this.current;
    this.isolatedByHand = false;
    this.enter('closed', 'reset', 0, from);
    this.fleet?.admin('reset');
  }

  /** Open → half-open once the reset timeout has passed; read on every access. `calling`: from `acquire()`. */
  private refresh(calling = false): void {
    if (this.current === 'open' && !this.isolatedByHand && this.scheduler.now() >= this.openUntil) {
      // with a fleet, only the holder of the probe lease goes half-open (or a node left alone)
      const reason = this.fleet ? this.fleet.gate(calling) : 'reset_timeout';
      // (the gate may have moved the breaker: a later deadline, a close)
      if (reason !== false && this.current === 'open' && !this.isolatedByHand && this.scheduler.now() >= this.openUntil)
        this.enter('half-open', reason, 0, 'open');
    }
  }

  private settle(permit: Permit, outcome: 'success' | 'failure' | 'release', error: unknown): void {
    if (permit.done) return;
    permit.done = true;
    permit.deadline?.unsubscribe();
    // An outcome from an earlier state (a call admitted before the last transition) changes nothing.
    if (permit.generation !== this.generation) return;
    if (permit.probe) this.probes.delete(permit);
    const failed = outcome === 'failure' && this.isFailureSafe(error, permit);
    if (outcome === 'release' || (outcome === 'failure' && !failed)) return;
    // a provider fact (429 with retry-after) opens the breaker fleet-wide at once
    if (failed && this.fleet?.failed(error) === true) return;
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

  private isFailureSafe(error: unknown, permit: Permit): boolean {
    const verdict = guard(this.isFailure, error);
    if (!(verdict instanceof Thrown)) return verdict;
    // a throwing predicate must not wedge the breaker: the call counts as failed, and what it
    // threw is the error the call fails with (Permit.failure returns it)
    permit.threw = verdict;
    return true;
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
    extra: { openUntil?: number | undefined; retryAfterMs?: number; consecutive?: number; reopened?: boolean } = {},
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
    this.disarm();
    if (to === 'open' && extra.openUntil !== undefined) this.openUntil = extra.openUntil;
    this.arm();
    if (from !== to || extra.reopened === true) {
      const at = this.scheduler.now();
      const { retryAfterMs } = extra;
      const event: CircuitEvent =
        retryAfterMs === undefined
          ? { breaker: this.name, from, to, at, reason, failures }
          : { breaker: this.name, from, to, at, reason, failures, retryAfterMs };
      this.subject?.next(event);
    }
  }

  /**
   * Schedules the half-open notice of the current open period, if it has one and someone
   * observes `events$`: only then is the announcement due to anyone (reads compute the state).
   */
  private arm(): void {
    if (this.wakeup !== undefined || this.current !== 'open' || this.isolatedByHand || !Number.isFinite(this.openUntil) || this.watchers === 0) return;
    // an announcement only (state is computed on every read): it must not keep a process alive
    this.wakeup = after(
      Math.max(0, this.openUntil - this.scheduler.now()),
      this.scheduler,
      () => {
        this.wakeup = undefined;
        // a timer may fire a little before the clock reads its time (Node's setTimeout vs
        // Date.now()): the notice is armed again for what is left, never lost. Only then: at or
        // past the time, a breaker that stays open (a fleet's node waiting on another's probe) is
        // announced by the fleet, not by a timer firing again at once
        const early = this.scheduler.now() < this.openUntil;
        this.refresh();
        if (early) this.arm();
      },
      { background: true },
    );
  }

  private disarm(): void {
    this.wakeup?.unsubscribe();
    this.wakeup = undefined;
  }

  /** What the fleet (src/core/fleet/fleet.ts) sees of this breaker (the raw state, no refresh) and how it moves it. */
  private fleetSide(): FleetBreaker {
    return {
      name: this.name,
      resetTimeoutMs: this.resetTimeoutMs,
      scheduler: this.scheduler,
      view: () => ({ state: this.current, openUntil: this.openUntil, isolated: this.isolatedByHand }),
      move: (to, reason, until = 0) => {
        // a node waiting on the fleet's prober (open, its own period over) re-opened for a fresh
        // period reports it, though it never left open (fleet_probe_failure)
        const reopened = to === 'open' && this.current === 'open' && !this.isolatedByHand && this.scheduler.now() >= this.openUntil;
        this.isolatedByHand = until === Infinity;
        const retryAfterMs = Math.max(0, until - this.scheduler.now());
        this.enter(
          to,
          reason,
          0,
          this.current,
          to === 'closed' ? {} : until === Infinity ? { openUntil: until, reopened } : { openUntil: until, retryAfterMs, reopened },
        );
      },
      refresh: () => this.refresh(),
      transitions$: new Observable<CircuitEvent>((subscriber) => this.channel().subscribe(subscriber)),
    };
  }
}
