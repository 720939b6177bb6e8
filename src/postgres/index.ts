/**
 * `rxheal/postgres`: the run journal on PostgreSQL ({@link postgresJournal}) through `pg` (an
 * optional peer dependency: `npm install pg`): one table of entries keyed `(run_id, seq)` — the
 * optimistic lock — and a lease row per run on the database's own clock. The contract and its
 * errors (`JournalStore`, `RunLockedError`, `JournalCorruptError`) are the root's.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { firstValueFrom } from 'rxjs';
 * import { postgresJournal } from 'rxheal/postgres';
 *
 * const journal = postgresJournal(new pg.Pool({ connectionString: process.env.DATABASE_URL }));
 * const session = await firstValueFrom(journal.claim({ runId: 'order-7421', holder: `worker-${process.pid}`, leaseMs: 30_000 }));
 * console.log(`resuming after ${session.entries.length} records`);
 * ```
 *
 * @module
 */
export { postgresJournal, postgresJournalSchema } from './journalStore.js';
export type { PostgresJournalOptions, PostgresPoolLike } from './journalStore.js';
