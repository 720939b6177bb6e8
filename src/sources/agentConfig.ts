/**
 * What {@link runAgent} takes: its config ({@link AgentConfig}), what the pipelines are handed
 * ({@link PipelineContext}), and the check that validates a config once and derives what every run
 * uses of it (the tool table, the tools' specs, the step limit, the scheduler).
 *
 * And the seam between the loop and durable runs, defined on the loop's side: what the loop hands
 * a journaled run ({@link DurableHost}), what it calls on one ({@link DurablePort}), and how it
 * finds the machinery that makes one ({@link DurableRuns}). The loop imports nothing else of
 * durable runs: the machinery (durableRun.ts — the lease, the plan, the records and their checks)
 * is reached through the journal the run is given, which carries it under {@link DURABLE_RUNS}
 * (every rxheal store does; a store of one's own gets it from `durableJournal(store)`), so a run
 * without a journal bundles none of it.
 *
 * @module
 */
import { asyncScheduler, type Observable, type SchedulerLike, type Subscriber, type Subscription } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { AgentEvent, AssistantMessage, Finish, Message, ToolCall, ToolMessage, TurnEvent } from '../core/events/events.js';
// a predicate, not MessageCodec: checking an option needs no io-ts in the bundle
import { isMessage } from '../core/events/isMessage.js';
import { HealHub } from '../core/hub/hub.js';
import { Func, NonEmptyString, PositiveInteger, Scheduler, check, validateOptions } from '../core/errors/options.js';
import type { JournalChange } from '../core/journal/errors.js';
import type { JournalStore } from '../core/journal/journal.js';
import type { OutputValidator } from '../operators/validateOutput.js';
import type { Model, ModelCheckpoint, ModelRequest, ToolSpec } from '../core/model/model.js';
import type { Prices } from '../core/money/prices.js';
import type { SpendGate } from '../core/money/spendGate.js';
import { moneyOptions, type RunMoneyOptions } from './runMoney.js';
import type { CheckpointHolder, Tool } from './tool.js';
import type { EffectLedger } from './effectLedger.js';
import { budgetCodec, type Budget } from './budget.js';
import type { CallState } from './resumePlan.js';
import type { PendingApproval, RunRecord, Used } from './runJournal.js';

import type { CapabilitySource, PipelineContext } from './pipelineContext.js';
export type { CapabilitySource, PipelineContext } from './pipelineContext.js';

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
  /** Limits on the run: calls, tokens, tool calls and dollars (`maxUsd`, with `prices`). */
  readonly budget?: Budget;
  /**
   * What each model's tokens cost, in dollars per million, by model id (`model.id` of every model
   * the run calls: a `fallbackModel`'s models, not the chain). Needed by `budget.maxUsd` and
   * `spend`; a model they would call without a price is an `InvalidOptionError` naming it — at
   * once for the models the run's model is made of, at the call for one reached only then (a
   * `fallbackTo` alternative) — never a silent $0.
   */
  readonly prices?: Prices;
  /**
   * Fleet-wide money limits (`SpendLimiter`) each provider attempt also reserves on, before it is
   * made, with the same rule as `budget.maxUsd`; the first to refuse ends the run with
   * `BudgetExceededError` (`resource: 'usd'`). Needs `prices`.
   */
  readonly spend?: readonly SpendGate[];
  /**
   * The most output tokens per model call, sent with every request (`ModelRequest.maxOutputTokens`:
   * each provider as its own field; a turn that reaches it finishes with reason `'length'`). In a
   * run that counts money, what each attempt reserves for its output, and where its live count
   * stops (the provider stops there): a model that does not keep it — LangChain's ChatOpenAI 1.x
   * reads its limit from its constructor only — is still charged its real usage at the end, but
   * its live count trusts a cap it does not keep (set the same limit in its constructor). Absent:
   * the providers' defaults (and `budget.reserveOutputTokens` reserved).
   */
  readonly maxOutputTokens?: number;
  /** Who the run is for (`{ user, team, … }`): what `SpendLimiter`s key their limits by. */
  readonly tags?: Readonly<Record<string, string>>;
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
  /**
   * Where the run is journaled (`fileJournal`, `memoryJournal` from `rxheal/durable`, `redisJournal`, `postgresJournal`), or an
   * engine's own steps (`stepJournal`, `dbosJournal` from `rxheal/dbos`, `restateJournal` from `rxheal/restate`). Needs `runId`.
   */
  readonly journal?: JournalStore | StepJournal;
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
  readonly journal: JournalStore | StepJournal;
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
  readonly journal: JournalStore | StepJournal;
  readonly holder: string | undefined;
  readonly leaseMs: number;
  readonly checkpointMs: number;
  readonly onUnknownOutcome: 'tell-model' | 'error';
  readonly allowChanged: readonly JournalChange[];
  readonly approvals: Readonly<Record<string, Approval>> | undefined;
  /** The durable-run machinery the journal carries. */
  readonly runs: DurableRuns;
}

