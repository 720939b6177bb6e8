/**
 * {@link runAgent}: the agent loop. Each subscription is one run ({@link AgentRun}): a turn of the
 * model through the model pipeline, its tool calls through the tool pipeline (in parallel), their
 * messages, the next turn — until the model answers without calling a tool. What it takes and its
 * checks are in agentConfig.ts, its budget in budget.ts.
 *
 * @module
 */
import { catchError, defaultIfEmpty, defer, map, merge, Observable, of, Subscription, takeLast, throwError, type Observer, type Subscriber } from 'rxjs';
import { classifyError } from '../core/errors/classify.js';
import { BudgetExceededError, IncompleteStreamError } from '../core/errors/errors.js';
import type { AgentEvent, AssistantMessage, Finish, Message, ToolCall, ToolMessage, TurnEvent } from '../core/events/events.js';
import { TurnOutput } from './turnOutput.js';
import { subscribeWithin } from '../core/rx/operate.js';
import { HealHub } from '../core/hub/hub.js';
import { errorText } from '../core/errors/sanitize.js';
import { traced } from '../core/model/callTrace.js';
import { Reflection } from '../operators/reflectOnError.js';
import type { OutputValidator } from '../operators/validateOutput.js';
import { streamModel, type Model, type ModelCheckpoint, type ModelRequest } from '../core/model/model.js';
import { isFatal, RunScope } from '../core/rx/runScope.js';
import { guard, Thrown } from '../core/rx/guard.js';
import { callTool, resultText, unknownToolError } from './tool.js';
import { effectKey, freshRunId } from '../core/journal/idempotency.js';
import { underLedger } from './underLedger.js';
import {
  resolveAgent,
  type AgentConfig,
  type DurableHost,
  type DurablePort,
  type PipelineContext,
  type ResolvedAgent,
  type ToolOutcome,
} from './agentConfig.js';
import type { CallState } from './resumePlan.js';
import type { PendingApproval, RunRecord } from './runJournal.js';
import { BudgetTracker, MoneyBudgetTracker, type Budget } from './budget.js';

export type { AgentConfig, AnyTool, Approval, CapabilitySource, PipelineContext, ResumeConfig } from './agentConfig.js';
export type { Budget } from './budget.js';

/** Errors that end the run instead of going back to the model as a tool error. */
function endsRun(error: unknown): boolean {
  return isFatal(error) || error instanceof BudgetExceededError || classifyError(error).category === 'cancelled';
}

/**
 * An agent's whole conversation as one cold observable: model turn → tool calls (in parallel)
 * → tool messages → next turn, until the model finishes without calling a tool. Every model
 * event is passed on, plus `tool-result` / `tool-error`, `reflection`, `message` (each completed
 * message), and whatever the operators report to the run's hub (`retry`, `circuit`, `fallback`,
 * `degraded` / `restored`, `budget-exceeded`). `reset` events from the model pipeline discard the
 * turn's partial output. Unsubscribing cancels every model stream and tool call in flight.
 *
 * The run errors with `BudgetExceededError` when a budget (or `maxSteps`) is crossed, with a
 * tool's error when `reflectOnError({ onExhausted: 'error' })` gives up, and with whatever the
 * model pipeline errors with. Other tool errors go back to the model as tool messages.
 *
 * @example
 * ```ts
 * runAgent({
 *   model: fallbackModel([primary, secondary], { breakers }),
 *   tools: [getWeather],
 *   instruction: 'You are a helpful assistant.',
 *   messages: [{ role: 'user', content: "What's the weather in NYC?" }],
 *   toolPipeline: (call, call$, { hub }) =>
 *     call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}` }), reflectOnError()),
 * }).subscribe((e) => console.log(e.type, e));
 * ```
 * With `runId` and `journal` the run is journaled (see {@link resumeAgent}): each completed
 * message, each tool execution's start, a suspension and the end are appended before the step
 * that depends on them, and a run the journal already holds is resumed from it (as
 * `resumeAgent` does, without approvals). In a journaled run, a `message` event means its record
 * is in the journal (it is emitted once the record is durable); the lease is released at the
 * end and on unsubscribe.
 *
 * @throws {InvalidOptionError} at once, for an invalid option (a tool that `needsApproval` without a `journal` too).
 */
