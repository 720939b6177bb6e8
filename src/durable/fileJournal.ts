/**
 * {@link fileJournal}: the embedded journal — a folder per run under `dir`, holding the run's one
 * append-only file (`journal`, see format.ts) and its lease (`lease.<generation>`, see lease.ts).
 *
 * A claim takes the next lease generation, creates the journal if it is new (written under a
 * temporary name, fsync'd, then `link`ed: it never replaces one), truncates a torn last record,
 * appends its claim record (fsync'd), and reads the run back. An append checks that its
 * generation is still the newest, appends one framed record (`O_APPEND`), fsyncs it, and checks
 * again: an append that overlapped another's claim is never reported as written, and — being of
 * an older generation than that claim's record — is never read as the run's.
 *
 * Only a holder whose generation is the newest cuts a torn tail, and only when no newer claim's
 * record is in the file (the bytes could be a newer holder's write in progress). What is left: a
 * claimer stopped in the instant between that check and its `ftruncate` while another process
 * claims the run whole — then the newer claim's record may be cut, which that claim, or the next
 * read, reports (`RunLockedError`, `JournalCorruptError`): never a silent loss.
 *
 * The lease is on the store's scheduler clock (`Date.now()` by default): processes sharing a
 * folder share one machine's clock — or a network file system's, whose `link` must be atomic
 * (NFSv3+ is; and `O_APPEND` must be honoured, which NFS does not promise: prefer a local disk).
 *
 * @module
 */
/// <reference types="node" />
import { link, mkdir, open, readFile, unlink, type FileHandle } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { join, resolve } from 'node:path';
import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import { NonEmptyString, Scheduler, validateOptions } from '../core/errors/options.js';
import { JournalCorruptError, RunLockedError } from '../core/journal/errors.js';
import type { JournalClaim, JournalData, JournalStore } from '../core/journal/journal.js';
import { journalStore, type Grant } from '../core/journal/session.js';
import { abortable } from '../core/model/abortable.js';
import { durableJournal } from '../sources/durableJournal.js';
import { claimBody, entryBody, FILE_HEADER, frame, scan, type Scan } from './format.js';
import { newestGeneration, readLease, rewriteLease, syncDir, takeLease } from './lease.js';

/**
 * Options of {@link fileJournal}.
 *
 * @example
 * ```ts
 * const options: FileJournalOptions = { dir: '/var/lib/my-agent/runs' };
 * ```
 */
export interface FileJournalOptions {
  /** The folder that holds one folder per run (made if missing). */
  readonly dir: string;
  /** The clock of leases, read through `scheduler.now()`. Defaults to `asyncScheduler` (the wall clock): every process sharing `dir` must keep leases on the same clock. */
  readonly scheduler?: SchedulerLike;
}

/**
 * A run's folder name: its id with each capital letter written `^` and the letter in lower case,
 * so that two ids differing in case never share a folder on a file system that ignores case.
 */
const folderOf = (runId: string): string => runId.replace(/[A-Z]/g, (c) => `^${c.toLowerCase()}`);

/** Read and append, never create (`a+` would: a journal is only ever made whole, by {@link create}). */
const APPEND = constants.O_RDWR | constants.O_APPEND;

const code = (error: unknown): unknown => (error as { code?: unknown } | undefined)?.code;

/** Writes all of `bytes` at the end of the file (`O_APPEND`: a short write goes on where it stopped). */
async function appendAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  for (let written = 0; written < bytes.length;) written += (await handle.write(bytes, written, bytes.length - written)).bytesWritten;
}