/** The options only a journaled run has (with `journal`): checked by its machinery. */
const DURABLE_OPTIONS = ['runId', 'journal', 'holder', 'leaseMs', 'checkpointMs', 'onUnknownOutcome', 'allowChanged'] as const;
const Anything = check('anything', (_u): _u is unknown => true);
/**
 * What `journal` and `runId` are, in the errors of a run missing one.
 *
 * @example
 * ```ts
 * new InvalidOptionError('resumeAgent', 'journal', undefined, `${NAMES.journal} (resumeAgent resumes a journaled run)`);
 * ```
 */
export const NAMES = { journal: 'a JournalStore ({ claim, read })', runId: 'a run id' };
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
  prices: Anything,
  maxOutputTokens: PositiveInteger,
  spend: check(
    'an array of SpendGate ({ name, reserve }: a SpendLimiter)',
    (u): u is readonly SpendGate[] =>
      Array.isArray(u) &&
      u.every((g) => typeof g === 'object' && g !== null && typeof (g as SpendGate).reserve === 'function' && NonEmptyString.is((g as SpendGate).name)),
  ),
  tags: check(
    'an object of string values',
    (u): u is Readonly<Record<string, string>> =>
      typeof u === 'object' && u !== null && !Array.isArray(u) && Object.values(u).every((v) => typeof v === 'string'),
  ),
  hub: check('a HealHub', (u): u is HealHub => u instanceof HealHub),
  output: Obj,
  scheduler: Scheduler,
  // a journaled run's own options: checked by the machinery its journal carries (DurableRuns.settings)
  ...Object.fromEntries(DURABLE_OPTIONS.map((key) => [key, Anything])),
  effects: check(
    'an EffectLedger (from effectLedger)',
    (u): u is EffectLedger => typeof u === 'object' && u !== null && typeof (u as EffectLedger).guard === 'function',
  ),
};

/** The config, validated once, with what every run derives from it. */
export interface ResolvedAgent {
  readonly config: AgentConfig;
  readonly tools: ReadonlyMap<string, AnyTool>;
  readonly specs: readonly ToolSpec[];
  readonly maxSteps: number;
  readonly scheduler: SchedulerLike;
  /** With `runId` and `journal`: the journaled run's settings. */
  readonly durable: DurableSettings | undefined;
  /** A run that counts money: its checked prices and limits. */
  readonly money: Omit<RunMoneyOptions, 'context'> | undefined;
}

const NO_TOOLS: ReadonlyMap<string, AnyTool> = new Map();

/**
 * Checks the config (throws InvalidOptionError naming the option) and derives the tool table;
 * `approvals` are `resumeAgent`'s (checked, with the other options of a journaled run, by the
 * machinery its journal carries).
 */
export function resolveAgent(config: AgentConfig, target: 'runAgent' | 'resumeAgent' = 'runAgent', approvals?: unknown): ResolvedAgent {
  validateOptions(target, props, config);
  if (config === undefined || config.model === undefined) throw new InvalidOptionError(target, 'model', undefined, props.model.name);
  if (config.messages === undefined) throw new InvalidOptionError(target, 'messages', undefined, props.messages.name);
  config.messages.forEach((message, i) => {
    if (!isMessage(message)) throw new InvalidOptionError(target, `messages[${i}]`, message, 'a Message ({ role, content, … })');
  });
  const journal = config.journal;
  // without a journal, a journaled run's options mean nothing: a mistake, said at once
  const given = journal === undefined ? DURABLE_OPTIONS.find((key) => config[key] !== undefined) : undefined;
  if (given !== undefined) throw new InvalidOptionError(target, 'journal', undefined, `${NAMES.journal} ("${given}" is an option of a journaled run)`);
  if (journal !== undefined && config.runId === undefined)
    throw new InvalidOptionError(target, 'runId', undefined, `${NAMES.runId} (a journaled run needs both runId and journal)`);
  (config.tools ?? []).forEach((tool, i) => {
    const ok =
      typeof tool === 'object' &&
      tool !== null &&
      NonEmptyString.is(tool.name) &&
      typeof tool.execute === 'function' &&
      typeof tool.args?.decode === 'function';
    if (!ok) throw new InvalidOptionError(target, `tools[${i}]`, tool, 'a Tool (from defineTool)');
    // a run waits for approval in its journal: without one it could only hang or refuse
    if (journal === undefined && tool.needsApproval !== undefined && tool.needsApproval !== false)
      throw new InvalidOptionError(target, 'journal', undefined, `${NAMES.journal}: tool '${tool.name}' needs approval: a run waits for it in its journal`);
  });
  // no tools (a chat): one shared empty table, not a Map per call
  const tools = config.tools?.length ? new Map(config.tools.map((tool) => [tool.name, tool])) : NO_TOOLS;
  const specs = [...tools.values()].map(({ name, description, parameters }) => ({ name, description, parameters }));
  let durable: DurableSettings | undefined;
  if (journal !== undefined) {
    // the machinery the journal carries, else the one rxheal's stores registered (a store wrapping one of them)
    const runs = (journal as { [DURABLE_RUNS]?: DurableRuns } | null)?.[DURABLE_RUNS] ?? registered;
    if (runs === undefined)
      throw new InvalidOptionError(target, 'journal', journal, `${NAMES.journal} that journals runs (yours: durableJournal(store)), or stepJournal(run)`);
    durable = runs.settings(target, config, approvals);
  }
  const money = moneyOptions(target, config);
  return { config, tools, specs, maxSteps: config.maxSteps ?? 10, scheduler: config.scheduler ?? asyncScheduler, durable, money };
}

