/**
 * {@link McpLink}: one MCP server as `fromMcp`'s tools see it — its client, its breaker, the
 * reconnection (a transport factory, behind the breaker, with backoff and no cap on attempts), the
 * capabilities its tools are while the breaker is open, and one call with its progress-reset
 * timeout. No framework import: the client is read by shape ({@link McpClient}).
 *
 * @module
 */
import {
  catchError,
  concat,
  defer,
  filter,
  identity,
  Observable,
  tap,
  throwError,
  type MonoTypeOperatorFunction,
  type OperatorFunction,
  type SchedulerLike,
  type Subscription,
} from 'rxjs';
import type { CircuitBreaker } from '../core/breaker/CircuitBreaker.js';
import type { CapabilityRegistry } from '../core/capabilities/CapabilityRegistry.js';
import { CircuitOpenError } from '../core/errors/errors.js';
import type { HealHub } from '../core/hub/hub.js';
import { guard, Thrown } from '../core/rx/guard.js';
import { MAX_TIMER_MS } from '../core/rx/wait.js';
import { circuitBreak } from '../operators/circuitBreak.js';
import { degradeAfter } from '../operators/degradeAfter.js';
import { retryWithBackoff } from '../operators/retryWithBackoff.js';
import { mayHaveRun, McpConnectionError, McpOutcomeUnknownError, McpSessionExpiredError, McpTimeoutError, mcpFailure } from './errors.js';
import { callInRounds, type McpInputAnswer } from './rounds.js';
import { Reconnection, type McpTransportFactory } from './reconnection.js';
import { IDEMPOTENCY_META_KEY } from '../core/journal/idempotency.js';
import { taskCall } from './tasks.js';
import type { McpCallArgs, McpCallParams, McpClientBase, McpProgressListener, McpRequestOptions } from './types.js';
import type { TaskWire } from './taskWire.js';

export type { McpTransportFactory } from './reconnection.js';
export type { McpInputAnswer, McpInputRequest } from './rounds.js';
export type { McpTaskPolling } from './tasks.js';
export type { McpCallArgs, McpCallParams, McpClient, McpClientBase, McpProgressListener, McpRequestOptions, McpTaskResume, McpToolInfo } from './types.js';

/** How a link is set up: what `fromMcp` resolved from its options. */
export interface LinkSettings {
  readonly id: string;
  readonly client: McpClientBase;
  /** `tools/call` on the client, whichever its major (clients.ts). */
  readonly callTool: (params: McpCallParams, options: McpRequestOptions) => PromiseLike<{ readonly [key: string]: unknown }>;
  /** The probe of a half-open breaker: `ping`, or on 2026-07-28 (which has no `ping`) `server/discover`. */
  readonly probe: (options: McpRequestOptions) => Promise<unknown>;
  /** The connection speaks 2026-07-28: no session, and a broken stream is a fresh request (nothing resumes it). */
  readonly stateless: () => boolean;
  /** Answers a multi-round call's `input_required` (rounds.ts); without it, the SDK's own handlers do (2.x), or the call fails. */
  readonly onInputRequired: McpInputAnswer | undefined;
  /** Rounds of one multi-round call at most. */
  readonly maxInputRounds: number;
  /** MCP Tasks (a 2.x client, `tasks` not false): the wire, and how tasks are polled. */
  readonly tasks:
    { readonly wire: TaskWire; readonly polling: { readonly initialMs: number; readonly maxMs: number }; readonly pollRetries: number } | undefined;
  readonly breaker: CircuitBreaker;
  readonly hub: HealHub | undefined;
  readonly capabilities: CapabilityRegistry | undefined;
  readonly reconnect: McpTransportFactory | undefined;
  /** The waits between failed reconnection attempts (reconnection.ts). */
  readonly reconnectBackoff: { readonly initialMs: number; readonly maxMs: number };
  readonly timeoutMs: number;
  readonly maxTotalTimeoutMs: number;
  readonly scheduler: SchedulerLike;
}

/** The reason a signal is aborted when the caller leaves (a deadline passed, or it unsubscribed). */
const unsubscribed = (): DOMException => new DOMException('The consumer unsubscribed', 'AbortError');

/** What a request's observable emits before its answer: a progress notification came (each one pushes its deadline back). */
const PROGRESS: unique symbol = Symbol('progress');

/**
 * One MCP server: calls go through its breaker; a broken connection is re-established (when a
 * transport factory was given) by the next call the breaker admits, never sooner than the backoff
 * after the last failed attempt (reconnection.ts); while the breaker is open, the server's tools are
 * unavailable in the capability registry and a probe (`ping`) runs each time it turns half-open.
 */
