/**
 * {@link NotAppliedError}: what a tool throws to say its effect did not happen — the one failure
 * after which running it again is known to be safe.
 *
 * @module
 */

/**
 * Thrown (or errored) by a tool's `execute` when its effect was not applied: the payment was
 * declined before any charge, the request was refused before it reached the ledger of the other
 * side. Under an effect ledger (`runAgent({ effects })`) the call is recorded `failed` rather than
 * `unknown`, a later execution of the same key runs the tool again, and the call's `ToolError` is
 * retryable even for a tool that is not idempotent (`retryWithBackoff` may retry it).
 *
 * @example
 * ```ts
 * execute: async ({ amount }, ctx) => {
 *   const response = await fetch(url, { method: 'POST', headers: idempotencyHeaders(ctx), body: JSON.stringify({ amount }), signal: ctx.signal });
 *   if (response.status === 402) throw new NotAppliedError('card declined: nothing was charged');
 *   return response.json();
 * },
 * ```
 */
export class NotAppliedError extends Error {
  override readonly name = 'NotAppliedError';

  constructor(message = 'the effect was not applied', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * Whether `error` says the effect was not applied: a {@link NotAppliedError}, known by its name
 * (another copy of the package, another realm; and a run that never meets one bundles no class).
 *
 * @example
 * ```ts
 * notApplied(new NotAppliedError()); // true
 * notApplied(new Error('timeout')); // false
 * ```
 */
export function notApplied(error: unknown): boolean {
  return error instanceof Error && error.name === 'NotAppliedError';
}
