import { asyncScheduler, Observable, Subscription, type MonoTypeOperatorFunction, type Observer, type SchedulerLike, type Subscriber } from 'rxjs';
import { CircuitBreaker, type CircuitPermit } from '../core/breaker/CircuitBreaker.js';
import { classifyError } from '../core/errors/classify.js';
import { CircuitOpenError, InvalidOptionError } from '../core/errors/errors.js';
import { check, Hub, NonEmptyString, Scheduler, validateOptions } from '../core/errors/options.js';
import type { HedgeEvent } from '../core/events/events.js';
import { defaultHub, type HealHub } from '../core/hub/hub.js';
import { isDeadlineSource, type DeadlineSource } from '../core/latency/deadline.js';
import { guard, Thrown } from '../core/rx/guard.js';
import { after } from '../core/rx/wait.js';
import { runUnderPermit, underBreaker } from './circuitBreak.js';
import { operate, subscribeWithin } from '../core/rx/operate.js';
import { HedgeBudget } from './hedgeBudget.js';

/**
 * One hedge's call: what it subscribes, its name in events, and its breaker (one that would
 * refuse it — open, or half-open with every probe slot taken — is skipped; otherwise it guards
 * the call, as `circuitBreak` does).
 *
 * @example
 * ```ts
 * const onClaude: HedgeAttempt<TurnEvent> = { source: streamModel(claude, request), target: 'model:claude', breaker: breakers.get('model:claude') };
 * ```
 */
export interface HedgeAttempt<T> {
  /** What the hedge subscribes: a cold observable of the same work (an idempotent call). */
  readonly source: Observable<T>;
  /** Its name in `hedge` events. Defaults to the operator's `target`. */
  readonly target?: string;
  /**
   * Its breaker: while it would refuse the hedge (open, or half-open with no probe slot free), the
   * hedge is not started (`skipped`); otherwise it runs under it.
   */
  readonly breaker?: CircuitBreaker;
}

/**
 * Options of {@link hedge}.
 *
 * @example
 * ```ts
 * const options: HedgeOptions<TurnEvent> = { after: tracker.deadline({ quantile: 0.95, defaultMs: 2000 }), maxHedges: 1, budget, hub, target: 'model:gpt' };
 * ```
 */
