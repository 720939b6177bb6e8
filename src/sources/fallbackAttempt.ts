/**
 * One model's attempt inside a fallback chain (`fallbackModel`, `modelPool`): the call itself
 * ({@link FallbackAttempt}, which knows whether it was made), the observer that hands its events
 * to the consumer and its failure to the chain ({@link AttemptSink}: held-back overlap trimmed,
 * the model's breaker permit settled), and `perModel`'s healing around it ({@link heal}).
 *
 * @module
 */
import { isObservable, Observable, type Observer, type Subscriber, type Subscription } from 'rxjs';
import { failWith, settleUnsubscribed, type CircuitPermit } from '../core/circuit/permit.js';
import type { TurnEvent } from '../core/events/events.js';
import { withDefaultHub } from '../core/hub/hub.js';
import { callModel, streamModel, type Model, type ModelContext, type ModelRequest } from '../core/model/model.js';
import { OverlapTrimmer } from '../core/model/overlap.js';
import type { FallbackModelOptions } from './fallbackModelOptions.js';

/** What an {@link AttemptSink} hands its attempt's events and outcome to: the chain's turn. */
export interface AttemptOwner {
  /** The consumer (closed: nothing goes on). */
  readonly subscriber: Subscriber<TurnEvent>;
  /** Overlap trimming of a continuation: the longest repeat looked for, and the length trimmed anywhere. */
  readonly chain: { readonly maxOverlap: number; readonly longOverlap: number };
  /** An event to the consumer. */
  emit(event: TurnEvent): void;
  /** A `reset` from inside a continuation: it takes back only the continuation's output. */
  retake(reset: TurnEvent): void;
  /** The attempt at position `k` failed (`called`: the model was called; `emitted`: the consumer saw its output). */
  onError(k: number, error: unknown, called: boolean, emitted: boolean): void;
  /** The attempt at position `k` finished its turn. */
  onComplete(k: number): void;
}

/**
 * One model's call, made when subscribed: `called` then says it was (its breaker may reject the
 * attempt first). A class rather than `defer` and closures: an idle call holds this one object.
 */
export class FallbackAttempt extends Observable<TurnEvent> {
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

  /** The call made for `sink` itself (what a subscription does, with no subscriber between the call's observer and the sink), linked to `subscriber`. */
  call(subscriber: Subscriber<TurnEvent>, sink: Observer<TurnEvent>): Subscription | undefined {
    this.called = true;
    return callModel(subscriber, sink, this.model, this.request, this.context);
  }
}

/**
 * One model's attempt: its events to the consumer (held-back overlap trimmed), its error to the
 * chain. In a continuation (`partial`: the text continued), a `reset` starts the continuation over:
 * the turn takes back only its own output, and trimming starts afresh.
 */
export class AttemptSink implements Observer<TurnEvent> {
  /** Whether this model's output reached the consumer (held-back text did not). */
  private emitted = false;
  /** The attempt's stream emitted: a permit left unsettled then counts as a success (circuitBreak's rule). */
  private received = false;
  private settled = false;
  private trimmer: OverlapTrimmer | undefined;

  constructor(
    private readonly turn: AttemptOwner,
    /** Its position in the call's order. */
    private readonly j: number,
    private readonly attempt: FallbackAttempt,
    private readonly partial: string | undefined,
    /** The model's breaker's permit for this attempt, when it has a breaker. */
    private readonly permit: CircuitPermit | undefined,
  ) {
    this.trimmer = this.newTrimmer();
  }

  private newTrimmer(): OverlapTrimmer | undefined {
    const { partial, turn } = this;
    const { maxOverlap, longOverlap } = turn.chain;
    return partial !== undefined && maxOverlap > 0 ? new OverlapTrimmer(partial, maxOverlap, longOverlap) : undefined;
  }

  next(event: TurnEvent): void {
    this.received = true;
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
  error(error: unknown): void {
    // (called directly by the model call's observer: nothing goes on for a consumer gone)
    if (this.settled || this.turn.subscriber.closed) return;
    this.settled = true;
    // the failure is recorded before the chain moves on, so the next choice sees the breaker's new state
    this.turn.onError(this.j, failWith(this.permit, error), this.attempt.called, this.emitted);
  }

  complete(): void {
    if (this.settled || this.turn.subscriber.closed) return;
    this.settled = true;
    this.permit?.success();
    if (this.trimmer && !this.trimmer.decided) this.flush();
    this.turn.onComplete(this.j);
  }

  /** The consumer left (after the attempt's stream was torn down): the permit settled by circuitBreak's rule. */
  unsubscribe(): void {
    if (this.settled) return;
    this.settled = true;
    if (this.permit) settleUnsubscribed(this.permit, this.received);
  }

  private flush(): void {
    const rest = this.trimmer!.end();
    if (rest !== '') this.turn.emit({ type: 'text-delta', text: rest });
  }
}

/** One model's stream through the `perModel` pipeline; throws what it throws, or for a result that is not an Observable. */
export function heal(
  perModel: NonNullable<FallbackModelOptions['perModel']>,
  model: Model,
  target: string,
  stream$: Observable<TurnEvent>,
  context: ModelContext,
): Observable<TurnEvent> {
  const { hub, budget, scheduler, callId, step } = context;
  // operators created in perModel without a hub report to the run's (and ours)
  const healed: unknown = withDefaultHub(hub && { hub, target }, () => perModel(model.id, stream$, { hub, budget, scheduler, callId, step, target, model }));
  if (!isObservable(healed))
    throw new TypeError(`fallbackModel: perModel('${model.id}', …) must return an Observable of the model's events, got ${typeof healed}`);
  return healed as Observable<TurnEvent>;
}
