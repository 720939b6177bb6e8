/**
 * The article's resilience metrics, computed from the events: how often breakers open and how
 * long they stay open, retry rates per provider and error category, fallback frequency,
 * self-correction success rate, degraded time per capability.
 *
 * @module
 */
import { asyncScheduler, Observable, type SchedulerLike } from 'rxjs';
import type { AgentEvent, HealEvent } from '../core/events/events.js';
import { InvalidOptionError } from '../core/errors/errors.js';
import { check, oneOf, Scheduler, validateOptions } from '../core/errors/options.js';

/** Counts by key (a target, an error category, a resource). */
export type Counts = Readonly<Record<string, number>>;

/**
 * What happened to one target: a tool (`tool:<name>`) or a model / provider (`model:<id>`).
 *
 * @example
 * ```ts
 * const weather: TargetSummary | undefined = summary.targets['tool:get_weather'];
 * console.log(`${weather?.retries} retries in ${weather?.calls} executions`, weather?.retriesByCategory);
 * ```
 */
export interface TargetSummary {
  /** Executions seen (`call-start`; every retry counts). */
  readonly calls: number;
  /** Executions that failed, by error category. */
  readonly errors: Counts;
  /** Retries scheduled (`retry` events naming this target). */
  readonly retries: number;
  /** Retries by the category of the error retried. */
  readonly retriesByCategory: Counts;
  /** Attempts after a retry that succeeded (`retry-succeeded`). */
  readonly retriesSucceeded: number;
  /** `retries / calls`: retries scheduled per execution; `null` without executions. */
  readonly retryRate: number | null;
}

/**
 * One circuit breaker: how often it opened and how long it stayed open.
 *
 * @example
 * ```ts
 * const b: CircuitSummary | undefined = summary.circuits['tool:broken_api'];
 * console.log(`opened ${b?.opened}×, open ${b?.openMs} ms in all (mean ${b?.meanOpenMs} ms)`);
 * ```
 */
export interface CircuitSummary {
  /** The state after the last transition seen (`'closed'` if none was seen). */
  readonly state: 'closed' | 'open' | 'half-open';
  /** Times it opened (from closed, or from half-open after a failed probe). */
  readonly opened: number;
  /** Times it closed again. */
  readonly closed: number;
  /** Calls it rejected while open. */
  readonly rejected: number;
  /** Time spent open, ms: each period from opening to half-open (or closed); a period still running counts up to `at`. */
  readonly openMs: number;
  /** The longest open period, ms (the running one included). */
  readonly longestOpenMs: number;
  /** `openMs / opened`; `null` if it never opened. */
  readonly meanOpenMs: number | null;
  /** When the running open period began; absent unless open. */
  readonly openSince?: number;
}

/**
 * One capability: how often, and how long, it was degraded.
 *
 * @example
 * ```ts
 * const search: CapabilitySummary | undefined = summary.capabilities['knowledge-search'];
 * console.log(`degraded ${search?.degraded}×, ${search?.degradedMs} ms in all`);
 * ```
 */
export interface CapabilitySummary {
  /** Times it became unavailable (a new reason while unavailable does not count again). */
  readonly degraded: number;
  /** Times it became available again. */
  readonly restored: number;
  /** Time spent unavailable, ms; a period still running counts up to `at`. */
  readonly degradedMs: number;
  /** When the running degraded period began; absent unless degraded. */
  readonly degradedSince?: number;
  /** The latest reason given. */
  readonly reason?: string;
}

/**
 * The resilience metrics, as of `at`. Rates are `null` when their denominator is 0. Every value
 * is a fresh plain object (JSON-serialisable).
 *
 * @example
 * ```ts
 * summarize(run$, { emit: 'final' }).subscribe((s: ResilienceSummary) => {
 *   console.log('fallbacks per model call', s.fallbacks.perModelCall);
 *   console.log('self-correction success rate', s.reflections.successRate);
 * });
 * ```
 */
