/**
 * What {@link runAgent} takes: its config ({@link AgentConfig}), what the pipelines are handed
 * ({@link PipelineContext}), and the check that validates a config once and derives what every run
 * uses of it (the tool table, the tools' specs, the step limit, the scheduler).
 *
 * @module
 */
import { asyncScheduler, type Observable, type SchedulerLike } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { DegradedEvent, Message, RestoredEvent, ToolCall, TurnEvent } from '../core/events/events.js';
// a predicate, not MessageCodec: checking an option needs no io-ts in the bundle
import { isMessage } from '../core/events/isMessage.js';
import { HealHub } from '../core/hub/hub.js';
import { Func, NonEmptyString, PositiveInteger, Scheduler, check, validateOptions } from '../core/errors/options.js';
import type { OutputValidator } from '../operators/validateOutput.js';
import type { BudgetMeter, Model, ModelRequest, ToolSpec } from '../core/model/model.js';
import type { RunScope } from '../core/rx/runScope.js';
import type { Tool } from './tool.js';
import { budgetCodec, type Budget } from './budget.js';

/** What a run needs from a capability registry (`CapabilityRegistry` provides it). */
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
}

// Tools of any argument type: `Tool<A>` is invariant in A, so a list of different tools needs `any`.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = Tool<any, unknown>;

/** What {@link runAgent} takes. */
export interface AgentConfig {
  /** The model (or a `fallbackModel`). */
  readonly model: Model;
  /** Tools the model may call. */
  readonly tools?: readonly AnyTool[];
  /** The conversation so far (usually ending with the user's message). */
  readonly messages: readonly Message[];
  /** System instruction, sent first. The capabilities' suffix is appended while anything is degraded. */
  readonly instruction?: string;
  /** Model turns before the run gives up with `BudgetExceededError` (`resource: 'steps'`). Defaults to 10. */
  readonly maxSteps?: number;
  /**
   * Composes operators around one tool call (per tool: `call.name`). `call$` decodes the
   * arguments, runs the tool, and counts towards the budget on every subscription. The last value
   * is the result; a {@link Reflection} becomes the tool message. Defaults to `call$` as is. If
   * it throws, the run errors with what it threw.
   */
  readonly toolPipeline?: (call: ToolCall, call$: Observable<unknown>, context: PipelineContext) => Observable<unknown>;
  /** Composes operators around one model turn. Defaults to `turn$` as is. If it throws, the run errors with what it threw. */
  readonly modelPipeline?: (request: ModelRequest, turn$: Observable<TurnEvent>, context: PipelineContext) => Observable<TurnEvent>;
  /**
   * Capabilities that may degrade; their events are surfaced and their suffix added to the
   * instruction. If `systemPromptSuffix()` throws, the run errors with what it threw.
   */
  readonly capabilities?: CapabilitySource;
  /** Limits on the run. */
  readonly budget?: Budget;
  /** The events hub (one per run is made if absent); its events are surfaced in the run's stream. */
  readonly hub?: HealHub;
  /** Output self-correction, from `validateOutput`. If a check (or `correction`) throws, the run errors with what it threw. */
  readonly output?: OutputValidator;
  /** Where call durations are read (`call-start` / `call-end` events). Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

const Obj = check('an object', (u): u is object => typeof u === 'object' && u !== null);
const Arr = check('an array', (u): u is readonly unknown[] => Array.isArray(u));
const props = {
  model: check(
    'a Model ({ id, stream })',
    (u): u is Model => typeof u === 'object' && u !== null && typeof (u as Model).stream === 'function' && NonEmptyString.is((u as Model).id),
  ),
  tools: Arr,
  messages: Arr,
  instruction: check('a string', (u): u is string => typeof u === 'string'),
  maxSteps: PositiveInteger,
  toolPipeline: Func,
  modelPipeline: Func,
  capabilities: Obj,
  budget: budgetCodec,
  hub: check('a HealHub', (u): u is HealHub => u instanceof HealHub),
  output: Obj,
  scheduler: Scheduler,
};

/** The config, validated once, with what every run derives from it. */
export interface ResolvedAgent {
  readonly config: AgentConfig;
  readonly tools: ReadonlyMap<string, AnyTool>;
  readonly specs: readonly ToolSpec[];
  readonly maxSteps: number;
  readonly scheduler: SchedulerLike;
}

const NO_TOOLS: ReadonlyMap<string, AnyTool> = new Map();

/** Checks the config (throws InvalidOptionError naming the option) and derives the tool table. */
export function resolveAgent(config: AgentConfig): ResolvedAgent {
  validateOptions('runAgent', props, config);
  if (config === undefined || config.model === undefined) throw new InvalidOptionError('runAgent', 'model', undefined, props.model.name);
  if (config.messages === undefined) throw new InvalidOptionError('runAgent', 'messages', undefined, props.messages.name);
  config.messages.forEach((message, i) => {
    if (!isMessage(message)) throw new InvalidOptionError('runAgent', `messages[${i}]`, message, 'a Message ({ role, content, … })');
  });
  (config.tools ?? []).forEach((tool, i) => {
    const ok =
      typeof tool === 'object' &&
      tool !== null &&
      NonEmptyString.is(tool.name) &&
      typeof tool.execute === 'function' &&
      typeof tool.args?.decode === 'function';
    if (!ok) throw new InvalidOptionError('runAgent', `tools[${i}]`, tool, 'a Tool (from defineTool)');
  });
  // no tools (a chat): one shared empty table, not a Map per call
  const tools = config.tools?.length ? new Map(config.tools.map((tool) => [tool.name, tool])) : NO_TOOLS;
  const specs = [...tools.values()].map(({ name, description, parameters }) => ({ name, description, parameters }));
  return { config, tools, specs, maxSteps: config.maxSteps ?? 10, scheduler: config.scheduler ?? asyncScheduler };
}
