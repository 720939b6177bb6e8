import { isObservable, Observable, Subscriber, type MonoTypeOperatorFunction, type Subscription, type TeardownLogic } from 'rxjs';
import { type CircuitBreaker } from '../core/breaker/CircuitBreaker.js';
import { CircuitBreakerRegistry } from '../core/breaker/registry.js';
import { classifyError, type ErrorClassifier } from '../core/errors/classify.js';
import { AllFallbacksFailedError, InvalidOptionError } from '../core/errors/errors.js';
import { decideFallback, nextAlternative, type ChainLink, type Hop } from '../core/fallback/fallbackChain.js';
import { guard, Thrown } from '../core/rx/guard.js';
import { TextBuffer } from '../core/model/textBuffer.js';
import { LeanSubscriber } from '../core/rx/leanSubscriber.js';
import type { TurnEvent } from '../core/events/events.js';
import { joinHubs, withDefaultHub, type HealHub } from '../core/hub/hub.js';
import { check, Func, Hub, NonEmptyString, NonNegativeInteger, PositiveInteger, oneOf, validateOptions } from '../core/errors/options.js';
import { circuitBreak, underBreaker } from '../operators/circuitBreak.js';
import { isModel, streamModel, withModelsInside, type Model, type ModelCallContext, type ModelContext, type ModelRequest } from '../core/model/model.js';
import { OverlapTrimmer } from '../core/model/overlap.js';

/**
 * The user message that asks a fallback model to continue a cut-off answer (`midStream:
 * 'continue'`), sent after an assistant message holding the partial text.
 *
 * @example
 * ```ts
 * fallbackModel([primary, secondary], { midStream: 'continue', continueInstruction: DEFAULT_CONTINUE_INSTRUCTION + ' Keep the same language.' });
 * ```
 */
export const DEFAULT_CONTINUE_INSTRUCTION =
  'Your previous answer was cut off. Continue it exactly where it stopped: do not repeat any of it, do not start over, and add no preamble.';

/**
 * What {@link FallbackModelOptions.perModel} is given besides the model's stream: the run's
 * context (its hub joined with the `hub` option, so events reach both) and the model's target name.
 *
 * @example
 * ```ts
 * const perModel = (id: string, stream$: Observable<TurnEvent>, { hub, target, scheduler }: PerModelContext) =>
 *   stream$.pipe(retryWithBackoff({ hub, target, scheduler, maxRetries: 2 }));
 * ```
 */
export interface PerModelContext extends ModelCallContext {
  /** `model:<id>`: what retries and breakers of this model are named in events. */
  readonly target: string;
  /** The model being called. */
  readonly model: Model;
}

/**
 * Options of {@link fallbackModel}.
 *
 * @example
 * ```ts
 * const options: FallbackModelOptions = { breakers: new CircuitBreakerRegistry({ failureThreshold: 3 }), midStream: 'continue', hub };
 * ```
 */
