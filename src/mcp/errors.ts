/**
 * What an MCP client throws, said in rxheal's words, so that `classifyError` (the one place that
 * decides about retries and breakers) reads it right: one table from what the SDK throws to the
 * error `fromMcp` fails with. No framework import here: the SDK's errors are read by shape.
 *
 * Both SDK majors: 1.x throws `McpError` (numeric codes), 2.x `ProtocolError` (the server's
 * JSON-RPC error, numeric codes) and `SdkError` (local failures, string codes).
 *
 * | the client throws                                    | `fromMcp` fails with            | the classifier says            |
 * | ---------------------------------------------------- | ------------------------------- | ------------------------------ |
 * | `McpError` -32000 (Connection closed), `Not connected`, EPIPE on send; `SdkError` `CONNECTION_CLOSED`, `NOT_CONNECTED`, `SEND_FAILED` | {@link McpConnectionError} | `connection`: retryable, counted |
 * | `StreamableHTTPError` 404 with a session             | {@link McpSessionExpiredError}  | `connection` (re-initialised)  |
 * | `McpError` -32001, `SdkError` `REQUEST_TIMEOUT` (the SDK's own request timeout) | {@link McpTimeoutError} | `timeout`: retryable, counted |
 * | `McpError` / `ProtocolError` -32700, -32600, -32601, -32602, -32042 | {@link McpProtocolError} (400) | `bad_request`: not retried, not counted |
 * | `McpError` / `ProtocolError` -32603 (internal error) | {@link McpProtocolError} (500)  | `server_error`: retryable, counted |
 * | any other `McpError` / `ProtocolError` code          | {@link McpProtocolError} (no status) | `unknown`                 |
 * | `SdkError` `CAPABILITY_NOT_SUPPORTED` or `INPUT_REQUIRED_ROUNDS_EXCEEDED` on an `input_required` call, `ProtocolError` -32021 (a client capability missing) | {@link McpInputRequiredError} (400) | `bad_request`: not retried, not counted |
 * | `SdkHttpError` (2.x over HTTP) with a `status`       | unchanged (its `status`)        | by the status                  |
 * | anything else (fetch's `TypeError`, a 5xx `StreamableHTTPError`, a `SyntaxError`) | unchanged | by its own rules |
 *
 * On a 2026-07-28 connection nothing resumes a broken stream: a call of a tool not marked safe to
 * repeat whose connection broke after it was sent fails with {@link McpOutcomeUnknownError}.
 *
 * A result with `isError: true` is not a protocol failure: it becomes a {@link McpToolResultError}
 * (422, `validation_error`: reflected to the model, never retried, never counted by the breaker).
 *
 * @module
 */

/** A value's field, without trusting its type. */
const field = (u: unknown, key: string): unknown => (typeof u === 'object' && u !== null ? (u as Record<string, unknown>)[key] : undefined);

/**
 * The connection to an MCP server is gone: its process exited, the connection was refused,
 * reset or closed, or the client is no longer connected. `code` is `'ECONNRESET'`, so
 * `classifyError` says `connection` (retryable for an idempotent tool; counted by the breaker).
 * `cause` is what the client threw.
 *
 * @example
 * ```ts
 * classifyError(new McpConnectionError('weather', 'Connection closed')).category; // 'connection'
 * ```
 */
export class McpConnectionError extends Error {
  override readonly name = 'McpConnectionError';
  /** `'ECONNRESET'`: what the classifier reads as a dropped connection. */
  readonly code = 'ECONNRESET';
  /** The server's id (`fromMcp`'s `id`). */
  readonly server: string;

  constructor(server: string, detail: string, options?: { cause?: unknown }) {
    super(`MCP server '${server}': ${detail}`, options);
    this.server = server;
  }
}

/**
 * A Streamable-HTTP server answered 404 to a request carrying a session id: the session expired
 * (the server restarted, or dropped it). The request was not run. `fromMcp` re-initialises a new
 * session when it has a transport factory, and retries an idempotent call once; a call that is
 * not idempotent fails with this error (never silently lost, never repeated automatically).
 * `code` is `'ECONNRESET'` (`connection`).
 *
 * @example
 * ```ts
 * if (e instanceof ToolError && e.cause instanceof McpSessionExpiredError) console.log('not run: ask again');
 * ```
 */
