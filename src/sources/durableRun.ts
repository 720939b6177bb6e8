/**
 * {@link DurableRun}: what a journaled run (`runAgent({ runId, journal })`, `resumeAgent`) adds to
 * the agent loop. It claims the run's lease (renewed on the scheduler every third of `leaseMs`,
 * released at the end and on unsubscribe), reads the journal as a {@link resumePlan}, checks the
 * configuration against the journaled one, replays what the journal holds (`replayed: true`),
 * writes each record before the step that depends on it, and decides what a resumed tool call
 * does: run, answer from `verify`, report an unknown outcome, wait for approval, or be denied.
 *
 * @module
 */
import { catchError, concat, concatMap, defer, ignoreElements, interval, type Observable, of, Subscription, throwError } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { AgentEvent, AssistantMessage, Finish, Message, ToolCall } from '../core/events/events.js';
import { JournalCorruptError, JournalMismatchError, RunLockedError, ToolOutcomeUnknownError, type JournalChange } from '../core/journal/errors.js';
import { jsonRecord, type JournalEntry, type JournalSession, type JournalStore } from '../core/journal/journal.js';
import { isLeft } from '../core/errors/options.js';
import { modelsInside, type Model, type ModelCheckpoint } from '../core/model/model.js';
import type { TurnEvent } from '../core/events/events.js';
import { markFatal } from '../core/rx/runScope.js';
import { guard, Thrown } from '../core/rx/guard.js';
import type { AnyTool, DurableHost, DurablePort, DurableSettings, PipelineContext, ResolvedAgent, ToolOutcome } from './agentConfig.js';
import { resumePlan, type CallState, type ResumePlan } from './resumePlan.js';
import { messageRecord, RECORD_VERSION, type Fingerprint, type PendingApproval, type RunRecord, type Used } from './runJournal.js';
import type { CheckpointHolder } from './tool.js';
import { resumedTurn, TurnCheckpoints } from './turnCheckpoint.js';
import { randomName } from '../core/journal/idempotency.js';
import { interruptedCall } from './interruptedCall.js';

/** Errors of the journal itself, or of a resume's checks: never journaled as the run's end. */
const notJournaled = (error: unknown): boolean =>
  error instanceof RunLockedError ||
  error instanceof JournalCorruptError ||
  error instanceof JournalMismatchError ||
  error instanceof ToolOutcomeUnknownError ||
  error instanceof InvalidOptionError;

/** Records as JSON data: a tool's result that is not (a Date, undefined) is journaled as its JSON. */
const jsonData = (record: RunRecord) => jsonRecord('runAgent', record);

const randomHolder = (): string => randomName('rxheal');

/**
 * The configuration's fingerprint, as the start record keeps it.
 *
 * @example
 * ```ts
 * fingerprintOf(resolveAgent(config)).models; // ['gpt-5-mini']
 * ```
 */
export function fingerprintOf(agent: ResolvedAgent): Fingerprint {
  const { config, specs } = agent;
  const models = [config.model.id, ...(modelsInside(config.model) ?? []).map((m) => m.id)];
  return JSON.parse(
    JSON.stringify({ instruction: config.instruction ?? '', tools: specs.map((s) => ({ name: s.name, schema: s.parameters })), models }),
  ) as Fingerprint;
}

/**
 * What differs between the journaled configuration and this one.
 *
 * @example
 * ```ts
 * differences(plan.fingerprint!, fingerprintOf(agent), plan.initial, config.messages); // [{ kind: 'tool', detail: '"book" is gone' }]
 * ```
 */
export function differences(was: Fingerprint, now: Fingerprint, wasMessages: readonly Message[], nowMessages: readonly Message[]) {
  const out: { kind: JournalChange; detail: string }[] = [];
  if (was.instruction !== now.instruction) out.push({ kind: 'instruction', detail: 'the instruction changed' });
  const tools = new Map(now.tools.map((t) => [t.name, t]));
  for (const t of was.tools) {
    const n = tools.get(t.name);
    if (n === undefined) out.push({ kind: 'tool', detail: `${JSON.stringify(t.name)} is gone` });
    else if (JSON.stringify(n.schema) !== JSON.stringify(t.schema)) out.push({ kind: 'schema', detail: `${JSON.stringify(t.name)} changed its arguments` });
  }
  for (const n of now.tools) if (!was.tools.some((t) => t.name === n.name)) out.push({ kind: 'tool', detail: `${JSON.stringify(n.name)} was added` });
  for (const m of was.models) if (!now.models.includes(m)) out.push({ kind: 'model', detail: `${JSON.stringify(m)} is gone` });
  for (const m of now.models) if (!was.models.includes(m)) out.push({ kind: 'model', detail: `${JSON.stringify(m)} was added` });
  if (JSON.stringify(wasMessages) !== JSON.stringify(JSON.parse(JSON.stringify(nowMessages))))
    out.push({ kind: 'messages', detail: 'the conversation it started from changed' });
  return out;
}

