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
import type { AbortRun } from './abortable.js';
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
 */
export class TurnObserver extends Link<TurnEvent> {
  private finished = false;
  private received = 0;

  constructor(
    /** Where the events go: the call's subscriber, or the caller's own observer ({@link callModel}). */
    private readonly subscriber: Observer<TurnEvent>,
    private readonly run: AbortRun,
    private readonly modelId: string,
    private readonly trace: CallTrace | undefined,
    private readonly budget: TokenMeter | undefined,
    private readonly served: ServedCall | undefined,
    /** The attempt's money, while it runs (a run that counts dollars; undefined once ended). */
    private spend: AttemptSpend | undefined,
  ) {
    super();
  }

  protected onNext(event: TurnEvent): void {
    this.received++;
    const spend = this.spend;
    if (event.type === 'finish') {
      this.finished = true;
      if (spend) this.endSpend(spend, event.usage);
      this.trace?.finish(event, this.served?.children === 0);
      this.subscriber.next(event);
      if (this.budget && event.usage && this.served?.children === 0) this.meter(this.budget, event.usage);
      return;
    }
    if (event.type === 'reset') this.finished = false;
    // the live count: past what the attempt may spend, the event is passed on (it is paid for) and the call cut after it
    if (spend && this.served?.children === 0 && !spend.output(event)) {
      this.subscriber.next(event);
      return this.cut(spend);
    }
    this.subscriber.next(event);
  }

  /** The attempt's finish: its usage settles the spend (a call that delegated gives its own back). */
  private endSpend(spend: AttemptSpend, usage: Usage | undefined): void {
    this.spend = undefined;
    if (this.served?.children === 0) spend.settle(usage);
    else spend.release(true);
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

  private meter(budget: TokenMeter, usage: Usage): void {
    try {
      budget.usage(usage);
    } catch (error) {
      this.subscriber.error(error);
    }
  }

  protected onError(error: unknown): void {
    if (this.spend) this.releaseSpend(this.spend);
    this.run.finished = true;
    this.trace?.end('error', error);
    this.subscriber.error(error);
  }

  protected onComplete(): void {
    if (!this.finished) return this.onError(new IncompleteStreamError(this.modelId, 'no finish event', this.received));
    this.run.finished = true;
    this.trace?.end('success');
    this.subscriber.complete();
  }

  private releaseSpend(spend: AttemptSpend): void {
    this.spend = undefined;
    spend.release(this.served !== undefined && this.served.children > 0);
  }

  override unsubscribe(): void {
    if (this.closed) return;
    if (this.spend) this.releaseSpend(this.spend);
    // the events' teardown first (the link's finalisers), then the run aborted and the trace ended
    super.unsubscribe();
    this.run.unsubscribe();
    this.trace?.unsubscribe();
  }
}
