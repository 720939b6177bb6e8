/**
 * What {@link fallbackModel} takes: its options ({@link FallbackModelOptions}: breakers, `adapt`,
 * `perModel`, what to do mid-stream, overlap trimming, the fallback rule), what `perModel` is
 * handed ({@link PerModelContext}), and the instruction that asks a model to continue a cut-off
 * answer.
 *
 * @module
 */
import type { Observable } from 'rxjs';
import type { CircuitBreakerRegistry } from '../core/breaker/registry.js';
import type { ErrorClassifier } from '../core/errors/classify.js';
import type { TurnEvent } from '../core/events/events.js';
import type { HealHub } from '../core/hub/hub.js';
import type { Model, ModelCallContext, ModelRequest } from '../core/model/model.js';

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
   * retries included). Operators
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
   * Pressure routing, 0 to 1: when less than this share of the run's money budget
   * (`budget.maxUsd`) is left as a call starts, the chain starts from its cheapest model that fits
   * what is left — the least worst-case reservation at the run's `prices` (`BudgetMeter.moneyLeft`),
   * none fitting: the cheapest — and goes on from there in the chain's order; a
   * `{ type: 'fallback', from: 'model:<first>', to: 'model:<cheapest>', reason: 'budget', midStream: false }`
   * event says so. Without a money budget in the call's context it does nothing. None by default.
   */
  readonly cheaperBelow?: number;
  /**
   * Gives `fallback` and the category reported as `reason`. Defaults to {@link classifyError}. If
   * it throws, the turn errors with what it threw.
   */
  readonly classifier?: ErrorClassifier;
}
