/**
 * `rxheal/testing`: fakes and helpers for testing agents in virtual time. Fake models and tools
 * are scripted turn by turn; timed scripts use marble strings, run on the scheduler (virtual
 * inside `TestScheduler.run`).
 *
 * @module
 */
import { asyncScheduler, from, mergeMap, Observable, throwError, timer, type ObservableInput, type SchedulerLike } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import * as t from 'io-ts';
import type { AgentEvent, Finish, FinishReason, ToolCallEvent, TurnEvent, Usage } from '../core/events.js';
import type { AbortContext } from '../core/abortable.js';
import type { Model, ModelRequest } from '../core/model.js';
import { defineTool, type Tool } from '../sources/tool.js';

/** A timed script: marble string (one frame = 1 ms), its values, and the error for `#`. */
export interface MarbleScript<T> {
  readonly marbles: string;
  readonly values?: Readonly<Record<string, T>>;
  readonly error?: unknown;
}

/**
 * A cold observable from a marble string, timed on `scheduler` (virtual inside
 * `TestScheduler.run`, real time otherwise). `(ab)` groups, `-` is 1 ms, `10ms` a gap, `#` errors
 * with `error`, `|` completes; without `|` or `#` it never ends.
 *
 * @example
 * ```ts
 * fromMarbles({ marbles: '-a-b|', values: { a: 1, b: 2 } }).subscribe(console.log); // 1 at 1 ms, 2 at 3 ms
 * ```
 */
export function fromMarbles<T>(script: MarbleScript<T>, scheduler: SchedulerLike = asyncScheduler): Observable<T> {
  // one frame = 1 ms everywhere, as inside TestScheduler.run (outside it the static factor is 10)
  const factor = TestScheduler.frameTimeFactor;
  TestScheduler.frameTimeFactor = 1;
  let messages: ReturnType<typeof TestScheduler.parseMarbles>;
  try {
    messages = TestScheduler.parseMarbles(script.marbles, script.values as Record<string, T> | undefined, script.error, false, true);
  } finally {
    TestScheduler.frameTimeFactor = factor;
  }
  return new Observable<T>((subscriber) => {
    const subscription = from(messages)
      .pipe(mergeMap(({ frame, notification }) => timer(frame, scheduler).pipe(mergeMap(() => [notification]))))
      .subscribe((n) => {
        if (n.kind === 'N') subscriber.next(n.value as T);
        else if (n.kind === 'E') subscriber.error(n.error);
        else subscriber.complete();
      });
    return subscription;
  });
}

/** `text-delta` events, one per token (a word with its leading space). */
export function textDeltas(text: string): TurnEvent[] {
  return (text.match(/\s*\S+|\s+$/g) ?? []).map((piece) => ({ type: 'text-delta', text: piece }));
}

/** A `tool-call` event. */
export function toolCall(id: string, name: string, args: unknown): ToolCallEvent {
  return { type: 'tool-call', id, name, args };
}

/** A `finish` event. */
export function finish(reason: FinishReason = 'stop', usage?: Usage): Finish {
  return usage ? { type: 'finish', reason, usage } : { type: 'finish', reason };
}

/** One scripted model turn: events emitted at once, a marble script, or a function of the request. */
export type ScriptedTurn =
  | readonly TurnEvent[]
  | MarbleScript<TurnEvent>
  | ((request: ModelRequest, context: AbortContext) => ObservableInput<TurnEvent>);

/** A fake model that also records what it was asked. */
export interface ScriptedModel extends Model {
  /** Requests received, in order. */
  readonly requests: ModelRequest[];
  /** How many times `stream` was called (every retry and fallback counts). */
  readonly calls: number;
  /** Subscriptions cancelled before the turn ended. */
  readonly cancelled: number;
}

/**
 * A fake model whose n-th call plays the n-th turn. A call past the script errors.
 *
 * @example
 * ```ts
 * const model = scriptedModel('fake', [
 *   [toolCall('c1', 'get_weather', { city: 'NYC', units: 'celsius' }), finish('tool-calls')],
 *   [...textDeltas('It is 22 °C and sunny in NYC.'), finish()],
 * ]);
 * // timed: 3 deltas, 1 ms apart, then a 503
 * scriptedModel('primary', [{ marbles: '-a-b-c-#', values: { a: …, b: …, c: … }, error: new HttpError(503) }]);
 * ```
 */
export function scriptedModel(id: string, turns: readonly ScriptedTurn[], options: { scheduler?: SchedulerLike } = {}): ScriptedModel {
  const scheduler = options.scheduler ?? asyncScheduler;
  const requests: ModelRequest[] = [];
  let calls = 0;
  let cancelled = 0;
  return {
    id,
    requests,
    get calls() {
      return calls;
    },
    get cancelled() {
      return cancelled;
    },
    stream(request, context) {
      const turn = turns[calls++];
      requests.push(request);
      if (turn === undefined) {
        return throwError(() => new Error(`scriptedModel '${id}' has no turn ${calls} (script has ${turns.length})`));
      }
      const source: Observable<TurnEvent> =
        typeof turn === 'function' ? from(turn(request, context)) : Array.isArray(turn) ? from(turn as readonly TurnEvent[]) : fromMarbles(turn as MarbleScript<TurnEvent>, scheduler);
      return new Observable<TurnEvent>((subscriber) => {
        let done = false;
        const subscription = source.subscribe({
          next: (e) => subscriber.next(e),
          error: (e: unknown) => {
            done = true;
            subscriber.error(e);
          },
          complete: () => {
            done = true;
            subscriber.complete();
          },
        });
        return () => {
          if (!done) cancelled++;
          subscription.unsubscribe();
        };
      });
    },
  };
}

