/**
 * Applying a fault schedule: {@link chaosModel} and {@link chaosTool} wrap the user's own models
 * and tools so that their n-th call suffers the schedule's n-th fault, every wait on the
 * scheduler (virtual inside `TestScheduler.run`). Each call is written down in a
 * {@link ChaosRecorder}: what the invariants of `checkHealing` read.
 *
 * @module
 */
import { asyncScheduler, from, Observable, type ObservableInput, type SchedulerLike } from 'rxjs';
import { HttpError, IncompleteStreamError, MalformedStreamError } from '../core/errors/errors.js';
import type { AgentEvent, Message, TurnEvent, Usage } from '../core/events/events.js';
import type { Model, ModelContext, ModelRequest } from '../core/model/model.js';
import { after } from '../core/rx/wait.js';
import type { AnyTool } from '../sources/agentConfig.js';
import type { ToolContext } from '../sources/tool.js';
import { validateSchedule, type FaultSchedule, type ModelFault, type ToolFault } from './schedule.js';

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
  readonly idempotent: boolean;
  /** The model's tool call it ran for (`callTool` hands it over); undefined when `execute` was called directly. */
  readonly callId: string | undefined;
  /** The `seq` of the run's assistant message that asked for that call, when the recorder saw it. */
  readonly turn: number | undefined;
  readonly seq: number;
  readonly startedAt: number;
  endedAt: number | undefined;
  outcome: AttemptOutcome;
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

  constructor(readonly scheduler: SchedulerLike = asyncScheduler) {}

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

  /** Whether an earlier model call of the run was asked a conversation of `messages`' shape (as many messages, the same roles: a model's `adapt` may rewrite their content). */
  wasAsked(messages: readonly Message[]): boolean {
    return this.requests.some((r) => r.length === messages.length && r.every((m, i) => m.role === messages[i]!.role));
  }

  /** The `seq` of the latest assistant message of the run that made the tool call `callId`. */
  turnOf(callId: string): number | undefined {
    for (let i = this.events.length - 1; i >= 0; i--) {
      const { event, seq } = this.events[i]!;
      if (event.type === 'message' && event.message.role === 'assistant' && event.message.toolCalls?.some((c) => c.id === callId)) return seq;
    }
    return undefined;
  }

  /** Model streams and tool executions still running. */
  live(): number {
    return this.models.filter((a) => a.outcome === 'open').length + this.tools.filter((t) => t.outcome === 'open').length;
  }
}

/**
 * Options of {@link chaosModel} and {@link chaosTool}.
 *
 * @example
 * ```ts
 * const options: ChaosOptions = { scheduler: testScheduler, recorder: new ChaosRecorder(testScheduler) };
 * ```
 */
export interface ChaosOptions {
  /** Where waits are scheduled. Defaults to `asyncScheduler` (virtual inside `TestScheduler.run`). */
  readonly scheduler?: SchedulerLike;
  /** Where calls are written down. */
  readonly recorder?: ChaosRecorder;
}

/**
 * The arguments a `bad-tool-args` fault gives every tool call: no codec accepts them (a JSON
 * object cut short, as a string).
 *
 * @example
 * ```ts
 * callTool(getWeather, { id: 'c1', name: 'get_weather', args: BAD_TOOL_ARGS }); // ToolError, phase 'validate'
 * ```
 */
export const BAD_TOOL_ARGS = '{"arguments": ';

const isPromiseLike = (u: unknown): u is PromiseLike<unknown> => typeof (u as PromiseLike<unknown> | undefined)?.then === 'function';