export function runAgent(config: AgentConfig): Observable<AgentEvent> {
  return new Agent(resolveAgent(config));
}

/**
 * An agent from a checked config (what `resumeAgent` builds too).
 *
 * @example
 * ```ts
 * agentOf(resolveAgent(config, 'resumeAgent'));
 * ```
 */
export function agentOf(agent: ResolvedAgent): Observable<AgentEvent> {
  return new Agent(agent);
}

/** What {@link runAgent} returns: each subscription is one {@link AgentRun}, its own teardown (no closures per run). */
class Agent extends Observable<AgentEvent> {
  constructor(private readonly agent: ResolvedAgent) {
    super();
  }

  /** RxJS calls this for each subscription (a synchronous throw errors the subscriber). */
  protected _subscribe(subscriber: Subscriber<AgentEvent>): AgentRun {
    const run = new AgentRun(this.agent, subscriber);
    run.start();
    return run;
  }
}

/** No budget given: one shared empty one, not an object per run. */
const NO_LIMITS: Budget = Object.freeze({});

/**
 * The observer of one turn's model pipeline: gathers the turn's output and passes each event on;
 * at completion, the run's next stage. A class rather than an object of three closures (an idle
 * run holds one per turn).
 */
class TurnSink implements Observer<TurnEvent> {
  private readonly output = new TurnOutput();

  constructor(private readonly run: AgentRun) {}

  next(event: TurnEvent): void {
    this.output.add(event);
    if (event.type === 'reset') this.run.startedOver();
    this.run.emit(event);
  }

  error(error: unknown): void {
    this.run.fail(error);
  }

  complete(): void {
    this.run.stage(() => this.run.afterTurn(this.output));
  }
}

/** The run's observer of its hub's events (which never error nor complete): each passed on once. */
class ReportSink implements Partial<Observer<AgentEvent>> {
  constructor(private readonly run: AgentRun) {}

  next(event: AgentEvent): void {
    this.run.emitOnce(event);
  }
}

/**
 * One subscription to `runAgent`: the conversation, the budget and the work in flight. The stages,
 * in the order a run goes through them: {@link AgentRun.turn} → {@link AgentRun.afterTurn} →
 * {@link AgentRun.toolRound} (each call through {@link AgentRun.toolOutcome}) → the next turn.
 */
class AgentRun implements DurableHost {
  private readonly hub: HealHub;
  /** A journaled run's session and records, from the machinery its journal carries (undefined: not journaled). */
  private readonly durable: DurablePort | undefined;
  private readonly scope = new RunScope();
  readonly budget: BudgetTracker;
  readonly history: Message[];
  readonly work = new Subscription();
  /** Hub and capability events already passed on (only with capabilities: then one event may come from both). */
  private seen: WeakSet<object> | undefined;
  step = 0;
  corrections = 0;
  /** The id idempotency keys are derived from: the journaled one, else one made on the first tool call. */
  private runId: string | undefined;

  constructor(
    private readonly agent: ResolvedAgent,
    readonly subscriber: Subscriber<AgentEvent>,
  ) {
    this.hub = agent.config.hub ?? new HealHub();
    const money = agent.money;
    this.budget = money
      ? new MoneyBudgetTracker(agent.config.budget ?? NO_LIMITS, this.hub, { ...money, context: () => this.spendContext() })
      : new BudgetTracker(agent.config.budget ?? NO_LIMITS, this.hub);
    this.history = [...agent.config.messages];
    this.durable = agent.durable?.runs.run(this, agent);
  }

  /** Who is spending, for fleet-wide money limits: the run's id (made on first use, as for idempotency keys) and tags. */
  /** The run's id: its journal's, or one made up the first time it is asked for. */
  private id(): string {
    return (this.runId ??= this.durable?.runId ?? freshRunId());
  }

  private spendContext(): { runId: string; tags?: Readonly<Record<string, string>> } {
    const runId = this.id();
    const tags = this.agent.config.tags;
    return tags ? { runId, tags } : { runId };
  }

