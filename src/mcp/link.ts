/**
 * {@link McpLink}: one MCP server as `fromMcp`'s tools see it — its client, its breaker, the
 * reconnection (a transport factory, behind the breaker, with backoff and no cap on attempts), the
 * capabilities its tools are while the breaker is open, and one call with its progress-reset
 * timeout. No framework import: the client is read by shape ({@link McpClient}).
 *
 * @module
 */
import { Observable, Subscription, type SchedulerLike } from 'rxjs';
import type { CircuitBreaker } from '../core/breaker/CircuitBreaker.js';
import type { CapabilityRegistry } from '../core/capabilities/CapabilityRegistry.js';
import { CircuitOpenError } from '../core/errors/errors.js';
import type { HealHub } from '../core/hub/hub.js';
import { backoffDelay, type BackoffPolicy } from '../core/rx/backoff.js';
import { after, MAX_TIMER_MS } from '../core/rx/wait.js';
import { underBreaker } from '../operators/circuitBreak.js';
import { McpConnectionError, McpSessionExpiredError, McpTimeoutError, mcpFailure } from './errors.js';

/** Request options `fromMcp` hands the client (the SDK's `RequestOptions`, the part it uses). */
export interface McpRequestOptions {
  /** Aborted when the call is cancelled: the SDK sends `notifications/cancelled`. */
  readonly signal?: AbortSignal;
  /** The SDK's own timer: `fromMcp` sets it to the longest a timer holds (its own deadline is on the scheduler). */
  readonly timeout?: number;
  /** Set: progress also resets the SDK's timer. */
  readonly resetTimeoutOnProgress?: boolean;
  /** The SDK's cap on the whole call (unused: `fromMcp`'s `maxTotalTimeoutMs` is on the scheduler). */
  readonly maxTotalTimeout?: number;
  /** Called on each progress notification; passing it makes the SDK send a progress token. */
  readonly onprogress?: McpProgressListener;
}

/**
 * Hears one progress notification of a call, as the SDK hands it over (`progress`, and `total`
 * and `message` when the server sent them).
 *
 * @example
 * ```ts
 * const listener: McpProgressListener = ({ progress, total }) => console.log(`${progress}/${total ?? '?'}`);
 * ```
 */
export type McpProgressListener = (progress: { progress: number; total?: number; message?: string }) => void;

/** A tool as `tools/list` describes it (the fields `fromMcp` reads). */
export interface McpToolInfo {
  /** The tool's name on the server. */
  readonly name: string;
  /** What it does, for the model. */
  readonly description?: string;
  /** The JSON Schema of its arguments (an object). */
  readonly inputSchema: { readonly type: 'object'; readonly [key: string]: unknown };
  /** The server's hints: which of them make a tool idempotent is `isIdempotentTool`'s rule. */
  readonly annotations?: {
    /** It changes nothing. */
    readonly readOnlyHint?: boolean;
    /** Calling it again with the same arguments has no further effect. */
    readonly idempotentHint?: boolean;
    /** It may destroy or overwrite something. */
    readonly destructiveHint?: boolean;
    readonly [key: string]: unknown;
  };
  readonly [key: string]: unknown;
}

/**
 * What `fromMcp` needs of an MCP client: the `@modelcontextprotocol/sdk` 1.x `Client`, connected
 * (`await client.connect(transport)`). `connect` and `close` are used only to reconnect, with
 * `fromMcp`'s `reconnect` transport factory.
 *
 * @example
 * ```ts
 * const client: McpClient = new Client({ name: 'my-agent', version: '1.0.0' });
 * await client.connect(new StdioClientTransport({ command: 'node', args: ['server.js'] }));
 * ```
 */
