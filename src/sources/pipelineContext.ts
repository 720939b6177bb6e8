/**
 * What a run's pipelines are handed ({@link PipelineContext}) and what it needs from a capability
 * registry ({@link CapabilitySource}): the types `toolPipeline`, `modelPipeline` and
 * `capabilities` see, apart from the agent's configuration that uses them.
 *
 * @module
 */
import type { Observable, SchedulerLike } from 'rxjs';
import type { DegradedEvent, RestoredEvent } from '../core/events/events.js';
import type { HealHub } from '../core/hub/hub.js';
import type { BudgetMeter } from '../core/model/model.js';
import type { RunScope } from '../core/rx/runScope.js';

/**
 * What a run needs from a capability registry (`CapabilityRegistry` provides it).
 *
 * @example
 * ```ts
 * const capabilities: CapabilitySource = registry;
 * ```
 */
export interface CapabilitySource {
  /** Text appended to the instruction while something is degraded; '' otherwise. */
  systemPromptSuffix(): string;
  /** `degraded` / `restored` events. */
  readonly events$: Observable<DegradedEvent | RestoredEvent>;
}

/**
 * Handed to `toolPipeline` and `modelPipeline`. It is also a `ModelCallContext`: give it to
 * `fallbackTo`'s `context` option so that model alternatives count against the run's budget and
 * report to its hub.
 *
 * @example
 * ```ts
 * const modelPipeline = (request: ModelRequest, turn$: Observable<TurnEvent>, context: PipelineContext) =>
 *   turn$.pipe(fallbackTo(claude, { request, context }));
 * ```
 */
export interface PipelineContext {
  /** The run's events hub: give it to operators (`hub` option) so their events reach the run. */
  readonly hub: HealHub;
  /** The step (model turn) number, from 1. */
  readonly step: number;
  /** The run's shared state. */
  readonly scope: RunScope;
  /** The run's budget, as model calls see it. */
  readonly budget: BudgetMeter;
  /** The run's scheduler (`scheduler` option, else `asyncScheduler`). */
  readonly scheduler: SchedulerLike;
  /**
   * In `modelPipeline`'s context: a fresh model-call id each time it is read (`step-<n>.<m>`,
   * numbered on from the turn's own calls), so a model alternative called with this context
   * (`fallbackTo(claude, { request, context })`) is traced as a model call of the run (`call-start`
   * / `call-end`, an OpenTelemetry span). Not enumerable: a spread copy (`{ ...context, hub }`)
   * has none, and its calls are counted but not traced. Undefined in `toolPipeline`'s context.
   */
  readonly callId?: string;
  /** The run's id (its `runId`, or one made up for it): a model called with this context keeps runs apart by it (`modelPool`'s affinity). */
  readonly runId: string;
}