/** The error a provider that refuses connections fails with (as `fetch` does). */
function refused(model: string): Error {
  return Object.assign(new TypeError(`fetch failed (chaos: '${model}' is down)`), { code: 'ECONNREFUSED', cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1'), { code: 'ECONNREFUSED' }) });
}

/**
 * The partial answer a request asks to continue, decided from what the run itself sent: the
 * request is one the run already made (an earlier call of it was asked the conversation before
 * the last two messages) followed by an assistant's text and a user's instruction, and that text
 * is exactly what the run has shown of its answer so far — what a `'continue'` fallback sends,
 * across a chain of continuations too. An earlier answer of the conversation followed by the
 * user's next question is no continuation, whatever words it shares with a cut call; nor is a
 * correction of a whole answer (`validateOutput` took it back with a reset). Without a recorder,
 * the shape alone.
 */
function continuing(messages: readonly Message[], recorder: ChaosRecorder | undefined): string | undefined {
  const last = messages[messages.length - 1];
  const prev = messages[messages.length - 2];
  if (last?.role !== 'user' || prev?.role !== 'assistant' || prev.content === '' || (prev.toolCalls?.length ?? 0) > 0) return undefined;
  if (recorder && (prev.content !== recorder.shownText() || !recorder.wasAsked(messages.slice(0, -2)))) return undefined;
  return prev.content;
}

/**
 * The user's model, under a fault schedule: its n-th call (each subscription to its stream: every
 * retry, fallback and hedge counts) gets `schedule.models[model.id][n - 1]` (see
 * {@link ModelFault}); past the list, it answers as it would. The context is handed on unchanged:
 * the wrapper is transparent to budgets, hubs and traces. Waits are on `options.scheduler`.
 *
 * @example
 * ```ts
 * const primary = scriptedModel('primary', [[...textDeltas('The weather is sunny.'), finish()]]);
 * const flaky = chaosModel(primary, { models: { primary: [{ kind: 'reset', afterEvents: 2 }] } });
 * // the first call delivers 'The weather' and fails with IncompleteStreamError
 * ```
 * @throws {ChaosInputError} for a malformed schedule.
 */
export function chaosModel(model: Model, schedule: FaultSchedule, options: ChaosOptions = {}): Model {
  const faults = validateSchedule(schedule).models?.[model.id] ?? [];
  const scheduler = options.scheduler ?? options.recorder?.scheduler ?? asyncScheduler;
  const recorder = options.recorder;
  recorder?.wrappedModels.add(model.id);
  let calls = 0;
  let downUntil = -Infinity;
  return {
    id: model.id,
    stream: (request: ModelRequest, context: ModelContext) =>
      new Observable<TurnEvent>((subscriber) => {
        const call = ++calls;
        const scheduled = faults[call - 1] ?? { kind: 'ok' };
        const now = scheduler.now();
        const fault: ModelFault = now < downUntil ? { kind: 'down', forMs: 0 } : scheduled;
        if (fault.kind === 'down') downUntil = Math.max(downUntil, now + fault.forMs);
        const attempt: ModelAttempt = {
          kind: 'model',
          model: model.id,
          call,
          fault,
          seq: recorder?.next() ?? 0,
          startedAt: now,
          endedAt: undefined,
          outcome: 'open',
          text: '',
          finished: false,
          usage: undefined,
          toolCalls: [],
          continuing: continuing(request.messages, recorder),
          step: context.step,
        };
        recorder?.models.push(attempt);
        recorder?.asked(request.messages);
        const end = (outcome: AttemptOutcome): void => {
          if (attempt.outcome !== 'open' || recorder?.closed === true) return;
          attempt.outcome = outcome;
          attempt.endedAt = scheduler.now();
          recorder?.moved();
        };
        const fail = (error: unknown): void => {
          end('error');
          subscriber.error(error);
        };
        const deliver = (event: TurnEvent): void => {
          if (event.type === 'text-delta') attempt.text += event.text;
          else if (event.type === 'finish') {
            attempt.finished = true;
            attempt.usage = event.usage;
          } else if (event.type === 'tool-call') attempt.toolCalls.push(event.name);
          recorder?.moved();
          subscriber.next(event);
        };
        let inner: { unsubscribe(): void } | undefined;
        const start = (): void => {
          let passed = 0;
          const cutAt = fault.kind === 'reset' || fault.kind === 'malformed' || fault.kind === 'stall' ? fault.afterEvents : Infinity;
          const cut = (): void => {
            inner?.unsubscribe();
            inner = undefined;
            if (fault.kind === 'reset') fail(new IncompleteStreamError(model.id, 'connection reset (chaos)', passed));
            else if (fault.kind === 'malformed') fail(new MalformedStreamError(model.id, 'invalid JSON (chaos)', '{"choices":[{"delta":{"content":"'));
            // a stall: silence until the consumer leaves
          };
          if (cutAt === 0) return cut();
          let cutting = false;
          const output = model.stream(request, context) as ObservableInput<TurnEvent>;
          if (recorder && isPromiseLike(output)) recorder.track(output, `model '${model.id}' call #${call}'s promise`);
          const gate = (work: () => void): void => (recorder ? recorder.deliver(work) : work());
          inner = from(output).subscribe({
            next: (event) =>
              gate(() => {
                if (cutting || subscriber.closed) return;
                if (passed >= cutAt || (event.type === 'finish' && cutAt !== Infinity)) {
                  cutting = true;
                  return cut();
                }
                passed++;
                deliver(fault.kind === 'bad-tool-args' && event.type === 'tool-call' ? { ...event, args: BAD_TOOL_ARGS } : event);
              }),
            error: (error: unknown) =>
              gate(() => {
                if (!cutting) fail(error);
              }),
            complete: () =>
              gate(() => {
                if (cutting || subscriber.closed) return;
                if (cutAt !== Infinity) return cut();
                end('complete');
                subscriber.complete();
              }),
          });
          if (cutting) inner?.unsubscribe();
        };
        let timer: { unsubscribe(): void } | undefined;
        switch (fault.kind) {
          case 'status': {
            const headers: Record<string, string> = fault.retryAfterMs === undefined ? {} : { 'retry-after-ms': String(fault.retryAfterMs) };
            timer = after(fault.afterMs ?? 0, scheduler, () => fail(new HttpError(fault.status, headers, `chaos: HTTP ${fault.status}`)));
            break;
          }
          case 'down':
            timer = after(0, scheduler, () => fail(refused(model.id)));
            break;
          case 'slow-first-byte':
            timer = after(fault.delayMs, scheduler, start);
            break;
          default:
            start();
        }
        return () => {
          timer?.unsubscribe();
          inner?.unsubscribe();
          end('cancelled');
        };
      }),
  };
}

/**
 * The MCP-style error result a tool answers with under an `is-error` fault.
 *
 * @example
 * ```ts
 * IS_ERROR_RESULT; // { isError: true, content: [{ type: 'text', text: 'chaos: the tool reported an error' }] }
 * ```
 */
export const IS_ERROR_RESULT = Object.freeze({ isError: true, content: Object.freeze([Object.freeze({ type: 'text', text: 'chaos: the tool reported an error' })]) });

/**
 * The user's tool, under a fault schedule: its n-th execution gets
 * `schedule.tools[tool.name][n - 1]` (see {@link ToolFault}); past the list, it runs as it would.
 * Name, description, codec, `idempotent` and parameters are the tool's own.
 *
 * @example
 * ```ts
 * const book = scriptedTool('book', [{ result: 'booked' }]);
 * const flaky = chaosTool(book, { tools: { book: [{ kind: 'throw', status: 503 }] } });
 * // the first execution fails with HTTP 503, the second books
 * ```
 * @throws {ChaosInputError} for a malformed schedule.
 */
export function chaosTool<T extends AnyTool>(tool: T, schedule: FaultSchedule, options: ChaosOptions = {}): T {
  const faults = validateSchedule(schedule).tools?.[tool.name] ?? [];
  const scheduler = options.scheduler ?? options.recorder?.scheduler ?? asyncScheduler;
  const recorder = options.recorder;
  recorder?.wrappedTools.add(tool.name);
  let calls = 0;
  const execute = (args: unknown, context: ToolContext): Observable<unknown> =>
    new Observable<unknown>((subscriber) => {
      const call = ++calls;
      const fault: ToolFault = faults[call - 1] ?? { kind: 'ok' };
      const callId = typeof context?.callId === 'string' ? context.callId : undefined;
      const turn = callId === undefined ? undefined : recorder?.turnOf(callId);
      const execution: ToolExecution = { kind: 'tool', tool: tool.name, call, fault, idempotent: tool.idempotent, callId, turn, seq: recorder?.next() ?? 0, startedAt: scheduler.now(), endedAt: undefined, outcome: 'open' };
      recorder?.tools.push(execution);
      const end = (outcome: AttemptOutcome): void => {
        if (execution.outcome !== 'open' || recorder?.closed === true) return;
        execution.outcome = outcome;
        execution.endedAt = scheduler.now();
        recorder?.moved();
      };
      let inner: { unsubscribe(): void } | undefined;
      const run = (): void => {
        let output: ObservableInput<unknown>;
        try {
          output = tool.execute(args, context);
        } catch (error) {
          end('error');
          return subscriber.error(error);
        }
        if (recorder && isPromiseLike(output)) recorder.track(output, `tool '${tool.name}' execution #${call}'s promise`);
        const gate = (work: () => void): void => (recorder ? recorder.deliver(work) : work());
        inner = from(typeof output === 'string' ? [output] : output).subscribe({
          next: (value) =>
            gate(() => {
              recorder?.moved();
              subscriber.next(value);
            }),
          error: (error: unknown) =>
            gate(() => {
              end('error');
              subscriber.error(error);
            }),
          complete: () =>
            gate(() => {
              end('complete');
              subscriber.complete();
            }),
        });
      };
      const failAfter = (ms: number, error: () => Error): { unsubscribe(): void } =>
        after(ms, scheduler, () => {
          end('error');
          subscriber.error(error());
        });
      let timer: { unsubscribe(): void } | undefined;
      switch (fault.kind) {
        case 'ok':
          run();
          break;
        case 'throw':
          timer = failAfter(fault.afterMs ?? 0, () => (fault.status !== undefined ? new HttpError(fault.status, {}, `chaos: HTTP ${fault.status}`) : new Error(`chaos: '${tool.name}' failed`)));
          break;
        case 'timeout':
          timer = failAfter(fault.afterMs, () => Object.assign(new Error(`chaos: '${tool.name}' timed out after ${fault.afterMs} ms`), { name: 'TimeoutError' }));
          break;
        case 'stall':
          break;
        case 'is-error':
          timer = after(0, scheduler, () => {
            end('complete');
            subscriber.next(IS_ERROR_RESULT);
            subscriber.complete();
          });
          break;
        case 'slow':
          timer = after(fault.delayMs, scheduler, run);
          break;
      }
      return () => {
        timer?.unsubscribe();
        inner?.unsubscribe();
        end('cancelled');
      };
    });
  return { ...tool, execute } as T;
}
