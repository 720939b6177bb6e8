/**
 * Long tools as MCP Tasks (the `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28): a
 * `tools/call` the server answers with a task handle becomes one observable of the tool's final
 * result — {@link followTask} polls `tasks/get` on the scheduler (the server's `pollIntervalMs`,
 * else a backoff while nothing changes; a change the server pushes ends the wait), answers the task's `inputRequests` with `tasks/update`
 * (each key once), reports each change as a `task` event, and sends `tasks/cancel` when nobody will
 * read the result. {@link taskCall} decides between a fresh call and a task picked up again from
 * the call's checkpoint (a durable run journals the task's id before polling starts), so that a
 * restarted process polls the same task instead of running the tool again. No framework import.
 *
 * @module
 */
import {
  catchError,
  concat,
  concatMap,
  defer,
  EMPTY,
  expand,
  from,
  ignoreElements,
  last,
  map,
  Observable,
  of,
  race,
  switchMap,
  take,
  tap,
  throwError,
  type SchedulerLike,
} from 'rxjs';
import type { HealHub } from '../core/hub/hub.js';
import { abortable } from '../core/model/abortable.js';
import { wait } from '../core/rx/wait.js';
import { retryWithBackoff } from '../operators/retryWithBackoff.js';
import { McpInputRequiredError, McpOutcomeUnknownError, McpProtocolError, McpTaskCancelledError, mcpFailure } from './errors.js';
import type { McpRequestOptions, McpTaskResume } from './types.js';
import { checkedResponses, type McpInputAnswer } from './rounds.js';
import { readTask, taskOf, type McpTask, type TaskWire } from './taskWire.js';

/**
 * How often a task is polled when its server suggests nothing (`pollIntervalMs`, which always
 * wins): `initialMs`, doubled after each poll that finds the task unchanged, at most `maxMs`; a
 * change starts again from `initialMs`.
 *
 * @example
 * ```ts
 * const polling: McpTaskPolling = { initialMs: 250, maxMs: 5_000 };
 * ```
 */
export interface McpTaskPolling {
  /** The first wait, and the wait after a poll that found a change. Defaults to 1 000 ms. */
  readonly initialMs?: number;
  /** The longest wait. Defaults to 30 000 ms. */
  readonly maxMs?: number;
  /** A poll that fails (the connection, a timeout, a 5xx) is made again, with the same backoff, this many times in a row at most. Defaults to 5. */
  readonly retries?: number;
}

/** How the tasks of one call are driven: the link's parts. */
export interface TaskDriver {
  readonly server: string;
  readonly tool: string;
  readonly arguments: Record<string, unknown>;
  readonly wire: TaskWire;
  /** One request on the link's connection (reconnected first; its deadlines and cancellation; no breaker). */
  readonly request: <T>(label: string, send: (options: McpRequestOptions) => Promise<T>) => Observable<T>;
  readonly answer: McpInputAnswer | undefined;
  readonly maxRounds: number;
  readonly hub: HealHub | undefined;
  readonly scheduler: SchedulerLike;
  readonly polling: { readonly initialMs: number; readonly maxMs: number };
  /** A poll that fails (the connection, a timeout, a 5xx) is made again this many times in a row at most. */
  readonly pollRetries: number;
  /** The limit the SDK was given, named in a timeout's error. */
  readonly timeoutMs: number;
}

const TERMINAL: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** Where a call's checkpoint keeps its task. */
const CHECKPOINT_KEY = 'mcpTask';

/** The task a call checkpointed, if it was one of this server's for this tool. */
function checkpointedTask(resumed: McpTaskResume['resumed'], server: string, tool: string): string | undefined {
  const task = resumed?.[CHECKPOINT_KEY] as { server?: unknown; tool?: unknown; taskId?: unknown } | undefined;
  return task?.server === server && task.tool === tool && typeof task.taskId === 'string' ? task.taskId : undefined;
}