export interface HedgeOptions<T> {
  /**
   * How long to wait for the first item of the attempts running before starting the next hedge,
   * in ms from the start of the last attempt: a number (≥ 0, or `Infinity`: never hedge), or a
   * {@link DeadlineSource} read when each wait is armed (`tracker.deadline({ quantile: 0.95, … })`:
   * hedge after the observed p95 of time to first token). Required.
   */
  readonly after: number | DeadlineSource;
  /** The most hedges a call makes besides its first attempt (an integer from 1 to 10). Defaults to 1. */
  readonly maxHedges?: number;
  /**
   * What each hedge subscribes, in order (the last one repeats): observables, or
   * {@link HedgeAttempt}s with a name and a breaker. Defaults to the source again (the same model
   * or tool, as `breaker` and `target` say).
   */
  readonly hedges?: readonly (Observable<T> | HedgeAttempt<T>)[];
  /**
   * What caps the extra load: each call puts `ratio` tokens in, each hedge takes one (see
   * {@link HedgeBudget}); share one across the operators of a provider. Defaults to a budget of
   * this operator's own, `new HedgeBudget()` (5 %, bursts of 10).
   */
  readonly budget?: HedgeBudget;
  /** The source's breaker: while it is open, hedges on the source are skipped, and they run under it. */
  readonly breaker?: CircuitBreaker;
  /** The source's name in events (`model:gpt`). Defaults to `'hedge'`. */
  readonly target?: string;
  /** Where `hedge` events are reported. Created inside `fallbackModel`'s `perModel` without one, the run's hub. */
  readonly hub?: HealHub;
  /** Where waits are armed and time is read. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

const AFTER = 'a number >= 0 (ms), Infinity, or a DeadlineSource ({ deadlineMs() })';
const isDelay = (u: unknown): u is number => typeof u === 'number' && u >= 0;

const props = {
  after: check(AFTER, (u): u is number | DeadlineSource => isDelay(u) || isDeadlineSource(u)),
  maxHedges: check('an integer from 1 to 10', (u): u is number => Number.isInteger(u) && (u as number) >= 1 && (u as number) <= 10),
  hedges: check('a non-empty array of observables or { source, target?, breaker? }', (u): u is readonly unknown[] => Array.isArray(u) && u.length > 0),
  budget: check('a HedgeBudget', (u): u is HedgeBudget => u instanceof HedgeBudget),
  breaker: check('a CircuitBreaker', (u): u is CircuitBreaker => u instanceof CircuitBreaker),
  target: NonEmptyString,
  hub: Hub,
  scheduler: Scheduler,
};

/** A hedge's call, resolved once: `source` is run under `breaker`. */
interface Candidate<T> {
  readonly source: Observable<T>;
  readonly target: string;
  readonly breaker: CircuitBreaker | undefined;
}

/**
 * Hedges a slow call (Google's "The Tail at Scale"; Polly's and gRPC's hedging): subscribes the
 * source; if no item has arrived `after` ms later, starts a hedge — the source again, or the next
 * of `hedges` — while the first goes on, and so on up to `maxHedges`. The first attempt to
 * deliver its first item (or to complete) wins: every other is unsubscribed at once, before that
 * item goes on (a model call's request is aborted), and only the winner's items follow. Two
 * attempts' output is never mixed: until one wins, none has emitted anything.
 *
 * - **Budget**: each call puts `budget.ratio` tokens in, each hedge takes one; without a whole
 *   token the hedge is not started (`denied`), so a provider slow for everyone gets at most that
 *   share more calls.
 * - **Breakers**: a hedge whose breaker would refuse it — open, or half-open with every probe
 *   slot taken — is not started (`skipped`; the next of `hedges` is tried in its place, with the
 *   same token); otherwise the breaker guards its hedge (a half-open one's hedge is a probe).
 * - **Failures**: an attempt that fails while another runs does not fail the call (`failed`);
 *   when the last one running fails, the call fails with its error (a hedge is not a retry:
 *   compose `retryWithBackoff` around it). After the win, the winner's error is the call's. A
 *   hedge the run's money cannot reserve (`BudgetExceededError`, `resource: 'usd'`: refused by
 *   `streamModel` before the model is called) is `denied` (its token back), the attempts running go
 *   on; any other crossed run budget (a hedge past `maxModelCalls`) fails the call at once, every
 *   other attempt cancelled: the run ends with it.
 * - Events on `hub`, once a hedge was started: `started`, `won`, `cancelled` (the losers, or all
 *   when the consumer leaves), `failed`, `skipped`, `denied`.
 *
 * For model turns and idempotent tools only: a hedge runs the same work twice.
 *
 * ```
 * hedge({ after: 3 })
 * attempt 0:  ^-----a-b|        (cancelled at 5: the hedge delivered first)
 * attempt 1:     ^-xy|          (started at 3)
 * result:     -----xy|
 * ```
 *
 * @example A p95 hedge on observed time to first token, within a 5 % budget
 * ```ts
 * const latency = new LatencyRegistry();
 * const gptLatency = latency.get('model:gpt');
 * const budget = new HedgeBudget({ ratio: 0.05 });
 * const answer$ = streamModel(gpt, request).pipe(
 *   gptLatency.track(),
 *   hedge({ after: gptLatency.deadline({ quantile: 0.95, floorMs: 200, defaultMs: 2000 }), budget, hub, target: 'model:gpt' }),
 * );
 * ```
 * @example A hedge on another model, skipped while its breaker is open
 * ```ts
 * streamModel(gpt, request).pipe(
 *   hedge({ after: 2000, hedges: [{ source: streamModel(claude, request), target: 'model:claude', breaker: breakers.get('model:claude') }] }),
 * );
 * ```
 * @throws {InvalidOptionError} at once, for a missing `after` or an invalid option.
 */
export function hedge<T>(options: HedgeOptions<T>): MonoTypeOperatorFunction<T> {
  const o = validateOptions('hedge', props, options);
  if (o.after === undefined) throw new InvalidOptionError('hedge', 'after', undefined, AFTER);
  const target = o.target ?? 'hedge';
  const hub = (o.hub as HealHub | undefined) ?? defaultHub()?.hub;
  const breaker = o.breaker;
  const hedges = (o.hedges ?? []).map((h, i): Candidate<T> => {
    if (h instanceof Observable) return { source: h as Observable<T>, target, breaker: undefined };
    const attempt = h as HedgeAttempt<T> | undefined;
    if (typeof attempt !== 'object' || attempt === null || !(attempt.source instanceof Observable)) {
      throw new InvalidOptionError('hedge', `hedges[${i}]`, h, 'an observable or { source: Observable, target?, breaker? }');
    }
    if (attempt.target !== undefined && !NonEmptyString.is(attempt.target))
      throw new InvalidOptionError('hedge', `hedges[${i}].target`, attempt.target, 'a non-empty string');
    if (attempt.breaker !== undefined && !(attempt.breaker instanceof CircuitBreaker)) {
      throw new InvalidOptionError('hedge', `hedges[${i}].breaker`, attempt.breaker, 'a CircuitBreaker');
    }
    return { source: attempt.source, target: attempt.target ?? target, breaker: attempt.breaker };
  });
  for (const h of hedges) if (h.breaker) hub?.watch(h.breaker);
  if (breaker) hub?.watch(breaker);
  const rules: HedgeRules = {
    after: o.after,
    maxHedges: o.maxHedges ?? 1,
    budget: o.budget ?? new HedgeBudget(),
    hub,
    scheduler: o.scheduler ?? asyncScheduler,
  };
  return operate<T>((source, subscriber) => {
    const own: Candidate<T> = { source, target, breaker };
    return new HedgeRace(subscriber, own, hedges.length === 0 ? [own] : hedges, rules).start();
  });
}

/** What every call of one `hedge` shares. */
interface HedgeRules {
  readonly after: number | DeadlineSource;
  readonly maxHedges: number;
  readonly budget: HedgeBudget;
  readonly hub: HealHub | undefined;
  readonly scheduler: SchedulerLike;
}

/**
 * One call of {@link hedge}: the attempts running, the wait for the next hedge, and the winner.
 * It is the call's teardown: unsubscribing cancels every attempt and the wait.
 */
class HedgeRace<T> {
  private readonly running = new Map<number, RaceEntry<T>>();
  /** Attempts started (the first one included): the next one's number. */
  private started = 0;
  /** Where in the hedges' list the next hedge starts looking (the last one repeats). */
  private cursor = 0;
  private winner = -1;
  private timer: Subscription | undefined = undefined;
  private lastStart = 0;
  private over = false;