export interface FallbackModelOptions {
  /** The composite model's id. Defaults to `fallback(<id>, <id>, …)`. */
  readonly id?: string;
  /**
   * One breaker per model, named `model:<id>`: a model whose breaker is open is skipped without a
   * call (its {@link CircuitOpenError} joins the error list), and every call's outcome is counted.
   * None by default.
   */
  readonly breakers?: CircuitBreakerRegistry;
  /**
   * Provider-specific prompt adaptation: the request as it will be sent to `model` (with the
   * continuation messages in `'continue'` mode) → the request to send. A throw errors the turn at
   * once. None by default.
   */
  readonly adapt?: (request: ModelRequest, model: Model) => ModelRequest;
  /**
   * Where each switch is reported as `{ type: 'fallback', from: 'model:<id>', to, reason,
   * midStream }`, each skip as a `circuit` `rejected` event; the breakers are watched
   * (`hub.watch`). The run's hub (the `hub` of the context `runAgent` hands every model call)
   * gets the same events, each once even when both are the same hub. None by default.
   */
  readonly hub?: HealHub;
  /**
   * Healing for each model before the chain moves on: `(id, stream$, context) => stream$.pipe(…)`,
   * called for each attempt at a model with its `id`, its stream (`streamModel` with the run's
   * context) and a {@link PerModelContext} (`hub`: the run's hub joined with the `hub` option;
   * `target`: `model:<id>`). What it returns is the model's attempt: its retries happen before a
   * fallback, and with `breakers`, the model's breaker guards it whole (one permit per attempt,
   * retries included — a `retryWithBackoff` at its end runs fused with that breaker). Operators
   * created in it without a `hub` report to that hub all the same (`retryWithBackoff`'s `target`
   * defaults to `model:<id>`), so `(id, stream$) => stream$.pipe(retryWithBackoff(), circuitBreak(
   * breakers.get(id)))` puts its retries and circuits in the run's stream. A throw, or a value that
   * is not an Observable, errors the turn. None by default.
   */
  readonly perModel?: (id: string, stream$: Observable<TurnEvent>, context: PerModelContext) => Observable<TurnEvent>;
  /**
   * What to do when a model fails after the consumer saw part of its answer:
   * - `'restart'` (default): emit `{ type: 'reset', reason: 'fallback', target: 'model:<next id>' }`,
   *   then the next model's whole answer.
   * - `'continue'`: send the next model the request plus the partial text (an assistant message)
   *   and {@link DEFAULT_CONTINUE_INSTRUCTION} (a user message); emit only the continuation, with
   *   any repeat of the partial text's tail trimmed. A turn that already emitted a `tool-call`
   *   cannot be continued: it restarts as with `'restart'`; nor can one that showed only
   *   reasoning (no text yet). Reasoning shown stays (a block the failed model was still in
   *   ends there, unsigned); the next model's own reasoning passes on as it comes (it never
   *   counts as a repeat of the text). A `reset` from inside a continuation (a `perModel` retry
   *   with `afterEmit: 'restart'` starting the continuing model over) takes back only the
   *   continuation's own output: the consumer gets the reset, then what it was shown before the
   *   continuation again (the partial text, and the reasoning blocks shown, each whole), then the
   *   retried continuation; a continuation that showed nothing yet has nothing to take back, and
   *   its reset goes no further.
   * - `'error'`: no fallback after the first event; the error passes on unchanged.
   */
  readonly midStream?: 'restart' | 'continue' | 'error';
  /** The user message asking for a continuation. Defaults to {@link DEFAULT_CONTINUE_INSTRUCTION}. */
  readonly continueInstruction?: string;
  /**
   * Longest repeat of the partial text's tail looked for at the start of a continuation, in
   * characters: the continuation's first deltas are held back only while they could still be
   * such a repeat, so never more than this many. `0` turns trimming off. Defaults to 1000.
   */
  readonly maxOverlap?: number;
  /**
   * A repeat at least this long is trimmed wherever it falls. A shorter one (of at least 2
   * non-space characters) is trimmed only when it restarts a word of the partial text (`'wea'`
   * then `'weather…'`) or repeats whole words (`' is'` then `' is sunny'`), so a coincidence
   * such as `'to the'` then `' theatre'` is kept. Defaults to 16.
   */
  readonly longOverlap?: number;
  /**
   * Decides whether an error is worth trying the next model. Errors it rejects pass through
   * unchanged, at once. Defaults to the classifier's `fallback`. If it throws, the turn errors
   * with what it threw.
   */
  readonly shouldFallback?: (error: unknown) => boolean;
  /**
   * Gives `fallback` and the category reported as `reason`. Defaults to {@link classifyError}. If
   * it throws, the turn errors with what it threw.
   */
  readonly classifier?: ErrorClassifier;
}

const props = {
  id: NonEmptyString,
  breakers: check('a CircuitBreakerRegistry', (u): u is CircuitBreakerRegistry => u instanceof CircuitBreakerRegistry),
  adapt: Func,
  hub: Hub,
  midStream: oneOf('restart', 'continue', 'error'),
  continueInstruction: NonEmptyString,
  maxOverlap: NonNegativeInteger,
  longOverlap: PositiveInteger,
  shouldFallback: Func,
  classifier: Func,
  perModel: Func,
};

