/**
 * {@link fallbackModel}: a model that tries several in order, per request. Each call is a
 * {@link FallbackTurn}: the models tried, the one running, the hand-over to the next (a `reset`, or
 * a continuation of the partial text with the repeat trimmed), each model's attempt healed by
 * `perModel` and guarded by its breaker. What it takes is in fallbackModelOptions.ts, what the
 * consumer was shown (for `'continue'`) in transcript.ts.
 *
 * @module
 */
import { Observable, type Subscriber, type Subscription, type TeardownLogic } from 'rxjs';
import { type CircuitBreaker } from '../core/breaker/CircuitBreaker.js';
import { CircuitBreakerRegistry } from '../core/breaker/registry.js';
import { classifyError, type ErrorClassifier } from '../core/errors/classify.js';
import { AllFallbacksFailedError, InvalidOptionError } from '../core/errors/errors.js';
import { decideFallback, nextAlternative, type ChainLink, type Hop } from '../core/fallback/fallbackChain.js';
import { guard, Thrown } from '../core/rx/guard.js';
import { subscribeWithin } from '../core/rx/operate.js';
import type { TurnEvent } from '../core/events/events.js';
import { defaultHub, joinHubs, type HealHub } from '../core/hub/hub.js';
import { check, Func, Hub, NonEmptyString, NonNegativeInteger, PositiveInteger, oneOf, validateOptions } from '../core/errors/options.js';
import { acquire } from '../operators/circuitBreak.js';
import { isModel, withModelsInside, type Model, type ModelContext, type ModelRequest } from '../core/model/model.js';
import { AttemptSink, FallbackAttempt, heal, type AttemptOwner } from './fallbackAttempt.js';
import { DEFAULT_CONTINUE_INSTRUCTION, type FallbackModelOptions } from './fallbackModelOptions.js';
import { Transcript } from './transcript.js';

export { DEFAULT_CONTINUE_INSTRUCTION } from './fallbackModelOptions.js';
export type { FallbackModelOptions, PerModelContext } from './fallbackModelOptions.js';

/**
 * The checks of {@link FallbackModelOptions}, for `fallbackModel` and the models made like it.
 *
 * @internal
 */
export const fallbackProps = {
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
  cheaperBelow: check('a number from 0 to 1', (u): u is number => typeof u === 'number' && u >= 0 && u <= 1),
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
  checkModels('fallbackModel', models);
  const o = validateOptions('fallbackModel', fallbackProps, options);
  return chainModel(models, o as FallbackModelOptions, o.id ?? `fallback(${models.map((m) => m.id).join(', ')})`, undefined);
}

/**
 * Checks the models of a chain: a non-empty array of models with unique ids.
 *
 * @internal
 */
export function checkModels(target: string, models: readonly Model[], option = 'models'): void {
  if (!Array.isArray(models) || models.length === 0) throw new InvalidOptionError(target, option, models, 'a non-empty array of models');
  const seen = new Set<string>();
  Array.from(models, (m: unknown, i) => {
    if (!isModel(m)) throw new InvalidOptionError(target, `${option}[${i}]`, m, 'a Model ({ id: non-empty string, stream(request, context) })');
    if (seen.has(m.id)) throw new InvalidOptionError(target, `${option}[${i}].id`, m.id, 'unique (breakers and events are named model:<id>)');
    seen.add(m.id);
  });
}

/**
 * How one call walks a chain when the chain's own order is not the rule (`modelPool`: decided
 * per call, from its affinity and strategy), and what runs around each attempt.
 *
 * @internal
 */
export interface CallRoute {
  /** The request each model is sent (a pool's carries its cache key). */
  readonly request: ModelRequest;
  /** The chain's indices, in the order this call tries them. */
  readonly order: readonly number[];
  /** The attempt at model `j` as this call runs it (a pool: its limiter, its waits, its bookkeeping). */
  attempt(j: number, attempt$: Observable<TurnEvent>): Observable<TurnEvent>;
  /** The call failed with `error` (every model tried), or (`error` undefined) ended before an answer: the consumer left. */
  failed?(error: unknown): void;
  /** Whether an attempt's error fails the call at once (the route's own callback threw), never moving on. */
  fatal?(error: unknown): boolean;
}

/**
 * A chain over `models` with validated options `o`, named `id`: `route` (given) decides each call's
 * order and wraps each attempt; without, each call walks the models in order. What
 * `fallbackModel` and `modelPool` are made of.
 *
 * @internal
 */