export interface McpClient {
  /** `tools/list`, one page (`nextCursor` asks for the next). */
  listTools(params?: { cursor?: string }, options?: McpRequestOptions): Promise<{ tools: readonly McpToolInfo[]; nextCursor?: string }>;
  /** `tools/call` (no result schema: the SDK's default). */
  callTool(
    params: { name: string; arguments?: Record<string, unknown> },
    resultSchema?: undefined,
    options?: McpRequestOptions,
  ): Promise<{ readonly [key: string]: unknown }>;
  /** `ping`: the probe of a half-open breaker. */
  ping(options?: McpRequestOptions): Promise<unknown>;
  /** Connects (and initialises) on a fresh transport: used to reconnect. */
  connect(transport: never): Promise<void>;
  /** Closes the current transport: used before reconnecting. */
  close(): Promise<void>;
  /** The server's name and version from initialisation (its name is the default `id`). */
  getServerVersion(): { readonly name: string; readonly version: string } | undefined;
  /**
   * The SDK's current transport: `undefined` once it closed (a stdio server's process exited, the
   * client was closed), so the next call reconnects before it is sent. A client without the
   * property is taken as connected until a call finds otherwise.
   */
  readonly transport?: unknown;
}

/** What makes a fresh transport for a reconnection (a transport can't be restarted once closed). */
export type McpTransportFactory = () => unknown;

/** How a link is set up: what `fromMcp` resolved from its options. */
export interface LinkSettings {
  readonly id: string;
  readonly client: McpClient;
  readonly breaker: CircuitBreaker;
  readonly hub: HealHub | undefined;
  readonly capabilities: CapabilityRegistry | undefined;
  readonly reconnect: McpTransportFactory | undefined;
  readonly backoff: BackoffPolicy;
  readonly timeoutMs: number;
  readonly maxTotalTimeoutMs: number;
  readonly scheduler: SchedulerLike;
}

/**
 * `call$` once more when it fails with {@link McpSessionExpiredError} (the server never ran it; the
 * connection is marked broken, so the second run opens a new session first); any other outcome,
 * and a second expiry, as it is.
 */
function againOnExpiredSession<T>(call$: Observable<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    const runs = new Subscription();
    const run = (again: boolean): void => {
      runs.add(
        call$.subscribe({
          next: (value) => subscriber.next(value),
          error: (error: unknown) => (again && error instanceof McpSessionExpiredError ? run(false) : subscriber.error(error)),
          complete: () => subscriber.complete(),
        }),
      );
    };
    run(true);
    return runs;
  });
}

/** The reason a signal is aborted when the caller leaves. */
const unsubscribed = (): DOMException => new DOMException('The consumer unsubscribed', 'AbortError');

/**
 * One MCP server: calls go through its breaker; a broken connection is re-established (when a
 * transport factory was given) by the next call the breaker admits, never sooner than the backoff
 * after the last failed attempt; while the breaker is open, the server's tools are unavailable in
 * the capability registry and a probe (`ping`) runs each time it turns half-open.
 */
export class McpLink {
  /** The connection is known broken: the next admitted call reconnects first. */
  private stale = false;
  /** Counts the connections: a failure marks the link broken only if it is of the current one. */
  private generation = 0;
  private connecting: Promise<void> | undefined;
  /** Reconnections that failed in a row, and when the next may start (scheduler time). */
  private failedReconnects = 0;
  private previousDelay = 0;
  private nextReconnectAt = 0;
  /** The capability names of the server's tools (kept current by `fromMcp`). */
  names: readonly string[] = [];
  /** Following the breaker while its tools are degraded. */
  private watching: Subscription | undefined;
  private probing: Subscription | undefined;

  constructor(readonly settings: LinkSettings) {
    settings.hub?.watch(settings.breaker);
  }