export interface ResilienceSummary {
  /** Scheduler time the summary is as of (the last event's, or when the stream ended). */
  readonly at: number;
  /** Events counted (resilience events, and tool results / validations for self-correction). */
  readonly events: number;
  /**
   * Model calls and tool executions seen (`call-start`). `model` counts a run's model calls (a
   * turn and each retry of it), not the provider attempts inside one (`call-start` with
   * `parentId`: each model a `fallbackModel` tried), which count under their own target.
   */
  readonly calls: { readonly model: number; readonly tool: number };
  /** Per target (`tool:<name>`, `model:<id>` — a run's model and each provider attempted —, or whatever a `retry` event names). */
  readonly targets: Readonly<Record<string, TargetSummary>>;
  /** Retries in all; `withheld`: retries withheld for a non-idempotent tool that ran (`retry-withheld`). */
  readonly retries: { readonly total: number; readonly succeeded: number; readonly withheld: number; readonly byCategory: Counts };
  /** Per breaker. */
  readonly circuits: Readonly<Record<string, CircuitSummary>>;
  readonly fallbacks: {
    readonly total: number;
    /** After the consumer had seen part of the answer. */
    readonly midStream: number;
    /** By `'<from> > <to>'`. */
    readonly byRoute: Counts;
    readonly byReason: Counts;
    /** `total / calls.model`: how often a model call needed a fallback. */
    readonly perModelCall: number | null;
  };
  /** Tool self-correction: reflections, and how many were followed by a success of that tool. */
  readonly reflections: {
    readonly total: number;
    /** Give-up instructions (past `maxReflections`). */
    readonly exhausted: number;
    /**
     * Reflections followed by a success of that tool before any further reflection on it (the
     * model fixed its call). A success of a parallel call of the same tool counts too.
     */
    readonly corrected: number;
    /** `corrected / (total - exhausted)`: reflections not (yet) followed by a success count as failures. */
    readonly successRate: number | null;
  };
  /** Output self-correction (`validation` events of `validateOutput`; only in a run's stream). */
  readonly validations: {
    readonly checks: number;
    readonly invalid: number;
    /** Answers that failed a first check and passed a later one. */
    readonly corrected: number;
    /** `corrected / answers that failed their first check`. */
    readonly successRate: number | null;
  };
  /** Per capability. */
  readonly capabilities: Readonly<Record<string, CapabilitySummary>>;
  /** Runs stopped by a budget, by resource. */
  readonly budgetExceeded: Counts;
}

interface MutableTarget {
  calls: number;
  errors: Record<string, number>;
  retries: number;
  retriesByCategory: Record<string, number>;
  retriesSucceeded: number;
}

interface MutableCircuit {
  state: 'closed' | 'open' | 'half-open';
  opened: number;
  closed: number;
  rejected: number;
  openMs: number;
  longestOpenMs: number;
  openSince: number | undefined;
}

interface MutableCapability {
  degraded: number;
  restored: number;
  degradedMs: number;
  degradedSince: number | undefined;
  reason: string | undefined;
}

const bump = (counts: Record<string, number>, key: string, by = 1): void => {
  counts[key] = (counts[key] ?? 0) + by;
};
const rate = (n: number, d: number): number | null => (d === 0 ? null : n / d);

/** Accumulates events; `summary(now)` gives a fresh {@link ResilienceSummary}. */
class Summarizer {
  private events = 0;
  private readonly calls = { model: 0, tool: 0 };
  private readonly targets = new Map<string, MutableTarget>();
  private readonly retries = { total: 0, succeeded: 0, withheld: 0, byCategory: {} as Record<string, number> };
  private readonly circuits = new Map<string, MutableCircuit>();
  private readonly fallbacks = { total: 0, midStream: 0, byRoute: {} as Record<string, number>, byReason: {} as Record<string, number> };
  private readonly reflections = { total: 0, exhausted: 0, corrected: 0 };
  /** Per tool: reflections waiting for the tool's next outcome. */
  private readonly awaiting = new Map<string, number>();
  private readonly validations = { checks: 0, invalid: 0, corrected: 0, failedFirst: 0 };
  private readonly capabilities = new Map<string, MutableCapability>();
  private readonly budgetExceeded: Record<string, number> = {};

