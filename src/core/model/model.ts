/**
 * The model contract: what a model is ({@link Model}: one request in, a stream of `TurnEvent`s
 * out), what it is asked ({@link ModelRequest}, tools, tool choice), and {@link streamModel}, which
 * calls a model once per subscription, meters its usage against the run's budget, traces the call
 * to the hub and errors when a stream ends without its `finish`.
 *
 * @module
 */
import { asyncScheduler, from, Observable, Subscription, type Observer, type ObservableInput, type SchedulerLike, type Subscriber } from 'rxjs';
import type { Message, TurnEvent, Usage } from '../events/events.js';
import type { AbortContext } from './abortable.js';
import { CallTrace, type TracedCall } from './callTrace.js';
import { SpendingTurnObserver, TurnObserver, type ServedCall } from './turnObserver.js';
import { subscribeWithin } from '../rx/operate.js';
import type { HealHub } from '../hub/hub.js';
import type { ModelCheckpoint } from './checkpoint.js';
import type { AttemptSpend } from '../money/meter.js';

export type { ModelCheckpoint } from './checkpoint.js';

/** What a tool looks like to a model: its name and what it is for. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  /** A JSON-schema-like description of the arguments, when the tool provides one. */
  readonly parameters?: unknown;
}

/**
 * Whether the model must call a tool: `'auto'` (it decides: what providers do without one),
 * `'none'` (it must not), `'required'` (some tool), or `{ tool: name }` (that one). Each provider
 * gets it in its own words (OpenAI's `tool_choice`, Anthropic's `{ type: 'any' | 'tool' … }`, the
 * AI SDK's `toolChoice`, LangChain's `tool_choice`).
 *
 * @example
 * ```ts
 * const request: ModelRequest = { messages, tools: [weatherSpec], toolChoice: { tool: 'get_weather' } };
 * ```
 */
export type ToolChoice = 'auto' | 'none' | 'required' | { readonly tool: string };

/**
 * A tool's JSON schema for its arguments: `parameters`, or "any object" for a tool without one —
 * what every protocol sends.
 *
 * @example
 * ```ts
 * toolParameters({ name: 'now', description: 'The time' }); // { type: 'object', properties: {} }
 * ```
 */
export function toolParameters(tool: ToolSpec): unknown {
  return tool.parameters ?? { type: 'object', properties: {} };
}

/** One request to a model: the whole conversation so far, the tools it may call and, optionally, whether it must. */
export interface ModelRequest {
  /** The conversation, system instruction first when there is one. */
  readonly messages: readonly Message[];
  readonly tools: readonly ToolSpec[];
  /** Whether it must call a tool; the provider's default (the model decides) when absent. */
  readonly toolChoice?: ToolChoice;
  /**
   * The key a provider's prompt cache routes by, so that calls sharing a prefix land where it is
   * cached: OpenAI's `prompt_cache_key`, sent by every path that speaks OpenAI — Chat Completions
   * and Responses over `fetch` and through the `openai` SDK, the AI SDK's OpenAI provider (as
   * `providerOptions.openai.promptCacheKey`), LangChain's `ChatOpenAI` (its `promptCacheKey` call
   * option) — over the model's own default key. Set by a user, or by a pool from its affinity
   * key; a provider without such a key ignores it (Anthropic caches by `cache_control`
   * breakpoints). Present, it must be a non-empty string: anything else errors the call with an
   * `InvalidOptionError`, nothing sent.
   */
  readonly promptCacheKey?: string;
  /**
   * The most output tokens (reasoning included) the model may generate for this request: each
   * provider sends it as its own field (OpenAI Chat Completions `max_completion_tokens`, Responses
   * `max_output_tokens`, Anthropic `max_tokens` in place of the model's option, the AI SDK's
   * `maxOutputTokens`, LangChain's `maxTokens`); a turn that reaches it finishes with reason
   * `'length'`. A run that counts money reserves exactly this much output per attempt. Absent:
   * the provider's default (the model's option, then the API's).
   */
  readonly maxOutputTokens?: number;
}

/**
 * Whether `u` is a {@link Model}: an object with a non-empty `id` and a `stream` function — what
 * every function taking models checks them with.
 *
 * @example
 * ```ts
 * isModel({ id: 'gpt', stream: () => EMPTY }); // true
 * isModel({ id: '', stream: () => EMPTY }); // false
 * ```
 */
export function isModel(u: unknown): u is Model {
  return typeof u === 'object' && u !== null && typeof (u as Model).id === 'string' && (u as Model).id !== '' && typeof (u as Model).stream === 'function';
}

