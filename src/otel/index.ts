/**
 * `rxheal/otel`: OpenTelemetry traces and metrics from the resilience events. Needs
 * `@opentelemetry/api` (an optional peer of rxheal) and an SDK you set up; without an SDK the API
 * is a no-op. Nothing is recorded unless you call {@link instrument}.
 *
 * @module
 */
import {
  context,
  metrics,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Counter,
  type Histogram,
  type HrTime,
  type Meter,
  type ObservableResult,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { asyncScheduler, type Observable, type SchedulerLike, type Subscription } from 'rxjs';
import type { AgentEvent, CallEndEvent, CallStartEvent, HealEvent } from '../core/events/events.js';
import type { LatencyQuantiles, LatencySnapshot } from '../core/latency/tracker.js';
import { after } from '../core/rx/wait.js';
import { check, Scheduler, validateOptions } from '../core/errors/options.js';
import { InvalidOptionError } from '../core/errors/errors.js';

/**
 * Options of {@link instrument}.
 *
 * @example
 * ```ts
 * const options: InstrumentOptions = { tracer: provider.getTracer('my-agent'), meter: meterProvider.getMeter('my-agent') };
 * instrument(hub.events$, options);
 * ```
 */
export interface InstrumentOptions {
  /** Where spans go. Defaults to `trace.getTracer('rxheal')` (the global tracer provider). */
  readonly tracer?: Tracer;
  /** Where metrics go. Defaults to `metrics.getMeter('rxheal')` (the global meter provider). */
  readonly meter?: Meter;
  /**
   * The clock of events without an `at` (retries, fallbacks, …), and of the end-of-instant
   * action that ends spans. Use the scheduler given to `runAgent`. Defaults to `asyncScheduler`.
   */
  readonly scheduler?: SchedulerLike;
}

const props = {
  tracer: check(
    'an OpenTelemetry Tracer (startSpan())',
    (u): u is Tracer => typeof u === 'object' && u !== null && typeof (u as Tracer).startSpan === 'function',
  ),
  meter: check(
    'an OpenTelemetry Meter (createCounter(), createHistogram())',
    (u): u is Meter =>
      typeof u === 'object' && u !== null && typeof (u as Meter).createCounter === 'function' && typeof (u as Meter).createHistogram === 'function',
  ),
  scheduler: Scheduler,
};

/**
 * Bucket boundaries of `rxheal.retry.backoff`, in ms (advice to the SDK; a View can override them).
 *
 * @example
 * ```ts
 * const boundaries = [...BACKOFF_BUCKETS_MS, 120_000];
 * new MeterProvider({
 *   views: [{ instrumentName: 'rxheal.retry.backoff', aggregation: { type: AggregationType.EXPLICIT_BUCKET_HISTOGRAM, options: { boundaries } } }],
 * });
 * ```
 */
export const BACKOFF_BUCKETS_MS: readonly number[] = [0, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000];

/** Scheduler milliseconds as HrTime, so the SDK never reads a small (virtual) time as performance-relative. */
function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

interface Call {
  readonly span: Span;
  readonly kind: 'model' | 'tool';
  /** `tool:<name>` / `model:<name>`: what retries, breakers and fallbacks name. */
  readonly target: string;
  readonly id: string;
  /** The run's model call a provider attempt was made under. */
  readonly parentId: string | undefined;
  readonly start: number;
}

interface Instruments {
  readonly retries: Counter;
  readonly withheld: Counter;
  readonly backoff: Histogram;
  readonly transitions: Counter;
  readonly rejections: Counter;
  readonly fallbacks: Counter;
  readonly reflections: Counter;
  readonly degradations: Counter;
  readonly budgets: Counter;
  readonly hedges: Counter;
  readonly bulkheads: Counter;
  readonly resumes: Counter;
}

function instrumentsOf(meter: Meter): Instruments {
  return {
    retries: meter.createCounter('rxheal.retries', { description: 'Retries scheduled, by target and error category', unit: '{retry}' }),
    withheld: meter.createCounter('rxheal.retries.withheld', { description: 'Retries withheld for a tool that is not idempotent', unit: '{retry}' }),
    backoff: meter.createHistogram('rxheal.retry.backoff', {
      description: 'Wait before each retry',
      unit: 'ms',
      advice: { explicitBucketBoundaries: [...BACKOFF_BUCKETS_MS] },
    }),
    transitions: meter.createCounter('rxheal.circuit.transitions', { description: 'Circuit breaker state changes', unit: '{transition}' }),
    rejections: meter.createCounter('rxheal.circuit.rejections', { description: 'Calls rejected by an open circuit', unit: '{call}' }),
    fallbacks: meter.createCounter('rxheal.fallbacks', { description: 'Fallbacks activated', unit: '{fallback}' }),
    reflections: meter.createCounter('rxheal.reflections', { description: 'Reflection prompts injected after a tool error', unit: '{reflection}' }),
    degradations: meter.createCounter('rxheal.degradations', { description: 'Capabilities degraded', unit: '{degradation}' }),
    budgets: meter.createCounter('rxheal.budget.exceeded', { description: 'Runs stopped by a budget', unit: '{run}' }),
    hedges: meter.createCounter('rxheal.hedges', {
      description: 'What hedging did with each attempt: started, won, cancelled, failed, skipped, denied',
      unit: '{attempt}',
    }),
    bulkheads: meter.createCounter('rxheal.bulkhead.calls', { description: 'Calls a bulkhead queued, admitted from its queue, or refused', unit: '{call}' }),
    resumes: meter.createCounter('rxheal.resumes', { description: 'Cut streams picked up again where they stopped (dropped or stalled)', unit: '{resume}' }),
  };
}

/**
 * Records the resilience events of a stream — a hub's `events$`, or a run's events (other
 * events are skipped) — as OpenTelemetry spans and metrics, until you unsubscribe or the stream
 * ends.
 *
 * **Spans**, one per model call and per tool execution, from `call-start` / `call-end` (matched
 * by kind, id and start time; times are the events' scheduler times):
 * - `chat <model>` (kind CLIENT): `gen_ai.operation.name: 'chat'`, `gen_ai.request.model`,
 *   `gen_ai.usage.input_tokens` / `gen_ai.usage.output_tokens`. A provider attempt made inside a
 *   run's model call (each model a `fallbackModel` tries: `call-start` with `parentId`) is a child
 *   span of that call's span, with `rxheal.call.parent_id`;
 * - `execute_tool <tool>` (kind INTERNAL): `gen_ai.operation.name: 'execute_tool'`,
 *   `gen_ai.tool.name`, `gen_ai.tool.call.id`;
 * - both: `rxheal.call.id`, `rxheal.step`, `rxheal.call.outcome` (`success`, `error`,
 *   `cancelled`); on error `error.type` (the error category) and status ERROR with the error text.
 *
 * **Span events** — `rxheal.retry`, `rxheal.retry.succeeded`, `rxheal.retry.withheld`, `rxheal.reflection`,
 * `rxheal.fallback`, `rxheal.circuit.transition`, `rxheal.circuit.rejected`, `rxheal.degraded`,
 * `rxheal.restored`, `rxheal.hedge`, `rxheal.bulkhead`, `rxheal.resume` — go on the span of the call they are about:
 * 1. the call named by the event — retries and breakers by target (`tool:<name>`,
 *    `model:<name>`), hedges and resumes by target, bulkheads by name, fallbacks by `from`, reflections by
 *    tool call id — open, or the one that
 *    just ended;
 * 2. otherwise, for model targets, the innermost open model call (the one open, or the provider
 *    attempt open under the run's call), or the model call that just ended;
 * 3. `degraded` / `restored`: the call that just ended (`degradeAfter` ends the call, then reports).
 *
 * Otherwise the event is only counted. "Just ended": operators report right after the call they
 * heal ends, in the same instant; so a span is ended (at its `call-end` time) when the next call
 * starts or ends, at the end of the instant (a 0 ms action on `scheduler`), or when this
 * subscription ends. A retry is therefore recorded on the failed attempt it retries.
 *
 * **Metrics** (attributes in brackets): counters `rxheal.retries` [`rxheal.target`,
 * `error.type`], `rxheal.retries.withheld` [`rxheal.target`, `error.type`,
 * `rxheal.retry.withheld_reason`], `rxheal.circuit.transitions` [`rxheal.breaker`, `rxheal.circuit.from`,
 * `rxheal.circuit.to`], `rxheal.circuit.rejections` [`rxheal.breaker`], `rxheal.fallbacks`
 * [`rxheal.fallback.from`, `rxheal.fallback.to`, `rxheal.fallback.reason`],
 * `rxheal.reflections` [`gen_ai.tool.name`, `rxheal.reflection.exhausted`],
 * `rxheal.degradations` [`rxheal.capability`], `rxheal.budget.exceeded`
 * [`rxheal.budget.resource`], `rxheal.hedges` [`rxheal.target`, `rxheal.hedge.kind`],
 * `rxheal.bulkhead.calls` [`rxheal.bulkhead`, `rxheal.bulkhead.kind`, `rxheal.bulkhead.reason`],
 * `rxheal.resumes` [`rxheal.target`, `rxheal.resume.reason`];
 * histogram `rxheal.retry.backoff` (ms) [`rxheal.target`, `error.type`]. Observed latency's
 * quantiles are gauges of their own: {@link instrumentLatency}.
 *
 * Pass a hot stream: a cold one (`runAgent(…)`) would be started by this subscription.
 *
 * @example
 * ```ts
 * import { instrument } from 'rxheal/otel';
 * const hub = new HealHub();
 * const telemetry = instrument(hub.events$); // global tracer and meter
 * runAgent({ model, tools, messages, hub, toolPipeline }).subscribe(render);
 * // at shutdown: telemetry.unsubscribe();
 * ```
 * @throws {InvalidOptionError} at once, for an invalid option.
 */
export function instrument(events$: Observable<AgentEvent>, options?: InstrumentOptions): Subscription {
  const o = validateOptions('instrument', props, options);
  const tracer = o.tracer ?? trace.getTracer('rxheal');
  const meter = o.meter ?? metrics.getMeter('rxheal');
  const scheduler = o.scheduler ?? asyncScheduler;
  const m = instrumentsOf(meter);

  /** Calls in flight, oldest first. */
  const open: Call[] = [];
  /** The call that ended last, its span not yet ended; `end` is its call-end time. */
  let ended: { call: Call; end: number } | undefined;
  let endOfInstant: Subscription | undefined;

  const endPending = (): void => {
    endOfInstant?.unsubscribe();
    endOfInstant = undefined;
    if (!ended) return;
    ended.call.span.end(hrTime(ended.end));
    ended = undefined;
  };

  const startSpan = (e: CallStartEvent | CallEndEvent, start: number): Call => {
    const attributes: Attributes =
      e.kind === 'model'
        ? { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': e.name, 'rxheal.call.id': e.id, 'rxheal.step': e.step }
        : { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': e.name, 'gen_ai.tool.call.id': e.id, 'rxheal.call.id': e.id, 'rxheal.step': e.step };
    if (e.parentId !== undefined) attributes['rxheal.call.parent_id'] = e.parentId;
    // a provider attempt: a child of the run's model call it was made under
    const parent = e.parentId === undefined ? undefined : latestOpen((c) => c.kind === e.kind && c.id === e.parentId);
    const span = tracer.startSpan(
      `${e.kind === 'model' ? 'chat' : 'execute_tool'} ${e.name}`,
      { kind: e.kind === 'model' ? SpanKind.CLIENT : SpanKind.INTERNAL, startTime: hrTime(start), attributes },
      parent ? trace.setSpan(context.active(), parent.span) : undefined,
    );
    return { span, kind: e.kind, target: `${e.kind}:${e.name}`, id: e.id, parentId: e.parentId, start };
  };

  const onCallEnd = (e: CallEndEvent): void => {
    const start = e.at - e.durationMs;
    let i = open.findIndex((c) => c.kind === e.kind && c.id === e.id && c.start === start);
    if (i < 0) i = open.findIndex((c) => c.kind === e.kind && c.id === e.id);
    // a call that started before we subscribed gets its span now
    const call = i < 0 ? startSpan(e, start) : open.splice(i, 1)[0]!;
    const span = call.span;
    span.setAttribute('rxheal.call.outcome', e.outcome);
    if (e.usage) {
      span.setAttribute('gen_ai.usage.input_tokens', e.usage.inputTokens);
      span.setAttribute('gen_ai.usage.output_tokens', e.usage.outputTokens);
    }
    if (e.outcome === 'error') {
      span.setAttribute('error.type', e.category ?? '_OTHER');
      span.setStatus({ code: SpanStatusCode.ERROR, ...(e.error !== undefined ? { message: e.error } : {}) });
    }
    ended = { call, end: e.at };
    endOfInstant = after(0, scheduler, endPending);
  };

  const latestOpen = (match: (call: Call) => boolean): Call | undefined => {
    for (let i = open.length - 1; i >= 0; i--) if (match(open[i]!)) return open[i];
    return undefined;
  };
  /** Rule 1: the call named `target` (the one just ended, or open, latest first). */
  const byTarget = (target: string): Span | undefined => (ended?.call.target === target ? ended.call.span : latestOpen((c) => c.target === target)?.span);
  /** Rules 1 and 2 for a target. */
  const spanFor = (target: string): Span | undefined => {
    const own = byTarget(target);
    if (own || !target.startsWith('model:')) return own;
    const models = open.filter((c) => c.kind === 'model');
    // one call, or one run's call with the provider attempt open under it: the innermost
    if (models.length > 0 && models.every((c, i) => i === 0 || c.parentId === models[i - 1]!.id)) return models.at(-1)!.span;
    return models.length === 0 && ended?.call.kind === 'model' ? ended.call.span : undefined;
  };

  const onHeal = (e: HealEvent): void => {
    const now = (): HrTime => hrTime(scheduler.now());
    switch (e.type) {
      case 'call-start':
        endPending();
        open.push(startSpan(e, e.at));
        return;
      case 'call-end':
        endPending();
        return onCallEnd(e);
      case 'retry': {
        const attributes = { 'rxheal.target': e.target, 'error.type': e.category };
        m.retries.add(1, attributes);
        m.backoff.record(e.delayMs, attributes);
        spanFor(e.target)?.addEvent(
          'rxheal.retry',
          {
            'rxheal.retry.attempt': e.attempt,
            'rxheal.retry.max': e.max,
            'rxheal.retry.delay_ms': e.delayMs,
            'error.type': e.category,
            ...(e.error !== undefined ? { 'rxheal.error': e.error } : {}),
          },
          now(),
        );
        return;
      }
      case 'retry-succeeded':
        spanFor(e.target)?.addEvent('rxheal.retry.succeeded', { 'rxheal.retry.attempt': e.attempt }, now());
        return;
      case 'retry-withheld': {
        const attributes = { 'rxheal.target': e.target, 'error.type': e.category, 'rxheal.retry.withheld_reason': e.reason };
        m.withheld.add(1, attributes);
        spanFor(e.target)?.addEvent('rxheal.retry.withheld', attributes, now());
        return;
      }
      case 'circuit':
        if (e.kind === 'transition') {
          m.transitions.add(1, { 'rxheal.breaker': e.breaker, 'rxheal.circuit.from': e.from, 'rxheal.circuit.to': e.to });
          spanFor(e.breaker)?.addEvent(
            'rxheal.circuit.transition',
            {
              'rxheal.breaker': e.breaker,
              'rxheal.circuit.from': e.from,
              'rxheal.circuit.to': e.to,
              'rxheal.circuit.reason': e.reason,
              'rxheal.circuit.failures': e.failures,
            },
            now(),
          );
        } else {
          m.rejections.add(1, { 'rxheal.breaker': e.breaker });
          spanFor(e.breaker)?.addEvent('rxheal.circuit.rejected', { 'rxheal.breaker': e.breaker, 'rxheal.circuit.retry_after_ms': e.retryAfterMs }, now());
        }
        return;
      case 'fallback':
        m.fallbacks.add(1, { 'rxheal.fallback.from': e.from, 'rxheal.fallback.to': e.to, 'rxheal.fallback.reason': e.reason });
        spanFor(e.from)?.addEvent(
          'rxheal.fallback',
          { 'rxheal.fallback.from': e.from, 'rxheal.fallback.to': e.to, 'rxheal.fallback.reason': e.reason, 'rxheal.fallback.mid_stream': e.midStream },
          now(),
        );
        return;
      case 'reflection': {
        m.reflections.add(1, { 'gen_ai.tool.name': e.tool, 'rxheal.reflection.exhausted': e.exhausted });
        const call = ended?.call.kind === 'tool' && ended.call.id === e.callId ? ended.call : latestOpen((c) => c.kind === 'tool' && c.id === e.callId);
        call?.span.addEvent(
          'rxheal.reflection',
          { 'gen_ai.tool.name': e.tool, 'rxheal.reflection.attempt': e.attempt, 'rxheal.reflection.max': e.max, 'rxheal.reflection.exhausted': e.exhausted },
          now(),
        );
        return;
      }
      case 'degraded':
        m.degradations.add(1, { 'rxheal.capability': e.capability });
        ended?.call.span.addEvent('rxheal.degraded', { 'rxheal.capability': e.capability, 'rxheal.degraded.reason': e.reason }, now());
        return;
      case 'restored':
        ended?.call.span.addEvent('rxheal.restored', { 'rxheal.capability': e.capability }, now());
        return;
      case 'budget-exceeded':
        m.budgets.add(1, { 'rxheal.budget.resource': e.resource });
        return;
      case 'hedge': {
        m.hedges.add(1, { 'rxheal.target': e.target, 'rxheal.hedge.kind': e.kind });
        const attributes: Attributes = { 'rxheal.hedge.kind': e.kind, 'rxheal.hedge.attempt': e.attempt };
        if (e.afterMs !== undefined) attributes['rxheal.hedge.after_ms'] = e.afterMs;
        if (e.category !== undefined) attributes['error.type'] = e.category;
        spanFor(e.target)?.addEvent('rxheal.hedge', attributes, hrTime(e.at));
        return;
      }
      case 'bulkhead': {
        const attributes: Attributes = { 'rxheal.bulkhead': e.bulkhead, 'rxheal.bulkhead.kind': e.kind };
        if (e.reason !== undefined) attributes['rxheal.bulkhead.reason'] = e.reason;
        m.bulkheads.add(1, attributes);
        const details: Attributes = { ...attributes, 'rxheal.bulkhead.active': e.active, 'rxheal.bulkhead.queued': e.queued };
        if (e.waitMs !== undefined) details['rxheal.bulkhead.wait_ms'] = e.waitMs;
        spanFor(e.bulkhead)?.addEvent('rxheal.bulkhead', details, now());
        return;
      }
      case 'resume': {
        m.resumes.add(1, { 'rxheal.target': e.target, 'rxheal.resume.reason': e.reason });
        const attributes: Attributes = {
          'rxheal.resume.reason': e.reason,
          'rxheal.resume.attempt': e.attempt,
          'rxheal.resume.max': e.max,
          'rxheal.resume.response_id': e.responseId,
          'rxheal.resume.starting_after': e.startingAfter,
        };
        if (e.error !== undefined) attributes['rxheal.error'] = e.error;
        spanFor(e.target)?.addEvent('rxheal.resume', attributes, now());
        return;
      }
      case 'reset':
        return;
    }
  };

  const closeAll = (): void => {
    endPending();
    const at = hrTime(scheduler.now());
    for (const call of open.splice(0)) {
      call.span.setAttribute('rxheal.call.outcome', 'unfinished');
      call.span.end(at);
    }
  };

  const subscription = events$.subscribe({
    next: (event) => onHeal(event as HealEvent),
    error: closeAll,
    complete: closeAll,
  });
  subscription.add(closeAll);
  return subscription;
}

/**
 * What {@link instrumentLatency} reads: a `LatencyRegistry` (every tracker it has, later ones
 * included) or anything else with a `snapshot()` of trackers' quantiles.
 *
 * @example
 * ```ts
 * const source: LatencySource = new LatencyRegistry();
 * ```
 */
export interface LatencySource {
  /** Every tracker's quantiles now (`LatencyRegistry.snapshot()`). */
  snapshot(): readonly LatencySnapshot[];
}

export type { LatencyQuantiles, LatencySnapshot } from '../core/latency/tracker.js';

const QUANTILES: readonly (readonly [keyof LatencyQuantiles, string])[] = [
  ['p50', 'p50'],
  ['p90', 'p90'],
  ['p95', 'p95'],
  ['p99', 'p99'],
  ['p999', 'p99.9'],
];

/**
 * Observed latency as OpenTelemetry gauges, read from `source` each time the SDK collects: for
 * every tracker, `rxheal.latency.first_item` (time to the first item: time to first token) and
 * `rxheal.latency.gap` (between items), in ms, one data point per quantile [`rxheal.target`,
 * `rxheal.latency.quantile`: `p50`, `p90`, `p95`, `p99`, `p99.9`], and `rxheal.latency.samples`
 * [`rxheal.target`, `rxheal.latency.kind`: `first`, `gap`]. A tracker with no sample of a kind
 * gives no quantile of it. Unsubscribe to stop.
 *
 * @example
 * ```ts
 * import { instrumentLatency } from 'rxheal/otel';
 * const latency = new LatencyRegistry();
 * const gauges = instrumentLatency(latency); // the global meter
 * // at shutdown: gauges.unsubscribe();
 * ```
 * @throws {InvalidOptionError} at once, for a source without `snapshot()` or an invalid option.
 */
export function instrumentLatency(source: LatencySource, options?: Pick<InstrumentOptions, 'meter'>): { unsubscribe(): void } {
  if (typeof source !== 'object' || source === null || typeof (source as Partial<LatencySource>).snapshot !== 'function') {
    throw new InvalidOptionError('instrumentLatency', 'source', source, 'a LatencyRegistry (or an object with snapshot())');
  }
  const o = validateOptions('instrumentLatency', { meter: props.meter }, options);
  const meter = o.meter ?? metrics.getMeter('rxheal');
  const first = meter.createObservableGauge('rxheal.latency.first_item', {
    description: 'Observed time to the first item (first token) of a model or tool, by quantile',
    unit: 'ms',
  });
  const gap = meter.createObservableGauge('rxheal.latency.gap', { description: 'Observed time between the items of a model or tool, by quantile', unit: 'ms' });
  const samples = meter.createObservableGauge('rxheal.latency.samples', { description: 'Samples the latency quantiles are read from', unit: '{sample}' });
  const observe = (result: ObservableResult, target: string, q: LatencyQuantiles): void => {
    for (const [key, label] of QUANTILES) {
      const value = q[key];
      if (value !== undefined) result.observe(value, { 'rxheal.target': target, 'rxheal.latency.quantile': label });
    }
  };
  const onFirst = (result: ObservableResult): void => {
    for (const t of source.snapshot()) observe(result, t.name, t.first);
  };
  const onGap = (result: ObservableResult): void => {
    for (const t of source.snapshot()) observe(result, t.name, t.gap);
  };
  const onSamples = (result: ObservableResult): void => {
    for (const t of source.snapshot()) {
      result.observe(t.first.count, { 'rxheal.target': t.name, 'rxheal.latency.kind': 'first' });
      result.observe(t.gap.count, { 'rxheal.target': t.name, 'rxheal.latency.kind': 'gap' });
    }
  };
  first.addCallback(onFirst);
  gap.addCallback(onGap);
  samples.addCallback(onSamples);
  return {
    unsubscribe: () => {
      first.removeCallback(onFirst);
      gap.removeCallback(onGap);
      samples.removeCallback(onSamples);
    },
  };
}