export class McpSessionExpiredError extends Error {
  override readonly name = 'McpSessionExpiredError';
  /** `'ECONNRESET'`: what the classifier reads as a dropped connection. */
  readonly code = 'ECONNRESET';
  /** The server's id. */
  readonly server: string;

  constructor(server: string, options?: { cause?: unknown }) {
    super(`MCP server '${server}': the session expired (HTTP 404); the call was not run`, options);
    this.server = server;
  }
}

/**
 * A tool call got no answer within `timeoutMs` of its start or of its last progress
 * notification (or within `maxTotalTimeoutMs` in all). The request was cancelled (the server got
 * `notifications/cancelled`). `code` is `'ETIMEDOUT'`, so `classifyError` says `timeout`.
 *
 * @example
 * ```ts
 * classifyError(new McpTimeoutError('weather', 'get_weather', 30_000, 'idle')).category; // 'timeout'
 * ```
 */
export class McpTimeoutError extends Error {
  override readonly name = 'McpTimeoutError';
  /** `'ETIMEDOUT'`: what the classifier reads as a timeout. */
  readonly code = 'ETIMEDOUT';
  /** The server's id. */
  readonly server: string;
  /** The tool called (its MCP name). */
  readonly tool: string;
  /** The limit that was crossed, in ms. */
  readonly timeoutMs: number;
  /** `'idle'`: nothing (no result, no progress) for `timeoutMs`; `'total'`: `maxTotalTimeoutMs` in all. */
  readonly kind: 'idle' | 'total';

  constructor(server: string, tool: string, timeoutMs: number, kind: 'idle' | 'total', options?: { cause?: unknown }) {
    super(
      kind === 'idle'
        ? `MCP tool '${tool}' of '${server}' timed out: no result nor progress for ${timeoutMs} ms`
        : `MCP tool '${tool}' of '${server}' timed out: no result within ${timeoutMs} ms in all`,
      options,
    );
    this.server = server;
    this.tool = tool;
    this.timeoutMs = timeoutMs;
    this.kind = kind;
  }
}

/**
 * The server answered with a JSON-RPC error. `rpcCode` is its code; `status` is what it means
 * over HTTP, for the classifier: 400 for a request the server could not take (parse error,
 * invalid request, method not found, invalid params — an unknown tool, bad arguments: never
 * retried, never counted by the breaker), 500 for an internal error, none for other codes.
 *
 * @example
 * ```ts
 * classifyError(new McpProtocolError('weather', -32602, 'Unknown tool: nope')).retryable; // false
 * ```
 */
export class McpProtocolError extends Error {
  override readonly name = 'McpProtocolError';
  /** The JSON-RPC error code. */
  readonly rpcCode: number;
  /** The HTTP status it stands for (400 or 500), when it stands for one. */
  readonly status?: number;
  /** The server's id. */
  readonly server: string;

  constructor(server: string, rpcCode: number, message: string, options?: { cause?: unknown }) {
    super(`MCP server '${server}': ${message}`, options);
    this.server = server;
    this.rpcCode = rpcCode;
    const status = RPC_STATUS.get(rpcCode);
    if (status !== undefined) this.status = status;
  }
}

/**
 * A tool answered with `isError: true`: it ran and reported a failure (bad arguments it caught,
 * a failure of its own). The message is the text of its content; `result` is the whole result.
 * `status` 422 makes it a `validation_error`: `reflectOnError` shows it to the model, which may
 * correct its call; it is never retried automatically and never counts against the server's
 * breaker (the server answered).
 *
 * @example
 * ```ts
 * shouldReflectByDefault(new ToolError({ toolName: 'x', callId: 'c', args: {}, phase: 'execute', idempotent: true, message: 'bad', cause: new McpToolResultError('x', 'bad', {}) })); // true
 * ```
 */
export class McpToolResultError extends Error {
  override readonly name = 'McpToolResultError';
  /** 422: read by the classifier as `validation_error`. */
  readonly status = 422;
  /** The tool (its MCP name). */
  readonly tool: string;
  /** The result as the server sent it. */
  readonly result: unknown;

  constructor(tool: string, text: string, result: unknown) {
    super(text === '' ? `MCP tool '${tool}' reported an error` : text);
    this.tool = tool;
    this.result = result;
  }
}