/**
 * A run's budget as its model calls see it (`runAgent` hands one to every model call). What counts:
 * each **provider attempt** — one subscription to `streamModel(model, …)` of a model, wherever
 * it happens (a run's turn, its retries, every model a `fallbackModel` tries, a `fallbackTo`
 * model alternative) — is one model call; each attempt's `finish.usage` counts its tokens.
 *
 * @example
 * ```ts
 * let calls = 0;
 * const meter: BudgetMeter = {
 *   modelCall: () => {
 *     if (++calls > 3) throw new BudgetExceededError('modelCalls', 3, calls);
 *   },
 *   usage: () => undefined,
 * };
 * streamModel(model, request, { budget: meter }).subscribe();
 * ```
 */
export interface BudgetMeter {
  /**
   * A provider attempt is about to start. Throws `BudgetExceededError` (`resource:
   * 'modelCalls'`) when it would cross the limit: the attempt is then not made.
   */
  modelCall(): void;
  /** A provider attempt ended its turn with this usage. Throws `BudgetExceededError` (`'tokens'`) past the limit. */
  usage(usage: Usage): void;
  /**
   * Optional, for a budget that counts money: reserves a provider attempt's worst case before it
   * is made, and counts its output live (see {@link AttemptSpend}). Throws `BudgetExceededError`
   * (`resource: 'usd'`) when it does not fit — the attempt is not made —, or returns the attempt's
   * spend, at once or as an observable of one (a reservation that travels to a shared store).
   * Called only for a model with no models inside it (`modelsInside(model) === undefined`).
   */
  spend?(modelId: string, request: ModelRequest): AttemptSpend | Observable<AttemptSpend>;
  /**
   * Optional, for a budget with a money limit (`budget.maxUsd`): what is left of it, as dollars
   * and as a share of the limit, and what an attempt of a model on a request would reserve (its
   * worst case; throws `InvalidOptionError` for a model without a price). `fallbackModel`'s
   * `cheaperBelow` reads it.
   */
  moneyLeft?(): MoneyLeft | undefined;
}

/**
 * What is left of a run's money limit (see {@link BudgetMeter.moneyLeft}).
 *
 * @example
 * ```ts
 * const left = context.budget?.moneyLeft?.();
 * if (left && left.share < 0.2) console.log(`$${left.leftUsd.toFixed(4)} left; gpt-5 would reserve $${left.quote('gpt-5', request)}`);
 * ```
 */
export interface MoneyLeft {
  /** Dollars left: the limit, less what was spent and what attempts in flight hold. */
  readonly leftUsd: number;
  /** `leftUsd` ÷ the limit (0 to 1). */
  readonly share: number;
  /** What an attempt of `modelId` on `request` would reserve. */
  quote(modelId: string, request: ModelRequest): number;
}

/**
 * The run a model call belongs to, as given to {@link streamModel}. Every field is optional: a
 * model called on its own (`streamModel(model, request)`) gets none of them.
 *
 * @example
 * ```ts
 * streamModel(model, request, { hub, scheduler, callId: 'ask-1' }).subscribe(render); // call-start / call-end on hub
 * ```
 */
export interface ModelCallContext {
  /**
   * The run's events hub. A model that wraps others reports its fallbacks, circuits and retries
   * here (`fallbackModel` does); each provider attempt made through `streamModel` with this
   * context is reported as a `call-start` / `call-end` pair.
   */
  readonly hub?: HealHub;
  /** The run's budget: every provider attempt and its token usage count (see {@link BudgetMeter}). */
  readonly budget?: BudgetMeter;
  /** The run's scheduler: where call durations are read, and where wrapping models should wait. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * The id of the model call this context belongs to, as in its `call-start` / `call-end` events
   * (`runAgent`: `step-<n>.<m>`). Given to `streamModel`, it names the call made (reported when
   * `hub` is given too); handed to `model.stream`, it is the parent of every call the model makes
   * through `streamModel(inner, request, context)`: those are reported as `<callId>/<k>` with
   * `parentId: callId` (one OpenTelemetry span each, under the run's call).
   */
  readonly callId?: string;
  /** The agent step (model turn) the call belongs to, from 1. */
  readonly step?: number;
  /** The run the call belongs to (`runAgent`: its `runId`, or one made up): `modelPool`'s default affinity key. */
  readonly runId?: string;
  /**
   * Where a model that can pick its turn up again ({@link Model.resume}) says how far it got: its
   * stored response's id at once, then its last event's number. A journaled run journals it
   * (throttled): resumed in another process, it continues the turn instead of generating it again.
   */
  readonly checkpoint?: (checkpoint: ModelCheckpoint) => void;
}

