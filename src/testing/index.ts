/**
 * `rxheal/testing`: fakes and helpers for testing agents in virtual time. Fake models and tools
 * are scripted turn by turn; timed scripts use marble strings, run on the scheduler (virtual
 * inside `TestScheduler.run`).
 *
 * @module
 */
import { asyncScheduler, from, mergeMap, Observable, throwError, type ObservableInput, type SchedulerLike } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import * as t from 'io-ts';
import type { AgentEvent, Finish, FinishReason, TextDelta, ToolCallEvent, TurnEvent, Usage } from '../core/events/events.js';
import type { AbortContext } from '../core/model/abortable.js';
import { after, wait } from '../core/rx/wait.js';
import type { Model, ModelRequest } from '../core/model/model.js';
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
      .pipe(mergeMap(({ frame, notification }) => wait(frame, scheduler).pipe(mergeMap(() => [notification]))))
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
  // linear, though the linter cannot tell: where `\s*\S+` fails only whitespace is left, and `\s+$` takes it at once
  // eslint-disable-next-line regexp/no-super-linear-move
  return (text.match(/\s*\S+|\s+$/g) ?? []).map((piece) => ({ type: 'text-delta', text: piece }));
}

/**
 * A reasoning block: `reasoning-delta` events, one per word, then its `reasoning-end` (signed when
 * `signature` is given, as Anthropic's thinking blocks are).
 *
 * @example
 * ```ts
 * const turn = [...reasoning('The user wants NYC.', 'sig-1'), toolCall('c1', 'get_weather', { city: 'NYC' }), finish('tool-calls')];
 * ```
 */
export function reasoning(text: string, signature?: string): TurnEvent[] {
  const deltas: TurnEvent[] = textDeltas(text).map((e) => ({ type: 'reasoning-delta', text: (e as TextDelta).text }));
  return [...deltas, signature === undefined ? { type: 'reasoning-end' } : { type: 'reasoning-end', signature }];
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
export type ScriptedTurn = readonly TurnEvent[] | MarbleScript<TurnEvent> | ((request: ModelRequest, context: AbortContext) => ObservableInput<TurnEvent>);

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
        typeof turn === 'function'
          ? from(turn(request, context))
          : Array.isArray(turn)
            ? from(turn as readonly TurnEvent[])
            : fromMarbles(turn as MarbleScript<TurnEvent>, scheduler);
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
 * `retry:tool:x#1`, `retry-withheld:tool:x:not_idempotent`, `circuit:name:closed>open`, `fallback:a>b`, `reset:fallback`,
 * `degraded:search`, `restored:search`, `bulkhead:model:gpt:rejected:full`, `hedge:model:gpt#1:won`,
 * `latency:model:gpt:first#100`, `pool:move:model:a>model:b`, `task:mcp:jobs/render:status:completed`, `resume:model:gpt#1@12`, `budget-exceeded:usd:cut`, `spend:gpt-5-mini`, `message:assistant`, `finish:stop`, `reasoning:Hm`,
 * `reasoning-end:signed`…
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
    case 'reasoning-delta':
      return `reasoning:${event.text}`;
    case 'reasoning-end':
      return event.redactedData !== undefined ? 'reasoning-end:redacted' : event.signature !== undefined ? 'reasoning-end:signed' : 'reasoning-end';
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
    case 'retry-withheld':
      return `retry-withheld:${event.target}:${event.reason}`;
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
      return `budget-exceeded:${event.resource}${event.cut === true ? ':cut' : ''}`;
    case 'spend':
      return `spend:${event.model}`;
    case 'rate-limited':
      return `rate-limited:${event.limiter}:${event.rejected === true ? 'rejected' : event.waitMs}`;
    case 'spend-refused':
      return `spend-refused:${event.limiter}:${event.key}`;
    case 'spend-local':
      return `spend-local:${event.limiter}:${event.key}`;
    case 'bulkhead':
      return `bulkhead:${event.bulkhead}:${event.kind}${event.reason === undefined ? '' : `:${event.reason}`}`;
    case 'hedge':
      return `hedge:${event.target}#${event.attempt}:${event.kind}`;
    case 'resume':
      return `resume:${event.target}#${event.attempt}@${event.startingAfter}`;
    case 'latency':
      return `latency:${event.target}:${event.kind}#${event.count}`;
    case 'pool':
      return `pool:${event.kind}:${event.from}${event.to === undefined ? '' : `>${event.to}`}`;
    case 'task':
      return `task:${event.target}:${event.kind}:${event.status}`;
    case 'validation':
      return `validation:${event.valid ? 'valid' : 'invalid'}`;
    case 'message':
      return `message:${event.message.role}`;
    case 'approval-requested':
      return `approval-requested:${event.tool}`;
    case 'suspended':
      return 'suspended';
    case 'tool-outcome-unknown':
      return `tool-outcome-unknown:${event.tool}`;
    case 'turn-resume':
      return `turn-resume:${event.outcome}`;
    case 'tool-deduplicated':
      return `tool-deduplicated:${event.tool}`;
  }
}