/**
 * What one tool call yields: the events to emit and the tool message.
 *
 * @example
 * ```ts
 * const o: ToolOutcome = { events: [], message: { role: 'tool', toolCallId: 'c1', toolName: 'book', content: 'ok' } };
 * ```
 */
export interface ToolOutcome {
  readonly events: readonly AgentEvent[];
  readonly message: ToolMessage;
}

/**
 * What the agent loop lends a journaled run.
 *
 * @example
 * ```ts
 * const durable = agent.durable!.runs.run(host, agent);
 * ```
 */
export interface DurableHost {
  emit(event: AgentEvent): void;
  /** Runs a step of the loop, a throw ending the run. */
  stage(run: () => void): void;
  /** The run's model streams and tool calls in flight: a failing run stops them before its end is journaled. */
  readonly work: Subscription;
  /** The run's stream: a journaled run ends it (an error, or completion) once its end is journaled. */
  readonly subscriber: Subscriber<AgentEvent>;
  /** The next model turn (`from`: a resumed run's interrupted turn's checkpoint, to continue it from). */
  turn(from?: ModelCheckpoint): void;
  /** A tool round of `calls` (a resumed one: with each call's state in the plan). */
  toolRound(calls: readonly ToolCall[], states?: readonly CallState[]): void;
  /** The run's state, which a resume restores from the plan: the transcript, the steps, the corrections, what the budget spent. */
  readonly history: Message[];
  step: number;
  corrections: number;
  readonly budget: Used & { readonly money?: { spentUsd: number } };
}

/**
 * One journaled run as the agent loop drives it: its start (claim, read, replay), each record
 * written before the step that depends on it, what a tool call of a resumed round does, and the
 * run's end. The records themselves are the machinery's (durableRun.ts, runJournal.ts).
 *
 * @example
 * ```ts
 * const durable: DurablePort = agent.durable!.runs.run(host, agent);
 * durable.start();
 * ```
 */
