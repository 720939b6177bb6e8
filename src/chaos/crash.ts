/**
 * Crash mode: a run killed once — at a journal boundary or inside a step — and resumed from its
 * journal by a fresh agent from the same factory, as a process that dies and is restarted would
 * resume it. {@link CrashPoints} enumerates where a run can crash and crashes it at one of them;
 * {@link crashAnywhere} compares the resumed run with the run that never crashed.
 *
 * The points, in the order the run passes them (a point where nothing moved since the last one —
 * no virtual time passed, no call or execution begun, no record committed — is the same crash,
 * counted once):
 * - `<record> committed`: a journal append kept by the store, before the run learns it (the
 *   boundary: the next step has not begun; a write in flight is the same crash, since the memory
 *   store keeps what it was handed);
 * - `<kind> <name> started`: a model call or tool execution begun (its `call-start` event),
 *   `tool <name> running`: its `execute` called (the effect under way, its result not journaled),
 *   and `a model answering`: a model call's first text delta — inside a step.
 *
 * @module
 */
import { Observable } from 'rxjs';
import type { AgentEvent } from '../core/events/events.js';
import type { JournalData, JournalSession, JournalStore } from '../core/journal/journal.js';
import type { ChaosRun } from './invariants.js';

/** What a memory journal holds, run by run: the entries' data. */
export type JournalCopy = ReadonlyMap<string, readonly JournalData[]>;

/**
 * Where a run can crash, counted as it passes them; at the `at`th (1-based) it calls `crash` —
 * once, then counts no more. Without `at`, it only lists them (the run that never crashes).
 */
export class CrashPoints {
  /** The points passed, in order (up to and including the crash). */
  readonly seen: string[] = [];
  private answering = false;
  private over = false;

  /** What the world looked like at the last point: a point where nothing moved since is the same crash, and not counted again. */
  private last = '';
  /** Records committed so far (part of what the world looks like). */
  private committed = 0;
  /** The records committed through {@link journal}, run by run (the data appended): what a copy of the journal copies. */
  private readonly records = new Map<string, JournalData[]>();
  /**
   * Told of each point as it is passed (after it is counted, before a crash there): the run that
   * never crashes takes its copies there. Not of a call's start: a crash there still has the
   * call begun by the code that announced it, after the announcement (a copy taken at the
   * announcement would not have it).
   */
  passed: ((at: number) => void) | undefined;

  /**
   * @param state what a crash's outcome depends on, as a string: the virtual time, the model
   *   calls and tool executions begun, the records committed (see {@link pass})
   */
  constructor(
    private readonly at: number | undefined,
    private readonly crash: () => void,
    private readonly state: () => string,
  ) {}

  /** The records committed so far, run by run (copies of the lists). */
  journalCopy(): JournalCopy {
    return new Map([...this.records].map(([runId, records]) => [runId, [...records]]));
  }

  /** Stops counting (the resumed life is not crashed again). */
  stop(): void {
    this.over = true;
  }

  private pass(where: string, copied = true): void {
    if (this.over) return;
    const now = `${this.state()}:${this.committed}`;
    // nothing happened since the last point (two call-starts in a row, a model's first words at once): the same crash
    if (now === this.last) return;
    this.last = now;
    this.seen.push(where);
    if (copied) this.passed?.(this.seen.length);
    if (this.seen.length === this.at) {
      this.over = true;
      this.crash();
    }
  }

  /** A run event: a call's start, a model's first words. */
  event(event: AgentEvent): void {
    if (event.type === 'call-start') {
      this.answering = event.kind === 'model';
      this.pass(`${event.kind} ${event.name} started`, false);
    } else if (event.type === 'text-delta' && this.answering) {
      this.answering = false;
      this.pass('a model answering');
    }
  }

  /** A tool's `execute` called (its effect under way, its result not journaled yet). */
  executing(tool: string): void {
    this.pass(`tool ${tool} running`);
  }

  /** `store` with its appends counted: handed over, and answered. */
  journal(store: JournalStore): JournalStore {
    const session = (s: JournalSession): JournalSession => ({
      runId: s.runId,
      entries: s.entries,
      renew: () => s.renew(),
      release: () => s.release(),
      append: (data: JournalData) => {
        const record = typeof data['type'] === 'string' ? data['type'] : 'a record';
        // a write in flight is not a point of its own: the memory store keeps what it was handed, as the record committed and not yet answered is
        return new Observable<number>((subscriber) =>
          s.append(data).subscribe({
            next: (seq) => {
              let records = this.records.get(s.runId);
              if (records === undefined) this.records.set(s.runId, (records = []));
              records.push(data);
              this.committed++;
              this.pass(`${record} committed`);
              if (!subscriber.closed) subscriber.next(seq);
            },
            error: (e: unknown) => subscriber.error(e),
            complete: () => subscriber.complete(),
          }),
        );
      },
    });
    return {
      read: (runId) => store.read(runId),
      claim: (claim) =>
        new Observable<JournalSession>((subscriber) => {
          return store.claim(claim).subscribe({
            next: (s) => subscriber.next(session(s)),
            error: (e: unknown) => subscriber.error(e),
            complete: () => subscriber.complete(),
          });
        }),
    };
  }
}

/**
 * `store` (empty, a memory journal) given `copy`'s records, each run's lease released — as a
 * crashed process leaves its run: the records it committed, its lease given up. False when the
 * store did not answer at once.
 */