  /**
   * One `tools/call` through the breaker, as a cold observable of the raw result: unsubscribing
   * cancels it (the server gets `notifications/cancelled`). A session found expired is
   * re-initialised and, for an idempotent tool, the call made once more — under the same permit:
   * the breaker sees one call (a restarted server that answers is not a failure).
   */
  call(name: string, args: Record<string, unknown>, idempotent: boolean, onProgress?: McpProgressListener): Observable<{ readonly [key: string]: unknown }> {
    const once$ = this.admitted(() => this.callOnce(name, args, onProgress));
    const guarded$ = this.guarded(idempotent && this.settings.reconnect ? againOnExpiredSession(once$) : once$);
    return new Observable<{ readonly [key: string]: unknown }>((subscriber) =>
      guarded$.subscribe({
        next: (value) => subscriber.next(value),
        error: (error: unknown) => {
          this.afterOutcome();
          subscriber.error(error);
        },
        complete: () => {
          this.afterOutcome();
          subscriber.complete();
        },
      }),
    );
  }

  /**
   * One request of another kind (the proxy's prompts, resources, completions…), as a cold
   * observable: `send` makes it with the options it is handed, on a live connection (reconnected
   * first when known broken), with a call's deadlines and cancellation — not under the breaker,
   * and never made again. `label` names it in errors.
   */
  request<T>(label: string, send: (options: McpRequestOptions) => Promise<T>, onProgress?: McpProgressListener): Observable<T> {
    return this.admitted(() => this.requestOnce(label, send, onProgress));
  }

  /**
   * Work that needs a live connection: reconnected first (with a transport factory) when the
   * connection is known broken — a call found it so, or its transport closed since (a server that
   * died between calls: the next call is not sent to a closed transport, so even a destructive one
   * runs, once, on the new connection) — then `work()` (which cancels its own request when
   * unsubscribed). Its failures are translated (errors.ts) and a broken connection remembered.
   */
  private admitted<T>(work: () => Observable<T>): Observable<T> {
    return new Observable<T>((subscriber) => {
      let inner: Subscription | undefined;
      const start = (): void => {
        if (subscriber.closed) return;
        const generation = this.generation;
        inner = work().subscribe({
          next: (value) => subscriber.next(value),
          error: (error: unknown) => {
            this.noteFailure(error, generation);
            subscriber.error(error);
          },
          complete: () => subscriber.complete(),
        });
      };
      if (this.transportClosed()) this.stale = true;
      const { reconnect } = this.settings;
      // without a factory there is nothing to reconnect with: the client says how it is
      if (!this.stale || !reconnect) start();
      else this.ensureConnected(reconnect).then(start, (error: unknown) => subscriber.error(error));
      return () => inner?.unsubscribe();
    });
  }

  /** The SDK's client has no transport any more: it closed (a client without the property never says so). */
  private transportClosed(): boolean {
    const { client } = this.settings;
    return 'transport' in client && client.transport === undefined;
  }