export function chainModel(
  models: readonly Model[],
  o: FallbackModelOptions,
  id: string,
  route: ((request: ModelRequest, context: ModelContext) => CallRoute) | undefined,
): Model {
  const list = [...models];
  const names = list.map((m) => `model:${m.id}`);
  const breakers: (CircuitBreaker | undefined)[] = names.map((name) => o.breakers?.get(name));
  const ownHub = o.hub;
  // the hub option (or, without one, the default hub where the chain is made, as circuitBreak
  // would take) follows each breaker and hears the calls it rejects
  const guardHub = ownHub ?? defaultHub()?.hub;
  for (const breaker of breakers) if (breaker) guardHub?.watch(breaker);
  const chain: Chain = {
    list,
    names,
    links: names.map((name, i) => ({ name, breaker: breakers[i] })),
    ownHub,
    guardHub,
    perModel: o.perModel,
    adapt: o.adapt,
    midStream: o.midStream ?? 'restart',
    instruction: o.continueInstruction ?? DEFAULT_CONTINUE_INSTRUCTION,
    maxOverlap: o.maxOverlap ?? 1000,
    longOverlap: o.longOverlap ?? 16,
    shouldFallback: o.shouldFallback,
    classifier: o.classifier ?? classifyError,
    cheaperBelow: o.cheaperBelow,
    route,
  };
  // what it is made of, for adapters that need to know (toAiSdk: who takes the AI SDK's settings)
  return withModelsInside({ id, stream: (request, context) => new FallbackCall(chain, request, context) }, list);
}

/** What every call of one `fallbackModel` shares: its models, breakers and options, resolved once. */
interface Chain {
  readonly list: readonly Model[];
  readonly names: readonly string[];
  readonly links: readonly ChainLink[];
  readonly ownHub: HealHub | undefined;
  /** Where a call without a hub of its own reports the calls its breakers reject: the `hub` option, or the default hub where the chain was made. */
  readonly guardHub: HealHub | undefined;
  readonly perModel: FallbackModelOptions['perModel'];
  readonly adapt: ((request: ModelRequest, model: Model) => ModelRequest) | undefined;
  readonly midStream: 'restart' | 'continue' | 'error';
  readonly instruction: string;
  readonly maxOverlap: number;
  readonly longOverlap: number;
  readonly shouldFallback: ((error: unknown) => boolean) | undefined;
  readonly classifier: ErrorClassifier;
  readonly cheaperBelow: number | undefined;
  /** Each call's order and attempts, decided per call (a pool); the chain's own order without. */
  readonly route: ((request: ModelRequest, context: ModelContext) => CallRoute) | undefined;
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
    const { chain } = this;
    if (chain.route) {
      const route = guard(chain.route, this.request, this.context);
      if (route instanceof Thrown) return subscriber.error(route.error);
      const turn = new FallbackTurn(chain, route.request, this.context, subscriber, route);
      turn.advance(0, { from: undefined, reason: '', midStream: false });
      return turn;
    }
    const turn = new FallbackTurn(chain, this.request, this.context, subscriber, undefined);
    const first = this.chain.cheaperBelow === undefined ? 0 : cheapestUnderPressure(this.chain, this.request, this.context);
    if (first instanceof Thrown) {
      subscriber.error(first.error);
      return turn;
    }
    turn.advance(first, first === 0 ? { from: undefined, reason: '', midStream: false } : { from: this.chain.names[0], reason: 'budget', midStream: false });
    return turn;
  }
}

/**
 * Where a call starts under `cheaperBelow`: with less than that share of the run's money left, the
 * model with the least worst case that fits what is left (none fitting: the least); else the first.
 * A price missing for a model is the call's error (`InvalidOptionError`, thrown by the quote).
 */
function cheapestUnderPressure(chain: Chain, request: ModelRequest, context: ModelContext): number | Thrown {
  const left = context.budget?.moneyLeft?.();
  if (left === undefined || left.share >= chain.cheaperBelow!) return 0;
  const quotes = guard(() => chain.list.map((m) => left.quote(m.id, request)));
  if (quotes instanceof Thrown) return quotes;
  let best = -1;
  for (let j = 0; j < quotes.length; j++) {
    const fits = quotes[j]! <= left.leftUsd;
    const bestFits = best >= 0 && quotes[best]! <= left.leftUsd;
    if (best < 0 || (fits && !bestFits) || (fits === bestFits && quotes[j]! < quotes[best]!)) best = j;
  }
  return best;
}

/** One subscription to a fallback chain: what the consumer holds, the models tried, the one running. */
class FallbackTurn implements AttemptOwner {
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
  /** The links in this call's order (the chain's own without a route). */
  private readonly links: readonly ChainLink[];
  private ended = false;

