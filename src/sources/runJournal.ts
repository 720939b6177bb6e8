/**
 * The records a journaled run writes (`runAgent({ runId, journal })`), as io-ts codecs, each with
 * `v: 1`: what a resume needs and nothing more — no delta is journaled.
 *
 * - `start`: the run's configuration's fingerprint (instruction, tools' names and argument
 *   schemas, models' ids) and the conversation it started from; always record 0;
 * - `message`: completed messages with the events to replay for them — a model turn's assistant
 *   message (its tool calls, its `finish`), a tool's result or error (`callId`), an answer that
 *   failed its output check together with its correction (`correction: true`: one record, so a
 *   resume never sees one without the other); `used`: the budget spent up to it;
 * - `tool-start`: a tool's execution is about to begin (written before `execute` runs);
 * - `tool-checkpoint`: what a tool's execution journaled to carry on from (`ctx.checkpoint`):
 *   the newest of a call in the last tool round is handed back as `resumed` to the call's next
 *   execution; never replayed, never counted (written by this version 1 too: an older rxheal
 *   refuses a journal that holds one, as `JournalCorruptError`);
 * - `suspended`: the tool calls waiting for approval;
 * - `decision`: an approval given on resume, before the call runs (or is denied);
 * - `checkpoint`: how far model turn `step` got on the provider's side (a model's
 *   `context.checkpoint`, throttled), `null` once that turn started over; never needed by
 *   another turn (a torn one is dropped like any torn record), superseded by the turn's message;
 * - `end`: the answer was given, or the run failed (its error's name and message).
 *
 * @module
 */
import * as t from 'io-ts';
import { AgentEventCodec, MessageCodec } from '../core/events/events.js';
import type { AgentEvent, Message } from '../core/events/events.js';
import { JournalCorruptError } from '../core/journal/errors.js';
import type { JournalData, JournalEntry } from '../core/journal/journal.js';
import { describeProblems, formatProblem, isLeft } from '../core/errors/options.js';

/**
 * The version this rxheal writes and reads.
 *
 * @example
 * ```ts
 * const record = { v: RECORD_VERSION, type: 'tool-start', callId: 'c1', tool: 'book', used };
 * ```
 */
export const RECORD_VERSION = 1;

// usd: dollars charged (a run that counts money), absent in records written before money was counted
const UsedCodec = t.intersection([t.type({ modelCalls: t.number, toolCalls: t.number, tokens: t.number }), t.partial({ usd: t.number })], 'Used');
/**
 * What a run's budget had spent when a record was written (`usd`: in a run that counts money).
 *
 * @example
 * ```ts
 * const used: Used = { modelCalls: 1, toolCalls: 0, tokens: 15 };
 * ```
 */
export type Used = t.TypeOf<typeof UsedCodec>;

/** The codec of a {@link Fingerprint}. */
export const FingerprintCodec = t.type(
  {
    instruction: t.string,
    tools: t.array(t.type({ name: t.string, schema: t.unknown })),
    models: t.array(t.string),
  },
  'Fingerprint',
);
/**
 * What a resume must find unchanged (or `allowChanged`): the instruction, the tools' names and argument schemas, the models' ids.
 *
 * @example
 * ```ts
 * const f: Fingerprint = { instruction: 'Be brief.', tools: [{ name: 'book', schema: { type: 'object' } }], models: ['gpt-5-mini'] };
 * ```
 */
export type Fingerprint = t.TypeOf<typeof FingerprintCodec>;

const v = t.literal(RECORD_VERSION);
const StartRecordCodec = t.type({ v, type: t.literal('start'), fingerprint: FingerprintCodec, messages: t.array(MessageCodec) }, 'StartRecord');
const MessageRecordCodec = t.intersection(
  [
    t.type({ v, type: t.literal('message'), messages: t.array(MessageCodec), events: t.array(AgentEventCodec), used: UsedCodec }),
    t.partial({ callId: t.string, correction: t.literal(true) }),
  ],
  'MessageRecord',
);
const ToolStartRecordCodec = t.type({ v, type: t.literal('tool-start'), callId: t.string, tool: t.string, used: UsedCodec }, 'ToolStartRecord');
const ToolCheckpointRecordCodec = t.type({ v, type: t.literal('tool-checkpoint'), callId: t.string, state: t.UnknownRecord }, 'ToolCheckpointRecord');
const PendingCodec = t.type({ callId: t.string, tool: t.string, args: t.unknown }, 'PendingApproval');
const SuspendedRecordCodec = t.type({ v, type: t.literal('suspended'), pending: t.array(PendingCodec) }, 'SuspendedRecord');
const DecisionRecordCodec = t.intersection(
  [t.type({ v, type: t.literal('decision'), callId: t.string, approved: t.boolean }), t.partial({ reason: t.string })],
  'DecisionRecord',
);
const CheckpointCodec = t.type({ model: t.string, responseId: t.string, sequence: t.number }, 'ModelCheckpoint');
const CheckpointRecordCodec = t.type({ v, type: t.literal('checkpoint'), step: t.number, checkpoint: t.union([CheckpointCodec, t.null]) }, 'CheckpointRecord');
const EndRecordCodec = t.union(
  [
    t.type({ v, type: t.literal('end'), outcome: t.literal('answer') }),
    t.type({ v, type: t.literal('end'), outcome: t.literal('error'), error: t.type({ name: t.string, message: t.string }) }),
  ],
  'EndRecord',
);
/** The codec of every record of a journaled run (see the module's list). */
export const RunRecordCodec = t.union(
  [
    StartRecordCodec,
    MessageRecordCodec,
    ToolStartRecordCodec,
    ToolCheckpointRecordCodec,
    SuspendedRecordCodec,
    DecisionRecordCodec,
    CheckpointRecordCodec,
    EndRecordCodec,
  ],
  'RunRecord',
);

