/**
 * The healing MCP proxy behind `rxheal-mcp-proxy` (cli.ts): an MCP server on stdio standing in
 * for an upstream MCP server (a stdio command or a Streamable-HTTP URL).
 *
 * - **Tool calls** are forwarded by `fromMcp`'s rules — arguments checked, the upstream's breaker,
 *   progress-aware timeouts, reconnection — and retried (`retries` times, with backoff) only for
 *   tools whose annotations say they are safe. The upstream's progress goes on to the host (when it
 *   asked, with a progress token), so a host whose timeout progress resets lets a long tool
 *   finish. Results pass through as the upstream sent them (`isError` ones included); a call that
 *   fails after all that is an `isError` result naming why.
 * - **Everything else passes through**: the upstream is connected when the host initialises, with
 *   the host's client identity and capabilities (sampling, elicitation, roots: an upstream that
 *   offers tools only to such clients offers them), and the host is answered with the upstream's
 *   identity, instructions and capabilities. Prompts, resources, completions, logging and any
 *   other request go to the upstream as they are (reconnected first, under the same deadlines and
 *   cancellation, not under the breaker), its errors back as it sent them; the upstream's requests
 *   and notifications (sampling, elicitation, roots, log messages, list and resource changes) go to
 *   the host. Not forwarded: task-augmented requests (the `tasks` capability).
 * - **Shutdown**: closing the proxy (cli.ts does when the host closes its stdin) closes the upstream
 *   — an HTTP session ended with DELETE, a process with its stdin closed, then signals.
 *
 * @module
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
  ResultSchema,
  SetLevelRequestSchema,
  ToolListChangedNotificationSchema,
  type ClientCapabilities,
  type InitializeRequest,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type MessageExtraInfo,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import { asyncScheduler, catchError, firstValueFrom, from, fromEvent, map, of, race, timeout, type Observable } from 'rxjs';
import { CircuitBreakerRegistry } from '../core/breaker/registry.js';
import { describeProblems, formatProblem, isLeft } from '../core/errors/options.js';
import { errorText } from '../core/errors/sanitize.js';
import { MAX_TIMER_MS } from '../core/rx/wait.js';
import { retryWithBackoff } from '../operators/retryWithBackoff.js';
import type { ProxySettings, Upstream } from './args.js';
import { McpProtocolError, rpcDetail } from './errors.js';
import { toolset, type McpToolset } from './fromMcp.js';
import type { McpProgressListener } from './link.js';
import { IDEMPOTENCY_META_KEY } from '../core/journal/idempotency.js';

/** A fresh transport to the upstream, each time it is asked (a closed one can't be restarted). */
function transportTo(upstream: Upstream): () => Transport {
  if ('url' in upstream) return () => new StreamableHTTPClientTransport(new URL(upstream.url));
  // the proxy stands in the server's place: the upstream gets the environment the host gave it
  return () => new StdioClientTransport({ command: upstream.command, args: [...upstream.args], env: process.env as Record<string, string>, stderr: 'inherit' });
}

/** The upstream, as the proxy names it in its errors. */
const upstreamName = (upstream: Upstream): string => ('url' in upstream ? upstream.url : [upstream.command, ...upstream.args].join(' '));

/** A tool call's failure, as the host gets it. */
type Failed = { content: { type: 'text'; text: string }[]; isError: true };
const failed = (text: string): Failed => ({ content: [{ type: 'text', text }], isError: true });

/**
 * What the proxy uses of one host request's context (the SDK's `RequestHandlerExtra`).
 *
 * @example
 * ```ts
 * const host: HostRequest = { signal: new AbortController().signal, sendNotification: () => Promise.resolve() };
 * ```
 */
export interface HostRequest {
  /** Aborted when the host cancels the request (or leaves). */
  readonly signal: AbortSignal;
  /** Sends a notification related to the request. */
  sendNotification(notification: {
    method: 'notifications/progress';
    params: { progressToken: string | number; progress: number; total?: number; message?: string };
  }): Promise<void>;
}

/**
 * `call$`'s first value as a promise that settles whatever the host does: cancelled (or cancelled
 * already), the call is unsubscribed — its upstream request cancelled — and the promise resolves
 * with `cancelled` (the SDK sends nothing for a cancelled request; an unsettled handler would be
 * kept for ever).
 */