  /** Start: surface what the hub and the capabilities report, then the first turn. */
  start(): void {
    const capabilities = this.agent.config.capabilities;
    if (capabilities) this.seen = new WeakSet<object>();
    subscribeWithin(this.work, this.hub.events$, new ReportSink(this));
    if (capabilities) this.work.add(capabilities.events$.subscribe((event: AgentEvent): void => this.emitOnce(event)));
    if (this.durable) this.durable.start();
    else this.stage(() => this.turn());
  }

  /** The run answered: a journaled one journals its end and releases its lease first. */
  private answered(): void {
    if (this.durable) this.durable.answered();
    else this.subscriber.complete();
  }

  /** Journaled: `record()` is appended, then the run goes on (`next`); otherwise it goes on at once. */
  private persist(record: (durable: DurablePort) => RunRecord, next: () => void): void {
    if (this.durable) this.durable.commit(record(this.durable), next);
    else next();
  }

  /**
   * Runs a stage of the loop; a throw from the user code it calls (toolPipeline, modelPipeline,
   * capabilities, the output validator) ends the run with what was thrown.
   */
  stage(run: () => void): void {
    const outcome = guard(run);
    if (outcome instanceof Thrown) this.fail(outcome.error);
  }

  /** Stop (the run's teardown, when its subscriber unsubscribes or ends): cancel every model stream and tool call in flight. */
  unsubscribe(): void {
    this.work.unsubscribe();
    this.durable?.unsubscribe();
  }

  emit(event: AgentEvent): void {
    this.subscriber.next(event);
  }

  /** Hub and capability events: once per event object, even if it reaches us from both. */
  emitOnce(event: AgentEvent): void {
    const seen = this.seen;
    if (seen) {
      if (seen.has(event)) return;
      seen.add(event);
    }
    this.subscriber.next(event);
  }

  fail(error: unknown): void {
    if (this.durable) this.durable.fail(error);
    else this.subscriber.error(error);
  }

  private addMessage(message: Message): void {
    this.history.push(message);
    this.emit(this.durable?.replayed(message) === true ? { type: 'message', message, replayed: true } : { type: 'message', message });
  }

  /** The request of the next turn: the instruction (with the degraded capabilities' suffix), then the history. */
  private request(): ModelRequest {
    const { instruction, capabilities } = this.agent.config;
    const suffix = capabilities?.systemPromptSuffix() ?? '';
    const system = [instruction ?? '', suffix].filter((s) => s !== '').join('\n\n');
    const messages: Message[] = system ? [{ role: 'system', content: system }, ...this.history] : [...this.history];
    const maxOutputTokens = this.agent.config.maxOutputTokens;
    return maxOutputTokens === undefined ? { messages, tools: this.agent.specs } : { messages, tools: this.agent.specs, maxOutputTokens };
  }

  /** A journaled turn started over: its checkpoint no longer holds. */
  startedOver(): void {
    this.durable?.startedOver(this.step);
  }

  /** A turn: one model request through the model pipeline; its events passed on and gathered (`from`: a resumed run's interrupted turn's checkpoint). */
  turn(from?: ModelCheckpoint): void {
    if (this.subscriber.closed) return;
    const { config, maxSteps, scheduler } = this.agent;
    // past the steps budget the check throws, and stage() (every turn runs in one) ends the run
    if (this.step >= maxSteps) return this.budget.steps(maxSteps, this.step + 1);
    const step = ++this.step;
    const req = this.request();
    let modelCalls = 0;
    const nextCallId = (): string => `step-${step}.${++modelCalls}`;
    // a model alternative called with this context (fallbackTo's `context`) is a model call of the
    // run too: its own id, numbered on from the turn's (read once per call by streamModel)
    const context: PipelineContext = Object.defineProperty(this.context(), 'callId', { get: nextCallId });
    // each subscription is one model call of the run (a retry: the next): counted, traced, and its
    // context handed to the model, so a model that wraps others reports and counts into this run
    const call = (model: Model, checkpoint?: (c: ModelCheckpoint) => void) =>
      streamModel(model, req, {
        hub: this.hub,
        budget: this.budget,
        scheduler,
        step,
        callId: nextCallId(),
        runId: this.id(),
        ...(checkpoint ? { checkpoint } : {}),
      });
    // journaled: the model's checkpoints journaled, an interrupted turn continued from its checkpoint
    const turn$ = this.durable ? this.durable.modelTurn(step, from, call) : defer(() => call(config.model));
    const piped = config.modelPipeline ? config.modelPipeline(req, turn$, context) : turn$;
    // tokens are counted where each provider attempt finishes (streamModel)
    // linked to the run's work first: leaving reaches a pipeline still emitting synchronously
    subscribeWithin(this.work, this.durable ? this.durable.wholeTurn(step, piped) : piped, new TurnSink(this));
  }