export class McpLink {
  /** The connection is known broken: the next admitted call reconnects first. */
  private stale = false;
  /** Counts the connections: a failure marks the link broken only if it is of the current one. */
  private generation = 0;
  private readonly reconnection: Reconnection | undefined;
  /** The server's breaker, as an operator (made once: it tells the hub of the breaker's transitions). */
  private readonly breaker: MonoTypeOperatorFunction<{ readonly [key: string]: unknown }>;
  /**
   * A session the server says expired (it never ran the call; the connection is marked broken, so
   * the second run opens a new session first): the call once more; any other outcome, and a
   * second expiry, as it is.
   */
  private readonly againOnExpiredSession: MonoTypeOperatorFunction<{ readonly [key: string]: unknown }>;
  /** Each request name's deadlines (`deadlinesOf`). */
  private readonly deadlines = new Map<string, OperatorFunction<unknown, unknown>>();
  /** The capability names of the server's tools (kept current by `fromMcp`). */
  names: readonly string[] = [];
  /** Following the breaker while its tools are degraded. */
  private watching: Subscription | undefined;
  private probing: Subscription | undefined;

  constructor(readonly settings: LinkSettings) {
    const { id, client, reconnect, reconnectBackoff, scheduler, breaker, hub } = settings;
    this.breaker = circuitBreak(breaker, { hub });
    this.againOnExpiredSession = retryWithBackoff({
      maxRetries: 1,
      initialBackoffMs: 0,
      jitter: 'none',
      shouldRetry: (error, retry) => retry === 1 && error instanceof McpSessionExpiredError,
      scheduler,
    });
    this.reconnection =
      reconnect &&
      new Reconnection({ id, client, reconnect, ...reconnectBackoff, scheduler }, () => {
        this.generation++;
        this.stale = false;
      });
  }

  /**
   * One `tools/call` through the breaker, as a cold observable of the raw result: unsubscribing
   * cancels it (the server gets `notifications/cancelled`). A session found expired is
   * re-initialised and, for an idempotent tool, the call made once more — under the same permit:
   * the breaker sees one call (a restarted server that answers is not a failure). A server that
   * answers with a task (MCP Tasks): the task followed to its end (tasks.ts), after the breaker —
   * which judged the call that created it —, within `maxTotalTimeoutMs`; a call that checkpointed a
   * task (`resume`) polls it instead of calling again.
   */
  call(...[name, args, idempotent, onProgress, idempotencyKey, resume]: McpCallArgs): Observable<{ readonly [key: string]: unknown }> {
    const once$ = this.callOnce(name, args, idempotent, onProgress, idempotencyKey);
    const { tasks, id, onInputRequired, maxInputRounds, hub, scheduler, timeoutMs, maxTotalTimeoutMs } = this.settings;
    if (tasks === undefined) return once$;
    const driver = {
      server: id,
      tool: name,
      arguments: args,
      wire: tasks.wire,
      request: <T>(label: string, send: (options: McpRequestOptions) => Promise<T>) => this.request(label, send),
      answer: onInputRequired,
      maxRounds: maxInputRounds,
      hub,
      scheduler,
      polling: tasks.polling,
      pollRetries: tasks.pollRetries,
      timeoutMs,
    };
    const total = <T>(task$: Observable<T>): Observable<T> =>
      maxTotalTimeoutMs === Infinity
        ? task$
        : (task$.pipe(deadline({ firstMs: maxTotalTimeoutMs }, scheduler, () => new McpTimeoutError(id, name, maxTotalTimeoutMs, 'total'))) as Observable<T>);
    return taskCall(driver, idempotent, resume, once$, total);
  }

  /** One `tools/call` (its rounds included) through the breaker: the answer as the server gave it. */
  private callOnce(...[name, args, idempotent, onProgress, idempotencyKey]: McpCallArgs): Observable<{ readonly [key: string]: unknown }> {
    const { id, callTool, onInputRequired, maxInputRounds, stateless } = this.settings;
    const params = this.paramsOf(name, args, idempotencyKey);
    const once$ = this.admitted(() =>
      this.requestOnce(
        name,
        (options, alive) =>
          callInRounds(
            { server: id, tool: name, arguments: args, answer: onInputRequired, maxRounds: maxInputRounds, signal: options.signal, alive },
            (extra, manual) => callTool(extra === undefined ? params : { ...params, ...extra }, manual ? { ...options, allowInputRequired: true } : options),
          ),
        onProgress,
      ),
    );
    // nothing resumes a broken stream on a stateless connection: a tool not safe to repeat that may have run is not retried, its outcome unknown
    const unresumed$ = idempotent
      ? once$
      : once$.pipe(
          catchError((error: unknown) => throwError(() => (stateless() && mayHaveRun(error) ? new McpOutcomeUnknownError(id, name, { cause: error }) : error))),
        );
    const outcome = (): void => this.afterOutcome();
    return (idempotent && this.reconnection ? unresumed$.pipe(this.againOnExpiredSession) : unresumed$).pipe(
      this.breaker,
      tap({ error: outcome, complete: outcome }),
    );
  }

