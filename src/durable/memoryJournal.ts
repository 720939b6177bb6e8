/**
 * {@link memoryJournal} as `rxheal/durable` exports it: the reference store (core/journal) with the
 * durable-run machinery, so `runAgent({ runId, journal: memoryJournal() })` journals the run.
 *
 * @module
 */
import type { JournalStore } from '../core/journal/journal.js';
import { memoryJournal as memoryStore, type MemoryJournalOptions } from '../core/journal/memoryJournal.js';
import { durableJournal } from '../sources/durableJournal.js';

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
  return durableJournal(memoryStore(options));
}