  private target(name: string): MutableTarget {
    let t = this.targets.get(name);
    if (!t) this.targets.set(name, (t = { calls: 0, errors: {}, retries: 0, retriesByCategory: {}, retriesSucceeded: 0 }));
    return t;
  }

  private circuit(name: string): MutableCircuit {
    let c = this.circuits.get(name);
    if (!c) this.circuits.set(name, (c = { state: 'closed', opened: 0, closed: 0, rejected: 0, openMs: 0, longestOpenMs: 0, openSince: undefined }));
    return c;
  }

  private capability(name: string): MutableCapability {
    let c = this.capabilities.get(name);
    if (!c) this.capabilities.set(name, (c = { degraded: 0, restored: 0, degradedMs: 0, degradedSince: undefined, reason: undefined }));
    return c;
  }

  /** A tool succeeded: reflections waiting on it were corrections. */
  private toolSucceeded(tool: string): void {
    const waiting = this.awaiting.get(tool);
    if (waiting === undefined) return;
    this.reflections.corrected += waiting;
    this.awaiting.delete(tool);
  }

  /** Counts one event at `time`; returns whether it counted. */
  add(event: AgentEvent, time: number): boolean {
    const e = event as HealEvent | Extract<AgentEvent, { type: 'tool-result' | 'validation' }>;
    switch (e.type) {
      case 'call-start':
        if (e.parentId === undefined) this.calls[e.kind]++;
        this.target(`${e.kind}:${e.name}`).calls++;
        break;
      case 'call-end':
        if (e.outcome === 'error') bump(this.target(`${e.kind}:${e.name}`).errors, e.category ?? 'unknown');
        if (e.kind === 'tool' && e.outcome === 'success') this.toolSucceeded(e.name);
        break;
      case 'tool-result':
        this.toolSucceeded(e.name);
        break;
      case 'retry': {
        const t = this.target(e.target);
        t.retries++;
        bump(t.retriesByCategory, e.category);
        this.retries.total++;
        bump(this.retries.byCategory, e.category);
        break;
      }
      case 'retry-succeeded':
        this.target(e.target).retriesSucceeded++;
        this.retries.succeeded++;
        break;
      case 'retry-withheld':
        this.retries.withheld++;
        break;
      case 'circuit': {
        const c = this.circuit(e.breaker);
        if (e.kind === 'rejected') {
          c.rejected++;
          break;
        }
        // a transition carrying its own time (`at`) is preferred to the time it was received
        const own = (e as { at?: unknown }).at;
        const at = typeof own === 'number' ? own : time;
        if (c.openSince !== undefined && e.to !== 'open') {
          const period = at - c.openSince;
          c.openMs += period;
          c.longestOpenMs = Math.max(c.longestOpenMs, period);
          c.openSince = undefined;
        }
        if (e.to === 'open') {
          c.opened++;
          c.openSince ??= at;
        }
        if (e.to === 'closed') c.closed++;
        c.state = e.to;
        break;
      }
      case 'fallback':
        this.fallbacks.total++;
        if (e.midStream) this.fallbacks.midStream++;
        bump(this.fallbacks.byRoute, `${e.from} > ${e.to}`);
        bump(this.fallbacks.byReason, e.reason);
        break;
      case 'reflection':
        this.reflections.total++;
        if (e.exhausted) {
          this.reflections.exhausted++;
          this.awaiting.delete(e.tool);
        } else {
          this.awaiting.set(e.tool, 1);
        }
        break;
      case 'validation':
        this.validations.checks++;
        if (!e.valid) this.validations.invalid++;
        if (!e.valid && e.attempt === 1) this.validations.failedFirst++;
        if (e.valid && e.attempt > 1) this.validations.corrected++;
        break;
      case 'degraded': {
        const c = this.capability(e.capability);
        if (c.degradedSince === undefined) {
          c.degraded++;
          c.degradedSince = time;
        }
        c.reason = e.reason;
        break;
      }
      case 'restored': {
        const c = this.capability(e.capability);
        c.restored++;
        if (c.degradedSince !== undefined) c.degradedMs += time - c.degradedSince;
        c.degradedSince = undefined;
        break;
      }
      case 'budget-exceeded':
        bump(this.budgetExceeded, e.resource);
        break;
      default:
        return false;
    }
    this.events++;
    return true;
  }