export function restoreJournal(store: JournalStore, copy: JournalCopy): boolean {
  for (const [runId, records] of copy) {
    if (records.length === 0) continue;
    let done = false;
    store.claim({ runId, holder: 'rxheal-chaos-copy', leaseMs: 1 }).subscribe({
      next: (session) => {
        let written = 0;
        for (const data of records) session.append(data).subscribe({ complete: () => written++ });
        session.release().subscribe({ complete: () => (done = written === records.length) });
      },
      error: () => undefined,
    });
    if (!done) return false;
  }
  return true;
}

/** Whether `value` is data a structured clone copies whole: primitives, arrays, plain objects, Maps, Sets and Dates of them (no class, no function). */
export function isPlainData(value: unknown, depth = 0): boolean {
  if (depth > 100) return false;
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return typeof value !== 'symbol';
  if (typeof value === 'function') return false;
  if (value instanceof Date) return true;
  if (Array.isArray(value)) return value.every((v) => isPlainData(v, depth + 1));
  if (value instanceof Map) return [...value].every(([k, v]) => isPlainData(k, depth + 1) && isPlainData(v, depth + 1));
  if (value instanceof Set) return [...value].every((v) => isPlainData(v, depth + 1));
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.getOwnPropertySymbols(value).length === 0 && Object.values(value).every((v) => isPlainData(v, depth + 1));
}

/** The text of a run's last assistant message (replayed or live), or undefined. */
function answerOf(run: Pick<ChaosRun, 'events'>): string | undefined {
  for (let i = run.events.length - 1; i >= 0; i--) {
    const { event } = run.events[i]!;
    if (event.type === 'message' && event.message.role === 'assistant') return event.message.content;
  }
  return undefined;
}

const errorName = (u: unknown): string => (u instanceof Error ? u.name : typeof u);

/** {@link largestTurn} of each baseline, counted once (every crash point of a schedule is checked against the same one). */
const largestTurns = new WeakMap<object, number>();

/** The most model calls one turn of `run` made (the calls between two of its assistant messages). */
function largestTurn(run: Pick<ChaosRun, 'events' | 'models'>): number {
  let most = largestTurns.get(run);
  if (most === undefined) largestTurns.set(run, (most = countLargestTurn(run)));
  return most;
}

function countLargestTurn(run: Pick<ChaosRun, 'events' | 'models'>): number {
  const ends = run.events.filter((e) => e.event.type === 'message' && e.event.message.role === 'assistant').map((e) => e.seq);
  let most = 0;
  let from = -1;
  for (const end of [...ends, Infinity]) {
    most = Math.max(most, run.models.filter((a) => a.seq > from && a.seq < end).length);
    from = end;
  }
  return most;
}

/**
 * The `crash-anywhere` invariant: the run crashed at `point` and resumed ends as `baseline` (the
 * same schedule, never crashed) ended — the same final answer, or an error of the same name —
 * and asked the models at most one turn's calls more than `baseline` did (the turn the crash cut,
 * run again). Side effects across the crash are `side-effects-once`'s, checked on the whole run.
 *
 * A crash may help: retries, fallbacks and breakers keep their counts in the process, so a
 * resumed run starts them afresh (as a restarted process would) and may answer where the run
 * that never crashed gave up. That is no violation when its answer is `healthy`'s — the answer
 * of the run with no fault at all —; nor is the number of model calls it took (fresh budgets
 * make more). Without a healthy answer to compare with (the fault-free run did not answer), it is
 * reported as before.
 */
export function crashAnywhere(run: Omit<ChaosRun, 'violations'>, baseline: Omit<ChaosRun, 'violations'>, point: string, healthy?: string): string[] {
  const found: string[] = [];
  const at = `crashed at ${point} and resumed`;
  if (baseline.end.kind === 'complete') {
    if (run.end.kind !== 'complete')
      found.push(`${at}, it ${run.end.kind === 'error' ? `failed with ${errorName(run.end.error)}` : 'hung'}; uncrashed, it answered`);
    else if (answerOf(run) !== answerOf(baseline))
      found.push(`${at}, it answered ${JSON.stringify(answerOf(run))}; uncrashed, ${JSON.stringify(answerOf(baseline))}`);
  } else if (baseline.end.kind === 'error') {
    const want = errorName(baseline.end.error);
    if (run.end.kind === 'complete' && healthy !== undefined) {
      // the crash helped (fresh retries): the answer must be the one a run with no fault gives
      if (answerOf(run) === healthy) return found;
      found.push(
        `${at}, it answered ${JSON.stringify(answerOf(run))}; uncrashed, it failed with ${want}, and with no fault it answers ${JSON.stringify(healthy)}`,
      );
      return found;
    }
    if (run.end.kind !== 'error' || errorName(run.end.error) !== want)
      found.push(
        `${at}, it ${run.end.kind === 'error' ? `failed with ${errorName(run.end.error)}` : run.end.kind === 'complete' ? 'answered' : 'hung'}; uncrashed, it failed with ${want}`,
      );
  }
  const allowed = baseline.models.length + largestTurn(baseline);
  if (run.models.length > allowed)
    found.push(
      `${at}, it made ${run.models.length} model calls; uncrashed, ${baseline.models.length} (at most one turn more, ${allowed}, is a resume's: ` +
        `a turn the journal holds was asked again)`,
    );
  return found;
}

/**
 * The final answer of a run, when it answered (what {@link crashAnywhere} compares a resumed run with).
 *
 * @example
 * ```ts
 * const healthy = answerOfRun(faultFreeRun); // 'Seat 1A is yours.'
 * ```
 */
export function answerOfRun(run: Pick<ChaosRun, 'events' | 'end'>): string | undefined {
  return run.end.kind === 'complete' ? answerOf(run) : undefined;
}
