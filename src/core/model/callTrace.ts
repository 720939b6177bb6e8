/**
 * Call lifecycle events, once for every kind of call: `call-start` when a model call or a tool
 * execution is subscribed, `call-end` with its duration, outcome, error category and (for models)
 * token usage. Tracing (`rxheal/otel`) and summaries are built on them.
 *
 * @module
 */
import { Observable, Subscriber, type SchedulerLike } from 'rxjs';
import { classifyError } from '../errors/classify.js';
import type { ProviderFallback, Usage } from '../events/events.js';
import type { HealHub } from '../hub/hub.js';
import { LeanSubscriber } from '../rx/leanSubscriber.js';
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
  return new Traced(hub, scheduler, call, source);
}

/** What {@link traced} returns: each subscription is one traced call (one {@link TraceSubscriber}, no closures). */
class Traced<T> extends Observable<T> {
  constructor(
    private readonly hub: HealHub,
    private readonly scheduler: SchedulerLike,
    private readonly call: TracedCall,
    private readonly traced: Observable<T>,
  ) {
    super();
  }

  protected _subscribe(subscriber: Subscriber<T>): void {
    // linked to `subscriber`: unsubscribing downstream reaches it (and reports `cancelled`); for a
    // consumer already gone the traced work is never started
    const tracing = new TraceSubscriber(subscriber, this.hub, this.scheduler, this.call);
    if (!tracing.closed) this.traced.subscribe(tracing);
  }
}

/**
 * One traced call: `call-start` when made, `call-end` once (success, error or cancelled).
 * `streamModel` extends it to count a model call's tokens in the same subscriber.
 *
 * @internal
 */
export class TraceSubscriber<T> extends LeanSubscriber<T> {
  private readonly started: number;
  private usage: Usage | undefined = undefined;
  /** A tool answered an MCP-style `{ isError: true }` result: it ran and reported a failure. */
  private isError = false;
  private done = false;

  constructor(
    destination: Subscriber<T>,
    private readonly hub: HealHub,
    private readonly scheduler: SchedulerLike,
    private readonly call: TracedCall,
    /** For a model call: whether it made no calls of its own (the provider's fallbacks are reported by the innermost call that saw them). */
    private readonly innermost: () => boolean = () => true,
  ) {
    super(destination);
    this.started = scheduler.now();
    // subscribed by a subscriber already gone: no call is made, none is traced
    if (this.closed) return;
    hub.report({ type: 'call-start', ...call, at: this.started });
  }

  protected override _next(value: T): void {
    const event = value as { type?: unknown; usage?: Usage; providerFallbacks?: readonly ProviderFallback[]; recommendedModel?: string };
    if (this.call.kind === 'model') {
      if (event.type === 'finish') {
        if (event.usage) this.usage = event.usage;
        if (event.providerFallbacks && this.innermost()) this.reportProviderFallbacks(event.providerFallbacks, event.recommendedModel);
      }
    } else if (typeof value === 'object' && value !== null && (value as { isError?: unknown }).isError === true) this.isError = true;
    this.destination.next(value);
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

  protected override _error(error: unknown): void {
    this.end('error', error);
    super._error(error);
  }

  protected override _complete(): void {
    this.end('success');
    super._complete();
  }

  override unsubscribe(): void {
    if (this.closed) return;
    super.unsubscribe();
    // `hub` is unset while `super()` runs: a destination already closed unsubscribes this one
    // there, before any call-start (nothing to end)
    if (!this.done && this.hub !== undefined) this.end('cancelled');
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