  summary(at: number): ResilienceSummary {
    const targets: Record<string, TargetSummary> = {};
    for (const [name, t] of this.targets) {
      targets[name] = { ...t, errors: { ...t.errors }, retriesByCategory: { ...t.retriesByCategory }, retryRate: rate(t.retries, t.calls) };
    }
    const circuits: Record<string, CircuitSummary> = {};
    for (const [name, c] of this.circuits) {
      const running = c.openSince === undefined ? 0 : Math.max(0, at - c.openSince);
      const openMs = c.openMs + running;
      circuits[name] = {
        state: c.state,
        opened: c.opened,
        closed: c.closed,
        rejected: c.rejected,
        openMs,
        longestOpenMs: Math.max(c.longestOpenMs, running),
        meanOpenMs: rate(openMs, c.opened),
        ...(c.openSince !== undefined ? { openSince: c.openSince } : {}),
      };
    }
    const capabilities: Record<string, CapabilitySummary> = {};
    for (const [name, c] of this.capabilities) {
      capabilities[name] = {
        degraded: c.degraded,
        restored: c.restored,
        degradedMs: c.degradedMs + (c.degradedSince === undefined ? 0 : Math.max(0, at - c.degradedSince)),
        ...(c.degradedSince !== undefined ? { degradedSince: c.degradedSince } : {}),
        ...(c.reason !== undefined ? { reason: c.reason } : {}),
      };
    }
    const r = this.reflections;
    const v = this.validations;
    return {
      at,
      events: this.events,
      calls: { ...this.calls },
      targets,
      retries: { ...this.retries, byCategory: { ...this.retries.byCategory } },
      circuits,
      fallbacks: {
        ...this.fallbacks,
        byRoute: { ...this.fallbacks.byRoute },
        byReason: { ...this.fallbacks.byReason },
        perModelCall: rate(this.fallbacks.total, this.calls.model),
      },
      reflections: { ...r, successRate: rate(r.corrected, r.total - r.exhausted) },
      validations: { checks: v.checks, invalid: v.invalid, corrected: v.corrected, successRate: rate(v.corrected, v.failedFirst) },
      capabilities,
      budgetExceeded: { ...this.budgetExceeded },
    };
  }
}

/**
 * Options of {@link summarize}.
 *
 * @example
 * ```ts
 * const options: SummarizeOptions = { scheduler: asyncScheduler, emit: 'final' };
 * ```
 */
export interface SummarizeOptions {
  /**
   * The clock: events without their own `at` are timed by `scheduler.now()` when they arrive
   * (virtual time inside `TestScheduler.run`). Use the scheduler given to `runAgent`. Defaults
   * to `asyncScheduler`.
   */
  readonly scheduler?: SchedulerLike;
  /**
   * `'each'` (default): a summary after every event counted — a running summary, e.g. for a
   * dashboard (`auditTime` it if events are many). `'final'`: one summary when the stream
   * completes, as of that time.
   */
  readonly emit?: 'each' | 'final';
}

