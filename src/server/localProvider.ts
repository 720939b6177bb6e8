/**
 * A local LLM provider: a real HTTP server on 127.0.0.1 that speaks OpenAI's Chat Completions and
 * Anthropic's Messages protocols (streaming and not), backed by a deterministic scripted
 * assistant, with faults you switch on and off by option, in-process, or over HTTP. For demos
 * and for integration tests that need no API key and no network. Node only. Faults are in
 * `faults.ts`, the wire protocols in `protocols.ts`.
 *
 * @module
 */
// Node-only module: the library's build has no ambient Node types (its other modules are browser-safe)
/// <reference types="node" />
import { STATUS_CODES, createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { asyncScheduler, Observable, Subject } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import { guard as guardCallback, Thrown } from '../core/rx/guard.js';
import type { Message } from '../core/events/events.js';
import { Bool, Func, NonEmptyString, NonNegativeInteger, PositiveInteger, check, validateOptions } from '../core/errors/options.js';
import { scriptedAssistant, tokenize, type Assistant, type AssistantRequest, type AssistantTool, type AssistantTurn } from './assistant.js';
import { FaultController, TimerDelayMs, type ActiveFault, type Fault, type FaultKind } from './faults.js';
import { parseOrigin, requestGuard, type RequestGuard } from './guard.js';
import {
  anthropicFrames,
  asksForThinking,
  thinkingSignature,
  toolsAllowed,
  anthropicJson,
  argumentPieces,
  BadRequest,
  errorBody,
  fromAnthropic,
  fromOpenAI,
  isRecord,
  malformedFrame,
  openAIFrames,
  openAIJson,
  sse,
  streamErrorFrame,
  type Answer,
  type Protocol,
  type ToolCallOut,
} from './protocols.js';

export type { ActiveFault, BadToolArgsFault, DownFault, Fault, FaultBase, FaultKind, MalformedFault, ResetFault, SlowFirstByteFault, StallFault, StatusFault, StreamErrorFault } from './faults.js';
export { FaultController, validateFault } from './faults.js';
export type { Protocol } from './protocols.js';

/**
 * Options of {@link startLocalProvider}.
 *
 * @example
 * ```ts
 * const options: LocalProviderOptions = { name: 'primary', tokenDelayMs: 2, faults: [{ kind: 'status', status: 503 }] };
 * ```
 */
export interface LocalProviderOptions {
  /** Port to listen on. Defaults to 0: any free port (read it from `port` / `url`). */
  readonly port?: number;
  /** Address to bind. Defaults to `'127.0.0.1'`. */
  readonly host?: string;
  /** A name for this instance, sent as `x-provider-name` and shown by `/health`. Defaults to `'local'`. */
  readonly name?: string;
  /** Faults active from the start. None by default. */
  readonly faults?: Fault | readonly Fault[];
  /** Wait before each streamed content chunk (token or tool-argument piece), in ms. Defaults to 15. */
  readonly tokenDelayMs?: number;
  /** What answers. Defaults to {@link scriptedAssistant}. */
  readonly assistant?: Assistant;
  /**
   * Browser origins allowed to call the server (CORS, and the `Origin` check on every route):
   * exact origins such as `'http://127.0.0.1:5173'`. A request whose `Origin` is neither one of
   * these nor the server's own is refused with 403; requests without an `Origin` (Node, curl, the
   * SDKs) pass. Defaults to the demo page's: `['http://127.0.0.1:5173', 'http://localhost:5173']`.
   */
  readonly allowedOrigins?: readonly string[];
  /**
   * More `Host` values to answer to (`'name:port'`), besides `127.0.0.1:<port>`,
   * `localhost:<port>`, `[::1]:<port>` and the bound address. Any other `Host` is refused with 403
   * on every route (DNS rebinding). None by default.
   */
  readonly allowedHosts?: readonly string[];
  /**
   * Answer Chromium's Private Network Access preflight (`access-control-request-private-network`)
   * with `access-control-allow-private-network: true`, for allowed origins only: needed only when
   * a page on a public address calls this server. Defaults to false.
   */
  readonly allowPrivateNetwork?: boolean;
  /** How many requests `requests` and `/admin/requests` keep (the oldest go first). Defaults to 1000. */
  readonly maxRecordedRequests?: number;
  /**
   * How many bytes of request bodies (UTF-8, as received) `requests` keeps in all: past it the
   * oldest records go first; a body larger than this on its own is not kept (`body` absent,
   * `bodyBytes` says how large it was). Defaults to 16 MiB.
   */
  readonly maxRecordedBytes?: number;
  /** Largest request body accepted, in bytes (a larger one gets 413). Defaults to 4 MiB. */
  readonly maxBodyBytes?: number;
  /**
   * Per `/admin/events` client: bytes the server may hold for a reader slower than the events.
   * Past it, events are dropped, and once the reader catches up it gets `event: dropped`
   * (`{ type: 'dropped', count }`) followed by the current faults. Defaults to 1 MiB.
   */
  readonly eventsBufferBytes?: number;
}

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

/**
 * A running local provider.
 *
 * @example
 * ```ts
 * const server = await startLocalProvider({ name: 'primary' });
 * const model = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' });
 * // …
 * await server.close();
 * ```
 */
export interface LocalProvider {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  readonly url: string;
  /** Base URL for `openAICompatibleModel` / OpenAI SDKs: `<url>/v1`. */
  readonly openAIBaseURL: string;
  /** Base URL for `anthropicModel` / Anthropic SDKs: `<url>`. */
  readonly anthropicBaseURL: string;
  readonly port: number;
  readonly name: string;
  /** This instance's faults. */
  readonly faults: FaultController;
  /** Requests received, oldest first (the last `maxRecordedRequests`, within `maxRecordedBytes`). */
  readonly requests: readonly RecordedRequest[];
  /** Requests starting and ending, and fault changes, as they happen (hot). */
  readonly activity$: Observable<ProviderActivity>;
  /**
   * Resolves once a request ends that matches `predicate` (or has already ended). Rejects when
   * the server closes before one did (requests running then end `'server-closed'` first, and
   * resolve the waits they match), at once when it is closed already, and with what `predicate`
   * threw, when it throws.
   */
  waitForRequest(predicate?: (request: RecordedRequest) => boolean): Promise<RecordedRequest>;
  /** Stops listening and drops every open connection (stalled streams included). Idempotent. */
  close(): Promise<void>;
}

const optionProps = {
  port: check('an integer from 0 to 65535', (u): u is number => Number.isInteger(u) && (u as number) >= 0 && (u as number) <= 65535),
  host: NonEmptyString,
  name: NonEmptyString,
  faults: check('a fault or an array of faults', (u): u is Fault | Fault[] => typeof u === 'object' && u !== null),
  tokenDelayMs: TimerDelayMs,
  assistant: Func,
  allowedOrigins: check('an array of origins', (u): u is string[] => Array.isArray(u)),
  allowedHosts: check("an array of 'host:port' strings", (u): u is string[] => Array.isArray(u) && u.every((h) => typeof h === 'string' && h !== '')),
  allowPrivateNetwork: Bool,
  maxRecordedRequests: NonNegativeInteger,
  maxRecordedBytes: NonNegativeInteger,
  maxBodyBytes: PositiveInteger,
  eventsBufferBytes: NonNegativeInteger,
};

/**
 * The demo page's origins (`npm start` on its default port): the default `allowedOrigins` of
 * {@link startLocalProvider}.
 *
 * @example
 * ```ts
 * const server = await startLocalProvider({ allowedOrigins: [...DEFAULT_ALLOWED_ORIGINS, 'http://localhost:3000'] });
 * ```
 */
export const DEFAULT_ALLOWED_ORIGINS: readonly string[] = ['http://127.0.0.1:5173', 'http://localhost:5173'];
/** What the local provider "thinks" before a turn: the question, and what it will do about it. */
function reasoningFor(messages: readonly Message[], calls: readonly ToolCallOut[]): string {
  let question = '';
  for (const m of messages) if (m.role === 'user') question = m.content;
  const asked = question.length > 80 ? `${question.slice(0, 80)}…` : question;
  const plan = calls.length > 0 ? `I'll call ${calls.map((c) => c.name).join(' and ')}.` : 'I can answer from what I have.';
  return `The user asks: "${asked}". ${plan}`;
}

const MIB = 1024 * 1024;
const EXPOSED_HEADERS = 'retry-after, retry-after-ms, x-should-retry, x-request-id, x-provider-name';

/** A `waitForRequest` not answered yet. */
interface Waiter {
  readonly predicate: (request: RecordedRequest) => boolean;
  readonly resolve: (request: RecordedRequest) => void;
  readonly reject: (error: unknown) => void;
}

/** Why a wait ends unanswered: the server closed first. */
const closedBeforeMatch = (name: string): Error => new Error(`rxheal local provider '${name}' closed before a request it waited for ended`);

type MutableRequest = { -readonly [K in keyof RecordedRequest]: RecordedRequest[K] } & { faults: FaultKind[] };

/**
 * Starts a local provider: a real HTTP server speaking OpenAI's Chat Completions
 * (`POST /v1/chat/completions`) and Anthropic's Messages (`POST /v1/messages`), streamed (SSE)
 * or not, answered by a deterministic scripted assistant that streams text token by token and
 * calls tools ({@link scriptedAssistant}), with faults per instance (see {@link Fault}): HTTP
 * statuses with `retry-after` / `x-should-retry`, down, connection reset after N chunks, stall,
 * slow first byte, malformed chunk, mid-stream error event, bad tool arguments.
 *
 * Admin endpoints (never affected by faults): `GET /health`; `GET /admin/faults` → `{ faults }`;
 * `POST /admin/faults` with `{ faults: [...] }` replaces them all, with one fault `{ kind, … }`
 * adds it (201); `DELETE /admin/faults` clears, `DELETE /admin/faults/<id>` removes one;
 * `GET /admin/requests` → `{ requests }`; `GET /admin/events` → an SSE stream of
 * {@link ProviderActivity} (a slow reader gets `event: dropped` instead of unbounded buffering).
 *
 * Guarded, on every route: a `Host` other than this server's loopback names (`127.0.0.1:<port>`,
 * `localhost:<port>`, `allowedHosts`) is refused with 403 (DNS rebinding), and so is an `Origin`
 * other than `allowedOrigins` (default: the demo page's, `http://127.0.0.1:5173` and
 * `http://localhost:5173`) or the server's own. An allowed origin gets CORS headers (echoed, with
 * `retry-after`, `x-should-retry`… exposed); requests without an `Origin` (Node, curl, SDKs) pass.
 * No Private Network Access grant unless `allowPrivateNetwork`. See docs/local-provider.md.
 *
 * @example
 * ```ts
 * const primary = await startLocalProvider({ name: 'primary', faults: [{ kind: 'status', status: 503 }] });
 * const secondary = await startLocalProvider({ name: 'secondary' });
 * const model = fallbackModel([
 *   openAICompatibleModel({ baseURL: primary.openAIBaseURL, model: 'local', id: 'primary' }),
 *   anthropicModel({ baseURL: secondary.anthropicBaseURL, model: 'local', id: 'secondary' }),
 * ]);
 * // …
 * await Promise.all([primary.close(), secondary.close()]);
 * ```
 * @throws {InvalidOptionError} at once (synchronously), for an invalid option or fault.
 */
export function startLocalProvider(options: LocalProviderOptions = {}): Promise<LocalProvider> {
  validateOptions('startLocalProvider', optionProps, options);
  const { port = 0, host = '127.0.0.1', name = 'local', tokenDelayMs = 15, assistant = scriptedAssistant, allowPrivateNetwork = false } = options;
  const { maxRecordedRequests = 1000, maxRecordedBytes = 16 * MIB, maxBodyBytes = 4 * MIB, eventsBufferBytes = MIB } = options;
  const allowedOrigins = (options.allowedOrigins ?? DEFAULT_ALLOWED_ORIGINS).map((o) => parseOrigin('startLocalProvider', 'allowedOrigins', o));
  /** Set once listening (the port is known then); no request arrives before. */
  let guard: RequestGuard | undefined;
  const faults = new FaultController(options.faults ?? []);
  const activity = new Subject<ProviderActivity>();
  const requests: MutableRequest[] = [];
  /** Bytes of the bodies `requests` holds. */
  let recordedBytes = 0;
  const waiters = new Set<Waiter>();
  /** Requests in progress, by the controller that stops their work. */
  const running = new Map<AbortController, MutableRequest>();
  let seq = 0;
  let closing = false;

  faults.changes$.subscribe((list) => activity.next({ type: 'faults', faults: list }));

  const snapshot = (r: MutableRequest): RecordedRequest => ({ ...r, faults: [...r.faults] });
  const finish = (record: MutableRequest, end: NonNullable<RecordedRequest['end']>): void => {
    if (record.end !== undefined) return;
    record.end = end;
    record.endedAt = asyncScheduler.now();
    const done = snapshot(record);
    activity.next({ type: 'request-end', request: done });
    for (const waiter of waiters) {
      const matches = guardCallback(waiter.predicate, done);
      if (matches instanceof Thrown) {
        waiters.delete(waiter);
        waiter.reject(matches.error);
      } else if (matches) {
        waiters.delete(waiter);
        waiter.resolve(done);
      }
    }
  };

  /** Bytes a record holds (a body too large to keep holds none). */
  const held = (r: MutableRequest): number => (r.body === undefined ? 0 : r.bodyBytes);
  /** Keeps a record, dropping the oldest past the count and byte bounds (and a body too large on its own). */
  const keep = (record: MutableRequest): void => {
    if (record.bodyBytes > maxRecordedBytes) record.body = undefined;
    recordedBytes += held(record);
    requests.push(record);
    while (requests.length > maxRecordedRequests || recordedBytes > maxRecordedBytes) {
      const oldest = requests.shift();
      if (oldest === undefined) break;
      recordedBytes -= held(oldest);
    }
  };

  /** CORS for an allowed origin only (echoed, never `*`); the PNA grant only when asked for. */
  const cors = (req: IncomingMessage, res: ServerResponse, origin: string | undefined): void => {
    res.setHeader('x-provider-name', name);
    res.setHeader('vary', 'origin');
    if (origin === undefined) return;
    res.setHeader('access-control-allow-origin', origin);
    res.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
    if (req.method === 'OPTIONS') {
      res.setHeader('access-control-allow-methods', 'GET, POST, PUT, DELETE, OPTIONS');
      const asked = req.headers['access-control-request-headers'];
      res.setHeader('access-control-allow-headers', typeof asked === 'string' && asked !== '' ? asked : 'content-type, authorization, x-api-key, anthropic-version');
      res.setHeader('access-control-max-age', '600');
      if (allowPrivateNetwork && req.headers['access-control-request-private-network'] === 'true') res.setHeader('access-control-allow-private-network', 'true');
    }
  };

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
    res.end(text);
  };

  const readBody = (req: IncomingMessage): Promise<Buffer> =>
    new Promise((resolve, reject) => {
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBodyBytes) {
        reject(new BadRequest(`request body too large: ${declared} bytes, the limit is ${maxBodyBytes} (maxBodyBytes)`, 413));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBodyBytes) {
          reject(new BadRequest(`request body too large: the limit is ${maxBodyBytes} bytes (maxBodyBytes)`, 413));
          req.destroy();
          return;
        }
        chunks.push(chunk);
      });
      req.on('end', () => resolve(Buffer.concat(chunks)));
      req.on('error', reject);
    });

  const readJson = async (req: IncomingMessage): Promise<{ value: unknown; bytes: number }> => {
    const raw = await readBody(req);
    const text = raw.toString('utf8');
    if (text.trim() === '') return { value: undefined, bytes: raw.length };
    try {
      return { value: JSON.parse(text) as unknown, bytes: raw.length };
    } catch {
      throw new BadRequest('the body is not valid JSON');
    }
  };

  // ---- admin ------------------------------------------------------------------------------

  const admin = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const method = req.method ?? 'GET';
    if (path === '/health' && method === 'GET') return json(res, 200, { ok: true, name, protocols: ['openai', 'anthropic'] });
    if (path === '/admin/requests' && method === 'GET') return json(res, 200, { requests: requests.map(snapshot) });
    if (path === '/admin/events' && method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      res.write(`retry: 1000\n\n${sse({ type: 'faults', faults: faults.list() }, 'faults')}`);
      // backpressure: past eventsBufferBytes waiting for a slow reader, events are dropped, not
      // buffered; once it drains, the reader learns how many and gets the current faults
      let dropped = 0;
      const catchUp = (): void => {
        if (dropped === 0) return;
        res.write(sse({ type: 'dropped', count: dropped }, 'dropped') + sse({ type: 'faults', faults: faults.list() }, 'faults'));
        dropped = 0;
      };
      const subscription = activity.subscribe({
        next: (a) => {
          if (res.writableLength > eventsBufferBytes) {
            dropped++;
            return;
          }
          catchUp();
          res.write(sse(a, a.type));
        },
        complete: () => res.end(),
      });
      res.on('drain', catchUp);
      res.on('close', () => subscription.unsubscribe());
      return;
    }
    if (path === '/admin/faults') {
      if (method === 'GET') return json(res, 200, { faults: faults.list() });
      if (method === 'DELETE') {
        faults.clear();
        return json(res, 200, { faults: [] });
      }
      if (method === 'POST' || method === 'PUT') {
        const { value: body } = await readJson(req);
        try {
          if (isRecord(body) && Array.isArray(body['faults'])) return json(res, 200, { faults: faults.set(body['faults'] as Fault[]) });
          if (isRecord(body) && 'kind' in body) {
            const fault = faults.add(body as unknown as Fault);
            return json(res, 201, { fault, faults: faults.list() });
          }
          throw new BadRequest('expected { "faults": [ … ] } or one fault { "kind": … }');
        } catch (error) {
          if (error instanceof InvalidOptionError) throw new BadRequest(error.message);
          throw error;
        }
      }
      return json(res, 405, { error: { message: `${method} not allowed on ${path}` } }, { allow: 'GET, POST, PUT, DELETE' });
    }
    const one = /^\/admin\/faults\/([^/]+)$/.exec(path);
    if (one !== null && method === 'DELETE') {
      const id = decodeURIComponent(one[1] ?? '');
      return faults.remove(id) ? json(res, 200, { faults: faults.list() }) : json(res, 404, { error: { message: `no fault with id ${JSON.stringify(id)}` } });
    }
    return json(res, 404, { error: { message: `no route for ${method} ${path}` } });
  };

  // ---- the model endpoints ----------------------------------------------------------------

  const provide = async (req: IncomingMessage, res: ServerResponse, protocol: Protocol, path: string): Promise<void> => {
    const raw = await readJson(req).catch((error: unknown) => {
      if (error instanceof BadRequest) return error;
      throw error;
    });
    if (raw instanceof BadRequest || !isRecord(raw.value)) {
      const status = raw instanceof BadRequest ? raw.status : 400;
      const message = raw instanceof BadRequest ? raw.message : 'the body must be a JSON object';
      return json(res, status, errorBody(protocol, status, message));
    }
    const body = raw.value;
    const stream = body['stream'] === true;
    const record: MutableRequest = { id: `req_${++seq}`, protocol, path, stream, body, bodyBytes: raw.bytes, startedAt: asyncScheduler.now(), faults: [], chunks: 0 };
    keep(record);
    activity.next({ type: 'request-start', request: snapshot(record) });

    const controller = new AbortController();
    running.set(controller, record);
    res.on('close', () => {
      running.delete(controller);
      controller.abort();
      finish(record, closing ? 'server-closed' : res.writableFinished ? 'completed' : 'client-closed');
    });
    const { signal } = controller;
    const wait = (ms: number): Promise<void> => (ms > 0 ? sleep(ms, undefined, { signal }) : Promise.resolve());
    const destroy = (): void => {
      finish(record, 'reset');
      res.socket?.destroy();
    };
    const headers = { 'x-request-id': record.id };

    try {
      const slow = faults.consume('slow-first-byte');
      if (slow) {
        record.faults.push('slow-first-byte');
        await wait(slow.delayMs);
      }
      const down = faults.consume('down');
      if (down) {
        record.faults.push('down');
        if ((down.mode ?? 'destroy') === 'destroy') return destroy();
        record.status = 503;
        return json(res, 503, errorBody(protocol, 503, `provider '${name}' is down (local fault)`), headers);
      }
      const status = faults.consume('status');
      if (status) {
        record.faults.push('status');
        record.status = status.status;
        const extra: Record<string, string> = { ...headers };
        if (status.retryAfter !== undefined) extra['retry-after'] = String(status.retryAfter);
        if (status.retryAfterMs !== undefined) extra['retry-after-ms'] = String(status.retryAfterMs);
        if (status.shouldRetry !== undefined) extra['x-should-retry'] = String(status.shouldRetry);
        // the message says what a real API's does, not the status: every client already prefixes that
        return json(res, status.status, errorBody(protocol, status.status, status.message ?? `${STATUS_CODES[status.status] ?? 'Error'} from '${name}' (local fault)`), extra);
      }

      let conversation: { messages: Message[]; tools: AssistantTool[] };
      try {
        conversation = protocol === 'openai' ? fromOpenAI(body) : fromAnthropic(body);
      } catch (error) {
        if (!(error instanceof BadRequest)) throw error;
        record.status = 400;
        return json(res, 400, errorBody(protocol, 400, error.message), headers);
      }
      const model = typeof body['model'] === 'string' ? body['model'] : 'local';
      // tool_choice honoured as the APIs do: 'none' offers no tool, a named one only that one
      const request: AssistantRequest = { protocol, model, messages: conversation.messages, tools: toolsAllowed(body, conversation.tools) };
      const turn: AssistantTurn = assistant(request);
      let calls: ToolCallOut[] = (turn.toolCalls ?? []).map((c, i) => ({
        id: protocol === 'openai' ? `call_${record.id.slice(4)}_${i}` : `toolu_${record.id.slice(4)}_${i}`,
        name: c.name,
        args: c.args,
      }));
      if (calls.length > 0) {
        const bad = faults.consume('bad-tool-args');
        if (bad) {
          record.faults.push('bad-tool-args');
          calls = calls.map((c) => ({ ...c, args: bad.args ?? (c.name === 'get_weather' && isRecord(c.args) ? { ...c.args, units: 'kelvin' } : {}) }));
        }
      }
      const text = turn.text ?? '';
      const tokens = tokenize(text);
      const inputChars = conversation.messages.reduce((n, m) => n + m.content.length, 0);
      // thinking asked for: a short, signed reasoning block first (the API's own shape)
      const thought = asksForThinking(body) ? reasoningFor(conversation.messages, calls) : undefined;
      const reasoning = thought === undefined ? undefined : { tokens: tokenize(thought), signature: thinkingSignature(thought) };
      const answer: Answer = {
        id: protocol === 'openai' ? `chatcmpl-${record.id}` : `msg_${record.id}`,
        model,
        text,
        tokens,
        toolCalls: calls,
        finishReason: turn.finishReason ?? (calls.length > 0 ? 'tool-calls' : 'stop'),
        inputTokens: Math.max(1, Math.ceil(inputChars / 4)),
        outputTokens: tokens.length + calls.reduce((n, c) => n + argumentPieces(c.args).length, 0) + (reasoning?.tokens.length ?? 0),
        ...(reasoning ? { reasoning } : {}),
      };

      if (!stream) {
        record.status = 200;
        return json(res, 200, protocol === 'openai' ? openAIJson(answer) : anthropicJson(answer), headers);
      }

      const streamOptions = body['stream_options'];
      const frames = protocol === 'openai' ? openAIFrames(answer, isRecord(streamOptions) && streamOptions['include_usage'] === true) : anthropicFrames(answer);
      const fault = faults.consume('reset', 'stall', 'malformed', 'stream-error');
      if (fault) record.faults.push(fault.kind);
      const after = fault?.afterChunks ?? 0;
      let pending = fault;

      record.status = 200;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', ...headers });
      res.flushHeaders();
      const write = (chunk: string): Promise<void> =>
        new Promise((resolve, reject) => res.write(chunk, (error) => (error ? reject(error) : resolve())));

      /** Acts on the stream fault; true when the stream must stop here. */
      const act = async (): Promise<boolean> => {
        const f = pending;
        pending = undefined;
        if (f === undefined) return false;
        switch (f.kind) {
          case 'reset':
            // when the next chunk would have come: a client reading chunk by chunk (Chromium) gets
            // the last one before the error, not sometimes with it (and then loses it)
            await wait(tokenDelayMs);
            destroy();
            return true;
          case 'stall':
            // headers (and what was sent so far), then silence until the client leaves or close()
            if (!signal.aborted) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
            return true;
          case 'malformed':
            await write(malformedFrame(protocol, answer));
            return false;
          case 'stream-error':
            await write(streamErrorFrame(protocol, f));
            res.end();
            return true;
        }
      };

      let content = 0;
      for (const frame of frames) {
        if (signal.aborted) return;
        // a stream fault acts before content chunk `after` + 1, or before the closing events of a shorter answer
        const due = pending !== undefined && (frame.part === 'closing' || (frame.part === 'content' && content >= after));
        if (due && (await act())) return;
        if (frame.part === 'content') {
          await wait(tokenDelayMs);
          content++;
          record.chunks = content;
        }
        await write(frame.text);
      }
      res.end();
    } catch (error) {
      if (signal.aborted) return; // the client left, or close(): nothing to answer
      if (error instanceof BadRequest) {
        record.status = 400;
        return json(res, 400, errorBody(protocol, 400, error.message), headers);
      }
      if (!res.headersSent) {
        record.status = 500;
        return json(res, 500, errorBody(protocol, 500, `the local assistant failed: ${(error as Error | undefined)?.message ?? String(error)}`), headers);
      }
      res.destroy();
    }
  };

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    // every route changes state (faults, recorded requests) or reveals data: one guard for all
    const refused = guard === undefined ? 'not listening yet' : guard.refusal(req.headers);
    if (refused !== undefined) {
      res.setHeader('vary', 'origin');
      return json(res, 403, { error: { message: `rxheal local provider '${name}': ${refused}`, type: 'forbidden' } }, { connection: 'close' });
    }
    cors(req, res, guard?.allowedOrigin(req.headers));
    if (req.method === 'OPTIONS') {
      res.writeHead(204);
      res.end();
      return;
    }
    const route = async (): Promise<void> => {
      if (path === '/v1/chat/completions' || path === '/chat/completions') {
        if (req.method !== 'POST') return json(res, 405, errorBody('openai', 405, 'use POST'), { allow: 'POST' });
        return provide(req, res, 'openai', path);
      }
      if (path === '/v1/messages') {
        if (req.method !== 'POST') return json(res, 405, errorBody('anthropic', 405, 'use POST'), { allow: 'POST' });
        return provide(req, res, 'anthropic', path);
      }
      return admin(req, res, path);
    };
    route().catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const status = error instanceof BadRequest ? error.status : 500;
      json(res, status, { error: { message: (error as Error | undefined)?.message ?? String(error) } });
    });
  });
  server.keepAliveTimeout = 5000;

  return new Promise<LocalProvider>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
      guard = requestGuard({ port: address.port, bound: address.address, origins: allowedOrigins, ...(options.allowedHosts ? { hosts: options.allowedHosts } : {}) });
      let closed: Promise<void> | undefined;
      resolve({
        url,
        openAIBaseURL: `${url}/v1`,
        anthropicBaseURL: url,
        port: address.port,
        name,
        faults,
        get requests() {
          return requests.map(snapshot);
        },
        activity$: activity.asObservable(),
        waitForRequest(predicate = () => true) {
          for (const r of requests) {
            if (r.end === undefined) continue;
            const done = snapshot(r);
            const matches = guardCallback(predicate, done);
            if (matches instanceof Thrown) return Promise.reject(matches.error);
            if (matches) return Promise.resolve(done);
          }
          if (closing) return Promise.reject(closedBeforeMatch(name));
          return new Promise((resolveWait, rejectWait) => waiters.add({ predicate, resolve: resolveWait, reject: rejectWait }));
        },
        close() {
          closed ??= new Promise<void>((resolveClose) => {
            closing = true;
            for (const [controller, record] of running) {
              finish(record, 'server-closed');
              controller.abort();
            }
            // no request ends from now on: a wait none answered never will be
            for (const waiter of waiters) waiter.reject(closedBeforeMatch(name));
            waiters.clear();
            server.close(() => resolveClose());
            server.closeAllConnections();
          }).then(() => {
            faults.dispose();
            activity.complete();
          });
          return closed;
        },
      });
    });
  });
}