  /** `source` under the server's breaker (the hub told of its transitions once, at construction). */
  private guarded<T>(source: Observable<T>): Observable<T> {
    return underBreaker(source, this.settings.breaker, this.settings.hub);
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
   * A fresh connection (one at a time): the old transport closed, a new one from the factory, the
   * client connected (initialised) on it. Sooner than the backoff after the last failed attempt, it
   * fails at once with an {@link McpConnectionError}.
   */
  private ensureConnected(reconnect: McpTransportFactory): Promise<void> {
    const { client, id, scheduler, backoff } = this.settings;
    if (this.connecting) return this.connecting;
    const wait = this.nextReconnectAt - scheduler.now();
    if (wait > 0) return Promise.reject(new McpConnectionError(id, `not connected; next reconnection attempt in ${Math.ceil(wait)} ms`));
    const attempt = (async (): Promise<void> => {
      await client.close().catch(() => undefined);
      const transport = await reconnect();
      await client.connect(transport as never);
    })();
    this.connecting = attempt.then(
      () => {
        this.connecting = undefined;
        this.generation++;
        this.stale = false;
        this.failedReconnects = 0;
        this.nextReconnectAt = 0;
      },
      (error: unknown) => {
        this.connecting = undefined;
        const delay = backoffDelay(this.failedReconnects++, this.previousDelay || backoff.initialBackoffMs, backoff);
        this.previousDelay = delay;
        this.nextReconnectAt = scheduler.now() + delay;
        throw new McpConnectionError(id, `reconnection failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      },
    );
    return this.connecting;
  }

  /** One `tools/call` (requestOnce's rules). */
  private callOnce(name: string, args: Record<string, unknown>, onProgress: McpProgressListener | undefined): Observable<{ readonly [key: string]: unknown }> {
    return this.requestOnce(name, (options) => this.settings.client.callTool({ name, arguments: args }, undefined, options), onProgress);
  }

  /**
   * One request: its own deadline on the scheduler — `timeoutMs` from the start, pushed back by
   * each progress notification (the SDK's `onprogress`, which also makes it send a progress
   * token), and `maxTotalTimeoutMs` in all. The SDK's own timer is a backstop at the longest
   * delay a timer holds (reset by progress too), so its 60 s default never cuts a long tool.
   */
  private requestOnce<T>(name: string, send: (options: McpRequestOptions) => Promise<T>, onProgress: McpProgressListener | undefined): Observable<T> {
    const { id, timeoutMs, maxTotalTimeoutMs, scheduler } = this.settings;
    return new Observable<T>((subscriber) => {
      const cancel = new AbortController();
      let settled = false;
      const stop = (reason: unknown): void => {
        if (!cancel.signal.aborted) cancel.abort(reason);
      };
      const timeUp = (kind: 'idle' | 'total'): void => {
        const error = new McpTimeoutError(id, name, kind === 'idle' ? timeoutMs : maxTotalTimeoutMs, kind);
        // cancelled first: the server hears of it whatever downstream does with the error
        stop(error);
        subscriber.error(error);
      };
      let idle: Subscription | undefined;
      const arm = (): void => {
        idle?.unsubscribe();
        idle = after(timeoutMs, scheduler, () => timeUp('idle'));
      };
      let answer: Promise<T>;
      try {
        answer = send({
          signal: cancel.signal,
          timeout: MAX_TIMER_MS,
          resetTimeoutOnProgress: true,
          onprogress: (progress) => {
            if (subscriber.closed) return;
            arm();
            onProgress?.(progress);
          },
        });
      } catch (error) {
        // a client that throws instead of rejecting: an error downstream, no deadline armed
        subscriber.error(mcpFailure(id, name, error, timeoutMs));
        return undefined;
      }
      // armed once the request is sent, at the same scheduler time (the answer comes later, never before)
      arm();
      const total = after(maxTotalTimeoutMs, scheduler, () => timeUp('total'));
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
      return () => {
        idle?.unsubscribe();
        total.unsubscribe();
        // left before the answer (or timed out): the request is cancelled, never after it came
        if (!settled) stop(unsubscribed());
      };
    });
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
    const ping$ = this.admitted(
      () =>
        new Observable<unknown>((subscriber) => {
          const cancel = new AbortController();
          let settled = false;
          this.settings.client.ping({ signal: cancel.signal, timeout: Math.min(this.settings.timeoutMs, MAX_TIMER_MS) }).then(
            (value) => {
              settled = true;
              subscriber.next(value);
              subscriber.complete();
            },
            (error: unknown) => {
              settled = true;
              subscriber.error(mcpFailure(this.settings.id, 'ping', error, this.settings.timeoutMs));
            },
          );
          return () => {
            if (!settled) cancel.abort(unsubscribed());
          };
        }),
    );
    // a failed probe re-opens the breaker: the next half-open probes again (no cap)
    // a probe whose permit outlived the half-open period (a slow reconnection) settles nothing: if
    // the breaker is half-open again with nobody probing, probe again
    const again = (): void => {
      if (this.watching !== undefined && this.settings.breaker.state === 'half-open') this.probe();
    };
    this.probing = this.guarded(ping$).subscribe({
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