const props = { scheduler: Scheduler, emit: oneOf('each', 'final') };
const FiniteNumber = check('a finite number', (u): u is number => typeof u === 'number' && Number.isFinite(u));

/**
 * The resilience metrics of an events stream — a hub's `events$` (hot, never completes: use
 * the running summaries) or a run's events (`emit: 'final'` gives one summary at its end).
 * Events are timed by their `at` when they have one, else by `scheduler.now()` on arrival. An
 * error of the input is passed on (after the final summary, with `emit: 'final'`).
 *
 * @example A dashboard fed by the hub
 * ```ts
 * summarize(hub.events$).pipe(auditTime(5_000)).subscribe((s) => {
 *   console.log(`retry rate get_weather: ${s.targets['tool:get_weather']?.retryRate}`);
 *   console.log(`broken_api open for ${s.circuits['tool:broken_api']?.openMs} ms`);
 * });
 * ```
 * @example One run, in the demo
 * ```ts
 * const run$ = runAgent(config).pipe(share());
 * summarize(run$, { emit: 'final' }).subscribe((s) => console.table(s.targets));
 * run$.subscribe(render);
 * ```
 * @throws {InvalidOptionError} at once, for an invalid option.
 */
export function summarize(events$: Observable<AgentEvent>, options?: SummarizeOptions): Observable<ResilienceSummary> {
  const o = validateOptions('summarize', props, options);
  const scheduler = o.scheduler ?? asyncScheduler;
  const each = (o.emit ?? 'each') === 'each';
  return new Observable<ResilienceSummary>((subscriber) => {
    const s = new Summarizer();
    return events$.subscribe({
      next: (event) => {
        const at = typeof (event as { at?: unknown }).at === 'number' ? (event as { at: number }).at : scheduler.now();
        if (s.add(event, at) && each) subscriber.next(s.summary(at));
      },
      error: (error: unknown) => {
        if (!each) subscriber.next(s.summary(scheduler.now()));
        subscriber.error(error);
      },
      complete: () => {
        if (!each) subscriber.next(s.summary(scheduler.now()));
        subscriber.complete();
      },
    });
  });
}

/**
 * An event, or `[time, event]` as `record` (from `rxheal/testing`) collects them.
 *
 * @example
 * ```ts
 * const events: TimedEvent[] = [[100, { type: 'degraded', capability: 'search', reason: 'slow' }], [400, { type: 'restored', capability: 'search' }]];
 * summarizeEvents(events).capabilities['search']?.degradedMs; // 300
 * ```
 */
export type TimedEvent = AgentEvent | readonly [number, AgentEvent];

const isPair = (item: TimedEvent): item is readonly [number, AgentEvent] => Array.isArray(item);

/**
 * {@link summarize} for events already collected (a log, a test recording). Each event is timed
 * by the pair's time (`[time, event]`), else its own `at`, else the time of the event before it
 * (0 at first); durations need timed events. `now`, the summary's time, defaults to the last
 * event's.
 *
 * @example
 * ```ts
 * const log = record(runAgent(config)); // inside TestScheduler.run, then flush()
 * const s = summarizeEvents(log.events);
 * expect(s.reflections.successRate).to.equal(1);
 * ```
 * @throws {InvalidOptionError} for a non-array, or a `now` that is not a finite number.
 */
export function summarizeEvents(events: readonly TimedEvent[], options?: { readonly now?: number }): ResilienceSummary {
  if (!Array.isArray(events)) throw new InvalidOptionError('summarizeEvents', 'events', events, 'an array of events or [time, event] pairs');
  const o = validateOptions('summarizeEvents', { now: FiniteNumber }, options);
  const s = new Summarizer();
  let time = 0;
  for (const item of events) {
    const [t, event] = isPair(item) ? item : [undefined, item];
    const own = (event as { at?: unknown }).at;
    time = t ?? (typeof own === 'number' ? own : time);
    s.add(event, time);
  }
  return s.summary(o.now ?? time);
}
