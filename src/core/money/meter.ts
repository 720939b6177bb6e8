/**
 * The seam between a model call and a run's money: what `streamModel` asks of a run's budget
 * ({@link BudgetMeter}'s optional `spend`) around each provider attempt when the run counts
 * dollars, and what it tells it while the attempt streams and when it ends.
 *
 * Per provider attempt (a model with no models inside it: `modelsInside(model) === undefined`):
 *
 * 1. Before the model is called, `spend(modelId, request)` reserves the attempt's worst case.
 *    It throws (`BudgetExceededError`, `resource: 'usd'`: it does not fit; `InvalidOptionError`:
 *    the model has no price) or returns the attempt's {@link AttemptSpend} — at once, or as an
 *    observable of one when a reservation has to travel (a fleet-wide limit on Redis). The model
 *    is called only once it arrives; unsubscribing before gives the reservation back.
 * 2. Each output event goes through `output(event)`: the live count. `false` means the attempt
 *    crossed what it may spend: the call is cut there — the event passed on (it was generated
 *    and is paid for), the provider's stream aborted, and the turn ends with `finish`
 *    `{ reason: 'budget', usage: cut() }`.
 * 3. Exactly one end: `settle(usage)` at a `finish` with usage; `settle(undefined)` at a `finish`
 *    without (the estimate is charged); `release()` when the attempt ended otherwise (an error, an
 *    unsubscribe) — all given back if nothing arrived, else the estimate charged (the provider
 *    bills what it generated). A call that delegated to calls inside it calls `release(true)`: its
 *    children paid their own way. Later calls are ignored.
 *
 * @module
 */
import type { TurnEvent, Usage } from '../events/events.js';

/**
 * One provider attempt's money, from its reservation to its end (see the module header).
 *
 * @example
 * ```ts
 * const spend: AttemptSpend = budget.spend!('gpt-5-mini', request) as AttemptSpend;
 * if (!spend.output({ type: 'text-delta', text: 'Hello' })) abort();
 * spend.settle({ inputTokens: 1200, outputTokens: 40 });
 * ```
 */
export interface AttemptSpend {
  /** Counts an output event; `false`: the attempt must be cut after it. */
  output(event: TurnEvent): boolean;
  /** The usage to report for a cut attempt: the estimate so far (charged as it is). */
  cut(): Usage;
  /** The attempt finished: with the provider's usage, or (undefined) with none, charged at the estimate. */
  settle(usage: Usage | undefined): void;
  /** The attempt ended without a finish; `delegated`: calls made inside it paid for themselves (all given back). */
  release(delegated?: boolean): void;
}