/**
 * A multi-round call (MCP 2026-07-28) asked for input nobody here could give: no
 * `onInputRequired` answers it and the SDK's own handlers could not (no handler for the
 * method), or it was still asking after `maxInputRounds` rounds. The tool did not finish. Its
 * `inputRequests` and `requestState` are the server's last ones. `status` 400: not retried, not
 * counted by the breaker (the server answered).
 *
 * @example
 * ```ts
 * if (e instanceof ToolError && e.cause instanceof McpInputRequiredError) console.log(Object.keys(e.cause.inputRequests));
 * ```
 */
export class McpInputRequiredError extends Error {
  override readonly name = 'McpInputRequiredError';
  /** 400: read by the classifier as `bad_request`. */
  readonly status = 400;

  constructor(
    /** The server's id. */
    readonly server: string,
    /** The tool (its MCP name). */
    readonly tool: string,
    why: string,
    /** What the server asked for, by key (empty when the SDK did not say). */
    readonly inputRequests: Readonly<Record<string, unknown>> = {},
    /** The server's opaque state, when it sent one. */
    readonly requestState?: string,
    options?: { cause?: unknown },
  ) {
    super(`MCP tool '${tool}' of '${server}' needs input: ${why}`, options);
  }
}

/**
 * The connection broke after a call of a tool not marked safe to repeat was sent, on a server
 * speaking MCP 2026-07-28, where nothing resumes a broken stream: the tool may or may not have
 * run. It is not run again (only tools whose annotations say they are safe are); tell the model,
 * or check. `code` is `'ECONNRESET'` (`connection`: the breaker counts it); `cause` is the failure.
 *
 * @example
 * ```ts
 * if (e instanceof ToolError && e.cause instanceof McpOutcomeUnknownError) console.log(`check whether ${e.cause.tool} ran`);
 * ```
 */
export class McpOutcomeUnknownError extends Error {
  override readonly name = 'McpOutcomeUnknownError';
  /** `'ECONNRESET'`: what the classifier reads as a dropped connection. */
  readonly code = 'ECONNRESET';

  constructor(
    /** The server's id. */
    readonly server: string,
    /** The tool (its MCP name). */
    readonly tool: string,
    /** `why`: what made the outcome unknown, when not a broken connection (a task the server no longer knows). */
    options?: { cause?: unknown; why?: string },
  ) {
    const why = options?.why ?? 'the connection broke after the call was sent, and nothing resumes it';
    super(`MCP tool '${tool}' of '${server}': ${why}: whether it ran is unknown (not run again: the tool is not marked safe to repeat)`, options);
  }
}

/**
 * A tool call that ran as a task (MCP Tasks) ended `cancelled` on the server: it did not complete
 * (the server stopped it, or honoured a cancel). `status` 409, so `classifyError` says
 * retryable — for a tool safe to repeat; any other is never retried automatically.
 *
 * @example
 * ```ts
 * if (e instanceof McpTaskCancelledError) console.log(`task ${e.taskId} of ${e.tool}: ${e.message}`);
 * ```
 */
export class McpTaskCancelledError extends Error {
  override readonly name = 'McpTaskCancelledError';
  /** 409: what the classifier reads as a conflict worth another try. */
  readonly status = 409;

  constructor(
    /** The server's id. */
    readonly server: string,
    /** The tool (its MCP name). */
    readonly tool: string,
    /** The task's id on the server. */
    readonly taskId: string,
    /** The server's `statusMessage`, if it gave one. */
    statusMessage: string | undefined,
  ) {
    super(`MCP tool '${tool}' of '${server}': its task ${taskId} was cancelled${statusMessage === undefined ? '' : ` (${statusMessage})`}`);
  }
}

/** JSON-RPC codes and the HTTP status each stands for (the table above). */
const RPC_STATUS: ReadonlyMap<number, number> = new Map([
  [-32700, 400],
  [-32600, 400],
  [-32601, 400],
  [-32602, 400],
  [-32042, 400],
  [-32603, 500],
]);

/** The SDK's `ErrorCode.ConnectionClosed` and `ErrorCode.RequestTimeout`. */
const CONNECTION_CLOSED = -32000;
const REQUEST_TIMEOUT = -32001;

/** 2026-07-28: the server needs input of a kind the client's capabilities do not declare. */
const MISSING_CLIENT_CAPABILITY = -32021;

