/**
 * The shapes rxheal/mcp reads an MCP client by (either SDK major: no framework import) and the
 * shape of one tool call as the link makes it: what link.ts, clients.ts and the Tasks wire share.
 *
 * @module
 */
import type { Observable } from 'rxjs';

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
  /** 2.x: an `input_required` answer is handed back instead of fulfilled by the SDK (rxheal's `onInputRequired` answers it). */
  readonly allowInputRequired?: boolean;
}

/** The params of one `tools/call` (with, on a later round of a multi-round call, the answers and the server's state). */
export interface McpCallParams {
  readonly name: string;
  readonly arguments?: Record<string, unknown>;
  /** 2026-07-28: the answers to the server's `input_required` requests, by their keys. */
  readonly inputResponses?: Record<string, unknown>;
  /** 2026-07-28: the opaque state the server sent with `input_required`, sent back byte for byte. */
  readonly requestState?: string;
  /** The request's `_meta` (see `McpLink.paramsOf`). */
  readonly _meta?: Record<string, unknown>;
}

/**
 * One tool call as the link makes it: the tool's name, its arguments, whether it is safe to repeat,
 * who hears its progress, its idempotency key (sent in `_meta`), and what picks its task up again
 * (a tool's context in a durable run: MCP Tasks).
 *
 * @example
 * ```ts
 * const call: McpCallArgs = ['book', { seat: '12A' }, false, undefined, 'trip-9/1/0/book'];
 * ```
 */
export type McpCallArgs = [
  name: string,
  args: Record<string, unknown>,
  idempotent: boolean,
  onProgress?: McpProgressListener,
  idempotencyKey?: string,
  resume?: McpTaskResume,
];

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
 * What `fromMcp` needs of an MCP client of either SDK major, but the call itself
 * ({@link McpClient} for 1.x, `McpClientV2` for 2.x).
 *
 * @example
 * ```ts
 * const base: McpClientBase = client; // a connected Client of either major
 * ```
 */
export interface McpClientBase {
  /** `tools/list`, one page (`nextCursor` asks for the next; 2.x, called without a cursor, walks every page itself and honours `ttlMs`). */
  listTools(params?: { cursor?: string }, options?: McpRequestOptions): Promise<{ tools: readonly McpToolInfo[]; nextCursor?: string }>;
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
export interface McpClient extends McpClientBase {
  /** `tools/call` (no result schema: the SDK's default). */
  callTool(params: McpCallParams, resultSchema?: undefined, options?: McpRequestOptions): Promise<{ readonly [key: string]: unknown }>;
}

/**
 * What a call hands the link to pick its task up again: a tool's `ToolContext` in a durable run
 * (`resumed`, what the call checkpointed before; `checkpoint`, journals state before going on).
 *
 * @example
 * ```ts
 * const resume: McpTaskResume = { resumed: { mcpTask: { server: 'jobs', tool: 'render', taskId: 't-1' } } };
 * ```
 */
export interface McpTaskResume {
  readonly resumed?: { readonly [key: string]: unknown } | undefined;
  readonly checkpoint?: ((state: { readonly [key: string]: unknown }) => Observable<unknown>) | undefined;
}