/**
 * A {@link Model} that tries several models in order, per request: a failure worth a fallback
 * (per `shouldFallback`, by default the classifier's `fallback`) hands the request to the next
 * model; when all have failed, {@link AllFallbacksFailedError} lists each model's error in
 * order ({@link CircuitOpenError} for skipped ones). Errors not worth a fallback pass through
 * unchanged. Each request starts from the first model unless its breaker is open.
 *
 * A model whose stream ends without a `finish` event failed too (`streamModel` errors with
 * `IncompleteStreamError`, counted by its breaker). A failure after the consumer saw part of the
 * answer follows `midStream` (`'restart'` by default): a `reset` event then the next model's whole answer, or — `'continue'` — the next
 * model continues the partial text and only the new text is emitted, never repeated. Calls go
 * through `streamModel` with the context this model was handed (in `runAgent`, the run's), so
 * unsubscribing aborts the model in flight, each model tried is one provider attempt of the run
 * (counted against its budget, traced under its call), and the run's hub hears the fallbacks,
 * circuits and `perModel` retries. `perModel` heals each model before the chain moves on.
 *
 * ```
 * primary:    -a-b-c-#            (3 text deltas, then a 503)
 * secondary:         -x-y-(f|)    (subscribed at 7)
 * restart:    -a-b-c-Rx-y-(f|)    R = { type: 'reset', reason: 'fallback', target: 'model:secondary' }
 * ```
 *
 * @example
 * ```ts
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 60_000 });
 * const model = fallbackModel([gpt, claude, local], {
 *   breakers,
 *   hub,
 *   midStream: 'continue',
 *   adapt: (req, m) => (m.id === 'local' ? { ...req, tools: [] } : req),
 *   perModel: (id, stream$, { hub, target }) => stream$.pipe(retryWithBackoff({ hub, target, maxRetries: 2 })),
 * });
 * streamModel(model, { messages, tools }).subscribe((e) => e.type === 'text-delta' && ui.append(e.text));
 * ```
 * @throws {InvalidOptionError} at once, for no models, a non-model, duplicate ids, or an
 * invalid option.
 */
export function fallbackModel(models: readonly Model[], options?: FallbackModelOptions): Model {
  if (!Array.isArray(models) || models.length === 0) throw new InvalidOptionError('fallbackModel', 'models', models, 'a non-empty array of models');
  const seen = new Set<string>();
  Array.from(models, (m: unknown, i) => {
    if (!isModel(m)) throw new InvalidOptionError('fallbackModel', `models[${i}]`, m, 'a Model ({ id: non-empty string, stream(request, context) })');
    if (seen.has(m.id)) throw new InvalidOptionError('fallbackModel', `models[${i}].id`, m.id, 'unique (breakers and events are named model:<id>)');
    seen.add(m.id);
  });
  const o = validateOptions('fallbackModel', props, options);
  const list = [...models];
  const names = list.map((m) => `model:${m.id}`);
  const breakers: (CircuitBreaker | undefined)[] = names.map((name) => o.breakers?.get(name));
  const ownHub = o.hub as HealHub | undefined;
  // with a hub, circuitBreak watches each breaker and reports the calls it rejects
  const ownGuards = breakers.map((b) => (b ? circuitBreak<TurnEvent>(b, { hub: ownHub }) : undefined));
  const perModel = o.perModel as FallbackModelOptions['perModel'];
  const links: ChainLink[] = names.map((name, i) => ({ name, breaker: breakers[i] }));
  const adapt = o.adapt as ((request: ModelRequest, model: Model) => ModelRequest) | undefined;
  const midStream = o.midStream ?? 'restart';
  const instruction = o.continueInstruction ?? DEFAULT_CONTINUE_INSTRUCTION;
  const maxOverlap = o.maxOverlap ?? 1000;
  const longOverlap = o.longOverlap ?? 16;
  const shouldFallback = o.shouldFallback as ((error: unknown) => boolean) | undefined;
  const classifier = (o.classifier as ErrorClassifier | undefined) ?? classifyError;

  const chain: Chain = { list, names, links, ownHub, ownGuards, perModel, adapt, midStream, instruction, maxOverlap, longOverlap, shouldFallback, classifier };
  // what it is made of, for adapters that need to know (toAiSdk: who takes the AI SDK's settings)
  return withModelsInside({ id: o.id ?? `fallback(${list.map((m) => m.id).join(', ')})`, stream: (request, context) => new FallbackCall(chain, request, context) }, list);
}

/** What every call of one `fallbackModel` shares: its models, breakers and options, resolved once. */
interface Chain {
  readonly list: readonly Model[];
  readonly names: readonly string[];
  readonly links: readonly ChainLink[];
  readonly ownHub: HealHub | undefined;
  /** Each model's `circuitBreak`, reporting to the `hub` option (a call whose run has another hub guards its models itself). */
  readonly ownGuards: readonly (MonoTypeOperatorFunction<TurnEvent> | undefined)[];
  readonly perModel: FallbackModelOptions['perModel'];
  readonly adapt: ((request: ModelRequest, model: Model) => ModelRequest) | undefined;
  readonly midStream: 'restart' | 'continue' | 'error';
  readonly instruction: string;
  readonly maxOverlap: number;
  readonly longOverlap: number;
  readonly shouldFallback: ((error: unknown) => boolean) | undefined;
  readonly classifier: ErrorClassifier;
}

