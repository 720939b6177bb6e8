/**
 * A model call's one observer ({@link TurnObserver}): the turn's contract (a stream that ends
 * without `finish` errors), its abort signal, its trace, its token count and, in a run that
 * counts money, its live spend and the cut. Made by `callModel` (`./model.ts`) for each call.
 *
 * @module
 */
import type { Observer } from 'rxjs';
import { IncompleteStreamError } from '../errors/errors.js';
import type { Finish, TurnEvent, Usage } from '../events/events.js';
import type { AttemptSpend } from '../money/meter.js';
import { Link } from '../rx/operate.js';
import { unsubscribed, type AbortContext } from './abortable.js';
import type { CallTrace } from './callTrace.js';

/** What a call counts its tokens into: the run's budget (`BudgetMeter`'s `usage`). */
export interface TokenMeter {
  usage(usage: Usage): void;
}

/** One model call being served, as the calls made inside it see it. */
export interface ServedCall {
  /** This call was counted when it started: the first attempt made inside it is that count. */
  prepaid: boolean;
  /** Calls made inside it so far (their ids are `<callId>/<k>`); with any, they count the tokens. */
  children: number;
}

/**
 * A turn's one observer and its teardown: the run's (finished once the stream ends), the finish
 * contract's (a turn that completes without `finish` since its last `reset` errors), and, with a
 * context, the call's trace and its token count (the innermost call that saw the finish counts
 * its tokens, after passing it on; past the limit the turn errors). One object per call: a
 * healing pipeline wraps a model in `streamModel` at several layers, each costs one hop per event.
 * A call that counts money gets a {@link SpendingTurnObserver} instead (the others stay this small).
 */
export class TurnObserver extends Link<TurnEvent> implements AbortContext {
  /** {@link SAW_FINISH}, {@link ENDED}, {@link CANCELLED}: one number, not three fields (an idle pipeline holds several of these). */
  private flags = 0;
  private received = 0;
  /** Made when the model first reads `signal` (most calls never need one). */
  private controller: AbortController | undefined = undefined;

  constructor(
    /** Where the events go: the call's subscriber, or the caller's own observer (`callModel`). */
    protected readonly subscriber: Observer<TurnEvent>,
    private readonly modelId: string,
    protected readonly trace: CallTrace | undefined,
    protected readonly budget: TokenMeter | undefined,
    protected readonly served: ServedCall | undefined,
  ) {
    super();
  }

  /**
   * The call's abort signal (the context handed to `model.stream` reads it here): aborted when
   * the consumer leaves before the stream ended — also one first read after that, already aborted.
   */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.flags & CANCELLED) this.controller.abort(unsubscribed());
    }
    return this.controller.signal;
  }

  /** A `finish` arrived since the last `reset`. */
  protected get finished(): boolean {
    return (this.flags & SAW_FINISH) !== 0;
  }

  protected set finished(saw: boolean) {
    this.flags = saw ? this.flags | SAW_FINISH : this.flags & ~SAW_FINISH;
  }

  protected onNext(event: TurnEvent): void {
    this.received++;
    if (event.type === 'finish') {
      this.finished = true;
      this.trace?.finish(event, this.served?.children === 0);
      this.subscriber.next(event);
      if (this.budget && event.usage && this.served?.children === 0) this.meter(this.budget, event.usage);
      return;
    }
    if (event.type === 'reset') this.finished = false;
    this.subscriber.next(event);
  }

  protected meter(budget: TokenMeter, usage: Usage): void {
    try {
      budget.usage(usage);
    } catch (error) {
      this.subscriber.error(error);
    }
  }

  protected onError(error: unknown): void {
    this.flags |= ENDED;
    this.trace?.end('error', error);
    this.subscriber.error(error);
  }

  protected onComplete(): void {
    if (!this.finished) return this.onError(new IncompleteStreamError(this.modelId, 'no finish event', this.received));
    this.flags |= ENDED;
    this.trace?.end('success');
    this.subscriber.complete();
  }

  override unsubscribe(): void {
    if (this.closed) return;
    // the events' teardown first (the link's finalisers), then the request aborted (if the stream had not ended) and the trace ended
    super.unsubscribe();
    if (!(this.flags & ENDED)) {
      this.flags |= CANCELLED;
      const controller = this.controller;
      if (controller && !controller.signal.aborted) controller.abort(unsubscribed());
    }
    this.trace?.unsubscribe();
  }
}

/** A `finish` arrived since the last `reset`. */
const SAW_FINISH = 1;
/** The stream ended (an error, or completion): leaving afterwards aborts nothing. */
const ENDED = 2;
/** The consumer left before the stream ended: every signal, however late, is aborted. */
const CANCELLED = 4;

/**
 * The observer of a call that counts money: a {@link TurnObserver} that also hands the call's
 * output to its {@link AttemptSpend} (the live count), settles it at the `finish`, releases it when
 * the call ends otherwise, and cuts the call where the spend says so.
 */
export class SpendingTurnObserver extends TurnObserver {
  constructor(
    subscriber: Observer<TurnEvent>,
    modelId: string,
    trace: CallTrace | undefined,
    budget: TokenMeter | undefined,
    served: ServedCall | undefined,
    /** The attempt's money, while it runs (undefined once ended). */
    private spend: AttemptSpend | undefined,
  ) {
    super(subscriber, modelId, trace, budget, served);
  }

  protected override onNext(event: TurnEvent): void {
    const spend = this.spend;
    if (spend === undefined) return super.onNext(event);
    if (event.type === 'finish') {
      // settled before the finish is passed on: a consumer that reads the run's spend then sees it
      this.spend = undefined;
      if (this.served?.children === 0) spend.settle(event.usage);
      else spend.release(true);
      return super.onNext(event);
    }
    // the live count: past what the attempt may spend, the event is passed on (it is paid for) and the call cut after it
    const within = this.served?.children !== 0 || spend.output(event);
    super.onNext(event);
    if (!within && !this.closed) this.cut(spend);
  }

  /**
   * Cut for money: the turn ends here with `finish` `{ reason: 'budget' }` and the estimate as its
   * usage (charged), and the provider's stream is torn down and its request aborted.
   */
  private cut(spend: AttemptSpend): void {
    this.spend = undefined;
    const usage = spend.cut();
    const finish: Finish = { type: 'finish', reason: 'budget', usage };
    this.finished = true;
    this.trace?.finish(finish, true);
    this.trace?.end('success');
    const out = this.subscriber;
    out.next(finish);
    if (this.budget) this.meter(this.budget, usage);
    // the events' teardown, then the run aborted (it is not finished: the provider is still sending)
    this.unsubscribe();
    out.complete();
  }

  protected override onError(error: unknown): void {
    this.release();
    super.onError(error);
  }

  private release(): void {
    const spend = this.spend;
    if (spend === undefined) return;
    this.spend = undefined;
    spend.release(this.served !== undefined && this.served.children > 0);
  }

  override unsubscribe(): void {
    if (this.closed) return;
    this.release();
    super.unsubscribe();
  }
}