/** The journal of a new run: its header under a temporary name, fsync'd, then linked (an existing journal is never replaced). */
async function create(dir: string, path: string): Promise<void> {
  const temp = join(dir, `tmp.journal.${randomBytes(8).toString('hex')}`);
  const handle = await open(temp, 'wx');
  try {
    await appendAll(handle, FILE_HEADER);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(temp, path);
  } catch (error) {
    if (code(error) !== 'EEXIST') throw error;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
  await syncDir(dir);
}

/** The run's journal read whole and scanned, through `handle` (the file as it is now). */
async function readScan(handle: FileHandle, path: string): Promise<Scan> {
  const { size } = await handle.stat();
  const bytes = Buffer.allocUnsafe(size);
  for (let read = 0; read < size;) {
    const n = (await handle.read(bytes, read, size - read, read)).bytesRead;
    if (n === 0) return scan(path, bytes.subarray(0, read));
    read += n;
  }
  return scan(path, bytes);
}

/**
 * The embedded journal: one append-only file per run in `dir`, each record length-prefixed,
 * checksummed (CRC-32) and fsync'd before `append` emits; a torn last record — a crash in the
 * middle of writing it — is dropped as never committed (and cut off before the next write); a bad
 * record anywhere else is a `JournalCorruptError` naming the file and the offset. One writer per
 * run across processes: a lease of lock files, one per claim, taken with `link` (of two processes
 * taking over a lapsed lease at once exactly one wins), and a generation in every record, so that
 * a former holder that writes after another claimed the run is refused and never read.
 *
 * @example
 * ```ts
 * import { firstValueFrom } from 'rxjs';
 * import { fileJournal } from 'rxheal/durable';
 *
 * const journal = fileJournal({ dir: './runs' });
 * const session = await firstValueFrom(journal.claim({ runId: 'order-7421', holder: `worker-${process.pid}`, leaseMs: 30_000 }));
 * await firstValueFrom(session.append({ v: 1, type: 'start' }));
 * await firstValueFrom(session.release());
 * ```
 */
export function fileJournal(options: FileJournalOptions): JournalStore {
  const o = validateOptions('fileJournal', { dir: NonEmptyString, scheduler: Scheduler }, options);
  if (o.dir === undefined) throw new InvalidOptionError('fileJournal', 'dir', undefined, 'a non-empty string (the folder of the runs)');
  const root = resolve(o.dir);
  const scheduler = o.scheduler ?? asyncScheduler;
  const now = (): number => scheduler.now();
  let rootReady: Promise<unknown> | undefined;

  const grant = (runId: string, claim: JournalClaim, dir: string, path: string, generation: number, first: Scan, firstWritten: boolean): Grant => {
    let end = first.end;
    const taken = async (): Promise<RunLockedError> => {
      const lease = await readLease(dir);
      return new RunLockedError(runId, 'taken', lease?.holder === undefined ? {} : { holder: lease.holder });
    };
    const append = async (seq: number, text: string): Promise<void> => {
      if ((await newestGeneration(dir)) !== generation) throw await taken();
      const handle = await open(path, APPEND);
      try {
        const { size } = await handle.stat();
        if (size !== end) {
          // the file changed since this session wrote: a former holder's fenced-off records, or one it tore
          const now = await readScan(handle, path);
          if (now.generation !== generation) throw await taken();
          if (now.entries.length !== seq) throw new JournalCorruptError('file', path, `${now.entries.length} entries where this session wrote ${seq}`);
          if (now.torn) {
            if ((await newestGeneration(dir)) !== generation) throw await taken();
            await handle.truncate(now.end);
          }
          end = now.end;
        }
        const bytes = frame(entryBody(generation, seq, text));
        await appendAll(handle, bytes);
        await handle.datasync();
        end += bytes.length;
      } finally {
        await handle.close();
      }
      if ((await newestGeneration(dir)) !== generation) throw await taken();
    };
    const lease = async (released: boolean): Promise<void> => {
      if (!(await rewriteLease(dir, generation, claim.holder, now() + claim.leaseMs, released))) throw await taken();
    };
    return {
      entries: first.entries,
      firstWritten,
      append: (seq, text) => abortable(() => append(seq, text)),
      renew: () => abortable(() => lease(false)),
      release: () => abortable(() => lease(true)),
    };
  };

  const take = async (claim: JournalClaim, first?: string): Promise<Grant> => {
    // made once; a failure (a permission, a full disk) is tried again by the next claim
    rootReady ??= mkdir(root, { recursive: true }).catch((error: unknown) => {
      rootReady = undefined;
      throw error;
    });
    await rootReady;
    const dir = join(root, folderOf(claim.runId));
    const made = await mkdir(dir, { recursive: true });
    if (made !== undefined) await syncDir(root);
    const taken = await takeLease(dir, claim.holder, now, claim.leaseMs);
    if ('refused' in taken) {
      const { holder, until } = taken.refused;
      throw new RunLockedError(claim.runId, 'held', { ...(holder === undefined ? {} : { holder }), until, retryAfterMs: Math.max(0, until - now()) });
    }
    const { generation } = taken;
    try {
      return await openRun(claim, dir, generation, first);
    } catch (error) {
      // a journal that cannot be read (or a claim overtaken): the lease taken is given back
      await rewriteLease(dir, generation, claim.holder, 0, true).catch(() => undefined);
      throw error;
    }
  };

  /**
   * The claim's journal: created if new, its torn tail cut, the claim record appended, the run read
   * back — and, given `first` and a run with no entry, `first` appended as entry 0. Two writes, each
   * fsync'd: the claim record must be durable before the run is read (it fences off a former holder
   * still writing), so the entry cannot share its write.
   */
  const openRun = async (claim: JournalClaim, dir: string, generation: number, first?: string): Promise<Grant> => {
    const path = join(dir, 'journal');
    const handle = await open(path, APPEND).catch(async (error: unknown) => {
      if (code(error) !== 'ENOENT') throw error;
      await create(dir, path);
      return open(path, APPEND);
    });
    const overtaken = async (): Promise<RunLockedError> => {
      const lease = await readLease(dir);
      return new RunLockedError(claim.runId, 'held', lease?.holder === undefined ? {} : { holder: lease.holder, until: lease.until });
    };
    try {
      const before = await readScan(handle, path);
      // a newer claim's record already there: this claim was slow, and lost (a torn tail is then the newer holder's write in progress: never cut)
      if (before.generation > generation) throw await overtaken();
      if (before.torn) {
        if ((await newestGeneration(dir)) !== generation) throw await overtaken();
        await handle.truncate(before.end);
      }
      await appendAll(handle, frame(claimBody(generation)));
      await handle.datasync();
      // read again after the claim record: what a former holder appended before it counts too
      const after = await readScan(handle, path);
      if (after.generation !== generation || (await newestGeneration(dir)) !== generation) throw await overtaken();
      if (first === undefined || after.entries.length > 0 || after.torn) return grant(claim.runId, claim, dir, path, generation, after, false);
      const bytes = frame(entryBody(generation, 0, first));
      await appendAll(handle, bytes);
      await handle.datasync();
      if ((await newestGeneration(dir)) !== generation) throw await overtaken();
      const entries = [{ seq: 0, data: JSON.parse(first) as JournalData }];
      return grant(claim.runId, claim, dir, path, generation, { ...after, entries, end: after.end + bytes.length }, true);
    } finally {
      await handle.close();
    }
  };

  // with the durable-run machinery: runAgent reaches it through the journal it is given
  return durableJournal(
    journalStore(
      'fileJournal',
      (claim, first) => abortable(() => take(claim, first)),
      (runId) => {
        const path = join(root, folderOf(runId), 'journal');
        return abortable(async ({ signal }) => {
          const bytes = await readFile(path, { signal }).catch((error: unknown) => {
            if (code(error) === 'ENOENT') return undefined;
            throw error;
          });
          return bytes === undefined ? [] : scan(path, bytes).entries;
        });
      },
    ),
  );
}