/**
 * One call of a `fallbackModel` (what its `stream` returns). Each subscription is a
 * {@link FallbackTurn}; classes rather than closures, so an idle call holds few objects.
 */
class FallbackCall extends Observable<TurnEvent> {
  constructor(
    private readonly chain: Chain,
    private readonly request: ModelRequest,
    private readonly context: ModelContext,
  ) {
    super();
  }

  protected _subscribe(subscriber: Subscriber<TurnEvent>): TeardownLogic {
    const turn = new FallbackTurn(this.chain, this.request, this.context, subscriber);
    turn.advance(0, { from: undefined, reason: '', midStream: false });
    return turn;
  }
}

/** One subscription to a fallback chain: what the consumer holds, the models tried, the one running. */
class FallbackTurn {
  private readonly hub: HealHub | undefined;
  /** The context each model is called with (the run's, with the joined hub). */
  private readonly inner: ModelContext;
  private readonly errors: unknown[] = [];
  /** What the consumer holds since the last reset: whether it saw a tool call or anything at all. */
  // what it was shown is kept only by 'continue', which sends the text on and may show it again
  private readonly shown: Transcript | undefined;
  private toolCalled = false;
  private visible = false;
  /** A reasoning block shown and not ended (its model may die inside it). */
  private reasoningOpen = false;
  private current: Subscription | undefined;

  constructor(
    readonly chain: Chain,
    private readonly request: ModelRequest,
    context: ModelContext,
    readonly subscriber: Subscriber<TurnEvent>,
  ) {
    // the run's hub hears everything this chain reports, as does our own (once each)
    const hub = joinHubs([chain.ownHub, context.hub]);
    this.hub = hub;
    // a hub of its own: it follows the breakers and hears the calls they reject (see guarded)
    if (hub !== chain.ownHub) for (const link of chain.links) if (link.breaker) hub!.watch(link.breaker);
    // each model is called with the run's context: its attempts count and are traced as the run's
    this.inner = hub === context.hub ? context : { ...context, ...(hub ? { hub } : {}) };
    this.shown = chain.midStream === 'continue' ? new Transcript() : undefined;
  }

  /** Teardown: the model running now is unsubscribed. */
  unsubscribe(): void {
    this.current?.unsubscribe();
  }

  emit(event: TurnEvent): void {
    if (event.type === 'reset') {
      this.shown?.clear();
      this.toolCalled = false;
      this.visible = false;
      this.reasoningOpen = false;
    } else {
      this.visible = true;
      this.shown?.append(event);
      if (event.type === 'tool-call') this.toolCalled = true;
      else if (event.type === 'reasoning-delta') this.reasoningOpen = true;
      else if (event.type === 'reasoning-end') this.reasoningOpen = false;
    }
    this.subscriber.next(event);
  }

  /**
   * A `reset` from inside the continuation running now (a `perModel` retry starting it over): it
   * takes back only the continuation's own output. When the consumer was shown none of it, there
   * is nothing to take back; otherwise the reset, then what was shown before the continuation.
   */
  retake(reset: TurnEvent): void {
    const shown = this.shown!;
    if (!shown.ownShown) return;
    shown.dropOwn();
    // what is shown again had no tool call (it could not have been continued) and no open reasoning block (ended at the hand-over)
    this.toolCalled = false;
    this.reasoningOpen = false;
    const { subscriber } = this;
    subscriber.next(reset);
    for (const event of shown.replay()) {
      if (subscriber.closed) return;
      subscriber.next(event);
    }
  }