/** One scripted tool outcome: a result, an `Error` to throw, or a marble script. */
export type ScriptedOutcome<R> = { readonly result: R } | { readonly error: unknown } | MarbleScript<R>;

/** A fake tool that also records its executions. */
export type ScriptedTool<R> = Tool<unknown, R> & {
  /** Arguments of each execution, in order. */
  readonly executions: unknown[];
};

/**
 * A fake tool whose n-th execution plays the n-th outcome (the last one repeats). Arguments are
 * decoded with `args` (default: anything).
 *
 * @example
 * ```ts
 * const weather = scriptedTool('get_weather', [
 *   { error: new Error('Invalid units. Supported: celsius, fahrenheit') },
 *   { result: { temperature: 22, condition: 'sunny' } },
 * ]);
 * const slowSearch = scriptedTool('search', [{ marbles: '3500ms (r|)', values: { r: ['doc'] } }]);
 * ```
 */
export function scriptedTool<R>(
  name: string,
  outcomes: readonly ScriptedOutcome<R>[],
  options: { args?: t.Mixed; idempotent?: boolean; description?: string; scheduler?: SchedulerLike } = {},
): ScriptedTool<R> {
  const executions: unknown[] = [];
  const tool = defineTool<unknown, R>({
    name,
    description: options.description ?? `scripted tool ${name}`,
    args: options.args ?? t.unknown,
    idempotent: options.idempotent ?? false,
    execute: (args) => {
      const outcome = outcomes[Math.min(executions.length, outcomes.length - 1)];
      executions.push(args);
      if (outcome === undefined) throw new Error(`scriptedTool '${name}' has no outcomes`);
      if ('marbles' in outcome) return fromMarbles(outcome, options.scheduler);
      if ('error' in outcome) return throwError(() => outcome.error);
      return [outcome.result];
    },
  });
  return Object.assign(tool, { executions });
}

/**
 * A short label for an agent event, for compact assertions: `text:Hello`, `tool-call:get_weather`,
 * `tool-result:get_weather`, `tool-error:get_weather`, `reflection:get_weather#1/3`,
 * `retry:tool:x#1`, `circuit:name:closed>open`, `fallback:a>b`, `reset:fallback`,
 * `degraded:search`, `restored:search`, `message:assistant`, `finish:stop`…
 *
 * @example
 * ```ts
 * expect(events.map(describeEvent)).to.deep.equal(['tool-call:get_weather', 'finish:tool-calls', 'message:assistant', …]);
 * ```
 */
export function describeEvent(event: AgentEvent): string {
  switch (event.type) {
    case 'text-delta':
      return `text:${event.text}`;
    case 'tool-call':
    case 'tool-result':
    case 'tool-error':
      return `${event.type}:${event.name}`;
    case 'finish':
      return `finish:${event.reason}`;
    case 'reflection':
      return `reflection:${event.tool}#${event.exhausted ? 'exhausted' : `${event.attempt}/${event.max}`}`;
    case 'retry':
      return `retry:${event.target}#${event.attempt}`;
    case 'retry-succeeded':
      return `retry-succeeded:${event.target}#${event.attempt}`;
    case 'call-start':
      return `call-start:${event.kind}:${event.name}`;
    case 'call-end':
      return `call-end:${event.kind}:${event.name}:${event.outcome}`;
    case 'circuit':
      return event.kind === 'transition' ? `circuit:${event.breaker}:${event.from}>${event.to}` : `circuit:${event.breaker}:rejected`;
    case 'fallback':
      return `fallback:${event.from}>${event.to}`;
    case 'reset':
      return `reset:${event.reason}`;
    case 'degraded':
    case 'restored':
      return `${event.type}:${event.capability}`;
    case 'budget-exceeded':
      return `budget-exceeded:${event.resource}`;
    case 'rate-limited':
      return `rate-limited:${event.limiter}:${event.rejected === true ? 'rejected' : event.waitMs}`;
    case 'validation':
      return `validation:${event.valid ? 'valid' : 'invalid'}`;
    case 'message':
      return `message:${event.message.role}`;
  }
}

/**
 * Runs an observable to the end inside `TestScheduler.run` (call `flush()` after) and records
 * each event with its virtual time, plus the error or completion.
 *
 * @example
 * ```ts
 * new TestScheduler(assert).run(({ flush }) => {
 *   const log = record(runAgent(config));
 *   flush();
 *   expect(log.events.map(([, e]) => describeEvent(e))).to.include('reset:fallback');
 * });
 * ```
 */
export function record<T>(source: Observable<T>, scheduler: SchedulerLike = asyncScheduler): {
  readonly events: [number, T][];
  readonly error: () => unknown;
  readonly completed: () => boolean;
} {
  const events: [number, T][] = [];
  let error: unknown;
  let completed = false;
  source.subscribe({
    next: (e) => events.push([scheduler.now(), e]),
    error: (e: unknown) => (error = e),
    complete: () => (completed = true),
  });
  return { events, error: () => error, completed: () => completed };
}