/** A journaled run's error, read back: its name and message (its class is not journaled). */
function replayedError(error: { readonly name: string; readonly message: string }): Error {
  const e = new Error(error.message);
  e.name = error.name;
  return e;
}

/**
 * A run's settings in rxheal's records: its journal a store (`durableRuns.settings` checked it).
 *
 * @example
 * ```ts
 * const settings = agent.durable as RecordSettings;
 * ```
 */
export type RecordSettings = DurableSettings & { readonly journal: JournalStore };

/**
 * One journaled run: its session, its lease, its records.
 *
 * @example
 * ```ts
 * const durable = new DurableRun(host, agent, agent.durable as RecordSettings);
 * durable.start();
 * ```
 */
export class DurableRun implements DurablePort {
  private session: JournalSession | undefined;
  private readonly work = new Subscription();
  private renewal: Subscription | undefined;
  private ended = false;
  private checkpoints: TurnCheckpoints | undefined;

  constructor(
    private readonly host: DurableHost,
    private readonly agent: ResolvedAgent,
    private readonly settings: RecordSettings,
  ) {}

  get runId(): string {
    return this.settings.runId;
  }

  /** Claims the run; then replays it and goes on (a new run: writes its start). */
  start(): void {
    const { journal, runId, leaseMs } = this.settings;
    const claim = guard(() => journal.claim({ runId, holder: this.settings.holder ?? randomHolder(), leaseMs }));
    if (claim instanceof Thrown) return this.finish(undefined, () => this.host.subscriber.error(claim.error));
    this.work.add(claim.subscribe({ next: (session) => this.claimed(session), error: (error: unknown) => this.host.subscriber.error(error) }));
  }

  private claimed(session: JournalSession): void {
    this.session = session;
    this.checkpoints = new TurnCheckpoints(this.agent.scheduler, this.settings.checkpointMs, (record) => this.write(record));
    const plan = guard(() => this.check(session.entries));
    if (plan instanceof Thrown) return this.finish(undefined, () => this.host.subscriber.error(plan.error));
    this.renewal = interval(Math.max(1, Math.floor(this.settings.leaseMs / 3)), this.agent.scheduler)
      .pipe(concatMap(() => session.renew()))
      .subscribe({ error: (error: unknown) => this.fail(error) });
    if (plan.status === 'new') {
      const start: RunRecord = { v: RECORD_VERSION, type: 'start', fingerprint: fingerprintOf(this.agent), messages: [...this.agent.config.messages] };
      return this.commit(start, () => this.goOn(plan));
    }
    for (const event of plan.replay) {
      if (this.host.subscriber.closed) return;
      this.host.emit({ ...event, replayed: true });
    }
    if (plan.status === 'answered') return this.finish(undefined, () => this.host.subscriber.complete());
    if (plan.status === 'failed') return this.finish(undefined, () => this.host.subscriber.error(replayedError(plan.error!)));
    const approvals = Object.entries(this.settings.approvals ?? {});
    if (approvals.length === 0) {
      if (plan.status === 'suspended') return this.suspended(plan.pending, true);
      return this.goOn(plan);
    }
    // each decision journaled before the call it decides runs; the plan read again with them
    const decisions: RunRecord[] = approvals.map(([callId, a]) => ({
      v: RECORD_VERSION,
      type: 'decision',
      callId,
      approved: a.approved,
      ...(a.approved ? {} : { reason: a.reason }),
    }));
    const entries: JournalEntry[] = [...session.entries, ...decisions.map((d, i) => ({ seq: session.entries.length + i, data: jsonData(d) }))];
    const write = (i: number): void => (i === decisions.length ? this.goOn(resumePlan(this.runId, entries)) : this.commit(decisions[i]!, () => write(i + 1)));
    write(0);
  }

