/**
 * The session every store hands out, written once: appends, renewals and the release run one at a
 * time in the order they were subscribed, each record checked and turned into its text before
 * anything is sent, the next `seq` counted here, and what a failure means for the session decided
 * here (a refusal ends its hold; an append that failed otherwise leaves its outcome unknown). A
 * store supplies a {@link Grant}: the lease it took, the entries it read, and its three writes.
 *
 * @module
 */
import { Observable, type Subscriber } from 'rxjs';
import { RunLockedError, type RunLockReason } from './errors.js';
import {
  recordText,
  validateClaim,
  validateRunId,
  type JournalClaim,
  type JournalData,
  type JournalEntry,
  type JournalSession,
  type JournalStore,
} from './journal.js';

/**
 * What a store granted with a claim: the entries it read back after taking the lease, and its
 * writes under that lease, each a cold Observable that completes once done. Each errors with
 * {@link RunLockedError} (`'taken'`) when a later claim took the run.
 *
 * @example
 * ```ts
 * const grant: Grant = { entries: [], append: (seq, text) => write(seq, text), renew: () => extend(), release: () => free() };
 * ```
 */
export interface Grant {
  /** The entries, read after the lease was taken (with the claim's first record when it wrote one). */
  readonly entries: readonly JournalEntry[];
  /** Whether the claim appended the first record it was given (the run had none): it is then `entries[0]`. */
  readonly firstWritten?: boolean;
  /** Writes record `seq` (its JSON text): completes once it is durable. */
  append(seq: number, text: string): Observable<unknown>;
  renew(): Observable<unknown>;
  release(): Observable<unknown>;
  /** Writes record `seq` and releases the lease in one write: completes once both are durable. Without it, a session's `finish` appends, then releases. */
  finish?(seq: number, text: string): Observable<unknown>;
}

type Kind = 'append' | 'renew' | 'release' | 'finish';

interface Job {
  readonly kind: Kind;
  readonly text: string;
  readonly subscriber: Subscriber<unknown>;
  /** False once its subscriber left: its write (if begun) still settles the session's state. */
  live: boolean;
}

class Session implements JournalSession {
  readonly entries: readonly JournalEntry[];
  readonly firstWritten: boolean;
  private next: number;
  private state: 'held' | Exclude<RunLockReason, 'held'> = 'held';
  private readonly queue: Job[] = [];
  private busy = false;
  private pumping = false;

  constructor(
    readonly runId: string,
    private readonly target: string,
    private readonly grant: Grant,
  ) {
    this.entries = grant.entries;
    this.firstWritten = grant.firstWritten === true;
    this.next = grant.entries.length;
  }

  append(data: Parameters<JournalSession['append']>[0]): Observable<number> {
    return this.enqueue('append', recordText(`${this.target}.append`, data)) as Observable<number>;
  }

  renew(): Observable<void> {
    return this.enqueue('renew', '') as Observable<void>;
  }

  release(): Observable<void> {
    return this.enqueue('release', '') as Observable<void>;
  }

  finish(data: Parameters<JournalSession['append']>[0]): Observable<number> {
    return this.enqueue('finish', recordText(`${this.target}.finish`, data)) as Observable<number>;
  }

  private enqueue(kind: Kind, text: string): Observable<unknown> {
    return new Observable<unknown>((subscriber) => {
      const job: Job = { kind, text, subscriber, live: true };
      this.queue.push(job);
      this.pump();
      return () => {
        job.live = false;
        const i = this.queue.indexOf(job);
        if (i >= 0) this.queue.splice(i, 1);
      };
    });
  }