  /** After a turn: its tool calls go to a tool round; a final answer is checked (output) or ends the run. */
  afterTurn(output: TurnOutput): void {
    const { text, calls, finish, received } = output;
    if (this.subscriber.closed) return;
    const model = this.agent.config.model;
    // a turn cut short without `finish`: a dropped connection (classified), never a short answer.
    // streamModel already errors for a model's stream without one, inside the healing pipeline;
    // this catches a modelPipeline that ends a turn early (take, catchError to EMPTY…)
    if (!finish) return this.fail(new IncompleteStreamError(model.id, 'no finish event', received));
    // the turn's reasoning stays with its message (a provider may need it back: Anthropic's signed thinking)
    const reasoning = output.takeReasoning();
    const withReasoning = <M extends AssistantMessage>(message: M): M => (reasoning ? { ...message, reasoning } : message);
    // cut for money mid-stream: the partial answer kept (marked), its tool calls never run; the run ends per onExhausted
    if (finish.reason === 'budget') return this.cutForMoney(withReasoning<AssistantMessage>({ role: 'assistant', content: text, cut: true }), finish);
    const check = this.agent.config.output;
    if (calls.length === 0 && check) return this.checkAnswer(text, check, withReasoning, finish);
    const message = withReasoning<AssistantMessage>(
      calls.length > 0 ? { role: 'assistant', content: text, toolCalls: calls } : { role: 'assistant', content: text },
    );
    this.persist(
      (durable) => durable.turnRecord(message, finish),
      () => {
        this.addMessage(message);
        if (calls.length > 0) this.toolRound(calls);
        else this.answered();
      },
    );
  }

  /** A turn cut where its money ran out: its partial message, then the run completes (`onExhausted: 'finish'`) or errors. */
  private cutForMoney(message: AssistantMessage, finish: Finish): void {
    this.persist(
      (durable) => durable.turnRecord(message, finish),
      () => {
        this.addMessage(message);
        if (this.agent.config.budget?.onExhausted === 'finish') return this.answered();
        const maxUsd = this.agent.money?.maxUsd;
        this.fail(this.budget.money?.exceeded ?? new BudgetExceededError('usd', maxUsd ?? 0, this.budget.money?.spentUsd ?? 0));
      },
    );
  }

  /**
   * Output self-correction: a valid answer (or the last allowed) ends the run; otherwise re-ask.
   * Journaled, an answer that fails its check is journaled with its correction, in one record.
   */
  private checkAnswer(text: string, output: OutputValidator, withReasoning: (m: AssistantMessage) => AssistantMessage, finish: Finish): void {
    const problems = output.check(text);
    const valid = problems.length === 0;
    const validation: AgentEvent = { type: 'validation', valid, attempt: this.corrections + 1, problems };
    const message = withReasoning({ role: 'assistant', content: text, validated: valid });
    const done = valid || this.corrections >= output.maxCorrections;
    const correction: Message | undefined = done ? undefined : { role: 'user', content: output.correction(problems) };
    const reset: AgentEvent = { type: 'reset', reason: 'correction', target: `model:${this.agent.config.model.id}` };
    this.persist(
      (durable) => durable.answerRecord(finish, validation, message, correction && { message: correction, reset }),
      () => {
        this.emit(validation);
        this.addMessage(message);
        if (!correction) return this.answered();
        this.corrections++;
        this.addMessage(correction);
        this.emit(reset);
        this.turn();
      },
    );
  }

