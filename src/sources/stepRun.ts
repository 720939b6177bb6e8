/**
 * {@link StepRun}: a run journaled on a durable-execution engine's own steps (`stepJournal`).
 * An engine makes a workflow survive its process by running it again, each step it completed
 * answered from its own journal without being run. So the run's steps are the engine's:
 *
 * - a model turn is one step (`rxheal turn <n>`): the turn through its model pipeline, every
 *   retry and fallback inside it; its record the turn's events (its text deltas joined) and what
 *   it spent of the run's budget;
 * - a tool call is one step named by its idempotency key (`rxheal tool <key>`): the call through
 *   its tool pipeline (and the effect ledger, `effects`), its record the call's outcome;
 * - a round with a non-idempotent tool and no effect ledger starts with a step of its own
 *   (`rxheal tools <n>`): replayed while one of its calls' steps is not, that call was cut while it
 *   ran, and does what rxheal's records do then ({@link interruptedCall}: `verify`, else unknown).
 *
 * A step's events are emitted as it runs; replayed, they are emitted again with `replayed: true`,
 * nothing called. What ended a step in failure is its record too, so a replay ends the same way
 * (the engine's own retry of a failing step never runs: rxheal already healed inside it). Steps are
 * started in the same order on every replay: turns one after another, a round's calls in call
 * order. A step left by its run (unsubscribed) never settles: the engine keeps no outcome for it.
 *
 * @module
 */
import { concatMap, defer, Observable, of, shareReplay, Subscription } from 'rxjs';
import * as t from 'io-ts';
import { AgentEventCodec, TurnEventCodec, type AgentEvent, type Message, type ToolCall, type TurnEvent } from '../core/events/events.js';
import { ToolMessageCodec } from '../core/events/modelEvents.js';
import { JournalCorruptError } from '../core/journal/errors.js';
import { jsonRecord } from '../core/journal/journal.js';
import type { Model, ModelCheckpoint } from '../core/model/model.js';
import { guard, Thrown } from '../core/rx/guard.js';
import type { DurableHost, DurablePort, DurableSettings, PipelineContext, ResolvedAgent, StepJournal, ToolOutcome } from './agentConfig.js';
import { interruptedCall } from './interruptedCall.js';
import type { CallState } from './resumePlan.js';
import { RECORD_VERSION, type PendingApproval, type RunRecord } from './runJournal.js';
import type { CheckpointHolder } from './tool.js';

/** The failure that ended a step, as its record keeps it (its class is not kept). */
const FailureCodec = t.type({ name: t.string, message: t.string });
const UsedCodec = t.partial({ modelCalls: t.number, toolCalls: t.number, tokens: t.number, usd: t.number });
/** A turn's step: its events, what it spent, and the failure that ended it. */
const TurnStepCodec = t.intersection([
  t.type({ v: t.literal(RECORD_VERSION), events: t.array(TurnEventCodec), used: UsedCodec }),
  t.partial({ error: FailureCodec }),
]);
/** A tool call's step: events emitted before its end, its outcome or its failure, its executions. */
const ToolStepCodec = t.intersection([
  t.type({ v: t.literal(RECORD_VERSION), events: t.array(AgentEventCodec), toolCalls: t.number }),
  t.partial({ outcome: t.type({ events: t.array(AgentEventCodec), message: ToolMessageCodec }), error: FailureCodec }),
]);
const RoundStepCodec = t.type({ v: t.literal(RECORD_VERSION) });
/** A step whose record could not be made (a tool's result that is not JSON data): why. */
const FailedCodec = t.type({ v: t.literal(RECORD_VERSION), failed: FailureCodec });

type TurnStep = t.TypeOf<typeof TurnStepCodec>;
type ToolStep = t.TypeOf<typeof ToolStepCodec>;
type Used = t.TypeOf<typeof UsedCodec>;

/** What `turnRecord` and `answerRecord` make for the loop: nothing is written apart from the steps. */
const NO_RECORD: RunRecord = Object.freeze({ v: RECORD_VERSION, type: 'end', outcome: 'answer' });

const failure = (error: unknown) => ({ name: error instanceof Error ? error.name : 'Error', message: error instanceof Error ? error.message : String(error) });

/** A step's failure, read back: its name and message. */
function replayedError(error: { readonly name: string; readonly message: string }): Error {
  const e = new Error(error.message);
  e.name = error.name;
  return e;
}

/** A turn's events for its record: consecutive text (and reasoning) deltas joined into one. */
function joined(events: readonly TurnEvent[]): TurnEvent[] {
  const out: TurnEvent[] = [];
  for (const event of events) {
    const last = out[out.length - 1];
    if ((event.type === 'text-delta' || event.type === 'reasoning-delta') && last?.type === event.type)
      out[out.length - 1] = { ...last, text: last.text + event.text };
    else out.push(event);
  }
  return out;
}

/**
 * One run on an engine's steps.
 *
 * @example
 * ```ts
 * const durable = new StepRun(host, agent, agent.durable!, journal);
 * durable.start();
 * ```
 */