  /** The run goes on from its plan: its state restored from it (a new run: its first turn). */
  private goOn(plan: ResumePlan): void {
    const host = this.host;
    if (plan.status !== 'new') {
      host.history.splice(0, host.history.length, ...plan.history);
      host.step = plan.steps;
      host.corrections = plan.corrections;
      // the budget counts what the journal holds: a resumed run does not get a fresh one
      host.budget.modelCalls = plan.used.modelCalls;
      host.budget.toolCalls = plan.used.toolCalls;
      host.budget.tokens = plan.used.tokens;
      if (host.budget.money && plan.used.usd !== undefined) host.budget.money.spentUsd = plan.used.usd;
    }
    const next = plan.next;
    if (next?.kind !== 'tools') return host.turn(plan.checkpoint);
    const last = host.history[host.history.length - 1] as AssistantMessage;
    host.toolRound(last.toolCalls ?? [], next.calls);
  }

  /** What the run's budget spent so far (each record carries it). */
  private used(): Used {
    const { modelCalls, toolCalls, tokens, money } = this.host.budget;
    // what attempts in flight hold is not spent yet: a record carries what was charged
    return money ? { modelCalls, toolCalls, tokens, usd: money.spentUsd } : { modelCalls, toolCalls, tokens };
  }

  /** The journal as a plan, checked against this configuration and the approvals given. */
  private check(entries: readonly JournalEntry[]): ResumePlan {
    const plan = resumePlan(this.runId, entries);
    if (plan.fingerprint !== undefined) {
      const found = differences(plan.fingerprint, fingerprintOf(this.agent), plan.initial, this.agent.config.messages);
      const refused = found.filter((d) => !this.settings.allowChanged.includes(d.kind));
      if (refused.length > 0) throw new JournalMismatchError(this.runId, refused);
    }
    for (const [callId, approval] of Object.entries(this.settings.approvals ?? {})) {
      if (!plan.pending.some((p) => p.callId === callId)) {
        const waiting = plan.pending.map((p) => JSON.stringify(p.callId)).join(', ') || 'none';
        throw new InvalidOptionError('resumeAgent', `approvals.${callId}`, approval, `an approval of a call the run waits for (waiting: ${waiting})`);
      }
    }
    return plan;
  }

  /**
   * Model turn `step`'s events: its checkpoints journaled (`call` hands the model its
   * `context.checkpoint`), and, for the interrupted turn of a resumed run (`from`: its
   * checkpoint), the turn continued on the provider's side (see `resumedTurn`).
   */
  modelTurn(step: number, from: ModelCheckpoint | undefined, call: (model: Model, checkpoint: (c: ModelCheckpoint) => void) => Observable<TurnEvent>) {
    const model = this.agent.config.model;
    const offer = (checkpoint: ModelCheckpoint): void => void (this.ended || this.checkpoints?.offer(step, checkpoint));
    if (from === undefined) return defer(() => call(model, offer));
    this.checkpoints?.journaled(step, from);
    return resumedTurn(
      from,
      [model, ...(modelsInside(model) ?? [])],
      (m) => call(m, offer),
      (event) => this.host.emit(event),
    );
  }

  /** Model turn `step` as the loop reads it: as it is (its message is journaled once it is done). */
  wholeTurn(_step: number, turn$: Observable<TurnEvent>): Observable<TurnEvent> {
    return turn$;
  }

  /** A `message` event is never a replay: what the journal held was replayed at the start. */
  replayed(_message: Message): boolean {
    return false;
  }

  /** Model turn `step` started over (a `reset`): its checkpoint no longer holds. */
  startedOver(step: number): void {
    this.checkpoints?.startedOver(step);
  }

  /** A record nothing waits for (a checkpoint): appended in order; a journal that cannot take it ends the run. */
  private write(record: RunRecord): void {
    const append = guard(() => this.session!.append(jsonData(record)));
    if (append instanceof Thrown) return this.fail(append.error);
    this.work.add(append.subscribe({ error: (error: unknown) => this.journalFailed(error) }));
  }

