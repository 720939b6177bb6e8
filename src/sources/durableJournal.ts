/**
 * The durable-run machinery as a journal carries it ({@link durableRuns}, under `DURABLE_RUNS`):
 * the checks of a journaled run's own options and the run itself ({@link DurableRun}), and
 * {@link durableJournal}, which gives a store the machinery. Every rxheal store is made with it;
 * `runAgent` and `resumeAgent` reach it only through the journal they are given, so a run
 * without one bundles none of it.
 *
 * @module
 */
import { InvalidOptionError } from '../core/errors/errors.js';
import { check, NonEmptyString, oneOf, validateOptions } from '../core/errors/options.js';
import type { JournalChange } from '../core/journal/errors.js';
import { LeaseMs, RunId, type JournalClaim, type JournalData, type JournalStore } from '../core/journal/journal.js';
import { DURABLE_RUNS, registerDurableRuns, type Approval, type DurableRuns } from './agentConfig.js';
import { DurableRun, type RecordSettings } from './durableRun.js';

const CHANGES: readonly JournalChange[] = ['instruction', 'tool', 'schema', 'model', 'messages'];

const props = {
  runId: RunId,
  journal: check('a JournalStore ({ claim, read })', (u): u is JournalStore => {
    const j = u as JournalStore | null;
    return typeof j === 'object' && j !== null && typeof j.claim === 'function' && typeof j.read === 'function';
  }),
  holder: NonEmptyString,
  leaseMs: LeaseMs,
  checkpointMs: check('an integer of ms from 0 to 2147483647', (u): u is number => Number.isInteger(u) && (u as number) >= 0 && (u as number) <= 2147483647),
  onUnknownOutcome: oneOf('tell-model', 'error'),
  allowChanged: check(
    "an array of 'instruction', 'tool', 'schema', 'model', 'messages'",
    (u): u is readonly JournalChange[] => Array.isArray(u) && u.every((k) => CHANGES.includes(k as JournalChange)),
  ),
  approvals: check(
    'an object of { approved: true } or { approved: false, reason: string } by call id',
    (u): u is Record<string, Approval> =>
      typeof u === 'object' &&
      u !== null &&
      !Array.isArray(u) &&
      Object.values(u).every(
        (a: unknown) =>
          typeof a === 'object' &&
          a !== null &&
          ((a as Approval).approved === true || ((a as Approval).approved === false && typeof (a as { reason?: unknown }).reason === 'string')),
      ),
  ),
};

/**
 * The durable-run machinery: what `runAgent` and `resumeAgent` call through a journal that carries it.
 *
 * @example
 * ```ts
 * const settings = durableRuns.settings('runAgent', config, undefined);
 * ```
 */
export const durableRuns: DurableRuns = {
  settings(target, config, approvals) {
    const { runId, journal, holder, leaseMs, checkpointMs, onUnknownOutcome, allowChanged } = config;
    const o = validateOptions(target, props, { runId, journal, holder, leaseMs, checkpointMs, onUnknownOutcome, allowChanged, approvals });
    if (o.runId === undefined || o.journal === undefined) throw new InvalidOptionError(target, 'runId', runId, props.runId.name);
    return {
      runId: o.runId,
      journal: o.journal,
      holder: o.holder,
      leaseMs: o.leaseMs ?? 30_000,
      checkpointMs: o.checkpointMs ?? 1000,
      onUnknownOutcome: o.onUnknownOutcome ?? 'tell-model',
      allowChanged: o.allowChanged ?? [],
      approvals: o.approvals,
      runs: durableRuns,
    };
  },
  run: (host, agent) => new DurableRun(host, agent, agent.durable as RecordSettings),
};

/**
 * A {@link JournalStore} able to journal runs: `store` with the durable-run machinery (the
 * lease, the resume plan, the records and their checks) that `runAgent({ runId, journal })` and
 * `resumeAgent` reach through it — a run without a journal bundles none of it. Every rxheal
 * store comes this way already; a store of your own (the journal contract) needs this one call.
 *
 * @example
 * ```ts
 * const journal = durableJournal(myStore); // { claim, read } of your own
 * runAgent({ ...config, runId: 'order-7421', journal }).subscribe((e) => console.log(e.type));
 * ```
 */
export function durableJournal(store: JournalStore): JournalStore {
  registerDurableRuns(durableRuns);
  const claimWith = store.claimWith;
  return {
    [DURABLE_RUNS]: durableRuns,
    claim: (claim) => store.claim(claim),
    read: (runId) => store.read(runId),
    ...(typeof claimWith === 'function' ? { claimWith: (claim: JournalClaim, first: JournalData) => claimWith.call(store, claim, first) } : {}),
  } as JournalStore;
}
