/**
 * The seam between a run and a spending limit shared beyond it: what `runAgent({ spend })` asks of
 * each limiter before a provider attempt, and what it tells the limiter after. A limiter (the
 * fleet-wide `SpendLimiter`, on a memory or Redis store) implements it; the run's own money budget
 * (`budget.maxUsd`) follows the same protocol in memory.
 *
 * The protocol, per provider attempt (retries, hedges and fallbacks each an attempt):
 *
 * 1. `reserve(usd, context)` — the attempt's worst case — emits one {@link SpendHold} and
 *    completes when it fits, or errors with `BudgetExceededError` (`resource: 'usd'`) when it does
 *    not; the attempt is not made then. Unsubscribing before the hold arrives gives back whatever
 *    was reserved (a reservation that reached the store is refunded when its answer comes).
 * 2. Exactly one of `hold.settle(actualUsd)` — the attempt ended with usage: the hold becomes the
 *    actual cost, the rest given back (or, when it cost more than reserved, the excess charged) —
 *    and `hold.refund()` — the attempt was cancelled or failed with no usage: all of it given back.
 *    A second call is ignored. Neither waits: a store that is slow or down settles later, and never
 *    throws at the caller.
 *
 * @module
 */
import type { Observable } from 'rxjs';

/**
 * Who is spending: what a limiter keys its budget by (`SpendLimiter`'s `key`).
 *
 * @example
 * ```ts
 * const context: SpendContext = { runId: 'run-1', model: 'gpt-5-mini', tags: { user: 'u-42', team: 'search' } };
 * ```
 */
export interface SpendContext {
  /** The run's id. */
  readonly runId: string;
  /** The model id of the attempt (its price's key). */
  readonly model: string;
  /** The run's tags (`runAgent`'s `tags`): user, team, … */
  readonly tags?: Readonly<Record<string, string>>;
}

/**
 * A reservation granted by a {@link SpendGate}: settle it with the attempt's actual cost, or refund it.
 *
 * @example
 * ```ts
 * gate.reserve(0.02, context).subscribe((hold) => {
 *   // … the attempt runs and reports usage …
 *   hold.settle(0.0071);
 * });
 * ```
 */
export interface SpendHold {
  /** The dollars this hold reserved. */
  readonly usd: number;
  /** The attempt ended with usage that cost `actualUsd`: keep that, give back the rest (or charge the excess). */
  settle(actualUsd: number): void;
  /** The attempt was cancelled or failed before any usage: give it all back. */
  refund(): void;
}

/**
 * A spending limit a run reserves against before each provider attempt (see the module header for
 * the protocol).
 *
 * @example
 * ```ts
 * const gate: SpendGate = new SpendLimiter({ name: 'team', usd: 50, per: 'day', key: (c) => c.tags?.team ?? 'none' });
 * runAgent({ model, messages, prices, spend: [gate] });
 * ```
 */
export interface SpendGate {
  /** Its name, in events and errors. */
  readonly name: string;
  /** Reserves `usd` for `context`'s key: one hold and complete, or `BudgetExceededError` (`resource: 'usd'`). */
  reserve(usd: number, context: SpendContext): Observable<SpendHold>;
}
