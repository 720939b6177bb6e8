/**
 * What a chaos run writes down ({@link ChaosRecorder}): every model call and tool execution with
 * its fault and how it ended, the run's events, in one order — what the invariants of
 * `checkHealing` read — and what a replay's clock needs to know (promises pending, the text shown).
 *
 * @module
 */
import { asyncScheduler, type SchedulerLike } from 'rxjs';
import type { AgentEvent, Message, Usage } from '../core/events/events.js';
import type { ModelFault, ToolFault } from './schedule.js';

/**
 * How a model call or tool execution ended: `open` while it runs (or when the run ended first).
 *
 * @example
 * ```ts
 * const stalled = run.models.filter((a) => a.outcome === ('open' satisfies AttemptOutcome));
 * ```
 */
export type AttemptOutcome = 'open' | 'complete' | 'error' | 'cancelled';

/**
 * One call of a chaos model, as it happened.
 *
 * @example
 * ```ts
 * const first: ModelAttempt | undefined = recorder.models[0]; // { model: 'primary', call: 1, fault: { kind: 'reset', afterEvents: 2 }, text: 'The we', … }
 * ```
 */
export interface ModelAttempt {
  readonly kind: 'model';
  /** The model's id. */
  readonly model: string;
  /** Its 1-based call number (the schedule's index + 1). */
  readonly call: number;
  readonly fault: ModelFault;
  /** Where it falls among every record and run event (its order). */
  readonly seq: number;
  readonly startedAt: number;
  endedAt: number | undefined;
  outcome: AttemptOutcome;
  /** The text it delivered (its `text-delta`s). */
  text: string;
  /** Whether it delivered its `finish`. */
  finished: boolean;
  usage: Usage | undefined;
  /** Tool calls it delivered (names). */
  readonly toolCalls: string[];
  /** The partial answer it was asked to continue (the request ended with that assistant text and a user instruction). */
  readonly continuing: string | undefined;
  /** The step (`context.step`), when the model was handed its context. */
  readonly step: number | undefined;
}

/**
 * One execution of a chaos tool, as it happened.
 *
 * @example
 * ```ts
 * const runs = recorder.tools.filter((t: ToolExecution) => t.tool === 'book').length;
 * ```
 */
export interface ToolExecution {
  readonly kind: 'tool';
  readonly tool: string;
  /** Its 1-based execution number. */
  readonly call: number;
  readonly fault: ToolFault;
  readonly idempotent: boolean | 'by-key';
  /** The model's tool call it ran for (`callTool` hands it over); undefined when `execute` was called directly. */
  readonly callId: string | undefined;
  /** The `seq` of the run's assistant message that asked for that call, when the recorder saw it. */
  readonly turn: number | undefined;
  readonly seq: number;
  readonly startedAt: number;
  endedAt: number | undefined;
  outcome: AttemptOutcome;
  /** Whether the tool's own `execute` was called (its effect under way): false when the fault stood in for it (`throw`, `timeout`, `stall`, `is-error`). */
  ran: boolean;
  /** The call's idempotency key, as `execute` was handed it (`ctx.idempotencyKey`); undefined outside a run. */
  readonly key: string | undefined;
  /** What the tool's own `execute` answered when it completed (its last value; a `lost-answer` fault's too, though the caller never saw it); undefined before. */
  answer: { readonly value: unknown } | undefined;
}

/**
 * A run event as the recorder saw it: its place in the run's order and its virtual time.
 *
 * @example
 * ```ts
 * const retries = run.events.filter((e: RecordedEvent) => e.event.type === 'retry').map((e) => e.at);
 * ```
 */
export interface RecordedEvent {
  readonly seq: number;
  readonly at: number;
  readonly event: AgentEvent;
}

/**
 * What a chaos run wrote down: every model call and tool execution (with its fault), the run's
 * events, all in one order (`seq`). `checkHealing` makes one per run; give one to
 * {@link chaosModel} / {@link chaosTool} to watch your own.
 *
 * @example
 * ```ts
 * const recorder = new ChaosRecorder();
 * const model = chaosModel(primary, schedule, { recorder });
 * // … run …
 * recorder.models.map((a) => `${a.model}#${a.call}:${a.outcome}`);
 * ```
 */
export class ChaosRecorder {
  readonly models: ModelAttempt[] = [];
  readonly tools: ToolExecution[] = [];
  readonly events: RecordedEvent[] = [];
  /** Model ids and tool names wrapped with this recorder. */
  readonly wrappedModels = new Set<string>();
  readonly wrappedTools = new Set<string>();
  /** Set when the run has ended: the teardown that follows is not the run's doing, and is not written down. */
  closed = false;
  private seq = 0;
  private moves = 0;
  /** The messages each model call was asked, in call order. */
  private readonly requests: (readonly Message[])[] = [];
  /** Promises the run's tools and models returned that have not settled, by what returned them. */
  private readonly promises = new Map<PromiseLike<unknown>, string>();
  /** What the wrappers deliver while the replay's clock is let go: delivered when it is held again. */
  private readonly held: (() => void)[] = [];
  /**
   * Whether what a model or tool delivers may go on now: true but while a replay lets its clock
   * go (the event loop turning for a promise that waits on real I/O), when it waits for the clock.
   */
  open: () => boolean = () => true;
  /** Told when a tool's `execute` has been called and its output subscribed (its effect under way): crash mode's point inside a tool. */
  executing: ((tool: string) => void) | undefined;

