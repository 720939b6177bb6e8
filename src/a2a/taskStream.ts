/**
 * The rule of one call to a remote A2A agent, its transport injected ({@link TaskSeams}: the
 * client's streaming calls in `fromA2A`, cold observables in marble specs): the first event and
 * each gap under deadlines, a cut stream resubscribed (never a second message, so never a second
 * task), a task already over read with `tasks/get`, and the task cancelled when nobody will read
 * it any more. Built from rxheal's operators: `degradeAfter` for the deadlines, `retryWithBackoff`
 * for the resubscriptions and their backoff. Browser-safe.
 *
 * @module
 */
import { catchError, concat, defer, EMPTY, map, Observable, takeWhile, throwError, type SchedulerLike } from 'rxjs';
import { classifyError } from '../core/errors/classify.js';
import type { ResumeEvent } from '../core/events/events.js';
import { degradeAfter } from '../operators/degradeAfter.js';
import { retryWithBackoff } from '../operators/retryWithBackoff.js';
import { A2AStreamEndedError, A2ATaskError, A2ATimeoutError, isUnsupported } from './errors.js';
import { TaskView, type A2AResult, type A2AStreamResponse, type A2ATask } from './wire.js';

/**
 * What the rule needs of a transport.
 *
 * @example
 * ```ts
 * const seams: TaskSeams = {
 *   send: () => events(client.sendMessageStream(request, { signal })),
 *   resubscribe: (id) => events(client.resubscribeTask({ id }, { signal })),
 *   get: (id) => from(client.getTask({ id })),
 *   cancel: (id) => void client.cancelTask({ id }).catch(() => undefined),
 * };
 * ```
 */
export interface TaskSeams {
  /** The message's stream (`message/stream`): sent once per call. */
  readonly send: () => Observable<A2AStreamResponse>;
  /** The task's stream again (`tasks/resubscribe`): its current snapshot first, then what follows. */
  readonly resubscribe: (taskId: string) => Observable<A2AStreamResponse>;
  /** The task as it stands (`tasks/get`): for a task over before it could be resubscribed. */
  readonly get: (taskId: string) => Observable<A2ATask>;
  /** Best effort, never awaited: `tasks/cancel`. */
  readonly cancel: (taskId: string) => void;
}

/**
 * The rule's settings (what `fromA2A`'s options become).
 *
 * @example
 * ```ts
 * const rules: TaskRules = { firstEventMs: 30_000, idleMs: 60_000, maxResubscribes: 5, backoff: { initialMs: 500, maxMs: 10_000 } };
 * ```
 */
export interface TaskRules {
  /** No first event of a request (the send, each resubscription) within this many ms: a timeout (`Infinity`: none). */
  readonly firstEventMs: number;
  /** No event for this many ms after one: a stall (`Infinity`: none). */
  readonly idleMs: number;
  /** Resubscriptions per call, in all. */
  readonly maxResubscribes: number;
  /** The wait before each resubscription: `initialMs · 2ⁿ`, at most `maxMs`. */
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
}

/** A stream is cut: it broke (a network error), stalled, or ended before its task did. */
function isCut(error: unknown): boolean {
  return error instanceof A2AStreamEndedError || error instanceof A2ATimeoutError || classifyError(error).category === 'connection';
}