  /** Journals `record`, then goes on: what depends on it starts only once it is durable. */
  commit(record: RunRecord, next: () => void): void {
    this.checkpoints?.settle();
    const session = this.session!;
    const append = guard(() => session.append(jsonData(record)));
    if (append instanceof Thrown) return this.fail(append.error);
    this.work.add(append.subscribe({ error: (error: unknown) => this.journalFailed(error), complete: () => this.host.stage(next) }));
  }

  /** `record` journaled, as an Observable (what a tool's outcome waits for). */
  private append$(record: RunRecord): Observable<never> {
    return defer(() => this.session!.append(jsonData(record))).pipe(
      ignoreElements(),
      catchError((error: unknown) => {
        // a journal that cannot be written ends the run: never a tool error the model sees
        markFatal(error);
        return throwError(() => error);
      }),
    );
  }

  private journalFailed(error: unknown): void {
    markFatal(error);
    this.finish(undefined, () => this.host.subscriber.error(error));
  }

  /** A model turn's record: its tool calls and its finish (with the usage) replayed before its message. */
  turnRecord(message: AssistantMessage, finish: Finish): RunRecord {
    const calls = (message.toolCalls ?? []).map((c): AgentEvent => ({ type: 'tool-call', ...c }));
    return messageRecord([message], [...calls, finish, { type: 'message', message }], this.used());
  }

  /** A checked answer's record: an answer that failed its check is journaled with its correction, in one record. */
  answerRecord(
    finish: Finish,
    validation: AgentEvent,
    message: AssistantMessage,
    correction?: { readonly message: Message; readonly reset: AgentEvent },
  ): RunRecord {
    const events: AgentEvent[] = [finish, validation, { type: 'message', message }];
    if (correction === undefined) return messageRecord([message], events, this.used());
    events.push({ type: 'message', message: correction.message }, correction.reset);
    return messageRecord([message, correction.message], events, this.used(), { correction: true });
  }

  /** Before a tool executes: its start journaled. */
  beforeTool<T>(call: ToolCall, execute$: Observable<T>): Observable<T> {
    return concat(this.append$({ v: RECORD_VERSION, type: 'tool-start', callId: call.id, tool: call.name, used: this.used() }), execute$);
  }

  /** A call's checkpoints: its newest journaled state (a resumed call's), each new one a `tool-checkpoint` record written before the tool goes on. */
  checkpointsOf(call: ToolCall, state: CallState | undefined): CheckpointHolder {
    return {
      resumed: state?.state === 'interrupted' ? state.checkpoint : undefined,
      write: (data) =>
        // append$ defers its write (and its check of the data) to the subscription
        concat(this.append$({ v: RECORD_VERSION, type: 'tool-checkpoint', callId: call.id, state: data as { [key: string]: unknown } }), of(undefined)),
    };
  }

  /** A tool's outcome journaled (its events and message go on once it is durable). */
  private commitOutcome(call: ToolCall, outcome: ToolOutcome): Observable<ToolOutcome> {
    const record = messageRecord([outcome.message], [...outcome.events, { type: 'message', message: outcome.message }], this.used(), { callId: call.id });
    return concat(this.append$(record), of(outcome));
  }

  /**
   * A call of a tool round, from its state in the plan (undefined: a call of a live turn): the
   * call waiting for approval, or its outcome journaled (`run$` runs it); a call the journal holds
   * done already: its tool message, nothing emitted, nothing written.
   */
  callOutcome(
    call: ToolCall,
    _key: string,
    state: CallState | undefined,
    context: PipelineContext,
    run$: () => Observable<ToolOutcome>,
  ): PendingApproval | Observable<ToolOutcome> {
    if (state?.state === 'done') return of({ events: [], message: state.message });
    const outcome$ = this.callPlan(call, state, this.agent.tools.get(call.name), context, run$);
    if (outcome$ === 'pending') return { callId: call.id, tool: call.name, args: call.args };
    return outcome$.pipe(concatMap((outcome) => this.commitOutcome(call, outcome)));
  }

