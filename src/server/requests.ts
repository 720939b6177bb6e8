/**
 * What the local provider records of the requests it serves: a request's record, what the server
 * reports as it works (`activity$`), and the log that keeps the last requests within their bounds,
 * reports each one's start and end, and answers `waitForRequest`.
 *
 * @module
 */
import { asyncScheduler, type Subject } from 'rxjs';
import { guard as guardCallback, Thrown } from '../core/rx/guard.js';
import type { ActiveFault, FaultKind } from './faults.js';
import type { Protocol } from './protocols.js';

/**
 * One request the server received, with what happened to it (updated while it runs).
 *
 * @example
 * ```ts
 * const done = server.requests.filter((r) => r.end === 'completed').length;
 * ```
 */
export interface RecordedRequest {
  /** `req_1`, `req_2`… (also the response's `x-request-id`). */
  readonly id: string;
  readonly protocol: Protocol;
  readonly path: string;
  /** Whether the request asked for a stream. */
  readonly stream: boolean;
  /** The parsed JSON body; absent when the body alone was larger than `maxRecordedBytes`. */
  readonly body: unknown;
  /** The body's size as received, in bytes. */
  readonly bodyBytes: number;
  /** Epoch ms. */
  readonly startedAt: number;
  /** The HTTP status sent; absent while waiting or when the connection was destroyed first. */
  readonly status?: number;
  /** Kinds of the faults that acted on it, in order. */
  readonly faults: readonly FaultKind[];
  /** Content chunks (tokens, tool-argument pieces) written. */
  readonly chunks: number;
  /**
   * Input tokens read from the prompt cache, as the answer's usage reports them (Chat Completions
   * `prompt_tokens_details.cached_tokens`, Responses `input_tokens_details.cached_tokens`,
   * Anthropic `cache_read_input_tokens`); absent when none were, or before the request got that far.
   */
  readonly cacheRead?: number;
  /** Input tokens written to the prompt cache (Anthropic `cache_creation_input_tokens`); absent when none were. */
  readonly cacheWrite?: number;
  /**
   * How it ended: `'completed'` (the whole response sent), `'reset'` (the server destroyed the
   * connection: `down` or `reset` fault), `'client-closed'` (the client went away first, e.g. it
   * unsubscribed), `'server-closed'` (`close()` while it ran). Absent while it runs.
   */
  readonly end?: 'completed' | 'reset' | 'client-closed' | 'server-closed';
  /** Epoch ms, once ended. */
  readonly endedAt?: number;
}

/**
 * What the server reports as it works (`activity$`, and `/admin/events` over SSE).
 *
 * @example
 * ```ts
 * server.activity$.subscribe((a) => a.type === 'request-end' && console.log(a.request.id, a.request.end));
 * ```
 */
export type ProviderActivity =
  | { readonly type: 'request-start'; readonly request: RecordedRequest }
  | { readonly type: 'request-end'; readonly request: RecordedRequest }
  | { readonly type: 'faults'; readonly faults: readonly ActiveFault[] };

/** A record while its request runs: its fields are filled in as it goes. */
export type MutableRequest = { -readonly [K in keyof RecordedRequest]: RecordedRequest[K] } & { faults: FaultKind[] };

/** A `waitForRequest` not answered yet. */
interface Waiter {
  readonly predicate: (request: RecordedRequest) => boolean;
  readonly resolve: (request: RecordedRequest) => void;
  readonly reject: (error: unknown) => void;
}

/** Why a wait ends unanswered: the server closed first. */
const closedBeforeMatch = (name: string): Error => new Error(`rxheal local provider '${name}' closed before a request it waited for ended`);

/** A record as users see it: a copy (its faults too), which the request running on does not change. */
export const snapshot = (r: MutableRequest): RecordedRequest => ({ ...r, faults: [...r.faults] });

/** Bytes a record holds (a body too large to keep holds none). */
const held = (r: MutableRequest): number => (r.body === undefined ? 0 : r.bodyBytes);

/**
 * The requests one local provider keeps — the last `maxRecordedRequests`, within
 * `maxRecordedBytes` of bodies — with the `request-start` / `request-end` activity of each, and
 * the waits for one to end (`waitForRequest`).
 */
export class RequestLog {
  private readonly requests: MutableRequest[] = [];
  /** Bytes of the bodies `requests` holds. */
  private recordedBytes = 0;
  private readonly waiters = new Set<Waiter>();

  constructor(
    private readonly name: string,
    private readonly maxRecordedRequests: number,
    private readonly maxRecordedBytes: number,
    private readonly activity: Subject<ProviderActivity>,
  ) {}

  /** The records kept, oldest first (snapshots). */
  list(): RecordedRequest[] {
    return this.requests.map(snapshot);
  }

  /** Keeps a record, dropping the oldest past the count and byte bounds (and a body too large on its own), and reports its start. */
  start(record: MutableRequest): void {
    const { requests, maxRecordedRequests, maxRecordedBytes } = this;
    if (record.bodyBytes > maxRecordedBytes) record.body = undefined;
    this.recordedBytes += held(record);
    requests.push(record);
    while (requests.length > maxRecordedRequests || this.recordedBytes > maxRecordedBytes) {
      const oldest = requests.shift();
      if (oldest === undefined) break;
      this.recordedBytes -= held(oldest);
    }
    this.activity.next({ type: 'request-start', request: snapshot(record) });
  }

  /** A request ended (once: later ends are ignored): reported, and the waits it matches answered. */
  finish(record: MutableRequest, end: NonNullable<RecordedRequest['end']>): void {
    if (record.end !== undefined) return;
    record.end = end;
    record.endedAt = asyncScheduler.now();
    const done = snapshot(record);
    this.activity.next({ type: 'request-end', request: done });
    for (const waiter of this.waiters) {
      const matches = guardCallback(waiter.predicate, done);
      if (matches instanceof Thrown) {
        this.waiters.delete(waiter);
        waiter.reject(matches.error);
      } else if (matches) {
        this.waiters.delete(waiter);
        waiter.resolve(done);
      }
    }
  }

  /** `waitForRequest`: a request that ended already and matches, else the next to end that does; `closing`: none will. */
  waitFor(predicate: (request: RecordedRequest) => boolean, closing: boolean): Promise<RecordedRequest> {
    for (const r of this.requests) {
      if (r.end === undefined) continue;
      const done = snapshot(r);
      const matches = guardCallback(predicate, done);
      if (matches instanceof Thrown) return Promise.reject(matches.error);
      if (matches) return Promise.resolve(done);
    }
    if (closing) return Promise.reject(closedBeforeMatch(this.name));
    return new Promise((resolveWait, rejectWait) => this.waiters.add({ predicate, resolve: resolveWait, reject: rejectWait }));
  }

  /** The server closed: no request ends from now on, so a wait none answered never will be. */
  close(): void {
    for (const waiter of this.waiters) waiter.reject(closedBeforeMatch(this.name));
    this.waiters.clear();
  }
}
