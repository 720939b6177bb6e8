/**
 * {@link resumePlan}: what a run's journal says to do on resume — a pure function of its records.
 * The transcript to go on from, the events to replay, how far the budget and the steps went, and
 * where the run stands: answered, failed, suspended for approvals, or in progress (a model turn
 * next, or a tool round with each call's state).
 *
 * @module
 */
import type { AgentEvent, AssistantMessage, Message, ToolCall, ToolMessage } from '../core/events/events.js';
import type { JournalData, JournalEntry } from '../core/journal/journal.js';
import type { ModelCheckpoint } from '../core/model/model.js';
import { decodeRecords, type Fingerprint, type PendingApproval, type RunRecord, type Used } from './runJournal.js';

/**
 * Where a call of the last tool round stands:
 * - `done`: its tool message is journaled (never run again);
 * - `interrupted`: its execution started and never finished (a crash inside it); `checkpoint`:
 *   the newest state it journaled (`ctx.checkpoint`) to carry on from, if it did;
 * - `not-started`: no execution began;
 * - `awaiting-approval`: the run suspended for it, and no decision was given;
 * - `approved` / `denied`: a decision was journaled (and it did not start since).
 *
 * @example
 * ```ts
 * const waiting = calls.filter((c: CallState) => c.state === 'awaiting-approval');
 * ```
 */
export type CallState =
  | { readonly call: ToolCall; readonly state: 'done'; readonly message: ToolMessage }
  | { readonly call: ToolCall; readonly state: 'interrupted'; readonly checkpoint?: JournalData }
  | { readonly call: ToolCall; readonly state: 'not-started' | 'awaiting-approval' | 'approved' }
  | { readonly call: ToolCall; readonly state: 'denied'; readonly reason: string };

/**
 * Where the run stands.
 *
 * @example
 * ```ts
 * const over = (s: RunStatus) => s === 'answered' || s === 'failed';
 * ```
 */
export type RunStatus = 'new' | 'in-progress' | 'answered' | 'failed' | 'suspended';

/**
 * What a resume does, read from the journal (see {@link resumePlan}).
 *
 * @example
 * ```ts
 * const plan: ResumePlan = resumePlan('order-7421', session.entries);
 * ```
 */
export interface ResumePlan {
  readonly status: RunStatus;
  /** The configuration the run started with (undefined for a new run). */
  readonly fingerprint: Fingerprint | undefined;
  /** The conversation the run started from (the start record's). */
  readonly initial: readonly Message[];
  /** The transcript to go on from: the initial messages, then every journaled message (a tool round not finished: its assistant message, not its tool messages). */
  readonly history: readonly Message[];
  /** The events to replay (each emitted with `replayed: true`), in order. */
  readonly replay: readonly AgentEvent[];
  /** Model turns completed. */
  readonly steps: number;
  /** Output corrections asked for. */
  readonly corrections: number;
  /** The budget spent, as journaled. */
  readonly used: Used;
  /** In progress, the next step: a model turn, or the tool round of the last assistant message. */
  readonly next: { readonly kind: 'turn' } | { readonly kind: 'tools'; readonly calls: readonly CallState[] } | undefined;
  /** Failed: the error's name and message. */
  readonly error: { readonly name: string; readonly message: string } | undefined;
  /** Suspended: the calls that wait for approval. */
  readonly pending: readonly PendingApproval[];
  /** Records journaled (the next seq). */
  readonly records: number;
  /** In progress with a model turn next: how far that turn got on the provider's side, if its model checkpointed it. */
  readonly checkpoint: ModelCheckpoint | undefined;
}

const NOTHING_USED: Used = { modelCalls: 0, toolCalls: 0, tokens: 0 };

interface Round {
  readonly calls: readonly ToolCall[];
  readonly done: Map<string, ToolMessage>;
  readonly started: Set<string>;
  /** Each call's newest `tool-checkpoint` (of this round: an older round's call of the same id is another call). */
  readonly checkpoints: Map<string, JournalData>;
  readonly decisions: Map<string, { approved: boolean; reason: string }>;
  pending: PendingApproval[] | undefined;
}

/**
 * Reads a run's journal as what to do next. Pure: the same entries, the same plan.
 *
 * @throws {JournalCorruptError} for entries that are not an rxheal run's (see `decodeRecords`).
 * @example
 * ```ts
 * const plan = resumePlan('order-7421', session.entries);
 * if (plan.status === 'in-progress' && plan.next?.kind === 'tools') console.log(plan.next.calls.map((c) => `${c.call.name}: ${c.state}`));
 * ```
 */