  constructor(
    readonly chain: Chain,
    private readonly request: ModelRequest,
    context: ModelContext,
    readonly subscriber: Subscriber<TurnEvent>,
    private readonly route: CallRoute | undefined,
  ) {
    this.links = route ? route.order.map((j) => chain.links[j]!) : chain.links;
    // the run's hub hears everything this chain reports, as does our own (once each)
    const hub = joinHubs([chain.ownHub, context.hub]);
    this.hub = hub;
    // a hub of its own: it follows the breakers and hears the calls they reject (see start)
    if (hub !== chain.ownHub) for (const link of chain.links) if (link.breaker) hub!.watch(link.breaker);
    // each model is called with the run's context: its attempts count and are traced as the run's
    this.inner = hub === context.hub ? context : { ...context, ...(hub ? { hub } : {}) };
    this.shown = chain.midStream === 'continue' ? new Transcript() : undefined;
  }

  /** Teardown: the model running now is unsubscribed. */
  unsubscribe(): void {
    this.current?.unsubscribe();
    if (!this.ended) this.end(undefined);
  }

  /** The chain's index of the model at position `k` of this call's order. */
  private at(k: number): number {
    return this.route ? this.route.order[k]! : k;
  }

  /** The call ended without an answer (`error`; undefined: the consumer left): the route hears it once. */
  private end(error: unknown): void {
    this.ended = true;
    if (this.route?.failed) guard(this.route.failed.bind(this.route), error);
  }

  private fail(error: unknown): void {
    if (!this.ended) this.end(error);
    this.subscriber.error(error);
  }

  onComplete(): void {
    this.ended = true;
    this.subscriber.complete();
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

  private start(k: number): void {
    const { chain, subscriber, request } = this;
    const j = this.at(k);
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
      if (adapted instanceof Thrown) return this.fail(adapted.error);
      req = adapted;
    }
    const attempt = new FallbackAttempt(model, req, this.inner);
    // a route runs the attempt its way (a pool: its limiter, its waits) inside perModel's healing
    const routed = this.route ? guard(this.route.attempt.bind(this.route), j, attempt) : attempt;
    if (routed instanceof Thrown) return this.fail(routed.error);
    // perModel heals the model's stream (its retries come before a fallback). A perModel that
    // throws errors the turn, like adapt
    let input: Observable<TurnEvent>;
    try {
      input = chain.perModel ? heal(chain.perModel, model, chain.names[j]!, routed, this.inner) : routed;
    } catch (perModelError) {
      return this.fail(perModelError);
    }
    // the model's breaker guards the whole attempt, by circuitBreak's rules, settled by the
    // attempt's own observer (no observer of the breaker's between them); a call it rejects is
    // reported (to the chain's hub, or this call's own) and is that model's failure
    const breaker = chain.links[j]!.breaker;
    const permit = breaker ? acquire(breaker, this.hub === chain.ownHub ? chain.guardHub : this.hub) : undefined;
    if (permit instanceof Error) return this.onError(k, permit, false, false);
    const sink = new AttemptSink(this, k, attempt, partial, permit);
    // linked to the consumer: leaving reaches the model even while it emits synchronously. Without
    // perModel or a route the sink is the model call's own observer (streamModel's, called directly)
    const running = input !== attempt ? subscribeWithin(subscriber, input, sink) : attempt.call(subscriber, sink);
    // no call made (the consumer gone, its budget crossed, the model threw): a permit still held is let go
    if (running === undefined) return sink.unsubscribe();
    // the attempt's stream first, then its permit: leaving tears the stream down, then settles the permit
    if (permit) running.add(sink);
    // one already closed ended synchronously (a failure there started the next model, which is current now)
    if (!running.closed) this.current = running;
  }

  onError(k: number, error: unknown, called: boolean, emitted: boolean): void {
    const { chain } = this;
    this.errors.push(error);
    // the consumer holds this answer's output: 'error' hands over no further (a model skipped
    // by its breaker never follows visible output here, so it needs no exception)
    if (this.visible && chain.midStream === 'error') return this.fail(error);
    if (this.route?.fatal?.(error)) return this.fail(error);
    const verdict = decideFallback(error, called, chain.classifier, chain.shouldFallback);
    if ('fail' in verdict) return this.fail(verdict.fail);
    this.advance(k + 1, { from: chain.names[this.at(k)], reason: verdict.reason, midStream: emitted });
  }

  /** Starts the first model from position `k` whose breaker is not open. */
  advance(k: number, hop: Hop): void {
    const next = nextAlternative(this.links, k, hop, this.errors, this.hub);
    if (next < 0) return this.fail(new AllFallbacksFailedError([...this.errors]));
    this.start(next);
  }
}
