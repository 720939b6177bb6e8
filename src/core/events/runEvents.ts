/**
 * The events of a journaled run (`runAgent({ runId, journal })`, `resumeAgent`): a tool call that
 * waits for a person's approval, the run pausing for it, and a tool whose outcome a resume cannot
 * know. Their codecs join `AgentEventCodec` in events.ts.
 *
 * @module
 */
import * as t from 'io-ts';

/**
 * A tool call waits for approval (its tool's `needsApproval` said so): the run journals it and
 * ends with `suspended`; `resumeAgent({ approvals: { [callId]: … } })` goes on.
 */
export const ApprovalRequestedEventCodec = t.type(
  { type: t.literal('approval-requested'), callId: t.string, tool: t.string, args: t.unknown },
  'ApprovalRequestedEvent',
);
/** The run paused, journaled, until its pending approvals are given (the last event: the run completes after it). */
export const SuspendedEventCodec = t.type({ type: t.literal('suspended'), runId: t.string }, 'SuspendedEvent');
/**
 * A resumed run found a non-idempotent tool's execution started and never finished, and no
 * `verify` could say whether its effect happened: it was not run again.
 */
export const ToolOutcomeUnknownEventCodec = t.type({ type: t.literal('tool-outcome-unknown'), callId: t.string, tool: t.string }, 'ToolOutcomeUnknownEvent');
/**
 * An effect ledger (`runAgent({ effects })`) answered a tool call from its record: the call's
 * idempotency key was already `done` (a retry, a hedge, a resume, another process), so the tool
 * did not run again; its recorded result is the call's.
 */
export const ToolDeduplicatedEventCodec = t.type(
  { type: t.literal('tool-deduplicated'), callId: t.string, tool: t.string, key: t.string },
  'ToolDeduplicatedEvent',
);

/**
 * A tool call waits for approval.
 *
 * @example
 * ```ts
 * const e: ApprovalRequestedEvent = { type: 'approval-requested', callId: 'c1', tool: 'book_flight', args: { flight: 'LH 400' } };
 * ```
 */
export type ApprovalRequestedEvent = t.TypeOf<typeof ApprovalRequestedEventCodec>;
/**
 * The run paused until its approvals are given.
 *
 * @example
 * ```ts
 * const e: SuspendedEvent = { type: 'suspended', runId: 'order-7421' };
 * ```
 */
export type SuspendedEvent = t.TypeOf<typeof SuspendedEventCodec>;
/**
 * A tool's outcome is unknown after a crash: it may or may not have happened.
 *
 * @example
 * ```ts
 * const e: ToolOutcomeUnknownEvent = { type: 'tool-outcome-unknown', callId: 'c1', tool: 'book_flight' };
 * ```
 */
export type ToolOutcomeUnknownEvent = t.TypeOf<typeof ToolOutcomeUnknownEventCodec>;
/**
 * A tool call answered from the effect ledger without running the tool again.
 *
 * @example
 * ```ts
 * const e: ToolDeduplicatedEvent = { type: 'tool-deduplicated', callId: 'c1', tool: 'charge', key: 'order-7421/3/0/charge' };
 * ```
 */
export type ToolDeduplicatedEvent = t.TypeOf<typeof ToolDeduplicatedEventCodec>;