export interface DurablePort {
  /** The run's id (what its tool calls' idempotency keys derive from). */
  readonly runId: string;
  /** Claims the run; then replays it and goes on (`host.resume`). */
  start(): void;
  /**
   * Model turn `step`'s events: its checkpoints journaled (`call` hands the model its
   * `context.checkpoint`), and, for the interrupted turn of a resumed run (`from`: its
   * checkpoint), the turn continued on the provider's side.
   */
  modelTurn(
    step: number,
    from: ModelCheckpoint | undefined,
    call: (model: Model, checkpoint: (c: ModelCheckpoint) => void) => Observable<TurnEvent>,
  ): Observable<TurnEvent>;
  /**
   * Model turn `step` as the loop reads it, through its model pipeline (`turn$`): rxheal's records
   * pass it as it is (they journal its message once it is done); an engine's steps run it whole as
   * one step, whose events come back from the engine on its replay.
   */
  wholeTurn(step: number, turn$: Observable<TurnEvent>): Observable<TurnEvent>;
  /** Model turn `step` started over (a `reset`): its checkpoint no longer holds. */
  startedOver(step: number): void;
  /** Whether the loop's `message` event for `message` repeats what an earlier life of the run did (`replayed: true`). */
  replayed(message: Message): boolean;
  /** Journals `record`, then goes on (`next`, in a stage of the loop). */
  commit(record: RunRecord, next: () => void): void;
  /** A model turn's record: its message (with its tool calls, or the answer), replayed after its tool calls and its finish. */
  turnRecord(message: AssistantMessage, finish: Finish): RunRecord;
  /** A checked answer's record: with its correction and the reset, when it failed its check (one record: a resume never sees one without the other). */
  answerRecord(
    finish: Finish,
    validation: AgentEvent,
    message: AssistantMessage,
    correction?: { readonly message: Message; readonly reset: AgentEvent },
  ): RunRecord;
  /** Before a tool executes: its start journaled, then `execute$`. */
  beforeTool<T>(call: ToolCall, execute$: Observable<T>): Observable<T>;
  /** A call's checkpoints: what it journaled before (its state in the plan), and how it journals more (`tool-checkpoint`); none in an engine's step. */
  checkpointsOf(call: ToolCall, state: CallState | undefined): CheckpointHolder | undefined;
  /**
   * A call of a tool round, from its state in the plan (undefined: a call of a live turn): the
   * call waiting for approval, or its outcome, journaled before it goes on (`run$` runs the call;
   * `key`: its idempotency key, which names an engine's step of it).
   */
  callOutcome(
    call: ToolCall,
    key: string,
    state: CallState | undefined,
    context: PipelineContext,
    run$: () => Observable<ToolOutcome>,
  ): PendingApproval | Observable<ToolOutcome>;
  /** Calls wait for approval: journaled, announced, and the run completes suspended. */
  suspend(pending: readonly PendingApproval[]): void;
  /** The answer was given: the end journaled, the lease released, then the run completes. */
  answered(): void;
  /** The run failed: its end journaled (unless the journal failed), the lease released, then the error. */
  fail(error: unknown): void;
  /** The run's subscriber left: the lease released. */
  unsubscribe(): void;
}

/**
 * The durable-run machinery a journal carries under {@link DURABLE_RUNS}.
 *
 * @example
 * ```ts
 * const durable = agent.durable!.runs.run(host, agent);
 * ```
 */
export interface DurableRuns {
  /**
   * A journaled run's own options, checked: `runId`, `journal`, `holder`, `leaseMs`,
   * `onUnknownOutcome`, `allowChanged`, and `resumeAgent`'s `approvals`.
   *
   * @throws {InvalidOptionError} naming the option and its value.
   */
  settings(target: string, config: AgentConfig, approvals: unknown): DurableSettings;
  /** The journaled run of one subscription (`agent.durable`: its settings). */
  run(host: DurableHost, agent: ResolvedAgent): DurablePort;
}

/**
 * The key under which a journal carries the durable-run machinery ({@link DurableRuns}). A
 * registered symbol, so that two copies of rxheal in one application agree on it.
 *
 * @example
 * ```ts
 * const runs = (journal as { [DURABLE_RUNS]?: DurableRuns })[DURABLE_RUNS];
 * ```
 */
export const DURABLE_RUNS: unique symbol = Symbol.for('rxheal.durableRuns') as never;

/**
 * How a durable-execution engine runs one step: `fn` once, its result (JSON data) journaled by the
 * engine, and on the engine's replay of the workflow that result returned without calling `fn`.
 * DBOS: `(name, fn) => DBOS.runStep(fn, { name })`; Restate: `(name, fn) => ctx.run(name, fn)`.
 * Steps are called in the same order on every replay, one after another or several at once.
 *
 * @example
 * ```ts
 * const run: StepRunner = (name, fn) => DBOS.runStep(fn, { name });
 * ```
 */
export type StepRunner = <T>(name: string, fn: () => Promise<T>) => PromiseLike<T>;

/**
 * A journal written through an engine's own steps (`stepJournal(run)`): each model turn and each
 * tool call of a run is one step of the engine, healed inside it. (The one `stepJournal` makes
 * also carries the machinery of such runs, under the `DURABLE_RUNS` symbol.)
 *
 * @example
 * ```ts
 * const journal: StepJournal = stepJournal((name, fn) => ctx.run(name, fn));
 * ```
 */
export interface StepJournal {
  /** The engine's step. */
  readonly run: StepRunner;
}

/** The machinery of the rxheal stores made in this process, for a journal that carries none (a store wrapping one of them). */
let registered: DurableRuns | undefined;

/**
 * Called by `durableJournal` (so by every rxheal store) when a store is made: a store of one's
 * own that wraps one of them (a proxy counting appends, one adding latency) then needs no
 * {@link DURABLE_RUNS} of its own.
 *
 * @example
 * ```ts
 * registerDurableRuns(durableRuns);
 * ```
 */
export function registerDurableRuns(runs: DurableRuns): void {
  registered ??= runs;
}
