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
import { Func, NonEmptyString, PositiveInteger, Scheduler, check, oneOf, validateOptions } from '../core/errors/options.js';
import type { JournalChange } from '../core/journal/errors.js';
import { LeaseMs, RunId, type JournalStore } from '../core/journal/journal.js';
import type { OutputValidator } from '../operators/validateOutput.js';
import type { BudgetMeter, Model, ModelRequest, ToolSpec } from '../core/model/model.js';
import type { RunScope } from '../core/rx/runScope.js';
import type { Tool } from './tool.js';
import type { EffectLedger, GuardedCall } from './effectLedger.js';
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
  /** Where call durations are read (`call-start` / `call-end` events), and the journal's lease renewed. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * The run's id in `journal` (1 to 100 letters, digits, `_`, `-` or `.`, the first not `.`): with `journal`, the run is journaled so that
   * it survives its process (see `resumeAgent`). A run the journal already holds is resumed.
   */
  readonly runId?: string;
  /** Where the run is journaled (`fileJournal`, `memoryJournal` from `rxheal/durable`, `redisJournal`, `postgresJournal`). Needs `runId`. */
  readonly journal?: JournalStore;
  /** Who holds the run's lease while it runs (a process's name). Defaults to a fresh random name per run. */
  readonly holder?: string;
  /** The lease's length in ms, renewed every third of it on the scheduler. Defaults to 30 000. */
  readonly leaseMs?: number;
  /**
   * How often (ms of scheduler time, at most) a model turn's checkpoint is journaled while it streams — a
   * model that can resume its turn (`openAIResponsesModel({ resume })`) reports its response id and last
   * event; the first of each response is journaled at once. 0 to 2 147 483 647; defaults to 1000.
   */
  readonly checkpointMs?: number;
  /**
   * On resume, a non-idempotent tool whose execution started and never finished and that has no
   * `verify` (or whose `verify` failed): `'tell-model'` (default) answers the model that its
   * outcome is unknown; `'error'` ends the run with `ToolOutcomeUnknownError`. Never run again.
   */
  readonly onUnknownOutcome?: 'tell-model' | 'error';
  /**
   * An effect ledger (`effectLedger(store)`): every call of a tool that is not `idempotent: true`
   * runs under it — written `started` before it runs and `done` or `failed` after, answered from
   * its record when its idempotency key is already `done` (a retry, a hedge, a resume, another
   * process), reconciled by the tool's `verify` when its outcome is unknown. Idempotent tools never
   * touch it. Without it, no ledger code is in a run.
   */
  readonly effects?: EffectLedger;
  /** Kinds of configuration change a resume accepts (otherwise `JournalMismatchError`): `'instruction'`, `'tool'`, `'schema'`, `'model'`, `'messages'`. */
  readonly allowChanged?: readonly JournalChange[];
}

/**
 * An approval given on resume to a call that waits for one (see `resumeAgent`'s `approvals`).
 *
 * @example
 * ```ts
 * const approvals: Record<string, Approval> = { call_1: { approved: true }, call_2: { approved: false, reason: 'over budget' } };
 * ```
 */
export type Approval = { readonly approved: true } | { readonly approved: false; readonly reason: string };

/**
 * What `resumeAgent` takes: a journaled run's configuration, and the approvals it waits for.
 *
 * @example
 * ```ts
 * const resume: ResumeConfig = { ...config, runId: 'order-7421', journal, approvals: { call_1: { approved: true } } };
 * ```
 */
export interface ResumeConfig extends AgentConfig {
  /** The run to resume (its id in `journal`). */
  readonly runId: string;
  /** Where it is journaled. */
  readonly journal: JournalStore;
  /** Decisions on the calls the run waits for, by call id: approved calls run, denied ones answer the model that they were denied and why. */
  readonly approvals?: Readonly<Record<string, Approval>>;
}

/**
 * A journaled run's own settings, resolved.
 *
 * @example
 * ```ts
 * const { runId, leaseMs } = resolveAgent(config).durable!;
 * ```
 */
export interface DurableSettings {
  readonly runId: string;
  readonly journal: JournalStore;
  readonly holder: string | undefined;
  readonly leaseMs: number;
  readonly checkpointMs: number;
  readonly onUnknownOutcome: 'tell-model' | 'error';
  readonly allowChanged: readonly JournalChange[];
  readonly approvals: Readonly<Record<string, Approval>> | undefined;
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
  runId: RunId,
  journal: check('a JournalStore ({ claim, read })', (u): u is JournalStore => {
    const j = u as JournalStore | null;
    return typeof j === 'object' && j !== null && typeof j.claim === 'function' && typeof j.read === 'function';
  }),
  holder: NonEmptyString,
  leaseMs: LeaseMs,
  checkpointMs: check('an integer of ms from 0 to 2147483647', (u): u is number => Number.isInteger(u) && (u as number) >= 0 && (u as number) <= 2147483647),
  onUnknownOutcome: oneOf('tell-model', 'error'),
  effects: check(
    'an EffectLedger (from effectLedger)',
    (u): u is EffectLedger => typeof u === 'object' && u !== null && typeof (u as EffectLedger).guard === 'function',
  ),
  allowChanged: check(
    "an array of 'instruction', 'tool', 'schema', 'model', 'messages'",
    (u): u is readonly JournalChange[] => Array.isArray(u) && u.every((k) => ['instruction', 'tool', 'schema', 'model', 'messages'].includes(k as string)),
  ),
};