  constructor(
    private readonly subscriber: Subscriber<T>,
    private readonly first: Candidate<T>,
    private readonly hedges: readonly Candidate<T>[],
    private readonly rules: HedgeRules,
  ) {}

  start(): HedgeRace<T> {
    this.rules.budget.deposit();
    this.run(this.first, 0);
    return this;
  }

  /** Teardown: the consumer left (or the call ended): every attempt still running is cancelled, and the wait. */
  unsubscribe(): void {
    if (this.over) return;
    this.over = true;
    this.disarm();
    this.cancelAll(-1);
  }

  /**
   * Starts an attempt: under `permit` (a hedge's, asked for before its token was spent), else
   * under its breaker, asked now (the first attempt: a refusal is the call's error), else as is.
   */
  private run(candidate: Candidate<T>, attempt: number, permit?: CircuitPermit): void {
    this.started++;
    this.lastStart = this.rules.scheduler.now();
    const inner = new RaceEntry<T>(this, attempt, candidate.target);
    this.running.set(attempt, inner);
    const { source, breaker } = candidate;
    const call$ = permit ? new Observable<T>((s) => runUnderPermit(source, s, permit)) : breaker ? underBreaker(source, breaker, this.rules.hub) : source;
    subscribeWithin(inner.link, call$, inner);
    // armed after subscribing: an attempt that won (or failed last) at once needs no wait
    if (!this.over && this.winner === -1 && inner === this.running.get(attempt)) this.arm();
  }

  /** The wait for the next hedge, when one is allowed. */
  private arm(): void {
    this.disarm();
    if (this.started > this.rules.maxHedges) return;
    const wait = this.rules.after;
    let delay: number;
    if (typeof wait === 'number') delay = wait;
    else {
      const read = guard(() => wait.deadlineMs());
      if (read instanceof Thrown) return this.fail(read.error);
      if (typeof read !== 'number' || !(read >= 0))
        return this.fail(new InvalidOptionError('hedge', 'after.deadlineMs()', read, 'a number >= 0 (ms) or Infinity'));
      delay = read;
    }
    if (delay === Infinity) return;
    this.timer = afterDelay(delay, this);
  }

  private disarm(): void {
    this.timer?.unsubscribe();
    this.timer = undefined;
  }

