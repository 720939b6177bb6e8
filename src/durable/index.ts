/**
 * `rxheal/durable`: where runs are journaled so that they survive their process — the store
 * contract's two embedded stores: {@link fileJournal}, one append-only, checksummed, fsync'd file
 * per run (the default), and {@link memoryJournal}, the reference model for specs in virtual time.
 * Redis and Postgres stores are `redisJournal` (`rxheal/redis`) and `postgresJournal`
 * (`rxheal/postgres`); the contract's types (`JournalStore`, `JournalSession`) and errors
 * (`RunLockedError`, `JournalCorruptError`) are the root's. Each store carries the machinery of
 * durable runs (the lease, the resume plan, the records and their checks), which `runAgent` and
 * `resumeAgent` reach through the journal they are given: a run without one bundles none of it. A
 * store of your own (the contract) gets it with one call, {@link durableJournal}. And side effects exactly once:
 * {@link effectLedger} over any of these stores (`runAgent({ effects })`), what a tool says when its
 * effect did not happen ({@link NotAppliedError}), and what carries a call's idempotency key to a
 * service ({@link idempotencyHeaders}, {@link IDEMPOTENCY_META_KEY}) — here rather than in the root,
 * whose 50 runtime values are taken.
 *
 * @example
 * ```ts
 * import { firstValueFrom } from 'rxjs';
 * import { fileJournal } from 'rxheal/durable';
 *
 * const journal = fileJournal({ dir: './runs' });
 * const session = await firstValueFrom(journal.claim({ runId: 'order-7421', holder: `worker-${process.pid}`, leaseMs: 30_000 }));
 * console.log(`resuming after ${session.entries.length} records`);
 * await firstValueFrom(session.append({ v: 1, type: 'step', n: session.entries.length }));
 * await firstValueFrom(session.release());
 * ```
 *
 * @module
 */
export { fileJournal } from './fileJournal.js';
export type { FileJournalOptions } from './fileJournal.js';
export { memoryJournal } from './memoryJournal.js';
export type { MemoryJournalOptions } from '../core/journal/memoryJournal.js';
export { effectLedger } from '../sources/effectLedger.js';
export type { EffectLedger, EffectLedgerOptions, EffectState, GuardedCall } from '../sources/effectLedger.js';
export { NotAppliedError } from '../core/errors/notApplied.js';
export { effectKey, idempotencyHeaders, IDEMPOTENCY_META_KEY } from '../core/journal/idempotency.js';
// a JournalStore of your own, able to journal runs (rxheal's stores are already)
export { durableJournal } from '../sources/durableJournal.js';
// a journal on a durable-execution engine's own steps (rxheal/dbos, rxheal/restate make one each)
export { stepJournal } from '../sources/stepJournal.js';
export type { StepJournal, StepRunner } from '../sources/agentConfig.js';