/**
 * What `model.stream` is handed: the abort signal, and the run's hub, budget, scheduler and call id
 * ({@link ModelCallContext}). A model that wraps others passes it on unchanged —
 * `streamModel(inner, request, context)` for every model it calls (spread it to change a field:
 * `{ ...context, hub }`) — so that their events reach the run, their attempts count against its
 * budget and their spans sit under its call.
 *
 * @example
 * ```ts
 * const patient: Model = {
 *   id: 'patient-gpt',
 *   stream: (request, context) =>
 *     streamModel(gpt, request, context).pipe(retryWithBackoff({ hub: context.hub, target: 'model:gpt', scheduler: context.scheduler })),
 * };
 * ```
 */
export interface ModelContext extends AbortContext, ModelCallContext {}

/**
 * A language model: a cold stream of {@link TurnEvent}s (model events) per request. Anything that returns an
 * observable, a promise of an array, an async iterable… (`ObservableInput`) will do; `signal` is
 * aborted when the consumer unsubscribes; the rest of the {@link ModelContext} says which run the
 * call belongs to (a model that calls other models passes it on).
 *
 * @example
 * ```ts
 * const echo: Model = {
 *   id: 'echo',
 *   stream: (req) => [
 *     { type: 'text-delta', text: String(req.messages.at(-1)?.content) },
 *     { type: 'finish', reason: 'stop' },
 *   ],
 * };
 * ```
 */
export interface Model {
  /** A stable name, used for breakers (`model:<id>`) and events. */
  readonly id: string;
  /**
   * The model's events for one request; `reset` only from a model that wraps others (fallbacks).
   * If it throws, the call errors with what it threw. `context.signal` may be read at any time,
   * also after an `await`: a signal read after the consumer left is already aborted.
   */
  stream(request: ModelRequest, context: ModelContext): ObservableInput<TurnEvent>;
  /**
   * Optional: the turn a {@link ModelCheckpoint} of this model names, continued on the provider's
   * side — nothing generated again —, its events emitted **from its start** (the process that saw
   * the first ones is gone), each once; an `HttpError` 404 when the provider no longer has it.
   */
  resume?(checkpoint: ModelCheckpoint, request: ModelRequest, context: ModelContext): ObservableInput<TurnEvent>;
}

/** Where a model made of others keeps them (a registry symbol: every copy of rxheal agrees). */
const INSIDE = Symbol.for('rxheal.model.inside');

/**
 * Records that `model` calls `models` (a `fallbackModel` its chain), for adapters that need to
 * know what a model is made of (`toAiSdk`: which models inside take the AI SDK's call settings).
 * Hidden (not enumerable): spreading or comparing the model is not affected. Returns `model`.
 *
 * @example
 * ```ts
 * const composite = withModelsInside({ id: 'both', stream: (request, context) => streamModel(a, request, context) }, [a, b]);
 * modelsInside(composite); // [a, b]
 * ```
 */
export function withModelsInside<M extends Model>(model: M, models: readonly Model[]): M {
  Object.defineProperty(model, INSIDE, { value: Object.freeze([...models]), enumerable: false });
  return model;
}

/**
 * The models `model` calls, when it was made of others and says so ({@link withModelsInside}:
 * `fallbackModel`); `undefined` for any other model (a provider, or one that does not say).
 *
 * @example
 * ```ts
 * modelsInside(fallbackModel([gpt, claude])); // [gpt, claude]
 * modelsInside(gpt); // undefined
 * ```
 */
export function modelsInside(model: Model): readonly Model[] | undefined {
  return (model as { [INSIDE]?: readonly Model[] })[INSIDE];
}

/** The hidden part of a context handed to `model.stream`: the call it serves. Spreading the context keeps it. */
const SERVED = Symbol('rxheal.servedModelCall');