function untilCancelled<T>(call$: Observable<T>, signal: AbortSignal, cancelled: T): Promise<T> {
  if (signal.aborted) return Promise.resolve(cancelled);
  return firstValueFrom(race(call$, fromEvent(signal, 'abort').pipe(map(() => cancelled))));
}

/**
 * The upstream's progress on one request, sent on to the host under the host's own token (none:
 * nothing is sent), in order; `behind(value)` resolves with `value` once the progress before it is
 * sent (the host drops progress that arrives after the result).
 */
function progressTo(token: string | number | undefined, host: HostRequest): { listener: McpProgressListener | undefined; behind<T>(value: T): Promise<T> } {
  let sent: Promise<unknown> = Promise.resolve();
  const listener =
    token === undefined
      ? undefined
      : (progress: { progress: number; total?: number; message?: string }): void => {
          sent = sent
            .then(() => host.sendNotification({ method: 'notifications/progress', params: { ...progress, progressToken: token } }))
            .catch(() => undefined);
        };
  return { listener, behind: (value) => sent.then(() => value) };
}

/**
 * One host `tools/call`, forwarded: the tool looked up and its arguments checked (a refusal is an
 * `isError` result), then the upstream called through the breaker and the reconnection, retried
 * `retries` times only for a safe tool. Settles in every case, the host's cancellation included.
 *
 * @example
 * ```ts
 * server.setRequestHandler(CallToolRequestSchema, (request, extra) => forwardCall(tools, 2, request.params, extra));
 * ```
 * @internal exported for its spec
 */
export function forwardCall(
  tools: McpToolset,
  retries: number,
  params: { name: string; arguments?: Record<string, unknown>; _meta?: { progressToken?: string | number; [key: string]: unknown } },
  host: HostRequest,
): Promise<{ readonly [key: string]: unknown }> {
  const tool = tools.listed.get(params.name);
  if (!tool) return Promise.resolve(failed(`unknown tool '${params.name}'; available: ${[...tools.listed.keys()].join(', ')}`));
  const decoded = tool.args.decode(params.arguments ?? {});
  if (isLeft(decoded)) return Promise.resolve(failed(describeProblems(decoded.left).map(formatProblem).join('; ')));
  const progress = progressTo(params._meta?.progressToken, host);
  // only a safe tool is tried again: anything else runs at most once, whatever fails
  // a host's idempotency key (rxheal's `_meta` name) goes on upstream with the call
  const key = params._meta?.[IDEMPOTENCY_META_KEY];
  const call$ = tools.callRaw(tool.info.name, decoded.right, tool.idempotent, progress.listener, typeof key === 'string' ? key : undefined).pipe(
    retryWithBackoff({ maxRetries: tool.idempotent ? retries : 0, initialBackoffMs: 200 }),
    catchError((error: unknown) => of(failed(errorText(error)))),
  );
  return untilCancelled<{ readonly [key: string]: unknown }>(call$, host.signal, failed('cancelled by the host')).then((result) => progress.behind(result));
}

/** The upstream's JSON-RPC error as it sent it (code, message, data), else an internal error naming what failed. */
function wireError(error: unknown): Error {
  const rpc = error instanceof McpProtocolError ? error.cause : undefined;
  if (rpc instanceof McpError)
    return Object.assign(new Error(rpcDetail(rpc.message)), { code: rpc.code, ...(rpc.data === undefined ? {} : { data: rpc.data }) });
  return Object.assign(new Error(errorText(error)), { code: ErrorCode.InternalError });
}

/**
 * One host request of another kind (prompts, resources, completions, logging…) made of the
 * upstream as it is: the host's progress token swapped for the SDK's own (the upstream's progress
 * goes back under the host's), the upstream's error rethrown as it sent it.
 */
function passThrough(
  tools: McpToolset,
  client: Client,
  request: { readonly method: string; readonly params?: { readonly [key: string]: unknown } },
  host: HostRequest,
): Promise<{ readonly [key: string]: unknown }> {
  const { _meta, ...rest } = (request.params ?? {}) as { _meta?: { progressToken?: string | number; [key: string]: unknown }; [key: string]: unknown };
  const { progressToken, ...meta } = _meta ?? {};
  const params = { ...rest, ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}) };
  const progress = progressTo(progressToken, host);
  const call$ = tools.request(
    request.method,
    (options) => client.request({ method: request.method, ...(request.params === undefined ? {} : { params }) }, ResultSchema, options),
    progress.listener,
  );
  return untilCancelled<{ readonly [key: string]: unknown }>(call$, host.signal, {}).then(
    (result) => progress.behind(result),
    (error: unknown) => Promise.reject(wireError(error)),
  );
}

