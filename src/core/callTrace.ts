/**
 * Call lifecycle events, once for every kind of call: `call-start` when a model call or a tool
 * execution is subscribed, `call-end` with its duration, outcome, error category and (for models)
 * token usage. Tracing (`rxheal/otel`) and summaries are built on them.
 *
 * @module
 */
import { Observable, type SchedulerLike } from 'rxjs';
import { classifyError } from './classify.js';
import type { Usage } from './events.js';
import type { HealHub } from './hub.js';
import { errorText } from './sanitize.js';

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