/**
 * How a recorded stream ended, and at which (virtual) time.
 *
 * @example
 * ```ts
 * const end: RecordedEnd | undefined = log.end(); // { kind: 'error', at: 3508, error: RetriesExhaustedError }
 * ```
 */
export type RecordedEnd = { readonly kind: 'complete'; readonly at: number } | { readonly kind: 'error'; readonly at: number; readonly error: unknown };

/** What {@link record} returns: the events so far, and how and when the stream ended. */
export interface Recording<T> {
  /** Each value with the time it arrived. */
  readonly events: [number, T][];
  /** The error the stream ended with, if it errored. */
  readonly error: () => unknown;
  /** Whether the stream completed. */
  readonly completed: () => boolean;
  /** How and when the stream ended (`complete` or `error`, with the scheduler's time); `undefined` while it runs. */
  readonly end: () => RecordedEnd | undefined;
}

/**
 * Runs an observable to the end inside `TestScheduler.run` (call `flush()` after) and records
 * each event with its virtual time, plus how the stream ended — completed or errored — and when.
 *
 * @example
 * ```ts
 * new TestScheduler(assert).run(({ flush }) => {
 *   const log = record(runAgent(config));
 *   flush();
 *   expect(log.events.map(([, e]) => describeEvent(e))).to.include('reset:fallback');
 *   expect(log.end()).to.deep.equal({ kind: 'complete', at: 42 });
 * });
 * ```
 */
export function record<T>(source: Observable<T>, scheduler: SchedulerLike = asyncScheduler): Recording<T> {
  const events: [number, T][] = [];
  let end: RecordedEnd | undefined;
  source.subscribe({
    next: (e) => events.push([scheduler.now(), e]),
    error: (error: unknown) => (end = { kind: 'error', at: scheduler.now(), error }),
    complete: () => (end = { kind: 'complete', at: scheduler.now() }),
  });
  return {
    events,
    error: () => (end?.kind === 'error' ? end.error : undefined),
    completed: () => end?.kind === 'complete',
    end: () => end,
  };
}

/**
 * How many actions (timers: waits, deadlines, breaker notices…) are scheduled on a
 * `TestScheduler` right now. 0 after a run has ended shows that nothing was left behind.
 *
 * @example
 * ```ts
 * const ts = new TestScheduler(assert);
 * ts.run(({ flush }) => {
 *   record(call$.pipe(degradeAfter(3000, 'unavailable')));
 *   flush();
 *   expect(pendingActions(ts)).to.equal(0); // no deadline left behind
 * });
 * ```
 */
export function pendingActions(scheduler: TestScheduler): number {
  return scheduler.actions.length;
}

/**
 * Emits, at `ms` (virtual time), how many other actions are scheduled on `scheduler` then, and
 * completes: `0` shows that no timer is left behind. For marble assertions:
 * `expectObservable(pendingAt(ts, 200)).toBe('200ms (n|)', { n: 0 })`.
 *
 * @example
 * ```ts
 * const ts = new TestScheduler(assert);
 * ts.run(({ cold, expectObservable }) => {
 *   cold('100ms a-b|').pipe(degradeAfter(3000, 'd')).subscribe();
 *   expectObservable(pendingAt(ts, 200)).toBe('200ms (n|)', { n: 0 });
 * });
 * ```
 */
export function pendingAt(scheduler: TestScheduler, ms: number): Observable<number> {
  return new Observable<number>((subscriber) =>
    after(ms, scheduler, () => {
      // the action running now has left the queue already
      subscriber.next(pendingActions(scheduler));
      subscriber.complete();
    }),
  );
}

/**
 * One run's shared state, as `runAgent` makes one per run: give a `toolPipeline` its
 * `context.scope` when you test the pipeline outside a run.
 *
 * @example
 * ```ts
 * const scope = new RunScope();
 * scope.toolSucceeded('get_weather'); // what a run does when a tool succeeds: its failures start over
 * ```
 */
export { RunScope } from '../core/rx/runScope.js';