const ApprovalCheck = check(
  'an object of { approved: true } or { approved: false, reason: string } by call id',
  (u): u is Record<string, Approval> =>
    typeof u === 'object' &&
    u !== null &&
    !Array.isArray(u) &&
    Object.values(u).every(
      (a: unknown) =>
        typeof a === 'object' &&
        a !== null &&
        ((a as Approval).approved === true || ((a as Approval).approved === false && typeof (a as { reason?: unknown }).reason === 'string')),
    ),
);

/** The config, validated once, with what every run derives from it. */
export interface ResolvedAgent {
  readonly config: AgentConfig;
  readonly tools: ReadonlyMap<string, AnyTool>;
  readonly specs: readonly ToolSpec[];
  readonly maxSteps: number;
  readonly scheduler: SchedulerLike;
  /** With `runId` and `journal`: the journaled run's settings. */
  readonly durable: DurableSettings | undefined;
}

const NO_TOOLS: ReadonlyMap<string, AnyTool> = new Map();

/** Checks the config (throws InvalidOptionError naming the option) and derives the tool table. */
export function resolveAgent(config: AgentConfig, target: 'runAgent' | 'resumeAgent' = 'runAgent'): ResolvedAgent {
  const approvals = target === 'resumeAgent' ? (config as ResumeConfig | undefined)?.approvals : undefined;
  if (target === 'resumeAgent') {
    validateOptions(target, { ...props, approvals: ApprovalCheck }, config);
    const rest: Record<string, unknown> = { ...(config ?? {}) };
    delete rest['approvals'];
    config = rest as unknown as AgentConfig;
    for (const key of ['journal', 'runId'] as const)
      if (config[key] === undefined) throw new InvalidOptionError(target, key, undefined, `${props[key].name} (resumeAgent resumes a journaled run)`);
  } else validateOptions(target, props, config);
  if (config === undefined || config.model === undefined) throw new InvalidOptionError(target, 'model', undefined, props.model.name);
  if (config.messages === undefined) throw new InvalidOptionError(target, 'messages', undefined, props.messages.name);
  config.messages.forEach((message, i) => {
    if (!isMessage(message)) throw new InvalidOptionError(target, `messages[${i}]`, message, 'a Message ({ role, content, … })');
  });
  if ((config.runId === undefined) !== (config.journal === undefined)) {
    const missing = config.runId === undefined ? 'runId' : 'journal';
    throw new InvalidOptionError(target, missing, undefined, `${props[missing].name} (a journaled run needs both runId and journal)`);
  }
  (config.tools ?? []).forEach((tool, i) => {
    const ok =
      typeof tool === 'object' &&
      tool !== null &&
      NonEmptyString.is(tool.name) &&
      typeof tool.execute === 'function' &&
      typeof tool.args?.decode === 'function';
    if (!ok) throw new InvalidOptionError(target, `tools[${i}]`, tool, 'a Tool (from defineTool)');
    // a run waits for approval in its journal: without one it could only hang or refuse
    if (config.journal === undefined && tool.needsApproval !== undefined && tool.needsApproval !== false)
      throw new InvalidOptionError(
        target,
        'journal',
        undefined,
        `a JournalStore: tool '${tool.name}' needs approval, and a run waits for approval in its journal`,
      );
  });
  // no tools (a chat): one shared empty table, not a Map per call
  const tools = config.tools?.length ? new Map(config.tools.map((tool) => [tool.name, tool])) : NO_TOOLS;
  const specs = [...tools.values()].map(({ name, description, parameters }) => ({ name, description, parameters }));
  const durable: DurableSettings | undefined =
    config.runId === undefined || config.journal === undefined
      ? undefined
      : {
          runId: config.runId,
          journal: config.journal,
          holder: config.holder,
          leaseMs: config.leaseMs ?? 30_000,
          checkpointMs: config.checkpointMs ?? 1000,
          onUnknownOutcome: config.onUnknownOutcome ?? 'tell-model',
          allowChanged: config.allowChanged ?? [],
          approvals,
        };
  return { config, tools, specs, maxSteps: config.maxSteps ?? 10, scheduler: config.scheduler ?? asyncScheduler, durable };
}

/**
 * One execution of a tool under the run's effect ledger (`effects`), or as it is: without a
 * ledger, and for a tool declared `idempotent: true` (no ledger round trip for those).
 *
 * @example
 * ```ts
 * const guarded$ = underLedger(config, { key, runId, tool, call, hub }, execute$);
 * ```
 */
export function underLedger(config: AgentConfig, call: Omit<GuardedCall, 'onUnknownOutcome'>, execute$: Observable<unknown>): Observable<unknown> {
  const effects = config.effects;
  if (effects === undefined || call.tool.idempotent === true) return execute$;
  return effects.guard({ ...call, onUnknownOutcome: config.onUnknownOutcome ?? 'tell-model' }, execute$);
}