  /**
   * The params of a `tools/call`: the one place a call's request is made up, its `_meta` included
   * (where an idempotency key for a tool not safe to repeat belongs, so that a server can tell a
   * repeat from a new call). Every round of a multi-round call sends these, with its answers.
   */
  private paramsOf(name: string, args: Record<string, unknown>, idempotencyKey: string | undefined): McpCallParams {
    const params: McpCallParams =
      idempotencyKey === undefined || idempotencyKey === ''
        ? { name, arguments: args }
        : { name, arguments: args, _meta: { [IDEMPOTENCY_META_KEY]: idempotencyKey } };
    // with MCP Tasks, marked: the extension declared, a task answer read back (taskWire.ts)
    return this.settings.tasks === undefined ? params : this.settings.tasks.wire.mark(params);
  }

  /**
   * One request (a `tools/call`, a `ping`, the proxy's prompts, resources, completions…), as a
   * cold observable: `send` makes it with the options it is handed, on a live connection
   * (reconnected first when known broken), with a call's deadlines and cancellation — not under
   * the breaker, and never made again. `label` names it in errors.
   */
  request<T>(label: string, send: (options: McpRequestOptions) => Promise<T>, onProgress?: McpProgressListener): Observable<T> {
    return this.admitted(() => this.requestOnce(label, (options) => send(options), onProgress));
  }

  /**
   * Work that needs a live connection: reconnected first (with a transport factory) when the
   * connection is known broken — a call found it so, or its transport closed since (a server that
   * died between calls: the next call is not sent to a closed transport, so even a destructive one
   * runs, once, on the new connection) — then `work()` (which cancels its own request when
   * unsubscribed). Its failures are translated (errors.ts) and a broken connection remembered.
   */
  private admitted<T>(work: () => Observable<T>): Observable<T> {
    const run = (): Observable<T> => {
      const generation = this.generation;
      return work().pipe(tap({ error: (error: unknown) => this.noteFailure(error, generation) }));
    };
    return defer(() => {
      if (this.transportClosed()) this.stale = true;
      // without a factory there is nothing to reconnect with: the client says how it is
      return this.stale && this.reconnection ? concat(this.reconnection.connected$, defer(run)) : run();
    });
  }

  /** The SDK's client has no transport any more: it closed (a client without the property never says so). */
  private transportClosed(): boolean {
    const { client } = this.settings;
    return 'transport' in client && client.transport === undefined;
  }

  /**
   * Remembers a broken connection (the next admitted call reconnects): its transport closed
   * (`McpConnectionError`: closed, not connected, a broken pipe) or its session expired — and only
   * for a failure of the current connection (an old one's late failure says nothing of the new).
   * A network error of one exchange (`fetch failed`, a refused or reset HTTP request) is not a dead
   * connection: over Streamable HTTP the next request goes out on the same session, and the calls
   * in flight on it keep their answers.
   */
  private noteFailure(error: unknown, generation: number): void {
    if (generation !== this.generation) return;
    if (error instanceof McpSessionExpiredError || error instanceof McpConnectionError) this.stale = true;
  }

  /**
   * One request, its deadlines on the scheduler (`degradeAfter`, degrading to the timeout's
   * error): `timeoutMs` from the start, pushed back by each progress notification (the SDK's
   * `onprogress`, which also makes it send a progress token), and `maxTotalTimeoutMs` in all. The
   * SDK's own timer is a backstop at the longest delay a timer holds (reset by progress too), so
   * its 60 s default never cuts a long tool. A deadline that passes unsubscribes the request, which
   * cancels it before the error goes downstream: the server hears of it whatever downstream does.
   */
  private requestOnce<T>(
    name: string,
    send: (options: McpRequestOptions, alive: () => void) => PromiseLike<T>,
    onProgress: McpProgressListener | undefined,
  ): Observable<T> {
    const { id, timeoutMs } = this.settings;
    const request$ = new Observable<T | typeof PROGRESS>((subscriber) => {
      const cancel = new AbortController();
      let settled = false;
      // a round of a multi-round call came back, or was answered: the idle deadline starts again
      const alive = (): void => void (subscriber.closed || subscriber.next(PROGRESS));
      let answer: PromiseLike<T>;
      try {
        answer = send(
          {
            signal: cancel.signal,
            timeout: MAX_TIMER_MS,
            resetTimeoutOnProgress: true,
            onprogress: (progress) => {
              if (subscriber.closed) return;
              subscriber.next(PROGRESS);
              const heard = onProgress && guard(onProgress, progress);
              if (heard instanceof Thrown) subscriber.error(heard.error);
            },
          },
          alive,
        );
      } catch (error) {
        // a client that throws instead of rejecting: an error downstream
        subscriber.error(mcpFailure(id, name, error, timeoutMs));
        return undefined;
      }
      answer.then(
        (result) => {
          settled = true;
          subscriber.next(result);
          subscriber.complete();
        },
        (error: unknown) => {
          settled = true;
          subscriber.error(mcpFailure(id, name, error, timeoutMs));
        },
      );
      // left before the answer (or a deadline passed): the request is cancelled, never after it came
      return () => void (settled || cancel.abort(unsubscribed()));
    });
    return request$.pipe(this.deadlinesOf(name)) as Observable<T>;
  }

