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
    traceWithin(subscriber, source, new TraceObserver(subscriber, hub, scheduler, call));
  });
}

/**
 * Subscribes `tracing` to `source` on behalf of `subscriber`: unsubscribing downstream tears the
 * source down, then ends the trace (`cancelled`, unless it ended already).
 *
 * @internal
 */
export function traceWithin<T>(subscriber: Subscriber<T>, source: Observable<T>, tracing: TraceObserver<T>): void {
  subscribeWithin(subscriber, source, tracing);
  subscriber.add(tracing);
}

/**
 * One traced call, as its source's observer and its teardown: `call-start` when made, `call-end`
 * once (success, error or cancelled). `streamModel` extends it to count a model call's tokens in
 * the same observer.
 *
 * @internal
 */
export class TraceObserver<T> implements Observer<T> {
  private readonly started: number;
  private usage: Usage | undefined = undefined;
  /** A tool answered an MCP-style `{ isError: true }` result: it ran and reported a failure. */
  private isError = false;
  private done = false;

  constructor(
    protected readonly subscriber: Subscriber<T>,
    private readonly hub: HealHub,
    private readonly scheduler: SchedulerLike,
    private readonly call: TracedCall,
    /** For a model call: whether it made no calls of its own (the provider's fallbacks are reported by the innermost call that saw them). */
    private readonly innermost: () => boolean = () => true,
  ) {
    this.started = scheduler.now();
    hub.report({ type: 'call-start', ...call, at: this.started });
  }

  next(value: T): void {
    const event = value as { type?: unknown; usage?: Usage; providerFallbacks?: readonly ProviderFallback[]; recommendedModel?: string };
    if (this.call.kind === 'model') {
      if (event.type === 'finish') {
        if (event.usage) this.usage = event.usage;
        if (event.providerFallbacks && this.innermost()) this.reportProviderFallbacks(event.providerFallbacks, event.recommendedModel);
      }
    } else if (typeof value === 'object' && value !== null && (value as { isError?: unknown }).isError === true) this.isError = true;
    this.subscriber.next(value);
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

  error(error: unknown): void {
    if (this.done) return;
    this.end('error', error);
    this.subscriber.error(error);
  }

  complete(): void {
    if (this.done) return;
    this.end('success');
    this.subscriber.complete();
  }

  /** Downstream left (after the source was torn down): `cancelled`, unless the call ended already. */
  unsubscribe(): void {
    if (!this.done) this.end('cancelled');
  }

  private end(outcome: 'success' | 'error' | 'cancelled', error?: unknown): void {
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
  }
}

/** What a failed call's `call-end` says of its error: its text, category and HTTP status. */
function failure(error: unknown): { error: string; category: string; status?: number } {
  const status = readStatusAlong(error);
  return { error: errorText(error, 200), category: classifyError(error).category, ...(status === undefined ? {} : { status }) };
}
