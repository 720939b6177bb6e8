/**
 * {@link memoryJournal}: the journal's reference model, in one process on a scheduler — the lease
 * rules every store follows (journal.ts), with time read from `scheduler.now()`, so a run, its
 * crash and its resume are spec'd in virtual time. Records are kept as their JSON text, as a
 * durable store keeps them: what is read back is a fresh copy, never the object appended.
 *
 * @module
 */
import { asyncScheduler, map, type Observable, type SchedulerLike } from 'rxjs';
import { NonNegativeNumber, Scheduler, validateOptions } from '../errors/options.js';
import { simulated } from '../fleet/fleetStore.js';
import { RunLockedError } from './errors.js';
import type { JournalClaim, JournalEntry, JournalStore } from './journal.js';
import { journalStore, type Grant } from './session.js';

/**
 * Options of {@link memoryJournal}.
 *
 * @example
 * ```ts
 * const options: MemoryJournalOptions = { scheduler: testScheduler, latencyMs: 2 };
 * ```
 */
export interface MemoryJournalOptions {
  /** Its clock (leases) and the delivery of answers. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /** Each operation runs, and answers, this many ms after it is called (a network, a disk). Defaults to 0: at once. */
  readonly latencyMs?: number;
}

interface Run {
  readonly records: string[];
  /** The last claim's generation: a session writes only while the run's generation is still its own. */
  generation: number;
  lease: { holder: string; until: number; released: boolean } | undefined;
}

type Claimed =
  | { readonly refused: { holder: string; until: number; retryAfterMs: number } }
  | { readonly generation: number; readonly entries: JournalEntry[]; readonly firstWritten: boolean };

const entriesOf = (records: readonly string[]): JournalEntry[] => records.map((text, seq) => ({ seq, data: JSON.parse(text) as JournalEntry['data'] }));

/**
 * A journal in memory: for specs and virtual time (a crash is an unsubscribe; the resume claims
 * the same store). Leases lapse on the scheduler's clock.
 *
 * @example
 * ```ts
 * import { memoryJournal } from 'rxheal/durable';
 *
 * const journal = memoryJournal();
 * journal.claim({ runId: 'r1', holder: 'me', leaseMs: 30_000 }).subscribe((session) => session.append({ v: 1, type: 'start' }).subscribe());
 * ```
 */
export function memoryJournal(options?: MemoryJournalOptions): JournalStore {
  const o = validateOptions('memoryJournal', { scheduler: Scheduler, latencyMs: NonNegativeNumber }, options);
  const scheduler = o.scheduler ?? asyncScheduler;
  const latencyMs = o.latencyMs ?? 0;
  const runs = new Map<string, Run>();
  const runOf = (runId: string): Run => {
    let run = runs.get(runId);
    if (run === undefined) runs.set(runId, (run = { records: [], generation: 0, lease: undefined }));
    return run;
  };
  const op = <T>(fn: () => T): Observable<T> => simulated(scheduler, latencyMs, Infinity, () => false, fn);

  const grant = (runId: string, claim: JournalClaim, generation: number, entries: JournalEntry[], firstWritten: boolean): Grant => {
    const run = runOf(runId);
    // every write checks the generation: a later claim (by anyone) ends this session's hold
    const held = <T>(fn: () => T): Observable<T> =>
      op((): { ok: T } | { failed: unknown } | undefined => {
        if (run.generation !== generation) return undefined;
        try {
          return { ok: fn() };
        } catch (failed) {
          return { failed };
        }
      }).pipe(
        map((r) => {
          if (r === undefined) throw new RunLockedError(runId, 'taken', run.lease === undefined ? {} : { holder: run.lease.holder });
          if ('failed' in r) throw r.failed;
          return r.ok;
        }),
      );
    const push = (seq: number, text: string): void => {
      if (run.records.length !== seq) throw new Error(`memoryJournal: record ${seq} of ${JSON.stringify(runId)} appended at ${run.records.length}`);
      run.records.push(text);
    };
    return {
      entries,
      firstWritten,
      append: (seq, text) => held(() => push(seq, text)),
      renew: () => held(() => void (run.lease!.until = scheduler.now() + claim.leaseMs)),
      release: () => held(() => void (run.lease!.released = true)),
      finish: (seq, text) =>
        held(() => {
          push(seq, text);
          run.lease!.released = true;
        }),
    };
  };

  const take = (c: JournalClaim, first?: string): Observable<Grant> =>
    op((): Claimed => {
      const now = scheduler.now();
      const run = runOf(c.runId);
      const lease = run.lease;
      if (lease !== undefined && !lease.released && lease.until > now && lease.holder !== c.holder)
        return { refused: { holder: lease.holder, until: lease.until, retryAfterMs: lease.until - now } };
      run.lease = { holder: c.holder, until: now + c.leaseMs, released: false };
      const firstWritten = first !== undefined && run.records.length === 0;
      if (firstWritten) run.records.push(first);
      return { generation: ++run.generation, entries: entriesOf(run.records), firstWritten };
    }).pipe(
      map((r) => {
        if ('refused' in r) throw new RunLockedError(c.runId, 'held', r.refused);
        return grant(c.runId, c, r.generation, r.entries, r.firstWritten);
      }),
    );
  return journalStore('memoryJournal', take, (runId) => op(() => entriesOf(runs.get(runId)?.records ?? [])));
}