/**
 * One `tools/call` that may run as a task: `fresh$` (the call, through the breaker) and, when the
 * server answers with a task, the task followed to its end — its id checkpointed first (when the
 * call can), so a resumed call polls it instead of calling again. A call that checkpointed a task
 * picks it up: polled, not called; a task found gone, cancelled or failed is called afresh for a
 * tool safe to repeat, and any other tool fails (a gone task: {@link McpOutcomeUnknownError}).
 * `total` bounds a task's following (the call's `maxTotalTimeoutMs`).
 */
export function taskCall(
  driver: TaskDriver,
  idempotent: boolean,
  resume: McpTaskResume | undefined,
  fresh$: Observable<{ readonly [key: string]: unknown }>,
  total: (task$: Observable<McpTask>) => Observable<McpTask>,
): Observable<{ readonly [key: string]: unknown }> {
  const { server, tool } = driver;
  const called$ = fresh$.pipe(
    switchMap((result) => {
      const seed = taskOf(server, result);
      if (seed === undefined) return of(result);
      const checkpoint = resume?.checkpoint;
      const before$ =
        checkpoint === undefined ? EMPTY : defer(() => checkpoint({ [CHECKPOINT_KEY]: { server, tool, taskId: seed.taskId } })).pipe(ignoreElements());
      return total(followTask(driver, { seed }, before$)).pipe(map((task) => outcome(driver, task)));
    }),
  );
  const taskId = checkpointedTask(resume?.resumed, server, tool);
  if (taskId === undefined) return called$;
  return total(followTask(driver, { taskId }, EMPTY)).pipe(
    catchError((error: unknown) => (idempotent && error instanceof McpOutcomeUnknownError ? of(undefined) : throwError(() => error))),
    switchMap((task) => (task === undefined || (idempotent && task.status !== 'completed') ? called$ : of(outcome(driver, task)))),
  );
}

/** A task's end as the call's: the tool's result, or the task's failure. */
function outcome(driver: TaskDriver, task: McpTask): { readonly [key: string]: unknown } {
  if (task.status === 'completed') return task.result!;
  if (task.status === 'cancelled') throw new McpTaskCancelledError(driver.server, driver.tool, task.taskId, task.statusMessage);
  const { code, message } = task.error ?? {};
  const failure = {
    name: 'ProtocolError',
    code: typeof code === 'number' ? code : -32603,
    message: `task ${task.taskId} failed: ${String(message ?? 'no message')}`,
  };
  throw mcpFailure(driver.server, driver.tool, failure, driver.timeoutMs);
}

/**
 * A task followed until it ends: emits its last state (completed, failed or cancelled) and
 * completes. A new task (`seed`, as the server created it) is polled after the first wait, one
 * checkpointed before (`taskId`) at once; the task pushed (`notifications/tasks`) during a wait or
 * a poll is taken as that poll's answer; `before$` runs first (the checkpoint). Each change is a
 * `task` event; `tasks/cancel` is sent when it is unsubscribed before the end, or fails (a question
 * nobody can answer, a checkpoint that could not be written, polls that keep failing). A task the
 * server no longer knows fails with {@link McpOutcomeUnknownError}.
 *
 * @example
 * ```ts
 * followTask(driver, { seed }, EMPTY).subscribe((task) => console.log(task.status)); // 'completed'
 * ```
 */
