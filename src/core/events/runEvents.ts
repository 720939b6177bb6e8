/**
 * The events of a journaled run (`runAgent({ runId, journal })`, `resumeAgent`): a tool call that
 * waits for a person's approval, the run pausing for it, and a tool whose outcome a resume cannot
 * know, and a model turn another process started picked up (or not) from its checkpoint. Their codecs join `AgentEventCodec` in events.ts.
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
 * A resumed run found its interrupted model turn checkpointed (a stored response: `responseId`,
 * its last event journaled `sequence`) and `outcome`: `'resumed'` (the model continues it — no
 * second generation), `'gone'` (the provider no longer has it: `error` says why) or
 * `'not-resumable'` (no model of the run with that id can resume: removed, or `resume` off) — the
 * turn is then run again, as without a checkpoint. `target`: `model:<id>` of the checkpoint.
 */
export const TurnResumeEventCodec = t.intersection(
  [
    t.type({
      type: t.literal('turn-resume'),
      target: t.string,
      responseId: t.string,
      sequence: t.number,
      outcome: t.keyof({ resumed: null, gone: null, 'not-resumable': null }),
    }),
    t.partial({ error: t.string }),
  ],
  'TurnResumeEvent',
);

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
 * An interrupted model turn continued from its checkpoint, or run again (see {@link TurnResumeEventCodec}).
 *
 * @example
 * ```ts
 * const e: TurnResumeEvent = { type: 'turn-resume', target: 'model:openai-responses:gpt-5-mini', responseId: 'resp_1', sequence: 41, outcome: 'resumed' };
 * ```
 */
export type TurnResumeEvent = t.TypeOf<typeof TurnResumeEventCodec>;
/**
 * A tool call answered from the effect ledger without running the tool again.
 *
 * @example
 * ```ts
 * const e: ToolDeduplicatedEvent = { type: 'tool-deduplicated', callId: 'c1', tool: 'charge', key: 'order-7421/3/0/charge' };
 * ```
 */
export type ToolDeduplicatedEvent = t.TypeOf<typeof ToolDeduplicatedEventCodec>;
