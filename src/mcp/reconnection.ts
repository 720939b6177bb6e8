/**
 * {@link Reconnection}: re-establishing one MCP server's broken connection, as calls need it — an
 * attempt when a call asks, one at a time (the calls that ask meanwhile wait for it), and after a
 * failed one no attempt before its backoff is over (the calls that ask meanwhile are refused at
 * once). The loop is `retryWithBackoff` over "the next asked-for attempt", with no cap on attempts.
 *
 * @module
 */
import { concatMap, defer, Observable, of, Subject, take, type MonoTypeOperatorFunction, type SchedulerLike, type Subscriber, type Subscription } from 'rxjs';
import { classifyError, type ErrorClassifier } from '../core/errors/classify.js';
import { inBackground } from '../core/rx/wait.js';
import { retryWithBackoff, type RetryInfo } from '../operators/retryWithBackoff.js';
import { McpConnectionError } from './errors.js';

/** What makes a fresh transport for a reconnection (a transport can't be restarted once closed). */
export type McpTransportFactory = () => unknown;

/** What a reconnection uses of an MCP client: closing the old transport, connecting on a new one. */
export interface Reconnectable {
  connect(transport: never): Promise<void>;
  close(): Promise<void>;
}

/** How one server's reconnection is set up. */
export interface ReconnectionSettings {
  /** The server's id, in errors. */
  readonly id: string;
  readonly client: Reconnectable;
  readonly reconnect: McpTransportFactory;
  /** The wait after the first failed attempt (doubled after each further one, at most `maxMs`, "equal" jitter). */
  readonly initialMs: number;
  readonly maxMs: number;
  readonly scheduler: SchedulerLike;
}

/**
 * Every failed attempt is worth another (the server may come back at any time): the classifier's
 * verdict with `retryable` set, so a `retry-after` the failure carried is still honoured.
 */
const everyFailure: ErrorClassifier = (error, context) => ({ ...classifyError(error, context), retryable: true });

/**
 * One server's reconnection. {@link connected$} is what a call waits on before it is sent on a
 * connection known to be broken; `onConnected` is told of each new connection (before the
 * waiting calls go on).
 */
export class Reconnection {
  /** A call asks for an attempt (heard only while the loop is ready for one). */
  private readonly asks = new Subject<void>();
  /** The calls waiting for the attempt under way (or the next one). */
  private readonly waiting = new Set<Subscriber<never>>();
  /** The loop, while the connection is broken. */
  private loop: Subscription | undefined;
  /** While the loop waits out a failed attempt's backoff: when the next attempt may start (scheduler time). */
  private retryAt: number | undefined;
  private readonly retry: MonoTypeOperatorFunction<unknown>;

  constructor(
    private readonly settings: ReconnectionSettings,
    private readonly onConnected: () => void,
  ) {
    const { initialMs, maxMs, scheduler } = settings;
    this.retry = retryWithBackoff<unknown>({
      maxRetries: Infinity,
      // the first wait is capped like every other (initialMs above maxMs: maxMs)
      initialBackoffMs: Math.min(initialMs, maxMs),
      // no cap (Infinity): the largest finite number, which retryWithBackoff takes
      maxBackoffMs: Math.min(maxMs, Number.MAX_VALUE),
      classifier: everyFailure,
      maxRetryAfterMs: Infinity,
      onRetry: (info) => this.backingOff(info),
      // nobody waits on the backoff itself: it must not keep a process alive
      scheduler: inBackground(scheduler),
    });
  }

  /**
   * Completes once the client is connected on a fresh transport: the attempt under way joined, or
   * one made now. Errors with an {@link McpConnectionError}: the attempt failed, or (at once) one
   * failed less than its backoff ago.
   */
  readonly connected$: Observable<never> = new Observable<never>((subscriber) => {
    const { id, scheduler } = this.settings;
    const wait = this.retryAt === undefined ? 0 : this.retryAt - scheduler.now();
    if (wait > 0) return subscriber.error(new McpConnectionError(id, `not connected; next reconnection attempt in ${Math.ceil(wait)} ms`));
    this.waiting.add(subscriber);
    this.loop ??= this.start();
    this.asks.next();
    return () => void this.waiting.delete(subscriber);
  });

  /**
   * The loop: each (re)subscription waits for a call to ask — or starts at once when calls are
   * already waiting (they asked while a backoff was ending) — and makes one attempt; a failure is
   * retried after the backoff, a success ends the loop.
   */
  private start(): Subscription {
    const attempts$ = defer(() => {
      this.retryAt = undefined;
      // calls that asked while the backoff was ending are waiting already: no other ask to wait for
      const asked$ = this.waiting.size > 0 ? of(undefined) : this.asks.pipe(take(1));
      return asked$.pipe(concatMap(() => this.attempt()));
    });
    return attempts$.pipe(this.retry).subscribe({
      next: () => {
        this.loop = undefined;
        this.onConnected();
        this.settle((subscriber) => subscriber.complete());
      },
      // the loop gives up only if something throws inside it: the waiting calls hear of it
      error: (error: unknown) => {
        this.loop = undefined;
        this.retryAt = undefined;
        this.settle((subscriber) => subscriber.error(this.failed(error)));
      },
    });
  }

  /** One attempt: the old transport closed, a new one from the factory, the client connected (initialised) on it. */
  private attempt(): Observable<unknown> {
    const { client, reconnect } = this.settings;
    return defer(async () => {
      await client.close().catch(() => undefined);
      await client.connect((await reconnect()) as never);
    });
  }

  /** An attempt failed: no other before the backoff is over, and the calls that waited for it fail. */
  private backingOff(info: RetryInfo): void {
    this.retryAt = this.settings.scheduler.now() + info.delayMs;
    const error = this.failed(info.error);
    this.settle((subscriber) => subscriber.error(error));
  }

  private failed(error: unknown): McpConnectionError {
    return new McpConnectionError(this.settings.id, `reconnection failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }

  /** Every waiting call told, once (what it does next may ask again). */
  private settle(tell: (subscriber: Subscriber<never>) => void): void {
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const subscriber of waiting) tell(subscriber);
  }
}
