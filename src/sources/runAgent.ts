import { asyncScheduler, catchError, defaultIfEmpty, defer, map, merge, Observable, of, Subscription, takeLast, throwError, type SchedulerLike } from 'rxjs';
import { classifyError } from '../core/classify.js';
import { BudgetExceededError, InvalidOptionError } from '../core/errors.js';
import type {
  AgentEvent,
  AssistantMessage,
  DegradedEvent,
  Finish,
  Message,
  RestoredEvent,
  ToolCall,
  ToolMessage,
  TurnEvent,
  Usage,
} from '../core/events.js';
// a predicate, not MessageCodec: checking an option needs no io-ts in the bundle
import { isMessage } from '../core/isMessage.js';
import { TextBuffer } from '../core/textBuffer.js';
import { HealHub } from '../core/hub.js';
import { Func, NonEmptyString, PositiveInteger, Scheduler, check, validateOptions } from '../core/options.js';
import { errorText } from '../core/sanitize.js';
import { Reflection } from '../operators/reflectOnError.js';
import type { OutputValidator } from '../operators/validateOutput.js';
import { streamModel, type Model, type ModelRequest } from '../core/model.js';
import { IncompleteStreamError } from '../core/errors.js';
import { isFatal, RunScope } from '../core/runScope.js';
import { callTool, unknownToolError, type Tool } from './tool.js';

/** Limits on one run, counted across retries, reflections and fallbacks. */
export interface Budget {
  /** Subscriptions to a model stream (every retry and fallback counts). */
  readonly maxModelCalls?: number;
  /** Input + output tokens, from each turn's `finish.usage`. */
  readonly maxTokens?: number;
  /** Tool executions (every retry counts; calls rejected before running do not). */
  readonly maxToolCalls?: number;
}

/** What a run needs from a capability registry (`CapabilityRegistry` provides it). */
export interface CapabilitySource {
  /** Text appended to the instruction while something is degraded; '' otherwise. */
  systemPromptSuffix(): string;
  /** `degraded` / `restored` events. */
  readonly events$: Observable<DegradedEvent | RestoredEvent>;
}

/** Handed to `toolPipeline` and `modelPipeline`. */
export interface PipelineContext {
  /** The run's events hub: give it to operators (`hub` option) so their events reach the run. */
  readonly hub: HealHub;
  /** The step (model turn) number, from 1. */
  readonly step: number;
  /** The run's shared state. */
  readonly scope: RunScope;
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
   * is the result; a {@link Reflection} becomes the tool message. Defaults to `call$` as is.
   */
  readonly toolPipeline?: (call: ToolCall, call$: Observable<unknown>, context: PipelineContext) => Observable<unknown>;
  /** Composes operators around one model turn. Defaults to `turn$` as is. */
  readonly modelPipeline?: (request: ModelRequest, turn$: Observable<TurnEvent>, context: PipelineContext) => Observable<TurnEvent>;
  /** Capabilities that may degrade; their events are surfaced and their suffix added to the instruction. */
  readonly capabilities?: CapabilitySource;
  /** Limits on the run. */
  readonly budget?: Budget;
  /** The events hub (one per run is made if absent); its events are surfaced in the run's stream. */
  readonly hub?: HealHub;
  /** Output self-correction, from `validateOutput`. */
  readonly output?: OutputValidator;
  /** Where call durations are read (`call-start` / `call-end` events). Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

const Obj = check('an object', (u): u is object => typeof u === 'object' && u !== null);
const Arr = check('an array', (u): u is readonly unknown[] => Array.isArray(u));
const NonNegOrInfinity = check('a number >= 0 or Infinity', (u): u is number => typeof u === 'number' && u >= 0);
const budgetCodec = check('an object with maxModelCalls / maxTokens / maxToolCalls, each a number >= 0', (u): u is Budget => {
  if (typeof u !== 'object' || u === null) return false;
  return Object.entries(u).every(([k, v]) => ['maxModelCalls', 'maxTokens', 'maxToolCalls'].includes(k) && (v === undefined || NonNegOrInfinity.is(v)));
});
const props = {
  model: check('a Model ({ id, stream })', (u): u is Model => typeof u === 'object' && u !== null && typeof (u as Model).stream === 'function' && NonEmptyString.is((u as Model).id)),
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
};

/** Counts what a run spends and stops it, with `BudgetExceededError`, when a limit is crossed. */
class BudgetTracker {
  private modelCalls = 0;
  private toolCalls = 0;
  private tokens = 0;

  constructor(
    private readonly budget: Budget,
    private readonly hub: HealHub,
  ) {}

  modelCall(): void {
    this.check('modelCalls', this.budget.maxModelCalls, ++this.modelCalls);
  }

  toolCall(): void {
    this.check('toolCalls', this.budget.maxToolCalls, ++this.toolCalls);
  }

  usage(usage: Usage): void {
    this.tokens += usage.inputTokens + usage.outputTokens;
    this.check('tokens', this.budget.maxTokens, this.tokens);
  }