export class StepRun implements DurablePort {
  /** Whether the current turn came back from the engine (its message, its validation: `replayed`). */
  private turnReplayed = false;
  /** The tool messages that came back from the engine. */
  private readonly replayedTools = new WeakSet<Message>();
  /** Executions of each call of the round in flight (a retry is one more), for its step's record. */
  private readonly executions = new Map<string, number>();
  /** The current round's start step (a round with a call the engine cannot tell the outcome of): replayed or not. */
  private round: { readonly step: number; readonly replayed$: Observable<boolean> } | undefined;

  constructor(
    private readonly host: DurableHost,
    private readonly agent: ResolvedAgent,
    private readonly settings: DurableSettings,
    private readonly journal: StepJournal,
  ) {}

  get runId(): string {
    return this.settings.runId;
  }

  /** No claim, no read: the engine holds the run, and replays it by running it again. */
  start(): void {
    this.host.stage(() => this.host.turn());
  }

  modelTurn(_step: number, _from: ModelCheckpoint | undefined, call: (model: Model, checkpoint: (c: ModelCheckpoint) => void) => Observable<TurnEvent>) {
    // a turn is one step: it is run again whole, never continued from a checkpoint
    return defer(() => call(this.agent.config.model, () => undefined));
  }

  /** Model turn `step`, through its model pipeline, as one step: its events live, or from the engine. */
  wholeTurn(step: number, turn$: Observable<TurnEvent>): Observable<TurnEvent> {
    return this.step<TurnEvent, TurnStep>(
      `rxheal turn ${step}`,
      TurnStepCodec,
      (emit) => {
        const before = this.spent();
        const events: TurnEvent[] = [];
        const record = (error?: unknown): TurnStep => ({
          v: RECORD_VERSION,
          events: joined(events),
          used: this.since(before),
          ...(error === undefined ? {} : { error: failure(error) }),
        });
        return { source$: turn$, next: (e) => void (events.push(e), emit(e)), record };
      },
      (data, replayed) => {
        this.turnReplayed = replayed;
        if (!replayed) return { events: [], error: data.error };
        this.add(data.used);
        // (a TurnEvent as the run emits it: an AgentEvent, which may say it is replayed)
        return { events: data.events.map((e) => ({ ...e, replayed: true }) as unknown as TurnEvent), error: data.error };
      },
    );
  }

  startedOver(): void {}

  replayed(message: Message): boolean {
    return message.role === 'tool' ? this.replayedTools.has(message) : this.turnReplayed;
  }

  /** Nothing to journal apart from the steps: the loop goes on. */
  commit(_record: RunRecord, next: () => void): void {
    this.host.stage(next);
  }

  turnRecord(): RunRecord {
    return NO_RECORD;
  }

  answerRecord(): RunRecord {
    return NO_RECORD;
  }

  /** An execution of a call (its step records how many). */
  beforeTool<T>(call: ToolCall, execute$: Observable<T>): Observable<T> {
    this.executions.set(call.id, (this.executions.get(call.id) ?? 0) + 1);
    return execute$;
  }

  /** A step is atomic: a call in one has no checkpoints to resume from. */
  checkpointsOf(): CheckpointHolder | undefined {
    return undefined;
  }

  /**
   * A call as one step named by its key: run (through its pipeline), or its outcome from the
   * engine. A non-idempotent call without an effect ledger waits for its round's start step.
   */
  callOutcome(
    call: ToolCall,
    key: string,
    _state: CallState | undefined,
    context: PipelineContext,
    run$: () => Observable<ToolOutcome>,
  ): Observable<ToolOutcome> {
    const tool = this.agent.tools.get(call.name);
    const unknowable = tool !== undefined && tool.idempotent !== true && this.agent.config.effects === undefined;
    const started$ = unknowable ? this.roundStarted(context.step) : of(false);
    return started$.pipe(
      concatMap((interrupted) => {
        const outcome$ = (): Observable<ToolOutcome> =>
          interrupted && tool !== undefined
            ? interruptedCall({ runId: this.runId, onUnknownOutcome: this.settings.onUnknownOutcome, emit }, call, tool, run$)
            : run$();
        // what interruptedCall emits before the error that ends the run: into the step's record too
        let emit: (event: AgentEvent) => void = (event) => this.host.emit(event);
        let outcome: ToolOutcome | undefined;
        return this.step<ToolOutcome, ToolStep>(
          `rxheal tool ${key}`,
          ToolStepCodec,
          () => {
            this.executions.delete(call.id);
            const early: AgentEvent[] = [];
            emit = (event) => void (early.push(event), this.host.emit(event));
            const record = (error?: unknown): ToolStep => {
              const toolCalls = this.executions.get(call.id) ?? 0;
              this.executions.delete(call.id);
              const base: Pick<ToolStep, 'v' | 'events' | 'toolCalls'> = { v: RECORD_VERSION, events: early, toolCalls };
              return error === undefined
                ? { ...base, outcome: { events: [...outcome!.events], message: outcome!.message } }
                : { ...base, error: failure(error) };
            };
            // the outcome goes on once the engine has journaled it
            return { source$: defer(outcome$), next: (o) => void (outcome = o), record };
          },
          (data, replayed) => {
            if (!replayed) return { events: outcome === undefined ? [] : [outcome], error: data.error };
            for (const event of data.events) this.host.emit({ ...event, replayed: true });
            this.host.budget.toolCalls += data.toolCalls;
            if (data.outcome === undefined) return { events: [], error: data.error };
            const message = data.outcome.message;
            this.replayedTools.add(message);
            const events = data.outcome.events.map((e): AgentEvent => ({ ...e, replayed: true }));
            return { events: [{ events, message }], error: data.error };
          },
        );
      }),
    );
  }