  /** Starts queued jobs one at a time (a loop, not recursion: a store that answers at once settles a job inside `start`). */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    while (!this.busy && this.queue.length > 0) this.start(this.queue.shift()!);
    this.pumping = false;
  }

  private start(job: Job): void {
    const refusal = this.refusal(job.kind);
    if (refusal === 'done') return finish(job, undefined);
    if (refusal !== undefined) return void job.subscriber.error(new RunLockedError(this.runId, refusal));
    this.busy = true;
    const seq = this.next;
    const write = this.write(job, seq);
    // not tied to the job's subscriber: a write already sent settles the state whether or not anyone still listens
    write.subscribe({
      error: (error: unknown) => {
        if (error instanceof RunLockedError) this.state = error.reason === 'held' ? 'taken' : (error.reason as typeof this.state);
        else if (job.kind === 'append' || job.kind === 'finish') this.state = 'interrupted';
        this.settle();
        // a session another claim took has nothing to release
        if (job.kind === 'release' && error instanceof RunLockedError) finish(job, undefined);
        else if (job.live) job.subscriber.error(error);
      },
      complete: () => {
        const wrote = job.kind === 'append' || job.kind === 'finish';
        if (wrote) this.next = seq + 1;
        if (job.kind === 'release' || job.kind === 'finish') this.state = 'released';
        this.settle();
        finish(job, wrote ? seq : undefined);
      },
    });
  }

  /** The store's write for `job`; a `finish` the store cannot make in one write is the append, then the release (not waited for). */
  private write(job: Job, seq: number): Observable<unknown> {
    const grant = this.grant;
    if (job.kind === 'append') return grant.append(seq, job.text);
    if (job.kind === 'renew') return grant.renew();
    if (job.kind === 'release') return grant.release();
    if (grant.finish !== undefined) return grant.finish(seq, job.text);
    return new Observable<unknown>((subscriber) =>
      grant.append(seq, job.text).subscribe({
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          grant.release().subscribe({ error: () => undefined });
          subscriber.complete();
        },
      }),
    );
  }

  private settle(): void {
    this.busy = false;
    this.pump();
  }

  /** Why this job cannot run in the session's state: a refusal, `'done'` (nothing to do), or undefined (run it). */
  private refusal(kind: Kind): Exclude<RunLockReason, 'held'> | 'done' | undefined {
    if (this.state === 'held') return undefined;
    if (kind === 'release') return 'done';
    if (this.state === 'interrupted') return kind === 'append' || kind === 'finish' ? 'interrupted' : undefined;
    return this.state;
  }
}

function finish(job: Job, value: unknown): void {
  if (!job.live) return;
  job.subscriber.next(value);
  job.subscriber.complete();
}

/**
 * A store's claim as a session: `acquire` takes the lease and reads the entries (a cold
 * Observable emitting the {@link Grant}); unsubscribed before the session is emitted, a lease
 * `acquire` still took is released.
 *
 * @example
 * ```ts
 * claim(claim) { return claimed(claim.runId, 'fileJournal', defer(() => takeLease(claim))); }
 * ```
 */
export function claimed(runId: string, target: string, acquire: Observable<Grant>): Observable<JournalSession> {
  return new Observable<JournalSession>((subscriber) => {
    let wanted = true;
    let granted = false;
    acquire.subscribe({
      next: (grant) => {
        granted = true;
        if (!wanted) return void grant.release().subscribe({ error: () => undefined });
        subscriber.next(new Session(runId, target, grant));
        subscriber.complete();
      },
      error: (error: unknown) => {
        if (wanted) subscriber.error(error);
      },
      complete: () => {
        if (!granted && wanted) subscriber.error(new Error(`${target}: the claim of ${JSON.stringify(runId)} ended without an answer`));
      },
    });
    return () => {
      wanted = false;
    };
  });
}

/**
 * A store from its two operations, the checks and the session made here for every store:
 * `take` takes a checked claim's lease and reads its entries (the {@link Grant}) — given `first`
 * (a record's JSON text, from `claimWith`), it also appends it in the same write when the run has
 * no record, and says so in the grant's `firstWritten` —, `read` reads a checked run id's
 * entries. `target` names the store in errors (`'fileJournal'`).
 *
 * @example
 * ```ts
 * const store = journalStore('fileJournal', (claim, first) => abortable(() => take(claim, first)), (runId) => abortable(() => readRun(runId)));
 * ```
 */
export function journalStore(
  target: string,
  take: (claim: JournalClaim, first?: string) => Observable<Grant>,
  read: (runId: string) => Observable<readonly JournalEntry[]>,
): JournalStore {
  return {
    claim(claim: JournalClaim): Observable<JournalSession> {
      const c = validateClaim(`${target}.claim`, claim);
      return claimed(c.runId, target, take(c));
    },
    claimWith(claim: JournalClaim, first: JournalData): Observable<JournalSession> {
      const c = validateClaim(`${target}.claimWith`, claim);
      return claimed(c.runId, target, take(c, recordText(`${target}.claimWith`, first)));
    },
    read(runId: string): Observable<readonly JournalEntry[]> {
      return read(validateRunId(`${target}.read`, runId));
    },
  };
}