  steps(limit: number, used: number): never {
    this.check('steps', limit, used);
    throw new Error('unreachable');
  }

  private check(resource: string, limit: number | undefined, used: number): void {
    if (limit === undefined || used <= limit) return;
    this.hub.report({ type: 'budget-exceeded', resource, limit, used });
    throw new BudgetExceededError(resource, limit, used);
  }
}

/** Errors that end the run instead of going back to the model as a tool error. */
function endsRun(error: unknown): boolean {
  return isFatal(error) || error instanceof BudgetExceededError || classifyError(error).category === 'cancelled';
}

function resultText(result: unknown): string {
  if (typeof result === 'string') return result;
  try {
    return JSON.stringify(result) ?? 'null';
  } catch {
    return String(result);
  }
}

/**
 * Reports one call's lifetime to the hub: `call-start` on subscribe, `call-end` with duration,
 * outcome, error category and (for models) token usage.
 */
function traced<T>(
  hub: HealHub,
  scheduler: SchedulerLike,
  call: { kind: 'model' | 'tool'; name: string; id: string; step: number },
  source: Observable<T>,
): Observable<T> {
  return new Observable<T>((subscriber) => {
    const started = scheduler.now();
    let usage: Usage | undefined;
    let done = false;
    const end = (outcome: 'success' | 'error' | 'cancelled', error?: unknown): void => {
      done = true;
      const at = scheduler.now();
      hub.report({
        type: 'call-end',
        ...call,
        at,
        durationMs: at - started,
        outcome,
        ...(outcome === 'error' ? { error: errorText(error, 200), category: classifyError(error).category } : {}),
        ...(usage ? { usage } : {}),
      });
    };
    hub.report({ type: 'call-start', ...call, at: started });
    const subscription = source.subscribe({
      next: (value) => {
        const event = value as { type?: unknown; usage?: Usage };
        if (call.kind === 'model' && event.type === 'finish' && event.usage) usage = event.usage;
        subscriber.next(value);
      },
      error: (error: unknown) => {
        end('error', error);
        subscriber.error(error);
      },
      complete: () => {
        end('success');
        subscriber.complete();
      },
    });
    return () => {
      subscription.unsubscribe();
      if (!done) end('cancelled');
    };
  });
}

interface ToolOutcome {
  readonly events: readonly AgentEvent[];
  readonly message: ToolMessage;
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
 * @throws {InvalidOptionError} at once, for an invalid option.
 */
export function runAgent(config: AgentConfig): Observable<AgentEvent> {
  validateOptions('runAgent', props, config);
  if (config === undefined || config.model === undefined) throw new InvalidOptionError('runAgent', 'model', undefined, props.model.name);
  if (config.messages === undefined) throw new InvalidOptionError('runAgent', 'messages', undefined, props.messages.name);
  config.messages.forEach((message, i) => {
    if (!isMessage(message)) throw new InvalidOptionError('runAgent', `messages[${i}]`, message, 'a Message ({ role, content, … })');
  });
  (config.tools ?? []).forEach((tool, i) => {
    const ok = typeof tool === 'object' && tool !== null && NonEmptyString.is(tool.name) && typeof tool.execute === 'function' && typeof tool.args?.decode === 'function';
    if (!ok) throw new InvalidOptionError('runAgent', `tools[${i}]`, tool, 'a Tool (from defineTool)');
  });
  const { model, instruction, toolPipeline, modelPipeline, capabilities, output } = config;
  const tools = new Map((config.tools ?? []).map((tool) => [tool.name, tool]));
  const specs = [...tools.values()].map(({ name, description, parameters }) => ({ name, description, parameters }));
  const maxSteps = config.maxSteps ?? 10;
  const scheduler = config.scheduler ?? asyncScheduler;

  return new Observable<AgentEvent>((subscriber) => {
    const hub = config.hub ?? new HealHub();
    const scope = new RunScope();
    const budget = new BudgetTracker(config.budget ?? {}, hub);
    const history: Message[] = [...config.messages];
    const work = new Subscription();
    const seen = new WeakSet<object>();
    let step = 0;
    let corrections = 0;

    const emit = (event: AgentEvent): void => subscriber.next(event);
    /** Hub and capability events: once per event object, even if it reaches us from both. */
    const emitOnce = (event: AgentEvent): void => {
      if (seen.has(event)) return;
      seen.add(event);
      subscriber.next(event);
    };
    const fail = (error: unknown): void => subscriber.error(error);
    const addMessage = (message: Message): void => {
      history.push(message);
      emit({ type: 'message', message });
    };

    work.add(hub.events$.subscribe(emitOnce));
    if (capabilities) work.add(capabilities.events$.subscribe(emitOnce));

    const request = (): ModelRequest => {
      const suffix = capabilities?.systemPromptSuffix() ?? '';
      const system = [instruction ?? '', suffix].filter((s) => s !== '').join('\n\n');
      return { messages: system ? [{ role: 'system', content: system }, ...history] : [...history], tools: specs };
    };

    const nextTurn = (): void => {
      if (subscriber.closed) return;
      if (step >= maxSteps) {
        try {
          budget.steps(maxSteps, step + 1);
        } catch (e) {
          fail(e);
        }
        return;
      }
      step++;
      const req = request();
      const context: PipelineContext = { hub, step, scope };
      let modelCalls = 0;
      const turn$ = defer(() => {
        budget.modelCall();
        const id = `step-${step}.${++modelCalls}`;
        return traced(hub, scheduler, { kind: 'model', name: model.id, id, step: context.step }, streamModel(model, req));
      });
      const piped = modelPipeline ? modelPipeline(req, turn$, context) : turn$;
      // the turn's text, kept flat (a 10⁶-delta answer costs its characters, not a rope of cells)
      const text = new TextBuffer();
      let calls: ToolCall[] = [];
      let finish: Finish | undefined;
      let received = 0;
      work.add(
        piped.subscribe({
          next: (event) => {
            received++;
            switch (event.type) {
              case 'text-delta':
                text.append(event.text);
                break;
              case 'tool-call':
                calls.push({ id: event.id, name: event.name, args: event.args });
                break;
              case 'finish':
                finish = event;
                break;
              case 'reset':
                text.clear();
                calls = [];
                finish = undefined;
                break;
            }
            emit(event);
            if (event.type === 'finish' && event.usage) {
              try {
                budget.usage(event.usage);
              } catch (e) {
                fail(e);
              }
            }
          },
          error: fail,
          complete: () => afterTurn(text.toString(), calls, finish, received),
        }),
      );
    };

    const afterTurn = (text: string, calls: ToolCall[], finish: Finish | undefined, received: number): void => {
      if (subscriber.closed) return;
      // a turn cut short without `finish`: a dropped connection (classified), never a short answer.
      // streamModel already errors for a model's stream without one, inside the healing pipeline;
      // this catches a modelPipeline that ends a turn early (take, catchError to EMPTY…)
      if (!finish) return fail(new IncompleteStreamError(model.id, 'no finish event', received));
      if (calls.length > 0) {
        addMessage({ role: 'assistant', content: text, toolCalls: calls });
        return runTools(calls, { hub, step, scope });
      }
      if (!output) {
        addMessage({ role: 'assistant', content: text });
        return subscriber.complete();
      }
      const problems = output.check(text);
      const valid = problems.length === 0;
      emit({ type: 'validation', valid, attempt: corrections + 1, problems });
      const answer: AssistantMessage = { role: 'assistant', content: text, validated: valid };
      addMessage(answer);
      if (valid || corrections >= output.maxCorrections) return subscriber.complete();
      corrections++;
      addMessage({ role: 'user', content: output.correction(problems) });
      emit({ type: 'reset', reason: 'correction', target: `model:${model.id}` });
      nextTurn();
    };

    const toolOutcome = (call: ToolCall, context: PipelineContext): Observable<ToolOutcome> => {
      const tool = tools.get(call.name);
      const call$ = defer(() => {
        if (!tool) return throwError(() => unknownToolError(call, [...tools.keys()], scope));
        budget.toolCall();
        return traced(hub, scheduler, { kind: 'tool', name: call.name, id: call.id, step: context.step }, callTool(tool, call, { scope }));
      });
      const piped = toolPipeline ? toolPipeline(call, call$, context) : call$;
      return piped.pipe(
        takeLast(1),
        defaultIfEmpty(undefined),
        map((value): ToolOutcome => {
          if (value instanceof Reflection) {
            return {
              events: [
                { type: 'tool-error', id: call.id, name: call.name, error: errorText(value.error), category: classifyError(value.error).category },
                { type: 'reflection', tool: value.toolName, callId: value.callId, attempt: value.attempt, max: value.max, exhausted: value.exhausted, prompt: value.prompt },
              ],
              message: { role: 'tool', toolCallId: call.id, toolName: call.name, content: value.prompt, isError: true },
            };
          }
          scope.toolSucceeded(call.name);
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
    };

    const runTools = (calls: readonly ToolCall[], context: PipelineContext): void => {
      const messages: (ToolMessage | undefined)[] = calls.map(() => undefined);
      work.add(
        merge(...calls.map((call, i) => toolOutcome(call, context).pipe(map((outcome) => [i, outcome] as const)))).subscribe({
          next: ([i, outcome]) => {
            // a reflection is a resilience event: it goes to the hub, which surfaces it here once
            outcome.events.forEach((event) => (event.type === 'reflection' ? hub.report(event) : emit(event)));
            messages[i] = outcome.message;
          },
          error: fail,
          complete: () => {
            for (const message of messages) if (message) addMessage(message);
            nextTurn();
          },
        }),
      );
    };

    nextTurn();
    return () => work.unsubscribe();
  });
}