  /**
   * The deadlines of the requests named `name`, made once per name (`degradeAfter` checks its
   * options when it is made; the names are the server's tools and the proxy's request methods),
   * the progress notifications dropped between the two.
   */
  private deadlinesOf(name: string): OperatorFunction<unknown, unknown> {
    let deadlines = this.deadlines.get(name);
    if (deadlines === undefined) {
      const { id, timeoutMs, maxTotalTimeoutMs, scheduler } = this.settings;
      const idle =
        timeoutMs === Infinity
          ? identity
          : deadline({ firstMs: timeoutMs, idleMs: timeoutMs }, scheduler, () => new McpTimeoutError(id, name, timeoutMs, 'idle'));
      const total =
        maxTotalTimeoutMs === Infinity
          ? identity
          : deadline({ firstMs: maxTotalTimeoutMs }, scheduler, () => new McpTimeoutError(id, name, maxTotalTimeoutMs, 'total'));
      deadlines = (request$) =>
        request$.pipe(
          idle,
          filter((event) => event !== PROGRESS),
          total,
        );
      this.deadlines.set(name, deadlines);
    }
    return deadlines;
  }

  /** After a call through the breaker: an open breaker makes the tools unavailable and starts the probing. */
  private afterOutcome(): void {
    if (this.settings.capabilities && this.watching === undefined && this.settings.breaker.state === 'open') this.degrade();
  }

  /**
   * The breaker opened: each tool is disabled in the registry (the model is told), and the breaker
   * followed — each half-open is probed with a `ping` through it (a reconnection first, if the
   * connection is broken); closed again, the tools are restored.
   */
  private degrade(): void {
    const { capabilities, breaker, id } = this.settings;
    const reason = `MCP server '${id}' is unavailable (circuit open)`;
    for (const name of this.names) capabilities!.disable(name, reason);
    this.watching = breaker.state$.subscribe((state) => {
      if (state === 'half-open') this.probe();
      else if (state === 'closed') this.restore();
    });
  }

  private probe(): void {
    this.probing?.unsubscribe();
    const ping$ = this.request('ping', (options) => this.settings.probe(options) as Promise<{ readonly [key: string]: unknown }>);
    // a failed probe re-opens the breaker: the next half-open probes again (no cap)
    // a probe whose permit outlived the half-open period (a slow reconnection) settles nothing: if
    // the breaker is half-open again with nobody probing, probe again
    const again = (): void => {
      if (this.watching !== undefined && this.settings.breaker.state === 'half-open') this.probe();
    };
    this.probing = ping$.pipe(this.breaker).subscribe({
      // rejected (another call holds the half-open slot): that call is the probe
      error: (error: unknown) => (error instanceof CircuitOpenError ? undefined : again()),
      complete: again,
    });
  }

  private restore(): void {
    this.watching?.unsubscribe();
    this.watching = undefined;
    // not unsubscribed: a probe that closed the breaker is still completing (this runs inside its
    // outcome), and one that did not finishes by its own timeout
    this.probing = undefined;
    for (const name of this.names) this.settings.capabilities!.enable(name);
  }

  /** Stops following the breaker (the tools stay as they are in the registry). */
  dispose(): void {
    this.watching?.unsubscribe();
    this.probing?.unsubscribe();
  }
}

/** A deadline on the scheduler (`degradeAfter`'s), missed: `error()` downstream, the source unsubscribed first. */
function deadline(
  at: { readonly firstMs: number; readonly idleMs?: number },
  scheduler: SchedulerLike,
  error: () => unknown,
): OperatorFunction<unknown, unknown> {
  return degradeAfter<unknown, never>(at, () => throwError(error), { scheduler });
}