/** The host's client capabilities the proxy can forward the upstream's requests for. */
function forwardable(host: ClientCapabilities): ClientCapabilities {
  const { sampling, elicitation, roots, experimental } = host;
  return { ...(sampling && { sampling }), ...(elicitation && { elicitation }), ...(roots && { roots }), ...(experimental && { experimental }) };
}

/** The upstream's server capabilities as the proxy serves them (tasks not forwarded; a tool list followed). */
function served(upstream: ServerCapabilities): ServerCapabilities {
  const capabilities = { ...upstream };
  delete capabilities.tasks;
  return capabilities.tools ? { ...capabilities, tools: { ...capabilities.tools, listChanged: true } } : capabilities;
}

/**
 * `inner`, started now, every message it hears held until a server is connected to the transport
 * returned (which then hears them, in order): what the proxy serves depends on the host's
 * `initialize` (the upstream is connected with the host's capabilities first, and the host is
 * answered with the upstream's). `hello` is that request; `left` is called if the host leaves first.
 */
async function holding(inner: Transport, left: () => void): Promise<{ hello: Promise<JSONRPCRequest>; transport: Transport }> {
  const held: [JSONRPCMessage, MessageExtraInfo | undefined][] = [];
  let greet!: (request: JSONRPCRequest) => void;
  const hello = new Promise<JSONRPCRequest>((resolve) => (greet = resolve));
  let greeted = false;
  inner.onmessage = (message, extra) => {
    // a request before initialize (a 2.x host's server/discover): this proxy speaks the old handshake, the host falls back to it at once
    if (!greeted && !isInitializeRequest(message) && 'method' in message && 'id' in message) {
      const error = {
        code: ErrorCode.MethodNotFound,
        message: `rxheal-mcp-proxy: ${message.method} before initialize (this proxy speaks the initialize handshake)`,
      };
      void inner.send({ jsonrpc: '2.0', id: message.id, error }).catch(() => undefined);
      return;
    }
    held.push([message, extra]);
    if (isInitializeRequest(message)) {
      greeted = true;
      greet(message as JSONRPCRequest);
    }
  };
  inner.onclose = left;
  inner.onerror = () => undefined;
  await inner.start();
  const transport: Transport = {
    start: async () => {
      inner.onmessage = (message, extra) => transport.onmessage?.(message, extra);
      inner.onclose = () => transport.onclose?.();
      inner.onerror = (error) => transport.onerror?.(error);
      for (const [message, extra] of held.splice(0)) transport.onmessage?.(message, extra);
    },
    send: (message, options) => inner.send(message, options),
    close: () => inner.close(),
    get sessionId() {
      return inner.sessionId;
    },
    setProtocolVersion: (version) => inner.setProtocolVersion?.(version),
  };
  return { hello, transport };
}

/**
 * The proxy between the host and its upstream.
 *
 * @example
 * ```ts
 * const proxy = await startMcpProxy(settings);
 * process.stdin.once('end', () => void proxy.close());
 * await proxy.closed;
 * ```
 */
export interface McpProxy {
  /**
   * Settles once the proxy stopped, both sides closed: resolves when `close()` was called or the
   * host's side closed, rejects (the reason) when the upstream could not be reached as the host
   * initialised (the host was answered with that error).
   */
  readonly closed: Promise<void>;
  /** Stops: the host's side closed, then the upstream's (an HTTP session ended with DELETE, a process with its stdin closed, then signals). */
  close(): Promise<void>;
}

/** Ends the upstream: an HTTP session with DELETE (waited for 2 s at most), then the transport closed. */
async function disconnect(client: Client): Promise<void> {
  const transport = client.transport;
  if (transport instanceof StreamableHTTPClientTransport)
    await firstValueFrom(
      from(transport.terminateSession().catch(() => undefined)).pipe(timeout({ first: 2000, with: () => of(undefined), scheduler: asyncScheduler })),
    );
  await client.close().catch(() => undefined);
}