/**
 * One record of a journaled run (see the module's list).
 *
 * @example
 * ```ts
 * const end: RunRecord = { v: 1, type: 'end', outcome: 'answer' };
 * ```
 */
export type RunRecord = t.TypeOf<typeof RunRecordCodec>;
/**
 * A run's first record.
 *
 * @example
 * ```ts
 * const start: StartRecord = { v: 1, type: 'start', fingerprint, messages };
 * ```
 */
export type StartRecord = t.TypeOf<typeof StartRecordCodec>;
/**
 * Completed messages and the events to replay for them.
 *
 * @example
 * ```ts
 * const r: MessageRecord = { v: 1, type: 'message', messages: [m], events: [{ type: 'message', message: m }], used };
 * ```
 */
export type MessageRecord = t.TypeOf<typeof MessageRecordCodec>;
/**
 * A tool call waiting for approval.
 *
 * @example
 * ```ts
 * const p: PendingApproval = { callId: 'c2', tool: 'book', args: { flight: 'LH 400' } };
 * ```
 */
export type PendingApproval = t.TypeOf<typeof PendingCodec>;

/**
 * A run's entries as records, checked: record 0 is a `start` of version 1, every record decodes,
 * none is of a newer version.
 *
 * @example
 * ```ts
 * const records = decodeRecords('order-7421', session.entries);
 * ```
 * @throws {JournalCorruptError} naming the run and the seq of the first record that is not one
 *   (`store: 'run'`: the records are whole, but not a run this rxheal can read).
 */
export function decodeRecords(runId: string, entries: readonly JournalEntry[]): RunRecord[] {
  return entries.map(({ seq, data }, i) => {
    const bad = (reason: string): never => {
      throw new JournalCorruptError('run', JSON.stringify(runId), reason, { seq });
    };
    const version = data['v'];
    if (typeof version === 'number' && version > RECORD_VERSION)
      bad(`record of version ${version}: this rxheal reads version ${RECORD_VERSION} (a newer rxheal wrote it)`);
    if (i === 0 && (version !== RECORD_VERSION || data['type'] !== 'start'))
      bad('the first record is not an rxheal run start (v: 1): not an rxheal run journal');
    // the codecs keep what they read (no t.exact, no conversions): a record `is` accepts decodes to itself; only a refused one is decoded, for its problems
    let record: RunRecord;
    if (RunRecordCodec.is(data)) record = data;
    else {
      const decoded = RunRecordCodec.decode(data);
      if (isLeft(decoded)) return bad(`not an rxheal run record: ${describeProblems(decoded.left).slice(0, 3).map(formatProblem).join('; ')}`);
      record = decoded.right;
    }
    if (i > 0 && record.type === 'start') bad('a second start record');
    return record;
  });
}

/**
 * Records as the store takes them (the codecs' types are JSON data).
 *
 * @example
 * ```ts
 * session.append(asData(record));
 * ```
 */
export const asData = (record: RunRecord): JournalData => record as unknown as JournalData;

/**
 * A `message` record.
 *
 * @example
 * ```ts
 * messageRecord([toolMessage], [{ type: 'tool-result', id: 'c1', name: 'book', result: 'ok' }], used, { callId: 'c1' });
 * ```
 */
export function messageRecord(
  messages: readonly Message[],
  events: readonly AgentEvent[],
  used: Used,
  extra: { callId?: string; correction?: true } = {},
): RunRecord {
  return { v: RECORD_VERSION, type: 'message', messages: [...messages], events: [...events], used, ...extra };
}
