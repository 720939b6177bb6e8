/**
 * The run journal's errors: a run another holder has ({@link RunLockedError}) and a journal that
 * cannot be read as one ({@link JournalCorruptError}). Every store throws these same two.
 *
 * @module
 */

/**
 * Why a run could not be claimed or written:
 *
 * - `'held'`: another holder's lease is live (a claim refused);
 * - `'taken'`: another claim took the run since this session's (an append or renewal refused);
 * - `'released'`: this session released the run;
 * - `'interrupted'`: an earlier append of this session failed with its outcome unknown (a lost
 *   reply, a failed fsync): claim the run again to read what was committed.
 *
 * @example
 * ```ts
 * const retryLater = (e: RunLockedError) => e.reason === 'held';
 * ```
 */
export type RunLockReason = 'held' | 'taken' | 'released' | 'interrupted';

const WHY: Readonly<Record<RunLockReason, string>> = {
  held: 'is held by another holder',
  taken: 'was taken by another claim since this session claimed it',
  released: 'was released by this session',
  interrupted: 'cannot be written by this session: an earlier append failed with its outcome unknown (claim the run again to read what was committed)',
};

/**
 * A run is not this caller's to write: another holder's lease is live, or this session no longer
 * holds it (see {@link RunLockReason}). `holder` and `until` say whose lease and until when, where
 * the store knows; `retryAfterMs` how long until that lease lapses, as the store saw it.
 *
 * @example
 * ```ts
 * store.claim({ runId: 'r1', holder: 'me', leaseMs: 30_000 }).subscribe({
 *   error: (e) => {
 *     if (e instanceof RunLockedError && e.reason === 'held') console.log(`${e.holder} holds ${e.runId} for ${e.retryAfterMs} ms more`);
 *   },
 * });
 * ```
 */
export class RunLockedError extends Error {
  override readonly name = 'RunLockedError';
  readonly runId: string;
  readonly reason: RunLockReason;
  /** Who holds the lease, where the store knows. */
  readonly holder: string | undefined;
  /** When that lease lapses, in ms on the store's clock (the scheduler's, Redis `TIME`, Postgres's), where known. */
  readonly until: number | undefined;
  /** Ms from the refusal until that lease lapses (unless renewed), where known. */
  readonly retryAfterMs: number | undefined;

  constructor(runId: string, reason: RunLockReason, lease: { readonly holder?: string; readonly until?: number; readonly retryAfterMs?: number } = {}) {
    const by =
      lease.holder === undefined ? '' : ` (by ${JSON.stringify(lease.holder)}${lease.retryAfterMs === undefined ? '' : ` for ${lease.retryAfterMs} ms more`})`;
    super(`Run ${JSON.stringify(runId)} ${WHY[reason]}${reason === 'held' ? by : ''}`);
    this.runId = runId;
    this.reason = reason;
    this.holder = lease.holder;
    this.until = lease.until;
    this.retryAfterMs = lease.retryAfterMs;
  }
}

/**
 * A journal that cannot be read as one: a record whose checksum fails before the end of a file, a
 * file that is not an rxheal journal or is of a newer format, a stored record that is not a JSON
 * object, a key of the wrong type. Never read past: a resume from a wrong journal would be worse
 * than none. (A torn last record — a crash in the middle of writing it — is not this: it was never
 * committed, and is dropped.)
 *
 * @example
 * ```ts
 * // JournalCorruptError: file journal /var/runs/order-7421/journal is corrupt at offset 4096: the record's checksum does not match
 * if (e instanceof JournalCorruptError) console.log(e.store, e.location, e.offset ?? e.seq, e.reason);
 * ```
 */
export class JournalCorruptError extends Error {
  override readonly name = 'JournalCorruptError';
  /** Which kind of store: `'file'`, `'redis'`, `'postgres'`. */
  readonly store: string;
  /** Where: the file's path, the Redis key, the Postgres table and run. */
  readonly location: string;
  /** The byte offset of the bad record in a file. */
  readonly offset: number | undefined;
  /** The seq of the bad record, where the store has one. */
  readonly seq: number | undefined;
  /** What is wrong. */
  readonly reason: string;

  constructor(store: string, location: string, reason: string, at: { readonly offset?: number; readonly seq?: number } = {}) {
    const where = at.offset !== undefined ? ` at offset ${at.offset}` : at.seq !== undefined ? ` at seq ${at.seq}` : '';
    super(`${store} journal ${location} is corrupt${where}: ${reason}`);
    this.store = store;
    this.location = location;
    this.offset = at.offset;
    this.seq = at.seq;
    this.reason = reason;
  }
}

/**
 * What a resumed run's configuration changed since its journal's start: the instruction, a tool
 * (added, gone or renamed), a tool's argument schema, a model (gone, added), the conversation it
 * started from. Listed in `allowChanged`, a kind is accepted.
 *
 * @example
 * ```ts
 * const accepted: JournalChange[] = ['instruction', 'model'];
 * ```
 */
export type JournalChange = 'instruction' | 'tool' | 'schema' | 'model' | 'messages';

/**
 * A run resumed with another configuration than the one its journal started with: each
 * difference in `differences` (its kind and what changed). Nothing was written. Pass the kinds
 * you mean to accept as `allowChanged`.
 *
 * @example
 * ```ts
 * // JournalMismatchError: run "order-7421" was journaled with another configuration: tool: "book" is gone; schema: "pay" changed its arguments
 * if (e instanceof JournalMismatchError) console.log(e.differences.map((d) => d.kind));
 * ```
 */
export class JournalMismatchError extends Error {
  override readonly name = 'JournalMismatchError';
  /** The run resumed. */
  readonly runId: string;
  /** Each difference: its kind (what `allowChanged` accepts) and what changed. */
  readonly differences: readonly { readonly kind: JournalChange; readonly detail: string }[];

  constructor(runId: string, differences: readonly { readonly kind: JournalChange; readonly detail: string }[]) {
    super(
      `run ${JSON.stringify(runId)} was journaled with another configuration: ${differences.map((d) => `${d.kind}: ${d.detail}`).join('; ')}` +
        ` (allowChanged: [${[...new Set(differences.map((d) => `'${d.kind}'`))].join(', ')}] accepts it)`,
    );
    this.runId = runId;
    this.differences = differences;
  }
}

/**
 * A resumed run found that a non-idempotent tool's execution had started and never finished,
 * with no `verify` to say whether its effect happened, and was told to fail rather than tell the
 * model (`onUnknownOutcome: 'error'`). The tool was not run again. This error is not journaled:
 * resuming with `onUnknownOutcome: 'tell-model'` goes on.
 *
 * @example
 * ```ts
 * if (e instanceof ToolOutcomeUnknownError) alert(`check whether ${e.tool} (${e.callId}) happened`);
 * ```
 */
export class ToolOutcomeUnknownError extends Error {
  override readonly name = 'ToolOutcomeUnknownError';

  constructor(
    /** The run resumed. */
    readonly runId: string,
    /** The tool whose outcome is unknown. */
    readonly tool: string,
    /** The model's tool call it answered. */
    readonly callId: string,
  ) {
    super(`run ${JSON.stringify(runId)}: the outcome of ${tool} (call ${callId}) is unknown: it started before the crash and never finished`);
  }
}
