/**
 * The metrics of `instrument()`: rxheal's own counters of what the healing did (both
 * conventions), and the GenAI conventions' operation duration and token usage (`'latest'`).
 *
 * @module
 */
import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import type { HealEvent, Usage } from '../core/events/events.js';

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

/**
 * rxheal's counters and histogram of the healing.
 *
 * @example
 * ```ts
 * const m: Instruments = instrumentsOf(meter);
 * ```
 */
export interface Instruments {
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
  readonly spend: Counter;
}

/**
 * rxheal's instruments on `meter`.
 *
 * @example
 * ```ts
 * const m = instrumentsOf(metrics.getMeter('rxheal'));
 * ```
 */
export function instrumentsOf(meter: Meter): Instruments {
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
    spend: meter.createCounter('rxheal.spend', {
      description: "Dollars charged to runs for their provider attempts, at the runs' prices (estimated: rxheal's estimate, no usage reported)",
      unit: 'USD',
    }),
  };
}

/**
 * Counts `e` on rxheal's instruments (events that are not counted pass).
 *
 * @example
 * ```ts
 * count(m, { type: 'fallback', from: 'model:gpt', to: 'model:claude', reason: 'rate_limit', midStream: false });
 * ```
 */
export function count(m: Instruments, e: HealEvent): void {
  switch (e.type) {
    case 'retry': {
      const attributes = { 'rxheal.target': e.target, 'error.type': e.category };
      m.retries.add(1, attributes);
      m.backoff.record(e.delayMs, attributes);
      return;
    }
    case 'retry-withheld':
      m.withheld.add(1, { 'rxheal.target': e.target, 'error.type': e.category, 'rxheal.retry.withheld_reason': e.reason });
      return;
    case 'circuit':
      if (e.kind === 'transition') m.transitions.add(1, { 'rxheal.breaker': e.breaker, 'rxheal.circuit.from': e.from, 'rxheal.circuit.to': e.to });
      else m.rejections.add(1, { 'rxheal.breaker': e.breaker });
      return;
    case 'fallback':
      m.fallbacks.add(1, { 'rxheal.fallback.from': e.from, 'rxheal.fallback.to': e.to, 'rxheal.fallback.reason': e.reason });
      return;
    case 'reflection':
      m.reflections.add(1, { 'gen_ai.tool.name': e.tool, 'rxheal.reflection.exhausted': e.exhausted });
      return;
    case 'degraded':
      m.degradations.add(1, { 'rxheal.capability': e.capability });
      return;
    case 'budget-exceeded': {
      const attributes: Attributes = { 'rxheal.budget.resource': e.resource };
      if (e.cut !== undefined) attributes['rxheal.budget.cut'] = e.cut;
      if (e.limiter !== undefined) attributes['rxheal.budget.limiter'] = e.limiter;
      m.budgets.add(1, attributes);
      return;
    }
    case 'spend':
      if (e.usd > 0) m.spend.add(e.usd, { 'gen_ai.request.model': e.model, 'rxheal.spend.estimated': e.estimated });
      return;
    case 'hedge':
      m.hedges.add(1, { 'rxheal.target': e.target, 'rxheal.hedge.kind': e.kind });
      return;
    case 'bulkhead': {
      const attributes: Attributes = { 'rxheal.bulkhead': e.bulkhead, 'rxheal.bulkhead.kind': e.kind };
      if (e.reason !== undefined) attributes['rxheal.bulkhead.reason'] = e.reason;
      m.bulkheads.add(1, attributes);
      return;
    }
    case 'resume':
      m.resumes.add(1, { 'rxheal.target': e.target, 'rxheal.resume.reason': e.reason });
      return;
    default:
      return;
  }
}

/** Bucket boundaries of `gen_ai.client.operation.duration`, in s: the conventions' advice. */
const DURATION_BUCKETS_S = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/** Bucket boundaries of `gen_ai.client.token.usage`: the conventions' advice (powers of 4). */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

/**
 * The GenAI conventions' client metrics (`'latest'`).
 *
 * @example
 * ```ts
 * const g: GenAiInstruments = genAiInstrumentsOf(meter);
 * ```
 */
export interface GenAiInstruments {
  readonly duration: Histogram;
  readonly tokens: Histogram;
}

/**
 * The GenAI conventions' client metrics on `meter`.
 *
 * @example
 * ```ts
 * genAiInstrumentsOf(meter).duration.record(0.42, { 'gen_ai.operation.name': 'chat' });
 * ```
 */