/**
 * A cold observable of one model call: subscribing calls `model.stream`, unsubscribing aborts it.
 *
 * A turn ends with a `finish` event. A stream that completes without one (since its last
 * `reset`) was cut short, whatever the model says: it errors with {@link IncompleteStreamError}
 * (classified `connection`: retryable, fallback-able, counted by breakers), so the retries,
 * fallbacks and breakers around the call heal it like a dropped connection — it is never taken
 * for a short answer.
 *
 * With a `context` (see {@link ModelCallContext}), each subscription is one provider attempt of
 * that run: it is counted against `context.budget` before the model is called (the attempt is not
 * made past the limit; the first attempt inside a model call that was itself counted is that
 * count, so a `fallbackModel` costs one call per model it tries, not one more), its
 * `finish.usage` counts its tokens (unless it delegated to models called inside it, which count
 * theirs), and with `context.hub` it is reported as `call-start` / `call-end` — under
 * `context.callId`, or as `<callId>/<k>` with `parentId` when made inside another model call.
 *
 * @example
 * ```ts
 * streamModel(model, { messages, tools: [] }).subscribe((e) => e.type === 'text-delta' && process.stdout.write(e.text));
 * ```
 */
export function streamModel(model: Model, request: ModelRequest, context?: ModelCallContext): Observable<TurnEvent> {
  if (context === undefined) return modelTurn(model, request);
  return new Observable<TurnEvent>((subscriber) => void callModel(subscriber, subscriber, model, request, context));
}

/**
 * One subscription of `streamModel(model, request, context)`, its events handed to `out`: the
 * subscriber itself, or (`fallbackModel`'s attempt) the caller's own observer, called directly —
 * no subscriber between the call's one observer and it. The call is linked to `subscriber`
 * (leaving reaches it); returns its subscription (undefined: no call was made), which holds the
 * call's teardown. `out` is not called once `subscriber` is closed only if it checks that itself.
 *
 * @internal
 */
export function callModel(
  subscriber: Subscriber<unknown>,
  out: Observer<TurnEvent>,
  model: Model,
  request: ModelRequest,
  context: ModelCallContext,
): Subscription | undefined {
  const parent = (context as { [SERVED]?: ServedCall })[SERVED];
  // each field read once per call: a context may hand out a fresh call id on each read (runAgent's modelPipeline context)
  const run = fields(context);
  const { budget } = run;
  // the attempt is counted before the model is called: past the limit it is not made
  try {
    if (parent?.prepaid) parent.prepaid = false;
    else budget?.modelCall();
  } catch (error) {
    out.error(error);
    return undefined;
  }
  // money: a provider attempt's worst case reserved before the model is called (refused: not made)
  let spend: AttemptSpend | Observable<AttemptSpend> | undefined;
  if (budget?.spend && modelsInside(model) === undefined) {
    try {
      spend = budget.spend(model.id, request);
    } catch (error) {
      out.error(error);
      return undefined;
    }
  }
  // subscribed for a consumer already gone (RxJS still calls this): no call is made, none is traced
  if (subscriber.closed) {
    if (spend && !isObservable(spend)) spend.release();
    return undefined;
  }
  if (spend && isObservable(spend)) {
    return reserveThenCall(subscriber, out, spend, (within, held) => startCall(within, out, model, request, context, run, parent, held));
  }
  return startCall(subscriber, out, model, request, context, run, parent, spend);
}

const isObservable = (u: AttemptSpend | Observable<AttemptSpend>): u is Observable<AttemptSpend> =>
  typeof (u as Observable<AttemptSpend>).subscribe === 'function';

/** The call itself, its spend (if any) reserved. */
function startCall(
  parentSubscription: Subscription,
  out: Observer<TurnEvent>,
  model: Model,
  request: ModelRequest,
  context: ModelCallContext,
  run: ModelCallContext,
  parent: ServedCall | undefined,
  spend: AttemptSpend | undefined,
): Subscription | undefined {
  const call = describeCall(model, run, parent);
  const served: ServedCall = { prepaid: true, children: 0 };
  // one observer per call, in one hop per event: the turn's contract, its abort signal, its trace and its token count
  const trace = run.hub && call ? new CallTrace(run.hub, context.scheduler ?? asyncScheduler, call) : undefined;
  const turn = spend ? new SpendingTurnObserver(out, model.id, trace, run.budget, served, spend) : new TurnObserver(out, model.id, trace, run.budget, served);
  const handedOn = Object.assign(signalOf(turn), run, call ? { callId: call.id } : undefined) as ModelContext & { [SERVED]: ServedCall };
  handedOn[SERVED] = served;
  return runTurn(parentSubscription, model, request, handedOn, turn);
}

/**
 * A call whose spend is reserved on a store first: the model is called once the reservation
 * arrives (a refusal errors the call, no model called); leaving before gives it back (the gate's
 * contract). Returns the call's subscription: the reservation's, then the turn's.
 */