  private start(j: number): void {
    const { chain, subscriber, request } = this;
    const model = chain.list[j]!;
    let req = request;
    let partial: string | undefined;
    if (this.visible) {
      const shown = this.shown;
      if (shown?.hasText && !this.toolCalled) {
        // the failed model's reasoning block, cut short, ends here (unsigned): the next model's
        // reasoning is a block of its own, never spliced onto it
        if (this.reasoningOpen) {
          this.emit({ type: 'reasoning-end' });
          if (subscriber.closed) return;
        }
        partial = shown.text();
        // a reset inside the continuation never takes back what was shown before it
        shown.seal();
        req = {
          ...request,
          messages: [...request.messages, { role: 'assistant', content: partial }, { role: 'user', content: chain.instruction }],
        };
      } else {
        this.emit({ type: 'reset', reason: 'fallback', target: chain.names[j]! });
        if (subscriber.closed) return;
      }
    }
    if (chain.adapt) {
      const adapted = guard(chain.adapt, req, model);
      if (adapted instanceof Thrown) return subscriber.error(adapted.error);
      req = adapted;
    }
    const attempt = new ModelAttempt(model, req, this.inner);
    // perModel heals the model's stream (its retries come before a fallback); the model's
    // breaker guards the whole attempt. A perModel that throws errors the turn, like adapt
    let input: Observable<TurnEvent>;
    try {
      input = this.guarded(j, chain.perModel ? heal(chain.perModel, model, chain.names[j]!, attempt, this.inner) : attempt);
    } catch (perModelError) {
      return subscriber.error(perModelError);
    }
    const sink = new AttemptSink(this, j, attempt, partial);
    input.subscribe(sink);
    // a sink already closed ended synchronously (a failure there started the next model, which is current now)
    if (subscriber.closed) sink.unsubscribe();
    else if (!sink.closed) this.current = sink;
  }

  /** Model `j`'s attempt through its breaker: the chain's own `circuitBreak`, or, with a hub of this call's own, the same guard reporting to it. */
  private guarded(j: number, attempt$: Observable<TurnEvent>): Observable<TurnEvent> {
    const { chain, hub } = this;
    if (hub === chain.ownHub) {
      const guardOf = chain.ownGuards[j];
      return guardOf ? attempt$.pipe(guardOf) : attempt$;
    }
    const breaker = chain.links[j]!.breaker;
    return breaker ? underBreaker(attempt$, breaker, hub) : attempt$;
  }

  onError(j: number, error: unknown, called: boolean, emitted: boolean): void {
    const { chain, subscriber } = this;
    this.errors.push(error);
    // the consumer holds this answer's output: 'error' hands over no further (a model skipped
    // by its breaker never follows visible output here, so it needs no exception)
    if (this.visible && chain.midStream === 'error') return subscriber.error(error);
    const verdict = decideFallback(error, called, chain.classifier, chain.shouldFallback);
    if ('fail' in verdict) return subscriber.error(verdict.fail);
    this.advance(j + 1, { from: chain.names[j], reason: verdict.reason, midStream: emitted });
  }

  /** Starts the first model from `j` whose breaker is not open. */
  advance(j: number, hop: Hop): void {
    const next = nextAlternative(this.chain.links, j, hop, this.errors, this.hub);
    if (next < 0) return this.subscriber.error(new AllFallbacksFailedError([...this.errors]));
    this.start(next);
  }
}

/**
 * One model's call, made when subscribed: `called` then says it was (its breaker may reject the
 * attempt first). A class rather than `defer` and closures: an idle call holds this one object.
 */
class ModelAttempt extends Observable<TurnEvent> {
  called = false;

  constructor(
    private readonly model: Model,
    private readonly request: ModelRequest,
    private readonly context: ModelContext,
  ) {
    super();
  }

  /** RxJS calls this for each subscription (a synchronous throw errors the subscriber). */
  protected _subscribe(subscriber: Subscriber<TurnEvent>): void {
    this.called = true;
    streamModel(this.model, this.request, this.context).subscribe(subscriber);
  }
}

/**
 * One model's attempt: its events to the consumer (held-back overlap trimmed), its error to the
 * chain. In a continuation (`partial`: the text continued), a `reset` starts the continuation over:
 * the turn takes back only its own output, and trimming starts afresh.
 */
class AttemptSink extends LeanSubscriber<TurnEvent> {
  /** Whether this model's output reached the consumer (held-back text did not). */
  private emitted = false;
  private trimmer: OverlapTrimmer | undefined;

  constructor(
    private readonly turn: FallbackTurn,
    private readonly j: number,
    private readonly attempt: ModelAttempt,
    private readonly partial: string | undefined,
  ) {
    super();
    this.trimmer = this.newTrimmer();
  }

  private newTrimmer(): OverlapTrimmer | undefined {
    const { partial, turn } = this;
    const { maxOverlap, longOverlap } = turn.chain;
    return partial !== undefined && maxOverlap > 0 ? new OverlapTrimmer(partial, maxOverlap, longOverlap) : undefined;
  }