  constructor(readonly scheduler: SchedulerLike = asyncScheduler) {}

  /** What a model or tool's outside world keeps in this run, by `model:<id>` / `tool:<name>`: its calls so far, an outage's end. */
  private readonly sides = new Map<string, { calls: number; downUntil: number }>();

  /** The outside world's state of one model or tool: the same for every wrapper of it in the run (a crash's resumed agent wraps it again). */
  sideOf(key: string): { calls: number; downUntil: number } {
    let side = this.sides.get(key);
    if (side === undefined) this.sides.set(key, (side = { calls: 0, downUntil: -Infinity }));
    return side;
  }

  /** The next position in the run's order. */
  next(): number {
    this.moves++;
    return this.seq++;
  }

  /** Grows whenever the run moves (a record, an event, a delivered item, an end, a settled promise): a replay steps on until it stops growing. */
  get progress(): number {
    return this.moves;
  }

  /** Notes that the run moved without a new record. */
  moved(): void {
    this.moves++;
  }

  /** The text the run has shown since its last assistant message (reset-aware): what a continuation continues. */
  private shown = '';

  /** Writes down a run event. */
  event(event: AgentEvent): void {
    this.events.push({ seq: this.next(), at: this.scheduler.now(), event });
    if (event.type === 'text-delta') this.shown += event.text;
    else if (event.type === 'reset' || (event.type === 'message' && event.message.role === 'assistant')) this.shown = '';
  }

  /** The text the run has shown of the answer it is giving (since its last assistant message, reset-aware). */
  shownText(): string {
    return this.shown;
  }

  /** Follows a promise a tool or model returned (`label` says whose) until it settles. */
  track(promise: PromiseLike<unknown>, label: string): void {
    this.promises.set(promise, label);
    const settled = (): void => {
      this.promises.delete(promise);
      this.moved();
    };
    promise.then(settled, settled);
  }

  /** How many of the promises it follows are still pending. */
  get pending(): number {
    return this.promises.size;
  }

  /** What returned the promises still pending. */
  pendingPromises(): string[] {
    return [...this.promises.values()];
  }

  /** Runs what a model or tool delivers now, or once the clock is held again (see {@link open}). */
  deliver(work: () => void): void {
    if (this.open()) return work();
    this.held.push(work);
    this.moved();
  }

  /** Delivers what waited for the clock, in order. */
  release(): void {
    while (this.held.length > 0 && this.open()) this.held.shift()!();
  }

  /** Writes down what a model call was asked. */
  asked(messages: readonly Message[]): void {
    this.requests.push(messages);
  }

  /**
   * Whether an earlier model call of the run was asked a conversation of `messages`' shape (as
   * many messages, the same roles: a model's `adapt` may rewrite their content).
   */
  wasAsked(messages: readonly Message[]): boolean {
    return this.requests.some((r) => r.length === messages.length && r.every((m, i) => m.role === messages[i]!.role));
  }

  /**
   * The `seq` of the latest assistant message of the run that made the tool call `callId` — the
   * live one when a resumed run replayed it after a crash (the same turn: its calls counted together).
   */
  turnOf(callId: string): number | undefined {
    let replayed: number | undefined;
    for (let i = this.events.length - 1; i >= 0; i--) {
      const { event, seq } = this.events[i]!;
      if (event.type !== 'message' || event.message.role !== 'assistant' || !event.message.toolCalls?.some((c) => c.id === callId)) continue;
      if ((event as { replayed?: boolean }).replayed !== true) return seq;
      replayed ??= seq;
    }
    return replayed;
  }

  /**
   * A recorder that goes on from what this one wrote down so far (copies: what either writes
   * next, the other does not see), as a run crashed now leaves it to its restart: the calls still
   * running are cancelled now (what their teardown writes down), the promises they returned no
   * longer followed. Crash mode's crashed run, restarted from a point of the run that never
   * crashed. Undefined while something waits for the clock (it is let go), or once closed.
   *
   * @example
   * ```ts
   * const resumed = recorder.fork(); // at a journal boundary of the run
   * ```
   */
  fork(): ChaosRecorder | undefined {
    if (this.held.length > 0 || this.closed) return undefined;
    const copy = new ChaosRecorder(this.scheduler);
    const now = this.scheduler.now();
    const cancelled = <A extends { outcome: AttemptOutcome; endedAt: number | undefined }>(a: A): A =>
      a.outcome === 'open' ? { ...a, outcome: 'cancelled', endedAt: now } : { ...a };
    copy.models.push(...this.models.map((a) => ({ ...cancelled(a), toolCalls: [...a.toolCalls] })));
    copy.tools.push(...this.tools.map(cancelled));
    copy.events.push(...this.events);
    for (const m of this.wrappedModels) copy.wrappedModels.add(m);
    for (const t of this.wrappedTools) copy.wrappedTools.add(t);
    copy.seq = this.seq;
    copy.moves = this.moves + 1;
    copy.requests.push(...this.requests);
    for (const [key, side] of this.sides) copy.sides.set(key, { ...side });
    copy.shown = this.shown;
    return copy;
  }

  /** Model streams and tool executions still running. */
  live(): number {
    return this.models.filter((a) => a.outcome === 'open').length + this.tools.filter((t) => t.outcome === 'open').length;
  }
}