  /**
   * The wait is over with no item yet: the next hedge, unless the budget is spent or its breaker
   * would refuse it — open, or half-open with every probe slot taken (skipped: the next of the
   * list takes its place, and the token goes back).
   */
  onTimer(): void {
    this.timer = undefined;
    if (this.over || this.winner !== -1) return;
    const attempt = this.started;
    const waited = this.rules.scheduler.now() - this.lastStart;
    for (;;) {
      const last = this.cursor >= this.hedges.length - 1;
      const candidate = this.hedges[Math.min(this.cursor, this.hedges.length - 1)]!;
      if (!last) this.cursor++;
      const { breaker } = candidate;
      // open: skipped without touching the budget (nor asking for a permit)
      if (breaker?.state === 'open') {
        this.report('skipped', attempt, candidate.target);
        if (last) return;
        continue;
      }
      // the token first: a hedge the budget denies takes no half-open probe slot
      if (!this.rules.budget.withdraw()) return this.report('denied', attempt, candidate.target);
      const permit = breaker?.acquire();
      if (permit instanceof CircuitOpenError) {
        this.rules.budget.refund();
        this.report('skipped', attempt, candidate.target);
        if (last) return;
        continue;
      }
      this.report('started', attempt, candidate.target, { afterMs: waited });
      return this.run(candidate, attempt, permit);
    }
  }

  /** An attempt's item (or completion, `value` absent): the first one wins the call. Whether it may go on. */
  deliver(inner: RaceEntry<T>): boolean {
    if (this.over) return false;
    if (this.winner === inner.attempt) return true;
    if (this.winner !== -1) return false;
    this.winner = inner.attempt;
    this.disarm();
    if (this.started > 1) this.report('won', inner.attempt, inner.target);
    // every other attempt is unsubscribed before the winner's first item goes on
    this.cancelAll(inner.attempt);
    return true;
  }

  /** An attempt failed: the call's error if it was the winner or the last running; else the race goes on. */
  failed(inner: RaceEntry<T>, error: unknown): void {
    if (this.over) return;
    this.running.delete(inner.attempt);
    if (this.winner === inner.attempt || this.running.size === 0) return this.fail(error);
    const category = classifyError(error).category;
    if (category === 'budget_exceeded') {
      // a hedge whose reservation the run's money could not hold (it never started): denied, its
      // token back; the attempts running go on. Any other crossed budget ends the call (the run ends with it)
      if ((error as { resource?: unknown }).resource === 'usd') {
        this.rules.budget.refund();
        return this.report('denied', inner.attempt, inner.target, { category });
      }
      return this.fail(error);
    }
    this.report('failed', inner.attempt, inner.target, { category });
  }

  completed(): void {
    if (this.over) return;
    this.over = true;
    this.disarm();
    this.subscriber.complete();
  }

  next(value: T): void {
    this.subscriber.next(value);
  }

  private fail(error: unknown): void {
    if (this.over) return;
    this.over = true;
    this.disarm();
    this.cancelAll(-1);
    this.subscriber.error(error);
  }

  /** Unsubscribes every running attempt but `keep` (reported `cancelled` once a hedge was started). */
  private cancelAll(keep: number): void {
    const hedged = this.started > 1;
    for (const [attempt, inner] of [...this.running]) {
      if (attempt === keep) continue;
      this.running.delete(attempt);
      inner.unsubscribe();
      if (hedged) this.report('cancelled', attempt, inner.target);
    }
  }

  private report(kind: HedgeEvent['kind'], attempt: number, target: string, extra?: { afterMs?: number; category?: string }): void {
    const hub = this.rules.hub;
    if (!hub) return;
    hub.report({ type: 'hedge', target, kind, attempt, at: this.rules.scheduler.now(), ...extra });
  }

  /** @internal the scheduler the race's waits run on */
  get scheduler(): SchedulerLike {
    return this.rules.scheduler;
  }
}

/** Arms the race's wait for its next hedge. */
function afterDelay(delay: number, race: HedgeRace<unknown>): Subscription {
  return after(delay, race.scheduler, () => race.onTimer());
}

/**
 * One attempt of a hedged call, as its observer: its items go on only once it has won. `link`
 * holds its subscription (made before the attempt is subscribed): cancelling it stops the
 * attempt, also one still emitting synchronously.
 */
class RaceEntry<T> implements Observer<T> {
  readonly link = new Subscription();

  constructor(
    private readonly race: HedgeRace<T>,
    readonly attempt: number,
    readonly target: string,
  ) {}

  unsubscribe(): void {
    this.link.unsubscribe();
  }

  next(value: T): void {
    if (this.race.deliver(this)) this.race.next(value);
  }

  error(error: unknown): void {
    this.race.failed(this, error);
  }

  complete(): void {
    if (this.race.deliver(this)) this.race.completed();
  }
}