  protected override _next(event: TurnEvent): void {
    if (event.type === 'reset' && this.partial !== undefined) {
      // held-back text was never shown: the next attempt is trimmed against the partial text afresh
      this.trimmer = this.newTrimmer();
      return this.turn.retake(event);
    }
    const trimmer = this.trimmer;
    // a continuing model's reasoning passes at once: it is not the answer, so it decides no overlap
    if (trimmer && !trimmer.decided && event.type !== 'reasoning-delta' && event.type !== 'reasoning-end') {
      if (event.type === 'text-delta') {
        const shown = trimmer.push(event.text);
        if (shown !== '') {
          this.emitted = true;
          this.turn.emit({ type: 'text-delta', text: shown });
        }
        return;
      }
      this.flush();
    }
    this.emitted = true;
    this.turn.emit(event);
  }

  // held-back text was never shown: a further fallback continues from what was
  protected override _error(error: unknown): void {
    try {
      this.turn.onError(this.j, error, this.attempt.called, this.emitted);
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    try {
      if (this.trimmer && !this.trimmer.decided) this.flush();
      this.turn.subscriber.complete();
    } finally {
      this.unsubscribe();
    }
  }

  private flush(): void {
    const rest = this.trimmer!.end();
    if (rest !== '') this.turn.emit({ type: 'text-delta', text: rest });
  }
}

/** Consecutive text (or reasoning) deltas shown, kept flat. */
class Run {
  readonly text = new TextBuffer();

  constructor(readonly type: 'text-delta' | 'reasoning-delta') {}
}

/**
 * What the consumer was shown since its last reset, in `'continue'` mode: the text to send on as
 * the partial answer, and everything to show again when a reset inside a continuation takes back
 * only the continuation's own output. Runs of deltas are kept flat (about a byte per character,
 * whatever the number of deltas); other events (a reasoning block's end, a tool call) as they came.
 */
class Transcript {
  /** Shown before the continuation running now: sealed, never taken back by a reset inside it. */
  private base: (Run | TurnEvent)[] = [];
  private baseText = false;
  /** Shown since (the whole turn, when no continuation runs). */
  private own: (Run | TurnEvent)[] = [];
  private ownText = false;
  /** The run the next delta of its kind extends. */
  private run: Run | undefined;

  get hasText(): boolean {
    return this.baseText || this.ownText;
  }

  /** Whether the consumer was shown anything since the seal. */
  get ownShown(): boolean {
    return this.own.length > 0;
  }

  append(event: TurnEvent): void {
    if (event.type === 'text-delta' || event.type === 'reasoning-delta') {
      if (event.text === '') return;
      if (event.type === 'text-delta') this.ownText = true;
      if (this.run?.type !== event.type) this.own.push((this.run = new Run(event.type)));
      this.run.text.append(event.text);
    } else {
      this.own.push(event);
      this.run = undefined;
    }
  }

  /** The text shown, in order. */
  text(): string {
    let text = '';
    for (const parts of [this.base, this.own]) for (const part of parts) if (part instanceof Run && part.type === 'text-delta') text += part.text.toString();
    return text;
  }

  /** A continuation starts: everything shown so far is what its resets never take back. */
  seal(): void {
    if (this.own.length > 0) this.base = this.base.length === 0 ? this.own : this.base.concat(this.own);
    this.baseText ||= this.ownText;
    this.dropOwn();
  }

  /** Takes back what was shown since the seal. */
  dropOwn(): void {
    this.own = [];
    this.ownText = false;
    this.run = undefined;
  }

  /** A reset the consumer honours in full. */
  clear(): void {
    this.base = [];
    this.baseText = false;
    this.dropOwn();
  }

  /** What was shown before the seal, as events to show it again (a run as one delta). */
  *replay(): Generator<TurnEvent> {
    for (const part of this.base) yield part instanceof Run ? { type: part.type, text: part.text.toString() } : part;
  }
}

/** One model's stream through the `perModel` pipeline; throws what it throws, or for a result that is not an Observable. */
function heal(
  perModel: NonNullable<FallbackModelOptions['perModel']>,
  model: Model,
  target: string,
  stream$: Observable<TurnEvent>,
  context: ModelContext,
): Observable<TurnEvent> {
  const { hub, budget, scheduler, callId, step } = context;
  // operators created in perModel without a hub report to the run's (and ours)
  const healed: unknown = withDefaultHub(hub && { hub, target }, () => perModel(model.id, stream$, { hub, budget, scheduler, callId, step, target, model }));
  if (!isObservable(healed)) throw new TypeError(`fallbackModel: perModel('${model.id}', …) must return an Observable of the model's events, got ${typeof healed}`);
  return healed as Observable<TurnEvent>;
}
