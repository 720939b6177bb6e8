/**
 * What a remote A2A agent fails with, said in rxheal's words so that `classifyError` (the one
 * place that decides about retries and breakers) reads it right: one table from what the SDK
 * throws, or a task's end, to the error `fromA2A` fails with. No framework import: the SDK's
 * errors are read by shape (their `name`, the JSON-RPC code they carry).
 *
 * | the agent or its client says                                   | `fromA2A` fails with              | the classifier says            |
 * | -------------------------------------------------------------- | --------------------------------- | ------------------------------ |
 * | the task ended `failed`                                        | {@link A2ATaskError} (502)        | `bad_gateway`: counted         |
 * | the task ended `rejected`                                      | {@link A2ATaskError} (422)        | `validation_error`: reflected, not counted |
 * | the task ended `canceled` (not by us)                          | {@link A2ATaskError} (409)        | `conflict`                     |
 * | the task wants `auth-required`                                 | {@link A2ATaskError} (401)        | `unauthorized`: not retried    |
 * | no event within the first-event or idle deadline               | {@link A2ATimeoutError}           | `timeout`                      |
 * | the stream ended before a terminal or interrupted state        | {@link A2AStreamEndedError}       | `connection`                   |
 * | `TaskNotFoundError`                                            | {@link A2AProtocolError} (404)    | `not_found`                    |
 * | `TaskNotCancelableError`                                       | {@link A2AProtocolError} (409)    | `conflict`                     |
 * | `UnsupportedOperationError`, `ContentTypeNotSupportedError`, `VersionNotSupportedError`, `ExtensionSupportRequiredError`, `RequestMalformedError`, `PushNotificationNotSupportedError`, JSON-RPC -32700/-32600/-32601/-32602 | {@link A2AProtocolError} (400) | `bad_request`: not retried, not counted |
 * | `InvalidAgentResponseError`                                    | {@link A2AProtocolError} (502)    | `bad_gateway`                  |
 * | JSON-RPC -32603 (internal error)                               | {@link A2AProtocolError} (500)    | `server_error`                 |
 * | anything else (fetch's `TypeError`: refused, reset, `terminated`) | unchanged                      | by its own rules (`connection`) |
 *
 * @module
 */

/** A value's field, without trusting its type. */
const field = (u: unknown, key: string): unknown => (typeof u === 'object' && u !== null ? (u as Record<string, unknown>)[key] : undefined);

/**
 * The A2A task states `fromA2A` ends a call on with an error (the SDK's `TaskState` names, lower-cased).
 *
 * @example
 * ```ts
 * const state: A2AFailedState = 'rejected';
 * ```
 */
export type A2AFailedState = 'failed' | 'rejected' | 'canceled' | 'auth-required';

const TASK_STATUS: Readonly<Record<A2AFailedState, number>> = { failed: 502, rejected: 422, canceled: 409, 'auth-required': 401 };

/**
 * A remote agent's task ended without its result: `failed` (502: the agent failed, counted by its
 * breaker), `rejected` (422: it will not do this — reflected to the model, which may ask
 * otherwise), `canceled` by someone else (409), or it wants credentials (`auth-required`, 401).
 * The message is the text of the task's status message, when it had one.
 *
 * @example
 * ```ts
 * classifyError(new A2ATaskError('travel', 'task-1', 'rejected', 'no flights to the moon')).category; // 'validation_error'
 * ```
 */
export class A2ATaskError extends Error {
  override readonly name = 'A2ATaskError';
  /** The HTTP status the state stands for, for the classifier. */
  readonly status: number;

  /**
   * @param agent - the agent's id (`fromA2A`'s `id`)
   * @param taskId - the task's id
   * @param state - the state the task ended in
   * @param detail - the text of its status message ('' when none)
   */
  constructor(
    readonly agent: string,
    readonly taskId: string,
    readonly state: A2AFailedState,
    detail: string,
  ) {
    super(`A2A agent '${agent}': task ${taskId} ${state}${detail === '' ? '' : `: ${detail}`}`);
    this.status = TASK_STATUS[state];
  }
}

/**
 * No event came within a deadline: `'first'` — the first event of a request (a message sent, a
 * task resubscribed) within `firstEventMs`; `'idle'` — the next event within `idleMs`. The request
 * was aborted. With the task's id known, a stall is a cut stream: `fromA2A` resubscribes first, and
 * fails with this only when it may not any more. `code` is `'ETIMEDOUT'` (`timeout`).
 *
 * @example
 * ```ts
 * classifyError(new A2ATimeoutError('travel', 'idle', 30_000)).category; // 'timeout'
 * ```
 */
export class A2ATimeoutError extends Error {
  override readonly name = 'A2ATimeoutError';
  /** `'ETIMEDOUT'`: what the classifier reads as a timeout. */
  readonly code = 'ETIMEDOUT';
  /** The agent's id. */
  readonly agent: string;
  /** Which deadline passed. */
  readonly kind: 'first' | 'idle';
  /** The deadline, in ms. */
  readonly timeoutMs: number;

