/**
 * Call lifecycle events, once for every kind of call: `call-start` when a model call or a tool
 * execution is subscribed, `call-end` with its duration, outcome, error category and (for models)
 * token usage. Tracing (`rxheal/otel`) and summaries are built on them.
 *
 * @module
 */
import { Observable, type Observer, type SchedulerLike, type Subscriber } from 'rxjs';
import { classifyError } from '../errors/classify.js';
import type { ProviderFallback, Usage } from '../events/events.js';
import type { HealHub } from '../hub/hub.js';
import { subscribeWithin } from '../rx/operate.js';
import { errorText } from '../errors/sanitize.js';
import { readStatusAlong } from '../errors/readError.js';

/** Who a call is, as its `call-start` / `call-end` events name it. */
export interface TracedCall {
  readonly kind: 'model' | 'tool';
  /** The model's id or the tool's name. */
  readonly name: string;
  /** Unique in its run: `step-<n>.<m>` for a run's model calls, `<parent id>/<k>` for the provider attempts under one, the tool call id for tools. */
  readonly id: string;
  readonly step: number;
  /** The call this one was made inside (a provider attempt under a run's model call). */
  readonly parentId?: string;
}

/**
 * `source`, reporting its lifetime to `hub`: `call-start` on subscribe, `call-end` with the
 * duration (scheduler time), the outcome (`success`, `error`, `cancelled`), the error's text and
 * category, and the usage of a model call's `finish`.
 *
 * @example
 * ```ts
 * traced(hub, scheduler, { kind: 'tool', name: 'get_weather', id: 'call_1', step: 1 }, callTool(tool, call));
 * ```
 */
export function traced<T>(hub: HealHub, scheduler: SchedulerLike, call: TracedCall, source: Observable<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    // for a consumer already gone the traced work is never started
    if (subscriber.closed) return;
    const tracing = new TraceObserver(subscriber, hub, scheduler, call);
    // unsubscribing downstream tears the source down, then ends the trace (`cancelled`, unless it ended already)
    subscribeWithin(subscriber, source, tracing);
    subscriber.add(tracing);
  });
}

/**
 * One traced call's reports, and its teardown: `call-start` when made, `call-end` once (success,
 * error or cancelled). Not an observer: whoever observes the call tells it what it saw —
 * {@link TraceObserver} for `traced`, `streamModel`'s one turn observer for a model call (the
 * turn's contract, its trace and its token count in one hop per event).
 *
 * @internal
 */
export class CallTrace {
  private readonly started: number;
  private usage: Usage | undefined = undefined;
  /** A tool answered an MCP-style `{ isError: true }` result: it ran and reported a failure. */
  private isError = false;
  private done = false;

  constructor(
    private readonly hub: HealHub,
    private readonly scheduler: SchedulerLike,
    readonly call: TracedCall,
  ) {
    this.started = scheduler.now();
    hub.report({ type: 'call-start', ...call, at: this.started });
  }

  /**
   * A model call's `finish`: its usage for `call-end`, and the fallbacks the provider made on its
   * side (`innermost`: reported only by the innermost call that saw them), before it passes on.
   */
  finish(event: { usage?: Usage; providerFallbacks?: readonly ProviderFallback[]; recommendedModel?: string }, innermost: boolean): void {
    if (event.usage) this.usage = event.usage;
    if (event.providerFallbacks && innermost) this.reportProviderFallbacks(event.providerFallbacks, event.recommendedModel);
  }

  /** A tool's result: an MCP-style `{ isError: true }` marks its `call-end`. */
  result(value: unknown): void {
    if (typeof value === 'object' && value !== null && (value as { isError?: unknown }).isError === true) this.isError = true;
  }

  /**
   * The fallbacks the provider made on its side during the call, as `fallback` events marked
   * `providerSide` (reported at the call's finish, before it passes on): they are the provider's,
   * not a chain's, so nothing else moves on because of them.
   */
  private reportProviderFallbacks(fallbacks: readonly ProviderFallback[], recommendedModel: string | undefined): void {
    for (const { from, to, midStream } of fallbacks) {
      this.hub.report({
        type: 'fallback',
        from: `model:${from}`,
        to: `model:${to}`,
        reason: 'provider_fallback',
        midStream: midStream === true,
        providerSide: true,
        ...(recommendedModel === undefined ? {} : { recommendedModel }),
      });
    }
  }

  /** Downstream left (after the source was torn down): `cancelled`, unless the call ended already. */
  unsubscribe(): void {
    this.end('cancelled');
  }

  /** Reports `call-end` with `outcome`, once: false when the call had ended already. */
  end(outcome: 'success' | 'error' | 'cancelled', error?: unknown): boolean {
    if (this.done) return false;
    this.done = true;
    const at = this.scheduler.now();
    const { call, usage } = this;
    this.hub.report({
      type: 'call-end',
      ...call,
      at,
      durationMs: at - this.started,
      outcome,
      ...(outcome === 'error' ? failure(error) : {}),
      ...(usage ? { usage } : {}),
      ...(this.isError && outcome === 'success' ? { isError: true } : {}),
    });
    return true;
  }
}

/** A traced call's observer (`traced`): what it sees goes to its {@link CallTrace}, then downstream. */
class TraceObserver<T> extends CallTrace implements Observer<T> {
  constructor(
    private readonly subscriber: Subscriber<T>,
    hub: HealHub,
    scheduler: SchedulerLike,
    call: TracedCall,
  ) {
    super(hub, scheduler, call);
  }

  next(value: T): void {
    if (this.call.kind !== 'model') this.result(value);
    else if ((value as { type?: unknown }).type === 'finish') this.finish(value as Parameters<CallTrace['finish']>[0], true);
    this.subscriber.next(value);
  }

  error(error: unknown): void {
    if (this.end('error', error)) this.subscriber.error(error);
  }

  complete(): void {
    if (this.end('success')) this.subscriber.complete();
  }
}

/** What a failed call's `call-end` says of its error: its text, category and HTTP status. */
function failure(error: unknown): { error: string; category: string; status?: number } {
  const status = readStatusAlong(error);
  return { error: errorText(error, 200), category: classifyError(error).category, ...(status === undefined ? {} : { status }) };
}