  /** The round's start step, shared by its calls: whether it came back from the engine (its calls were started by an earlier life). */
  private roundStarted(step: number): Observable<boolean> {
    if (this.round?.step === step) return this.round.replayed$;
    const replayed$ = this.step<boolean, t.TypeOf<typeof RoundStepCodec>>(
      `rxheal tools ${step}`,
      RoundStepCodec,
      () => ({ source$: of(true), next: () => undefined, record: () => ({ v: RECORD_VERSION }) }),
      (_data, replayed) => ({ events: [replayed] }),
    ).pipe(shareReplay({ bufferSize: 1, refCount: false }));
    this.round = { step, replayed$ };
    return replayed$;
  }

  /**
   * One step: `live` runs inside the engine's step (its values passed on as they come, when
   * `stream`; its record made on its completion or failure); the record the engine returns is
   * checked and `read` (`replayed`: the engine answered without running it), and what that gives
   * is delivered: its values, then its end.
   */
  private step<V, R extends object>(
    name: string,
    codec: t.Type<R, unknown>,
    live: (stream: (value: V) => void) => { source$: Observable<V>; next: (value: V) => void; record: (error?: unknown) => R },
    read: (data: R, replayed: boolean) => { events: readonly V[]; error?: { name: string; message: string } | undefined },
  ): Observable<V> {
    return new Observable<V>((subscriber) => {
      const work = new Subscription();
      let ran = false;
      let thrown: unknown;
      const fn = (): Promise<object> => {
        ran = true;
        return new Promise((resolve) => {
          const { source$, next, record } = live((value) => subscriber.next(value));
          const done = (error?: unknown): void => {
            thrown = error;
            const made = guard(() => jsonRecord('stepJournal', record(error)));
            if (made instanceof Thrown) thrown = made.error;
            // a record that cannot be made (a result that is not JSON data): the step failed with why
            resolve(made instanceof Thrown ? { v: RECORD_VERSION, failed: failure(made.error) } : made);
          };
          // a step left by its run never settles: the engine keeps no outcome for it
          work.add(source$.subscribe({ next, error: done, complete: () => done() }));
        });
      };
      const started = guard(() => this.journal.run(name, fn));
      if (started instanceof Thrown) {
        subscriber.error(started.error);
        return work;
      }
      Promise.resolve(started).then(
        (data) => {
          if (subscriber.closed) return;
          const failed = FailedCodec.decode(data);
          const out =
            failed._tag === 'Right'
              ? { events: [], error: failed.right.failed }
              : ((decoded) =>
                  decoded._tag === 'Right'
                    ? guard(() => read(decoded.right, !ran))
                    : new Thrown(new JournalCorruptError('step', `${this.runId} step ${JSON.stringify(name)}`, 'its record is not one rxheal wrote')))(
                  codec.decode(data),
                );
          if (out instanceof Thrown) return subscriber.error(out.error);
          for (const value of out.events) subscriber.next(value);
          if (out.error === undefined) return subscriber.complete();
          // live: the error itself (its class); replayed: its name and message
          subscriber.error(ran && thrown !== undefined ? thrown : replayedError(out.error));
        },
        (error: unknown) => subscriber.error(error),
      );
      return work;
    });
  }

  /** What the run's budget has spent so far (a turn's step records the difference). */
  private spent(): Required<Used> {
    const { modelCalls, toolCalls, tokens, money } = this.host.budget;
    return { modelCalls, toolCalls, tokens, usd: money?.spentUsd ?? 0 };
  }

  private since(before: Required<Used>): Used {
    const now = this.spent();
    return {
      modelCalls: now.modelCalls - before.modelCalls,
      tokens: now.tokens - before.tokens,
      ...(now.usd !== before.usd ? { usd: now.usd - before.usd } : {}),
    };
  }

  /** A replayed step's spending, added to the run's budget: a run the engine replays does not get a fresh one. */
  private add(used: Used): void {
    const budget = this.host.budget;
    budget.modelCalls += used.modelCalls ?? 0;
    budget.tokens += used.tokens ?? 0;
    if (budget.money && used.usd !== undefined) budget.money.spentUsd += used.usd;
  }

  suspend(_pending: readonly PendingApproval[]): void {
    // stepJournal refuses a tool that needs approval: an engine waits for people its own way
    this.fail(new Error('a run in an engine’s steps cannot wait for approval'));
  }

  answered(): void {
    this.host.subscriber.complete();
  }

  fail(error: unknown): void {
    this.host.work.unsubscribe();
    this.host.subscriber.error(error);
  }

  unsubscribe(): void {}
}
