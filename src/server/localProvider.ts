/**
 * A local LLM provider: a real HTTP server on 127.0.0.1 that speaks OpenAI's Chat Completions,
 * OpenAI's Responses API and Anthropic's Messages protocols (streaming and not), backed by a deterministic scripted
 * assistant, with faults you switch on and off by option, in-process, or over HTTP. For demos
 * and for integration tests that need no API key and no network. Node only. This file serves
 * HTTP (the guard, CORS, the admin routes, the server's life); a model call is answered in
 * `modelEndpoint.ts`, with the faults of `faults.ts` and the wire formats of `protocols.ts` and
 * `responsesProtocol.ts`; what
 * is recorded of the requests lives in `requests.ts`.
 *
 * @module
 */
// Node-only module: the library's build has no ambient Node types (its other modules are browser-safe)
/// <reference types="node" />
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { asyncScheduler, Observable, Subject, type SchedulerLike } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import { Bool, Func, NonEmptyString, NonNegativeInteger, PositiveInteger, check, validateOptions } from '../core/errors/options.js';
import { scriptedAssistant, type Assistant } from './assistant.js';
import { BackgroundResponses } from './backgroundResponses.js';
import { FaultController, TimerDelayMs, type Fault } from './faults.js';
import { parseOrigin, requestGuard, type RequestGuard } from './guard.js';
import { badSegment, json, pathSegment, readJson } from './http.js';
import { answerCompact } from './responsesCompact.js';
import { answerModelCall, type ModelEndpoint } from './modelEndpoint.js';
import { PROMPT_CACHE_PROPS, PromptCache, type LocalPromptCacheOptions } from './providerSide.js';
import { BadRequest, errorBody, isRecord, sse } from './protocols.js';
import { RequestLog, type MutableRequest, type ProviderActivity, type RecordedRequest } from './requests.js';