export function genAiInstrumentsOf(meter: Meter): GenAiInstruments {
  return {
    duration: meter.createHistogram('gen_ai.client.operation.duration', {
      description: 'GenAI operation duration',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS_S },
    }),
    tokens: meter.createHistogram('gen_ai.client.token.usage', {
      description: 'Number of input and output tokens used',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    }),
  };
}

/**
 * Token counts a provider may report beside input and output.
 *
 * @example
 * ```ts
 * const detail: TokenDetail = { cacheRead: 600, cacheCreation: 100 };
 * ```
 */
export interface TokenDetail {
  /** Input tokens read from the provider's prompt cache. */
  readonly cacheRead?: number;
  /** Input tokens written to the provider's prompt cache. */
  readonly cacheCreation?: number;
  /** Output tokens spent reasoning. */
  readonly reasoning?: number;
}

const count0 = (u: unknown): number | undefined => (typeof u === 'number' && Number.isFinite(u) && u >= 0 ? u : undefined);

/**
 * The cache and reasoning counts of a usage, read by name whichever an adapter fills
 * (`cachedInputTokens` / `cacheReadInputTokens`, `cacheWriteTokens` / `cacheCreationInputTokens`,
 * `reasoningTokens`): `Usage` itself guarantees only input and output.
 *
 * @example
 * ```ts
 * tokenDetail({ inputTokens: 1000, outputTokens: 5, cachedInputTokens: 600 } as Usage); // { cacheRead: 600 }
 * ```
 */
export function tokenDetail(usage: Usage): TokenDetail {
  const u = usage as Usage & Record<string, unknown>;
  const cacheRead = count0(u.cachedInputTokens) ?? count0(u.cacheReadInputTokens) ?? count0(u.cacheReadTokens);
  const cacheCreation = count0(u.cacheWriteTokens) ?? count0(u.cacheWriteInputTokens) ?? count0(u.cacheCreationInputTokens);
  const reasoning = count0(u.reasoningTokens) ?? count0(u.reasoningOutputTokens);
  return {
    ...(cacheRead === undefined ? {} : { cacheRead }),
    ...(cacheCreation === undefined ? {} : { cacheCreation }),
    ...(reasoning === undefined ? {} : { reasoning }),
  };
}

/**
 * A usage as the conventions' span attributes (`gen_ai.usage.*`, cache and reasoning counts when reported).
 *
 * @example
 * ```ts
 * span.setAttributes(usageAttributes({ inputTokens: 12, outputTokens: 3 }));
 * ```
 */
export function usageAttributes(usage: Usage): Attributes {
  const d = tokenDetail(usage);
  const attributes: Attributes = { 'gen_ai.usage.input_tokens': usage.inputTokens, 'gen_ai.usage.output_tokens': usage.outputTokens };
  if (d.cacheRead !== undefined) attributes['gen_ai.usage.cache_read.input_tokens'] = d.cacheRead;
  if (d.cacheCreation !== undefined) attributes['gen_ai.usage.cache_creation.input_tokens'] = d.cacheCreation;
  if (d.reasoning !== undefined) attributes['gen_ai.usage.reasoning.output_tokens'] = d.reasoning;
  return attributes;
}

/**
 * Records one provider attempt's usage on `gen_ai.client.token.usage`: output tokens, and input
 * tokens — split by `rxheal.token.cache` (`none`, `read`, `creation`) when the provider reported
 * cache counts, so the points of one attempt still add up to its input (the cached tokens are
 * part of the input count, as the conventions count it).
 *
 * @example
 * ```ts
 * recordTokens(g.tokens, { inputTokens: 12, outputTokens: 3 }, { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt' });
 * ```
 */
export function recordTokens(tokens: Histogram, usage: Usage, attributes: Attributes): void {
  const d = tokenDetail(usage);
  tokens.record(usage.outputTokens, { ...attributes, 'gen_ai.token.type': 'output' });
  const input = { ...attributes, 'gen_ai.token.type': 'input' };
  if (d.cacheRead === undefined && d.cacheCreation === undefined) {
    tokens.record(usage.inputTokens, input);
    return;
  }
  const read = d.cacheRead ?? 0;
  const creation = d.cacheCreation ?? 0;
  tokens.record(Math.max(0, usage.inputTokens - read - creation), { ...input, 'rxheal.token.cache': 'none' });
  if (d.cacheRead !== undefined) tokens.record(read, { ...input, 'rxheal.token.cache': 'read' });
  if (d.cacheCreation !== undefined) tokens.record(creation, { ...input, 'rxheal.token.cache': 'creation' });
}