/**
 * One call's results (each whole, see `A2AResult`) over a resumable task stream:
 *
 * - the first request is `seams.send()`; each event goes to one {@link TaskView} for the call,
 *   which also learns the task's id from it;
 * - each request's first event within `firstEventMs`, each next one within `idleMs`
 *   (`degradeAfter`), else an {@link A2ATimeoutError} (the request is unsubscribed: aborted);
 * - a **cut stream** — a network error, a stall, or an end before a terminal or interrupted state
 *   ({@link A2AStreamEndedError}) — once the task's id is known: a `resume` event (`report`,
 *   `responseId` the task's id, `startingAfter` the events received so far), the backoff, then
 *   `seams.resubscribe(id)` — whose first event is the task's snapshot, which replaces the view
 *   (nothing doubled) — at most `maxResubscribes` times (then `RetriesExhaustedError`, its cause
 *   the last cut). A resubscription refused because the task is over (`UnsupportedOperationError`)
 *   reads it with `seams.get(id)` instead. The message is never sent again: there is one task;
 * - `completed` or `input-required` ends the call with that result; `failed`, `rejected`,
 *   `canceled`, `auth-required` with an `A2ATaskError`; a message (no task) is the result;
 * - the consumer leaving before the task is over, or the call giving up on it (a deadline before
 *   any resubscription may, resubscriptions spent): `seams.cancel(id)` — `tasks/cancel`, so the
 *   agent stops work nobody reads.
 *
 * @example
 * ```ts
 * taskStream('travel', seams, { firstEventMs: 30_000, idleMs: 60_000, maxResubscribes: 5, backoff: { initialMs: 500, maxMs: 10_000 } }, scheduler, (e) => hub.report(e));
 * ```
 */
export function taskStream(
  agent: string,
  seams: TaskSeams,
  rules: TaskRules,
  scheduler: SchedulerLike,
  report?: (event: ResumeEvent) => void,
): Observable<A2AResult> {
  const { firstEventMs, idleMs } = rules;
  const deadlines =
    firstEventMs === Infinity && idleMs === Infinity
      ? undefined
      : degradeAfter<A2AStreamResponse, never>(
          { firstMs: firstEventMs, idleMs },
          (reason) => throwError(() => new A2ATimeoutError(agent, reason.kind === 'idle' ? 'idle' : 'first', reason.kind === 'idle' ? idleMs : firstEventMs)),
          { scheduler },
        );
  return new Observable<A2AResult>((subscriber) => {
    const view = new TaskView(agent);
    let events = 0;
    let over = false;
    /** A task over already: its snapshot from `tasks/get`, as the stream's one event. */
    const reattach = (id: string): Observable<A2AStreamResponse> =>
      seams
        .resubscribe(id)
        .pipe(
          catchError((error: unknown) =>
            isUnsupported(error)
              ? seams.get(id).pipe(map((task): A2AStreamResponse => ({ payload: { $case: 'task', value: task } })))
              : throwError(() => error),
          ),
        );
    const attempt$ = defer(() => {
      const request$ = view.taskId === undefined ? seams.send() : reattach(view.taskId);
      const timed$ = deadlines ? request$.pipe(deadlines) : request$;
      return concat(
        timed$.pipe(
          map((event) => {
            events++;
            return view.push(event);
          }),
        ),
        defer(() => (view.done ? EMPTY : throwError(() => new A2AStreamEndedError(agent, view.taskId)))),
      );
    });
    const call$ = attempt$.pipe(
      takeWhile(() => !view.done, true),
      retryWithBackoff<A2AResult>({
        maxRetries: rules.maxResubscribes,
        initialBackoffMs: rules.backoff.initialMs,
        maxBackoffMs: rules.backoff.maxMs,
        jitter: 'none',
        afterEmit: 'resubscribe',
        shouldRetry: (error) => view.taskId !== undefined && !view.done && isCut(error),
        scheduler,
        onRetry: (info) =>
          report?.({
            type: 'resume',
            target: `a2a:${agent}`,
            responseId: view.taskId!,
            startingAfter: events,
            attempt: info.attempt,
            max: rules.maxResubscribes,
            reason: info.error instanceof A2ATimeoutError ? 'stalled' : 'dropped',
            error: info.error instanceof Error ? info.error.message : String(info.error),
          }),
      }),
    );
    const subscription = call$.subscribe({
      next: (result) => subscriber.next(result),
      error: (error: unknown) => {
        over = true;
        // a task that ended badly is over; one given up on is stopped
        if (!(error instanceof A2ATaskError) && view.taskId !== undefined && !view.done) seams.cancel(view.taskId);
        subscriber.error(error);
      },
      complete: () => {
        over = true;
        subscriber.complete();
      },
    });
    return () => {
      subscription.unsubscribe();
      if (!over && view.taskId !== undefined && !view.done) seams.cancel(view.taskId);
    };
  });
}