function reserveThenCall(
  subscriber: Subscriber<unknown>,
  out: Observer<TurnEvent>,
  spend$: Observable<AttemptSpend>,
  start: (within: Subscription, spend: AttemptSpend) => Subscription | undefined,
): Subscription {
  const box = new Subscription();
  subscriber.add(box);
  let reserved = false;
  box.add(
    spend$.subscribe({
      next: (spend) => {
        if (reserved) return;
        reserved = true;
        if (box.closed) return spend.release();
        if (start(box, spend) === undefined) spend.release();
      },
      error: (error: unknown) => {
        if (!reserved) out.error(error);
      },
    }),
  );
  return box;
}

/** The run's fields of a context, without its signal (read lazily) or hidden state. */
function fields(context: ModelCallContext): ModelCallContext {
  const { hub, budget, scheduler, callId, step, checkpoint, runId } = context;
  // assigned one by one, not spread: spreads of conditional literals make a slow (dictionary) object
  const out: { -readonly [K in keyof ModelCallContext]: ModelCallContext[K] } = {};
  if (hub) out.hub = hub;
  if (budget) out.budget = budget;
  if (scheduler) out.scheduler = scheduler;
  if (callId !== undefined) out.callId = callId;
  if (step !== undefined) out.step = step;
  if (checkpoint) out.checkpoint = checkpoint;
  if (runId !== undefined) out.runId = runId;
  return out;
}

/** The call's name in events: its own `callId` at the top, `<parent>/<k>` inside another call; none without an id to start from. */
function describeCall(model: Model, context: ModelCallContext, parent: ServedCall | undefined): TracedCall | undefined {
  const step = context.step ?? 0;
  if (!parent) return context.callId === undefined ? undefined : { kind: 'model', name: model.id, id: context.callId, step };
  const k = ++parent.children;
  return context.callId === undefined ? undefined : { kind: 'model', name: model.id, id: `${context.callId}/${k}`, step, parentId: context.callId };
}

/**
 * What {@link streamModel} returns without a context: each subscription calls the model once,
 * under the turn's one observer (the abort signal's and the finish contract's).
 */
function modelTurn(model: Model, request: ModelRequest): Observable<TurnEvent> {
  return new Observable<TurnEvent>((subscriber) => {
    // subscribed for a consumer already gone (RxJS still calls this): the model is never called
    if (subscriber.closed) return;
    const turn = new TurnObserver(subscriber, model.id, undefined, undefined, undefined);
    runTurn(subscriber, model, request, signalOf(turn), turn);
  });
}

/**
 * Calls the model with `context` and subscribes `turn` to its events on behalf of `subscriber`
 * (returns that subscription):
 * unsubscribing downstream tears the events down, then aborts the run (if unfinished) and ends
 * the trace (`cancelled`). A throw from `model.stream` (or an answer `from` cannot read) errors
 * the call through `turn`, so a traced call reports its end.
 */
function runTurn(subscriber: Subscription, model: Model, request: ModelRequest, context: ModelContext, turn: TurnObserver): Subscription | undefined {
  let events: Observable<TurnEvent>;
  try {
    // the model gets a context of its own (never the run: a model that spreads its context to wrap
    // another, `{ ...context }`, must keep `signal`, an own property here)
    events = from(model.stream(request, context));
  } catch (error) {
    turn.error(error);
    return undefined;
  }
  // the turn is its own subscription (a Link): linked to `subscriber`, its teardown after the events'
  return subscribeWithin(subscriber, events, turn);
}

/** The run a context's `signal` reads (hidden: not enumerable, not copied by a spread). */
const ABORT = Symbol('rxheal.abortRun');

/**
 * `signal` as an own, enumerable accessor (a model that spreads its context, `{ ...context }`,
 * keeps it) whose getter is one function for every context, reading the run it was made for:
 * a getter made per context would give each context a hidden class of its own (~500 B each).
 */
const SIGNAL: PropertyDescriptor = {
  get(this: { [ABORT]: AbortContext }): AbortSignal {
    return this[ABORT].signal;
  },
  enumerable: true,
  configurable: true,
};

/** A context with only the run's signal (read lazily, also after an `await`). */
function signalOf(run: AbortContext): AbortContext {
  const context = Object.defineProperty({}, 'signal', SIGNAL) as AbortContext;
  Object.defineProperty(context, ABORT, { value: run });
  return context;
}

export { fromAsyncIterable } from './fromAsyncIterable.js';
export { eachValueFrom } from 'rxjs-for-await';
