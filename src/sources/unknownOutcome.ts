/**
 * The one rule for a tool call whose outcome stays unknown — its effect may or may not have been
 * applied, and nothing (no `verify`, no record) can say which: the run says so in its stream
 * (`tool-outcome-unknown`), then either tells the model (`onUnknownOutcome: 'tell-model'`) or
 * ends with {@link ToolOutcomeUnknownError} (`'error'`). The durable run applies it to a call a
 * resume finds started and never finished; the effect ledger to a key left `started`, or an
 * attempt that ended without saying whether its effect happened.
 *
 * @module
 */
import type { ToolOutcomeUnknownEvent } from '../core/events/runEvents.js';
import { ToolOutcomeUnknownError } from '../core/journal/errors.js';
import { markFatal } from '../core/rx/runScope.js';

/**
 * What a model is told of a call whose outcome is unknown, with why (by default: the run was
 * interrupted while it ran).
 *
 * @example
 * ```ts
 * unknownOutcomeText('book'); // 'The outcome of book is unknown: it may or may not have happened (the run was interrupted while it ran). Check before trying again.'
 * ```
 */
export const unknownOutcomeText = (tool: string, why = 'the run was interrupted while it ran'): string =>
  `The outcome of ${tool} is unknown: it may or may not have happened (${why}). Check before trying again.`;

/**
 * A call whose outcome is unknown, as its run sees it.
 *
 * @example
 * ```ts
 * const call: UnknownCall = { runId: 'order-7421', callId: 'c1', tool: 'charge', onUnknownOutcome: 'tell-model' };
 * ```
 */
export interface UnknownCall {
  readonly runId: string;
  readonly callId: string;
  readonly tool: string;
  readonly onUnknownOutcome: 'tell-model' | 'error';
}

/**
 * The rule: the event the run emits (`tool-outcome-unknown`, always — before the error that ends
 * the run, or with what the model is told), and that error: a {@link ToolOutcomeUnknownError},
 * marked fatal, for `onUnknownOutcome: 'error'`; `undefined` for `'tell-model'` (the caller tells
 * the model, {@link unknownOutcomeText}).
 *
 * @example
 * ```ts
 * const { event, fatal } = outcomeUnknown({ runId, callId: call.id, tool: call.name, onUnknownOutcome });
 * emit(event);
 * if (fatal !== undefined) return throwError(() => fatal);
 * ```
 */
export function outcomeUnknown(call: UnknownCall): { readonly event: ToolOutcomeUnknownEvent; readonly fatal: ToolOutcomeUnknownError | undefined } {
  const event: ToolOutcomeUnknownEvent = { type: 'tool-outcome-unknown', callId: call.callId, tool: call.tool };
  if (call.onUnknownOutcome !== 'error') return { event, fatal: undefined };
  const fatal = new ToolOutcomeUnknownError(call.runId, call.tool, call.callId);
  markFatal(fatal);
  return { event, fatal };
}