  /** What a call does, from its state in the plan: `'pending'` (it waits for approval), or its outcome (`run$` runs it). */
  private callPlan(
    call: ToolCall,
    state: CallState | undefined,
    tool: AnyTool | undefined,
    context: PipelineContext,
    run$: () => Observable<ToolOutcome>,
  ): 'pending' | Observable<ToolOutcome> {
    const kind = state?.state ?? 'not-started';
    if (tool === undefined || kind === 'approved') return run$();
    if (kind === 'awaiting-approval') return 'pending';
    if (kind === 'denied') {
      const reason = state?.state === 'denied' && state.reason !== '' ? `: ${state.reason}` : '';
      const text = `The call was denied by the person asked to approve it${reason}. It did not run.`;
      return of({
        events: [{ type: 'tool-error', id: call.id, name: call.name, error: `denied${reason}`, category: 'denied' }],
        message: { role: 'tool', toolCallId: call.id, toolName: call.name, content: text, isError: true },
      });
    }
    // a call that checkpointed carries on its own work from there (its execution gets `resumed`), whatever its idempotency
    if (state?.state === 'interrupted' && state.checkpoint !== undefined) return run$();
    // under an effect ledger, the ledger knows what happened: it answers, reconciles or runs
    if (kind === 'interrupted' && !tool.idempotent && this.agent.config.effects === undefined)
      return interruptedCall({ runId: this.runId, onUnknownOutcome: this.settings.onUnknownOutcome, emit: (e) => this.host.emit(e) }, call, tool, run$);
    if (kind === 'not-started' && this.needsApproval(call, tool, context)) return 'pending';
    return run$();
  }

  private needsApproval(call: ToolCall, tool: AnyTool, context: PipelineContext): boolean {
    const rule = tool.needsApproval;
    if (rule === undefined || rule === false || rule === true) return rule === true;
    const decoded = tool.args.decode(call.args);
    // arguments that do not decode never run (the tool's validation error goes to the model)
    if (isLeft(decoded)) return false;
    const verdict = guard(rule, decoded.right, { callId: call.id, signal: new AbortController().signal });
    if (verdict instanceof Thrown) throw verdict.error;
    void context;
    return verdict === true;
  }

  /** Calls wait for approval: journaled, each `approval-requested`, then `suspended`, and the run completes. */
  suspend(pending: readonly PendingApproval[]): void {
    this.commit({ v: RECORD_VERSION, type: 'suspended', pending: [...pending] }, () => {
      for (const p of pending) this.host.emit({ type: 'approval-requested', callId: p.callId, tool: p.tool, args: p.args });
      this.suspended(pending, false);
    });
  }

  private suspended(_pending: readonly PendingApproval[], replayed: boolean): void {
    this.host.emit(replayed ? { type: 'suspended', runId: this.runId, replayed } : { type: 'suspended', runId: this.runId });
    this.finish(undefined, () => this.host.subscriber.complete());
  }

  /** The answer was given: journaled as the end, the lease released, then the run completes. */
  answered(): void {
    this.finish({ v: RECORD_VERSION, type: 'end', outcome: 'answer' }, () => this.host.subscriber.complete());
  }

  /** The run failed: journaled as its end (unless the journal itself failed), the lease released, then the error. */
  fail(error: unknown): void {
    // nothing else of the run goes on while its end is journaled
    this.host.work.unsubscribe();
    const record: RunRecord | undefined = notJournaled(error)
      ? undefined
      : {
          v: RECORD_VERSION,
          type: 'end',
          outcome: 'error',
          error: { name: error instanceof Error ? error.name : 'Error', message: error instanceof Error ? error.message : String(error) },
        };
    this.finish(record, () => this.host.subscriber.error(error));
  }

  /** Writes the end record (if any), releases the lease, then delivers the run's end. Once. */
  private finish(record: RunRecord | undefined, deliver: () => void): void {
    if (this.ended) return;
    this.ended = true;
    this.checkpoints?.settle();
    this.renewal?.unsubscribe();
    this.work.unsubscribe();
    const session = this.session;
    if (session === undefined) return deliver();
    const release = (): void => void session.release().subscribe({ error: deliver, complete: deliver });
    if (record === undefined) return release();
    const append = guard(() => session.append(jsonData(record)));
    if (append instanceof Thrown) return release();
    append.subscribe({ error: release, complete: release });
  }

  /** The run's subscriber left: stop renewing, release the lease (what was already sent still settles). */
  unsubscribe(): void {
    if (this.ended) return;
    this.ended = true;
    this.checkpoints?.settle();
    this.renewal?.unsubscribe();
    this.work.unsubscribe();
    this.session?.release().subscribe({ error: () => undefined });
  }
}