  constructor(agent: string, kind: 'first' | 'idle', timeoutMs: number) {
    super(kind === 'first' ? `A2A agent '${agent}': no event within ${timeoutMs} ms` : `A2A agent '${agent}': stalled, no event for ${timeoutMs} ms`);
    this.agent = agent;
    this.kind = kind;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * A task's stream ended (the server closed it) before the task reached a terminal or interrupted
 * state: a cut stream, resubscribed while `fromA2A` may; past that, the call fails with it. `code`
 * is `'ECONNRESET'` (`connection`).
 *
 * @example
 * ```ts
 * classifyError(new A2AStreamEndedError('travel', 'task-1')).category; // 'connection'
 * ```
 */
export class A2AStreamEndedError extends Error {
  override readonly name = 'A2AStreamEndedError';
  /** `'ECONNRESET'`: what the classifier reads as a dropped connection. */
  readonly code = 'ECONNRESET';
  /** The agent's id. */
  readonly agent: string;
  /** The task's id, when the stream had said it. */
  readonly taskId: string | undefined;

  constructor(agent: string, taskId: string | undefined) {
    super(`A2A agent '${agent}': the stream of task ${taskId ?? '(none yet)'} ended before the task did`);
    this.agent = agent;
    this.taskId = taskId;
  }
}

/**
 * The agent answered a request with an A2A error (the SDK's `TaskNotFoundError`, …, or a bare
 * JSON-RPC error). `reason` is the error's A2A reason (`TASK_NOT_FOUND`, …) when it had one;
 * `status` what it means over HTTP, for the classifier (the table in this module's header).
 *
 * @example
 * ```ts
 * classifyError(new A2AProtocolError('travel', 'UnsupportedOperationError', 'UNSUPPORTED_OPERATION', 'no streaming')).retryable; // false
 * ```
 */
export class A2AProtocolError extends Error {
  override readonly name = 'A2AProtocolError';
  /** The SDK error's name (`TaskNotFoundError`, …), or `'JSONRPCError'` for a bare code. */
  readonly kind: string;
  /** The A2A reason (`TASK_NOT_FOUND`, …), when the error carried one. */
  readonly reason: string | undefined;
  /** The HTTP status it stands for, when it stands for one. */
  readonly status?: number;
  /** The agent's id. */
  readonly agent: string;

  constructor(agent: string, kind: string, reason: string | undefined, message: string, status?: number, options?: { cause?: unknown }) {
    super(`A2A agent '${agent}': ${message}`, options);
    this.agent = agent;
    this.kind = kind;
    this.reason = reason;
    const known = status ?? KIND_STATUS.get(kind);
    if (known !== undefined) this.status = known;
  }
}

/** The SDK's errors by name, and the HTTP status each stands for. */
const KIND_STATUS: ReadonlyMap<string, number> = new Map([
  ['TaskNotFoundError', 404],
  ['TaskNotCancelableError', 409],
  ['UnsupportedOperationError', 400],
  ['ContentTypeNotSupportedError', 400],
  ['VersionNotSupportedError', 400],
  ['ExtensionSupportRequiredError', 400],
  ['RequestMalformedError', 400],
  ['PushNotificationNotSupportedError', 400],
  ['ExtendedAgentCardNotConfiguredError', 400],
  ['InvalidAgentResponseError', 502],
]);

/** JSON-RPC codes (a peer that is not the SDK) and the HTTP status each stands for. */
const RPC_STATUS: ReadonlyMap<number, [string, number]> = new Map([
  [-32700, ['ParseError', 400]],
  [-32600, ['InvalidRequest', 400]],
  [-32601, ['MethodNotFound', 400]],
  [-32602, ['InvalidParams', 400]],
  [-32603, ['InternalError', 500]],
  [-32001, ['TaskNotFoundError', 404]],
  [-32002, ['TaskNotCancelableError', 409]],
  [-32004, ['UnsupportedOperationError', 400]],
]);

/**
 * Whether the agent refused a request as unsupported (`UnsupportedOperationError`, -32004): what
 * the SDK's server answers a resubscription to a task already over.
 *
 * @example
 * ```ts
 * isUnsupported(new A2AProtocolError('a', 'UnsupportedOperationError', 'UNSUPPORTED_OPERATION', 'terminal')); // true
 * ```
 */
export function isUnsupported(error: unknown): boolean {
  return error instanceof A2AProtocolError && error.kind === 'UnsupportedOperationError';
}

/**
 * What `fromA2A` fails with for what an A2A client threw (the table in this module's header).
 *
 * @example
 * ```ts
 * a2aFailure('travel', sdkError); // an A2AProtocolError for a TaskNotFoundError
 * ```
 */
export function a2aFailure(agent: string, error: unknown): unknown {
  if (error instanceof A2AProtocolError || error instanceof A2ATaskError || error instanceof A2ATimeoutError || error instanceof A2AStreamEndedError)
    return error;
  const name = field(error, 'name');
  const message = String(field(error, 'message') ?? error);
  const reason = field(error, 'reason');
  if (typeof name === 'string' && KIND_STATUS.has(name))
    return new A2AProtocolError(agent, name, typeof reason === 'string' ? reason : undefined, message, undefined, { cause: error });
  const code = field(error, 'envelopeCode') ?? field(error, 'code');
  const rpc = typeof code === 'number' ? RPC_STATUS.get(code) : undefined;
  if (rpc !== undefined) return new A2AProtocolError(agent, rpc[0], typeof reason === 'string' ? reason : undefined, message, rpc[1], { cause: error });
  if (name === 'A2AError')
    return new A2AProtocolError(agent, 'A2AError', typeof reason === 'string' ? reason : undefined, message, undefined, { cause: error });
  return error;
}