/** 2.x `SdkError` codes of a connection gone (closed, never opened, a send that failed). */
const SDK_CONNECTION = new Map([
  ['CONNECTION_CLOSED', 'connection closed'],
  ['NOT_CONNECTED', 'not connected'],
  ['SEND_FAILED', 'the message could not be sent'],
]);

/** 2.x `SdkError` codes of an `input_required` answer the SDK could not fulfil. */
const SDK_INPUT = new Set(['CAPABILITY_NOT_SUPPORTED', 'INPUT_REQUIRED_ROUNDS_EXCEEDED', 'UNSUPPORTED_RESULT_TYPE']);

/** Send failures of a stdio transport whose process is gone. */
const PIPE_CODES = new Set(['EPIPE', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END']);

/**
 * Whether `error` is a Streamable-HTTP 404: the session the request carried is gone (the SDK's
 * `StreamableHTTPError` keeps the HTTP status in `code`).
 */
export function isSessionGone(error: unknown): boolean {
  return field(error, 'name') !== 'McpError' && field(error, 'code') === 404 && /Streamable HTTP error/.test(String(field(error, 'message')));
}

/**
 * What a JSON-RPC error the server sent says, without the SDK's `MCP error <code>: ` before it.
 *
 * @example
 * ```ts
 * rpcDetail('MCP error -32602: Prompt nope not found'); // 'Prompt nope not found'
 * ```
 */
export function rpcDetail(message: string): string {
  return message.replace(/^MCP error -?\d+: /, '');
}

/**
 * What `fromMcp` fails with for what an MCP client threw (the table in this module's header).
 * `timeoutMs` is the limit it gave the SDK (named in a timeout's message).
 *
 * @example
 * ```ts
 * mcpFailure('weather', 'get_weather', new Error('Not connected'), 30_000); // McpConnectionError
 * ```
 */
export function mcpFailure(server: string, tool: string, error: unknown, timeoutMs: number): unknown {
  const code = field(error, 'code');
  const message = String(field(error, 'message') ?? error);
  const name = field(error, 'name');
  if (name === 'SdkError' && typeof code === 'string') {
    const gone = SDK_CONNECTION.get(code);
    if (gone !== undefined) return new McpConnectionError(server, gone, { cause: error });
    if (code === 'REQUEST_TIMEOUT') return new McpTimeoutError(server, tool, timeoutMs, 'idle', { cause: error });
    if (SDK_INPUT.has(code)) {
      const last = field(field(error, 'data'), 'lastResult');
      return new McpInputRequiredError(server, tool, message, (field(last, 'inputRequests') ?? {}) as Record<string, unknown>, undefined, { cause: error });
    }
  }
  if (code === MISSING_CLIENT_CAPABILITY)
    return new McpInputRequiredError(server, tool, `${rpcDetail(message)} (declare it in the client's capabilities)`, {}, undefined, { cause: error });
  if ((name === 'McpError' || name === 'ProtocolError') && typeof code === 'number') {
    if (code === CONNECTION_CLOSED) return new McpConnectionError(server, 'connection closed', { cause: error });
    if (code === REQUEST_TIMEOUT) return new McpTimeoutError(server, tool, timeoutMs, 'idle', { cause: error });
    return new McpProtocolError(server, code, rpcDetail(message), { cause: error });
  }
  if (isSessionGone(error)) return new McpSessionExpiredError(server, { cause: error });
  if (message === 'Not connected') return new McpConnectionError(server, 'not connected', { cause: error });
  if (typeof code === 'string' && PIPE_CODES.has(code)) return new McpConnectionError(server, `the connection broke (${code})`, { cause: error });
  return error;
}

/**
 * Whether a call that failed so broke its connection after it may have reached the server: a
 * connection closed mid-call, an exchange cut (fetch's `TypeError`, a reset socket) — not one
 * refused or not there to send on (the request never left), nor an answer (an error the server
 * sent, a timeout: each says what it is).
 *
 * @example
 * ```ts
 * mayHaveRun(new McpConnectionError('kb', 'not connected')); // false
 * mayHaveRun(new TypeError('fetch failed')); // true: the exchange broke, maybe after the request
 * ```
 */
export function mayHaveRun(error: unknown): boolean {
  if (error instanceof McpConnectionError) return !/not connected|could not be sent|EPIPE|ERR_STREAM/.test(error.message);
  const cause = field(error, 'cause');
  const code = field(cause, 'code') ?? field(error, 'code');
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') return false;
  return error instanceof TypeError || code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE';
}