export function resumePlan(runId: string, entries: readonly JournalEntry[]): ResumePlan {
  const records = decodeRecords(runId, entries);
  const start = records[0];
  if (start === undefined || start.type !== 'start') return newPlan();
  const history: Message[] = [...start.messages];
  const replay: AgentEvent[] = [];
  let used = NOTHING_USED;
  let steps = 0;
  let corrections = 0;
  let round: Round | undefined;
  let end: Extract<RunRecord, { type: 'end' }> | undefined;
  let answered = false;
  let checkpoint: { step: number; at: ModelCheckpoint } | undefined;
  const closeRound = (): void => {
    if (round === undefined) return;
    for (const call of round.calls) history.push(round.done.get(call.id)!);
    round = undefined;
  };
  for (const record of records.slice(1)) {
    switch (record.type) {
      case 'message': {
        used = record.used;
        checkpoint = undefined;
        replay.push(...record.events);
        if (record.callId !== undefined && round !== undefined) {
          const message = record.messages.find((m): m is ToolMessage => m.role === 'tool');
          if (message) round.done.set(record.callId, message);
          if (round.done.size === round.calls.length) closeRound();
          break;
        }
        closeRound();
        if (record.correction) corrections++;
        for (const message of record.messages) {
          history.push(message);
          if (message.role === 'assistant') steps++;
        }
        const last = record.messages[record.messages.length - 1];
        answered = false;
        if (last?.role === 'assistant') {
          const calls = (last as AssistantMessage).toolCalls ?? [];
          if (calls.length > 0) round = { calls, done: new Map(), started: new Set(), checkpoints: new Map(), decisions: new Map(), pending: undefined };
          else answered = true;
        }
        break;
      }
      case 'tool-start':
        used = record.used;
        round?.started.add(record.callId);
        round?.decisions.delete(record.callId);
        break;
      case 'tool-checkpoint':
        round?.checkpoints.set(record.callId, record.state);
        break;
      case 'suspended':
        if (round) round.pending = record.pending;
        replay.push(...record.pending.map((p): AgentEvent => ({ type: 'approval-requested', callId: p.callId, tool: p.tool, args: p.args })));
        break;
      case 'decision':
        round?.started.delete(record.callId);
        round?.decisions.set(record.callId, { approved: record.approved, reason: record.reason ?? '' });
        break;
      case 'checkpoint':
        checkpoint = record.checkpoint === null ? undefined : { step: record.step, at: record.checkpoint };
        break;
      case 'end':
        end = record;
        break;
    }
  }
  // a checkpoint of the turn after the last journaled one (an older turn's is stale)
  const turnCheckpoint = checkpoint?.step === steps + 1 ? checkpoint.at : undefined;
  const base = {
    fingerprint: start.fingerprint,
    initial: start.messages,
    history,
    replay,
    steps,
    corrections,
    used,
    records: records.length,
    checkpoint: undefined,
  };
  if (end?.outcome === 'error') return { ...base, status: 'failed', next: undefined, error: end.error, pending: [] };
  if (end?.outcome === 'answer' || (answered && round === undefined)) return { ...base, status: 'answered', next: undefined, error: undefined, pending: [] };
  if (round === undefined) return { ...base, status: 'in-progress', next: { kind: 'turn' }, error: undefined, pending: [], checkpoint: turnCheckpoint };
  const r: Round = round;
  const calls = r.calls.map((call): CallState => {
    const message = r.done.get(call.id);
    if (message) return { call, state: 'done', message };
    if (r.started.has(call.id)) {
      const checkpoint = r.checkpoints.get(call.id);
      return checkpoint === undefined ? { call, state: 'interrupted' } : { call, state: 'interrupted', checkpoint };
    }
    const decision = r.decisions.get(call.id);
    if (decision) return decision.approved ? { call, state: 'approved' } : { call, state: 'denied', reason: decision.reason };
    if (r.pending?.some((p) => p.callId === call.id)) return { call, state: 'awaiting-approval' };
    return { call, state: 'not-started' };
  });
  const pending = (r.pending ?? []).filter((p) => calls.some((c) => c.call.id === p.callId && c.state === 'awaiting-approval'));
  // suspended: every call that could run did, and some still wait
  const waiting = pending.length > 0 && calls.every((c) => c.state === 'done' || c.state === 'awaiting-approval');
  return { ...base, status: waiting ? 'suspended' : 'in-progress', next: { kind: 'tools', calls }, error: undefined, pending };
}

function newPlan(): ResumePlan {
  return {
    status: 'new',
    fingerprint: undefined,
    initial: [],
    history: [],
    replay: [],
    steps: 0,
    corrections: 0,
    used: NOTHING_USED,
    next: undefined,
    error: undefined,
    pending: [],
    records: 0,
    checkpoint: undefined,
  };
}