  /**
   * A tool round: the turn's calls in parallel, their messages in call order, then the next turn.
   * Journaled: each outcome is journaled before it is emitted; a resumed round goes on from each
   * call's state (`states`); calls waiting for approval suspend the run once the others are done.
   */
  toolRound(calls: readonly ToolCall[], states?: readonly CallState[]): void {
    const context = this.context();
    const messages: (ToolMessage | undefined)[] = calls.map(() => undefined);
    const durable = this.durable;
    const pending: PendingApproval[] = [];
    const outcomes: Observable<readonly [number, ToolOutcome]>[] = [];
    calls.forEach((call, i) => {
      const key = effectKey(this.id(), context.step, i, call.name);
      const run$ = (): Observable<ToolOutcome> => this.toolOutcome(call, context, key, states?.[i]);
      const outcome$ = durable ? durable.callOutcome(call, key, states?.[i], context, run$) : run$();
      if (outcome$ instanceof Observable) outcomes.push(outcome$.pipe(map((outcome) => [i, outcome] as const)));
      else pending.push(outcome$);
    });
    this.work.add(
      merge(...outcomes).subscribe({
        next: ([i, outcome]) => {
          // a reflection is a resilience event: it goes to the hub, which surfaces it here once
          outcome.events.forEach((event) => (event.type === 'reflection' ? this.hub.report(event) : this.emit(event)));
          messages[i] = outcome.message;
        },
        error: (error: unknown) => this.fail(error),
        complete: () => {
          if (pending.length > 0) return durable!.suspend(pending);
          for (const message of messages) if (message) this.addMessage(message);
          this.stage(() => this.turn());
        },
      }),
    );
  }

  /** One tool call (`key`: its idempotency key) through the tool pipeline, as the events and the tool message it yields. */
  private toolOutcome(call: ToolCall, context: PipelineContext, key: string, state?: CallState): Observable<ToolOutcome> {
    const { tools, scheduler, config } = this.agent;
    const tool = tools.get(call.name);
    const runId = this.id();
    // one holder per call: every execution of it (a retry too) reads the newest checkpoint
    const checkpoints = this.durable?.checkpointsOf(call, state);
    const call$ = defer(() => {
      if (!tool) return throwError(() => unknownToolError(call, [...tools.keys()], this.scope));
      this.budget.toolCall();
      const execute$ = traced(
        this.hub,
        scheduler,
        { kind: 'tool', name: call.name, id: call.id, step: context.step },
        callTool(tool, call, checkpoints === undefined ? { scope: this.scope, idempotencyKey: key } : { scope: this.scope, idempotencyKey: key, checkpoints }),
      );
      const resumable = checkpoints?.resumed !== undefined;
      const guarded$ = underLedger(config, { key, runId, tool, call, hub: this.hub, emit: (e) => this.emit(e), resumable }, execute$);
      return this.durable ? this.durable.beforeTool(call, guarded$) : guarded$;
    });
    const piped = config.toolPipeline ? config.toolPipeline(call, call$, context) : call$;
    return piped.pipe(
      takeLast(1),
      defaultIfEmpty(undefined),
      map((value): ToolOutcome => {
        if (value instanceof Reflection) {
          return {
            events: [
              { type: 'tool-error', id: call.id, name: call.name, error: errorText(value.error), category: classifyError(value.error).category },
              {
                type: 'reflection',
                tool: value.toolName,
                callId: value.callId,
                attempt: value.attempt,
                max: value.max,
                exhausted: value.exhausted,
                prompt: value.prompt,
              },
            ],
            message: { role: 'tool', toolCallId: call.id, toolName: call.name, content: value.prompt, isError: true },
          };
        }
        this.scope.toolSucceeded(call.name);
        return {
          events: [{ type: 'tool-result', id: call.id, name: call.name, result: value }],
          message: { role: 'tool', toolCallId: call.id, toolName: call.name, content: resultText(value) },
        };
      }),
      catchError((error: unknown) => {
        if (endsRun(error)) return throwError(() => error);
        const text = errorText(error);
        return of<ToolOutcome>({
          events: [{ type: 'tool-error', id: call.id, name: call.name, error: text, category: classifyError(error).category }],
          message: { role: 'tool', toolCallId: call.id, toolName: call.name, content: `Error: ${text}`, isError: true },
        });
      }),
    );
  }

  /** What the pipelines of the current step are handed. */
  private context(): PipelineContext {
    return { hub: this.hub, step: this.step, scope: this.scope, budget: this.budget, scheduler: this.agent.scheduler, runId: this.id() };
  }
}