/**
 * Serves on `downstream` (stdio by default) as soon as it is started; the upstream is connected
 * when the host initialises (see the module's header).
 *
 * @example
 * ```ts
 * const proxy = await startMcpProxy({ upstream: { command: 'node', args: ['server.js'] }, retries: 2, timeoutMs: 60_000, failureThreshold: 5, resetTimeoutMs: 60_000 });
 * await proxy.closed;
 * ```
 */
export async function startMcpProxy(settings: ProxySettings, downstream: Transport = new StdioServerTransport()): Promise<McpProxy> {
  let upstream: Client | undefined;
  let server: Server | undefined;
  let finish!: { resolve: () => void; reject: (error: unknown) => void };
  const closed = new Promise<void>((resolve, reject) => (finish = { resolve, reject }));
  closed.catch(() => undefined);
  let stopping: Promise<void> | undefined;
  const stop = (failure?: unknown): Promise<void> =>
    (stopping ??= Promise.resolve().then(async () => {
      await server?.close().catch(() => undefined);
      await downstream.close().catch(() => undefined);
      if (upstream) await disconnect(upstream);
      if (failure === undefined) finish.resolve();
      else finish.reject(failure);
    }));
  const { hello, transport } = await holding(downstream, () => void stop());
  void hello
    .then(async (request) => {
      const params = request.params as InitializeRequest['params'];
      const client = (upstream = new Client(params.clientInfo, { capabilities: forwardable(params.capabilities) }));
      try {
        server = await serve(settings, client);
      } catch (error) {
        const reason = new Error(`the upstream (${upstreamName(settings.upstream)}) could not be reached: ${errorText(error)}`, { cause: error });
        await downstream
          .send({ jsonrpc: '2.0', id: request.id, error: { code: ErrorCode.InternalError, message: `rxheal-mcp-proxy: ${reason.message}` } })
          .catch(() => undefined);
        return stop(reason);
      }
      // the host left while the upstream was being connected: nothing to serve
      if (stopping) return;
      server.onclose = () => void stop();
      await server.connect(transport);
    })
    .catch((error: unknown) => stop(error));
  return { closed, close: () => stop() };
}

/**
 * The upstream connected (`client`, with the host's identity and capabilities) and the server the
 * host talks to, built from what the upstream offers.
 */
async function serve(settings: ProxySettings, client: Client): Promise<Server> {
  let hostReady!: (server: Server) => void;
  // the host hears of the upstream's requests and notifications once it is initialised
  const ready = new Promise<Server>((resolve) => (hostReady = resolve));
  client.fallbackRequestHandler = async (request, extra) => {
    const host = await ready;
    // the upstream's own deadline and cancellation rule (an elicitation may wait for a person)
    return host.request({ method: request.method, ...(request.params === undefined ? {} : { params: request.params }) }, ResultSchema, {
      signal: extra.signal,
      timeout: MAX_TIMER_MS,
    }) as never;
  };
  client.fallbackNotificationHandler = async (notification) => {
    const host = await ready;
    await host.notification(notification as never).catch(() => undefined);
  };
  const connect = transportTo(settings.upstream);
  await client.connect(connect());
  const breakers = new CircuitBreakerRegistry({ failureThreshold: settings.failureThreshold, resetTimeoutMs: settings.resetTimeoutMs });
  const tools = toolset('rxheal-mcp-proxy', client, { id: 'upstream', reconnect: connect, timeoutMs: settings.timeoutMs, breakers });
  const offered = client.getServerCapabilities() ?? {};
  const proxy = new Server(client.getServerVersion() ?? { name: 'rxheal-mcp-proxy', version: '0.0.0' }, {
    capabilities: served(offered),
    instructions: client.getInstructions(),
  });
  proxy.oninitialized = () => hostReady(proxy);
  if (offered.tools) {
    await tools.list();
    proxy.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools.listed.values()].map((t) => t.info) as never }));
    proxy.setRequestHandler(CallToolRequestSchema, (request, extra) => forwardCall(tools, settings.retries, request.params, extra) as never);
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      await tools.list();
      await ready;
      await proxy.sendToolListChanged();
    });
  }
  // the upstream filters its own log messages: the host's level goes to it
  if (offered.logging) proxy.setRequestHandler(SetLevelRequestSchema, (request, extra) => passThrough(tools, client, request, extra) as never);
  proxy.fallbackRequestHandler = (request, extra) => passThrough(tools, client, request, extra) as never;
  proxy.fallbackNotificationHandler = (notification) => client.notification(notification as never).catch(() => undefined);
  return proxy;
}