export type {
  ActiveFault,
  BadToolArgsFault,
  BlockedFault,
  DownFault,
  Fault,
  FaultBase,
  FaultKind,
  MalformedFault,
  ResetFault,
  SlowFirstByteFault,
  StallFault,
  StatusFault,
  StreamErrorFault,
  VerboseFault,
} from './faults.js';
export { FaultController, validateFault } from './faults.js';
export type { Protocol } from './protocols.js';
export type { LocalPromptCacheOptions } from './providerSide.js';
export type { ProviderActivity, RecordedRequest } from './requests.js';

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
  /**
   * How long a background response (Responses API, `background: true`) is kept after it ends,
   * in ms: past it, `GET /v1/responses/{id}` (and resuming its stream) answers 404. Defaults to
   * 10 minutes.
   */
  readonly backgroundTtlMs?: number;
  /** How many background responses are kept at most (past it, the oldest ended goes first). Defaults to 100. */
  readonly maxBackgroundResponses?: number;
  /**
   * The prompt cache (see {@link LocalPromptCacheOptions}): how long a prefix stays cached
   * (`ttlMs`, default 5 minutes, refreshed by each read) and how much later an answer starts per
   * 1 000 input tokens it did not hold (`uncachedMsPer1kTokens`, default 0).
   */
  readonly promptCache?: LocalPromptCacheOptions;
  /** The clock background responses and cached prefixes expire by (`scheduler.now()`). Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

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
  backgroundTtlMs: TimerDelayMs,
  maxBackgroundResponses: PositiveInteger,
  promptCache: check('{ ttlMs?, uncachedMsPer1kTokens? }', (u): u is LocalPromptCacheOptions => typeof u === 'object' && u !== null),
  scheduler: check(
    'a scheduler (with now())',
    (u): u is SchedulerLike => typeof u === 'object' && u !== null && typeof (u as SchedulerLike).now === 'function',
  ),
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

const MIB = 1024 * 1024;
const EXPOSED_HEADERS = 'retry-after, retry-after-ms, x-should-retry, x-request-id, x-provider-name';

/**
 * Starts a local provider: a real HTTP server speaking OpenAI's Chat Completions
 * (`POST /v1/chat/completions`), OpenAI's Responses API (`POST /v1/responses`: its numbered
 * events; with `reasoning` asked for, a summary and encrypted content that a stateless tool turn
 * must send back — a 400 otherwise; with `background: true`, a stored response generated on its
 * own, whose stream can be picked up again with `GET /v1/responses/{id}?stream=true&starting_after=N`,
 * read with `GET /v1/responses/{id}`, cancelled with `POST /v1/responses/{id}/cancel`, and which
 * expires `backgroundTtlMs` after it ends — then 404, in the API's error shape; the stream faults
 * act on each connection to it, not on the response; `POST /v1/responses/compact` compacts an input
 * to one encrypted `compaction` item, never faulted) and Anthropic's Messages (`POST /v1/messages`), streamed (SSE)
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
  const promptCache = validateOptions('startLocalProvider', PROMPT_CACHE_PROPS, options.promptCache, 'promptCache');
  const { port = 0, host = '127.0.0.1', name = 'local', tokenDelayMs = 15, assistant = scriptedAssistant, allowPrivateNetwork = false } = options;
  const { maxRecordedRequests = 1000, maxRecordedBytes = 16 * MIB, maxBodyBytes = 4 * MIB, eventsBufferBytes = MIB } = options;
  const clock = options.scheduler ?? asyncScheduler;
  let compactions = 0;
  const background = new BackgroundResponses(clock, options.backgroundTtlMs ?? 600_000, options.maxBackgroundResponses ?? 100, tokenDelayMs);
  const allowedOrigins = (options.allowedOrigins ?? DEFAULT_ALLOWED_ORIGINS).map((o) => parseOrigin('startLocalProvider', 'allowedOrigins', o));
  /** Set once listening (the port is known then); no request arrives before. */
  let guard: RequestGuard | undefined;
  const faults = new FaultController(options.faults ?? []);
  const activity = new Subject<ProviderActivity>();
  const log = new RequestLog(name, maxRecordedRequests, maxRecordedBytes, activity);
  /** Requests in progress, by the controller that stops their work. */
  const running = new Map<AbortController, MutableRequest>();
  let seq = 0;
  let closing = false;

  faults.changes$.subscribe((list) => activity.next({ type: 'faults', faults: list }));
  const endpoint: ModelEndpoint = {
    name,
    faults,
    assistant,
    tokenDelayMs,
    maxBodyBytes,
    log,
    running,
    closing: () => closing,
    nextId: () => `req_${++seq}`,
    background,
    promptCache: new PromptCache({ ...(promptCache.ttlMs === undefined ? {} : { ttlMs: promptCache.ttlMs }), now: () => clock.now() }),
    uncachedMsPer1kTokens: promptCache.uncachedMsPer1kTokens ?? 0,
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
      res.setHeader(
        'access-control-allow-headers',
        typeof asked === 'string' && asked !== '' ? asked : 'content-type, authorization, x-api-key, anthropic-version',
      );
      res.setHeader('access-control-max-age', '600');
      if (allowPrivateNetwork && req.headers['access-control-request-private-network'] === 'true')
        res.setHeader('access-control-allow-private-network', 'true');
    }
  };

  // ---- admin ------------------------------------------------------------------------------

  const admin = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const method = req.method ?? 'GET';
    if (path === '/health' && method === 'GET') return json(res, 200, { ok: true, name, protocols: ['openai', 'anthropic', 'responses'] });
    if (path === '/admin/requests' && method === 'GET') return json(res, 200, { requests: log.list() });
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
        const { value: body } = await readJson(req, maxBodyBytes);
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
      const id = pathSegment(one[1] ?? '');
      if (id === undefined) return json(res, 400, { error: { message: badSegment('Invalid fault id', one[1] ?? '') } });
      return faults.remove(id) ? json(res, 200, { faults: faults.list() }) : json(res, 404, { error: { message: `no fault with id ${JSON.stringify(id)}` } });
    }
    return json(res, 404, { error: { message: `no route for ${method} ${path}` } });
  };

  // ---- background responses: read, resumed, cancelled --------------------------------------

  const storedResponse = async (req: IncomingMessage, res: ServerResponse, id: string, cancel: boolean): Promise<void> => {
    const method = req.method ?? 'GET';
    if (cancel ? method !== 'POST' : method !== 'GET')
      return json(res, 405, errorBody('responses', 405, `use ${cancel ? 'POST' : 'GET'}`), { allow: cancel ? 'POST' : 'GET' });
    const response = background.get(id);
    // only background responses are kept; an expired one is gone
    if (response === undefined) return json(res, 404, errorBody('responses', 404, `Response with id '${id}' not found.`));
    if (cancel) {
      if (response.status === 'completed')
        return json(res, 400, errorBody('responses', 400, `Response with id '${id}' has already completed and cannot be cancelled.`));
      background.cancel(id);
      return json(res, 200, response.object());
    }
    const query = new URL(req.url ?? '/', 'http://local').searchParams;
    if (query.get('stream') !== 'true') return json(res, 200, response.object());
    const after = query.get('starting_after');
    const startingAfter = after === null ? -1 : Number(after);
    if (!Number.isInteger(startingAfter) || startingAfter < -1)
      return json(res, 400, errorBody('responses', 400, `Invalid 'starting_after': ${JSON.stringify(after)} (expected a sequence_number, an integer >= 0).`));
    const fault = faults.consume('reset', 'stall', 'malformed', 'stream-error');
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.flushHeaders();
    return background.follow(response, startingAfter, res, fault, () => res.socket?.destroy());
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
        return answerModelCall(endpoint, req, res, 'openai', path);
      }
      if (path === '/v1/responses' || path === '/responses') {
        if (req.method !== 'POST') return json(res, 405, errorBody('responses', 405, 'use POST'), { allow: 'POST' });
        return answerModelCall(endpoint, req, res, 'responses', path);
      }
      if (path === '/v1/responses/compact' || path === '/responses/compact')
        return answerCompact(req, res, { maxBodyBytes, now: () => clock.now(), next: () => ++compactions });
      const stored = /^\/(?:v1\/)?responses\/([^/]+)(\/cancel)?$/.exec(path);
      if (stored !== null) {
        const id = pathSegment(stored[1] ?? '');
        if (id === undefined) return json(res, 400, errorBody('responses', 400, badSegment("Invalid 'response_id'", stored[1] ?? '')));
        return storedResponse(req, res, id, stored[2] !== undefined);
      }
      if (path === '/v1/messages') {
        if (req.method !== 'POST') return json(res, 405, errorBody('anthropic', 405, 'use POST'), { allow: 'POST' });
        return answerModelCall(endpoint, req, res, 'anthropic', path);
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
      guard = requestGuard({
        port: address.port,
        bound: address.address,
        origins: allowedOrigins,
        ...(options.allowedHosts ? { hosts: options.allowedHosts } : {}),
      });
      let closed: Promise<void> | undefined;
      resolve({
        url,
        openAIBaseURL: `${url}/v1`,
        anthropicBaseURL: url,
        port: address.port,
        name,
        faults,
        get requests() {
          return log.list();
        },
        activity$: activity.asObservable(),
        waitForRequest(predicate = () => true) {
          return log.waitFor(predicate, closing);
        },
        close() {
          closed ??= new Promise<void>((resolveClose) => {
            closing = true;
            for (const [controller, record] of running) {
              log.finish(record, 'server-closed');
              controller.abort();
            }
            // no request ends from now on: a wait none answered never will be
            log.close();
            background.close();
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