export function followTask(
  driver: TaskDriver,
  start: { readonly seed: McpTask } | { readonly taskId: string },
  before$: Observable<never>,
): Observable<McpTask> {
  return defer(() => {
    const { server, tool, wire, request, scheduler, polling, hub } = driver;
    const seed = 'seed' in start ? start.seed : undefined;
    const taskId = seed?.taskId ?? (start as { readonly taskId: string }).taskId;
    const report = (kind: 'created' | 'resumed' | 'status' | 'cancel', task: Pick<McpTask, 'status' | 'statusMessage'>): void =>
      hub?.report({
        type: 'task',
        target: `mcp:${server}/${tool}`,
        taskId,
        kind,
        status: task.status,
        ...(task.statusMessage === undefined ? {} : { message: task.statusMessage }),
      });
    let seen: McpTask | undefined = seed;
    let cancelled = false;
    const cancel = (): void => {
      if (cancelled) return;
      cancelled = true;
      report('cancel', seen ?? { status: 'working' });
      // not waited for, nor held: it ends by its own deadline; a failure to cancel changes nothing here
      request('tasks/cancel', (options) => wire.request('tasks/cancel', { taskId }, options)).subscribe({ error: () => undefined });
    };
    const get$ = request('tasks/get', (options) => wire.request('tasks/get', { taskId }, options)).pipe(
      map((answer) => readTask(server, answer)),
      retryWithBackoff({ maxRetries: driver.pollRetries, initialBackoffMs: polling.initialMs, maxBackoffMs: polling.maxMs, scheduler }),
      catchError((error: unknown) =>
        throwError(() =>
          isGone(error) ? new McpOutcomeUnknownError(server, tool, { cause: error, why: `its task ${taskId} is gone from the server` }) : error,
        ),
      ),
    );
    const inputs = answers(driver, taskId);
    // what the server pushes of this task ends a wait (or a poll in flight) at once, as that poll's answer
    const pushed$ = wire.pushes(taskId).pipe(take(1));
    const delayOf = (task: McpTask, unchanged: number): number => task.pollIntervalMs ?? Math.min(polling.maxMs, polling.initialMs * 2 ** unchanged);
    // one poll after a wait (or the task pushed first); the task found, and how many polls in a row found it unchanged
    const poll = (previous: McpTask | undefined, unchanged: number, ms: number): Observable<{ task: McpTask; unchanged: number }> =>
      race(concat(wait(ms, scheduler).pipe(ignoreElements()), get$), pushed$).pipe(
        map((task) => {
          const same = previous !== undefined && task.status === previous.status && task.statusMessage === previous.statusMessage;
          if (previous === undefined) report('resumed', task);
          else if (!same) report('status', task);
          seen = task;
          return { task, unchanged: same ? unchanged + 1 : 0 };
        }),
      );
    if (seed !== undefined) report('created', seed);
    const first$ = seed === undefined ? poll(undefined, 0, 0) : poll(seed, 0, TERMINAL.has(seed.status) ? 0 : delayOf(seed, 0));
    return concat(before$, first$).pipe(
      expand(({ task, unchanged }) => (TERMINAL.has(task.status) ? EMPTY : concat(inputs(task), poll(task, unchanged, delayOf(task, unchanged))))),
      last(),
      map(({ task }) => task),
      tap({ error: cancel, unsubscribe: cancel }),
    );
  });
}

/** A task's question answered by the application: each key once, sent with `tasks/update`; emits nothing. */
function answers(driver: TaskDriver, taskId: string): (task: McpTask) => Observable<never> {
  const { server, tool, answer, maxRounds, request, wire } = driver;
  const answered = new Set<string>();
  let round = 0;
  return (task) =>
    defer(() => {
      const open = Object.entries(task.inputRequests ?? {}).filter(([key]) => !answered.has(key));
      if (open.length === 0) return EMPTY;
      const inputRequests = Object.fromEntries(open);
      if (answer === undefined || ++round > maxRounds) {
        const why =
          answer === undefined
            ? `its task ${taskId} asks, and nothing answers it (no onInputRequired)`
            : `its task ${taskId} still asks after ${maxRounds} rounds`;
        throw new McpInputRequiredError(server, tool, why, inputRequests, undefined);
      }
      return abortable(({ signal }) => {
        const responses = answer({ server, tool, arguments: driver.arguments, inputRequests, round, signal, taskId });
        return responses instanceof Promise ? responses : of(responses);
      }).pipe(
        concatMap((inputResponses) => {
          checkedResponses(tool, inputResponses);
          for (const [key] of open) answered.add(key);
          return from(request('tasks/update', (options) => wire.request('tasks/update', { taskId, inputResponses }, options)));
        }),
        ignoreElements(),
      );
    });
}

/** The server does not know the task (any more): JSON-RPC invalid params, as the extension says. */
const isGone = (error: unknown): boolean => error instanceof McpProtocolError && error.rpcCode === -32602;
