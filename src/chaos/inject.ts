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
import type { Message, TurnEvent } from '../core/events/events.js';
import type { Model, ModelContext, ModelRequest } from '../core/model/model.js';
import { after } from '../core/rx/wait.js';
import type { AnyTool } from '../sources/agentConfig.js';
import type { ToolContext } from '../sources/tool.js';
import { ChaosRecorder, type AttemptOutcome, type ModelAttempt, type ToolExecution } from './recorder.js';
import { validateSchedule, type FaultSchedule, type ModelFault, type ToolFault } from './schedule.js';

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
  return Object.assign(new TypeError(`fetch failed (chaos: '${model}' is down)`), {
    code: 'ECONNREFUSED',
    cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1'), { code: 'ECONNREFUSED' }),
  });
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
  // the provider's side: its calls counted, and an outage's end, across every wrapper of the run (a crash's resumed agent wraps it again)
  const provider = recorder?.sideOf(`model:${model.id}`) ?? { calls: 0, downUntil: -Infinity };
  return {
    id: model.id,
    stream: (request: ModelRequest, context: ModelContext) =>
      new Observable<TurnEvent>((subscriber) => {
        const call = ++provider.calls;
        const scheduled = faults[call - 1] ?? { kind: 'ok' };
        const now = scheduler.now();
        const fault: ModelFault = now < provider.downUntil ? { kind: 'down', forMs: 0 } : scheduled;
        if (fault.kind === 'down') provider.downUntil = Math.max(provider.downUntil, now + fault.forMs);
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
export const IS_ERROR_RESULT = Object.freeze({
  isError: true,
  content: Object.freeze([Object.freeze({ type: 'text', text: 'chaos: the tool reported an error' })]),
});

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
  const side = recorder?.sideOf(`tool:${tool.name}`) ?? { calls: 0, downUntil: -Infinity };
  const execute = (args: unknown, context: ToolContext): Observable<unknown> =>
    new Observable<unknown>((subscriber) => {
      const call = ++side.calls;
      const fault: ToolFault = faults[call - 1] ?? { kind: 'ok' };
      const callId = typeof context?.callId === 'string' ? context.callId : undefined;
      const turn = callId === undefined ? undefined : recorder?.turnOf(callId);
      const execution: ToolExecution = {
        kind: 'tool',
        tool: tool.name,
        call,
        fault,
        idempotent: tool.idempotent,
        callId,
        turn,
        seq: recorder?.next() ?? 0,
        startedAt: scheduler.now(),
        endedAt: undefined,
        outcome: 'open',
        ran: false,
        key: typeof context?.idempotencyKey === 'string' ? context.idempotencyKey : undefined,
        answer: undefined,
      };
      recorder?.tools.push(execution);
      const end = (outcome: AttemptOutcome): void => {
        if (execution.outcome !== 'open' || recorder?.closed === true) return;
        execution.outcome = outcome;
        execution.endedAt = scheduler.now();
        recorder?.moved();
      };
      let inner: { unsubscribe(): void } | undefined;
      /** Runs the real tool; `lose`: its answer is kept from the caller, who sees a timeout once it completes. */
      const run = (lose = false): void => {
        let output: ObservableInput<unknown>;
        let last: { readonly value: unknown } | undefined;
        execution.ran = true;
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
              last = { value };
              recorder?.moved();
              if (!lose) subscriber.next(value);
            }),
          error: (error: unknown) =>
            gate(() => {
              end('error');
              subscriber.error(error);
            }),
          complete: () =>
            gate(() => {
              execution.answer = last ?? { value: undefined };
              if (!lose) {
                end('complete');
                return subscriber.complete();
              }
              end('error');
              subscriber.error(Object.assign(new Error(`chaos: '${tool.name}' ran, and its answer was lost`), { name: 'TimeoutError' }));
            }),
        });
        recorder?.executing?.(tool.name);
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
          timer = failAfter(fault.afterMs ?? 0, () =>
            fault.status !== undefined ? new HttpError(fault.status, {}, `chaos: HTTP ${fault.status}`) : new Error(`chaos: '${tool.name}' failed`),
          );
          break;
        case 'timeout':
          timer = failAfter(fault.afterMs, () =>
            Object.assign(new Error(`chaos: '${tool.name}' timed out after ${fault.afterMs} ms`), { name: 'TimeoutError' }),
          );
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
          timer = after(fault.delayMs, scheduler, () => run());
          break;
        case 'lost-answer':
          run(true);
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
