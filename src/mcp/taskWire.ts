/**
 * MCP Tasks on the wire (the `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28): a server
 * may answer `tools/call` with a task handle (`resultType: "task"`) to a client that declared the
 * extension in that request's capabilities, then answers `tasks/get`, `tasks/update` and
 * `tasks/cancel` for it.
 *
 * The 2.x SDK (`@modelcontextprotocol/client` 2.4) carries none of it: its codecs refuse a
 * `resultType` of `"task"` (`UNSUPPORTED_RESULT_TYPE`, the task's id lost with the answer), and a
 * client declares only the capabilities it was built with. The extension's own package
 * (`@modelcontextprotocol/ext-tasks`) asks the host to frame that traffic itself. {@link TaskWire}
 * does it on the client's own transport, through the SDK's public `Transport` interface (its `send`
 * and `onmessage`): a request rxheal marks goes out with the extension added to the capabilities the
 * SDK put in its `_meta` (the mark removed), and a task handle answering one of rxheal's
 * `tools/call`s reaches the SDK as a complete result carrying the task under {@link TASK_META_KEY}
 * — so everything else of the call (progress, cancellation, multi-round calls, header mirroring)
 * stays the SDK's. No framework import: the client and its transport are read by shape.
 *
 * @module
 */
import { filter, Subject, type Observable } from 'rxjs';
import { McpProtocolError } from './errors.js';
import type { McpRequestOptions } from './types.js';

/** The extension's identifier, in capabilities. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** Where the SDK's per-request envelope says what the client can do (MCP 2026-07-28). */
const CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
/** rxheal's mark on a request of its own: removed before the request leaves. */
const MARK = 'io.rxheal/tasks';
/** Where a task handle answering `tools/call` is handed to the SDK (and back to rxheal), in the result's `_meta`. */
export const TASK_META_KEY = 'io.rxheal/task';
/** The notification a server pushes a task's change with (the extension's `notifications/tasks`: the task as `tasks/get` describes it). */
const TASK_NOTIFICATION = 'notifications/tasks';
/** `tools/call` ids whose answer may be a task, remembered at most (an aborted call's answer never comes). */
const WATCHED_AT_MOST = 10_000;

/** A task's status (MCP Tasks). */
export type McpTaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

const STATUSES: ReadonlySet<string> = new Set<McpTaskStatus>(['working', 'input_required', 'completed', 'failed', 'cancelled']);

/**
 * A task as the server describes it (`tasks/get`'s answer, or the seed a `tools/call` answered
 * with): its id and status, and by status its outstanding `inputRequests`, its `result` (the
 * tool's `CallToolResult`) or its JSON-RPC `error`.
 *
 * @example
 * ```ts
 * const task: McpTask = { taskId: '7865', status: 'working', statusMessage: 'rendering page 3 of 12', pollIntervalMs: 2_000 };
 * ```
 */
export interface McpTask {
  readonly taskId: string;
  readonly status: McpTaskStatus;
  readonly statusMessage?: string;
  /** The server's suggested wait between polls, in ms. */
  readonly pollIntervalMs?: number;
  /** `input_required`: what the server asks, by key. */
  readonly inputRequests?: Readonly<Record<string, { readonly method: string; readonly params?: unknown }>>;
  /** `completed`: the tool's result. */
  readonly result?: { readonly [key: string]: unknown };
  /** `failed`: the JSON-RPC error the tool's execution ended with. */
  readonly error?: { readonly code?: unknown; readonly message?: unknown; readonly data?: unknown };
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u);

/**
 * A server's task description checked: what {@link McpTask} needs, or an {@link McpProtocolError}
 * (400) naming what is wrong — a server that breaks the extension's shapes is not retried.
 *
 * @example
 * ```ts
 * readTask('kb', { taskId: 't1', status: 'working' }).status; // 'working'
 * ```
 */
export function readTask(server: string, u: unknown): McpTask {
  const bad = (why: string): never => {
    throw new McpProtocolError(server, -32600, `a task that is not one (${why}): ${JSON.stringify(u)?.slice(0, 200)}`);
  };
  if (!isRecord(u)) return bad('not an object');
  const { taskId, status, statusMessage, pollIntervalMs, inputRequests, result, error } = u;
  if (typeof taskId !== 'string' || taskId === '') return bad('no taskId');
  if (typeof status !== 'string' || !STATUSES.has(status)) return bad(`status ${JSON.stringify(status)}`);
  if (status === 'completed' && !isRecord(result)) return bad('completed without a result');
  if (status === 'failed' && !isRecord(error)) return bad('failed without an error');
  return {
    taskId,
    status: status as McpTaskStatus,
    ...(typeof statusMessage === 'string' ? { statusMessage } : {}),
    ...(typeof pollIntervalMs === 'number' && Number.isFinite(pollIntervalMs) && pollIntervalMs >= 0 ? { pollIntervalMs } : {}),
    ...(status === 'input_required' ? { inputRequests: (isRecord(inputRequests) ? inputRequests : {}) as McpTask['inputRequests'] } : {}),
    ...(status === 'completed' ? { result: result as McpTask['result'] } : {}),
    ...(status === 'failed' ? { error: error as McpTask['error'] } : {}),
  };
}

/** The task a `tools/call` answered with (handed over by the wire), if it did. */
export function taskOf(server: string, result: { readonly [key: string]: unknown }): McpTask | undefined {
  const meta = result['_meta'];
  return isRecord(meta) && meta[TASK_META_KEY] !== undefined ? readTask(server, meta[TASK_META_KEY]) : undefined;
}

/** A JSON-RPC message, as a transport carries it (the fields read here). */
interface Message {
  readonly id?: unknown;
  readonly method?: unknown;
  readonly params?: { readonly _meta?: Record<string, unknown>; readonly [key: string]: unknown };
  readonly result?: Record<string, unknown>;
  readonly [key: string]: unknown;
}

/** The SDK's transport, by shape: what the wire touches. */
interface TransportLike {
  send(message: Message, options?: unknown): Promise<void>;
  onmessage?: ((message: Message, extra?: unknown) => void) | undefined;
}

/** The 2.x client, by shape: what the wire needs of it. */
export interface TaskClient {
  readonly transport?: unknown;
  getServerCapabilities?(): { readonly extensions?: Readonly<Record<string, unknown>> } | undefined;
  request(request: { method: string; params?: Record<string, unknown> }, resultSchema: unknown, options?: McpRequestOptions): Promise<unknown>;
}

/** A result schema (Standard Schema) that takes the answer as it is: the wire reads it (`readTask`). */
const AS_IS = { '~standard': { version: 1, vendor: 'rxheal', validate: (value: unknown) => ({ value }) } };

/** The extension added to what the SDK said the client can do (the request's envelope; none on the old handshake). */
function declared(meta: Record<string, unknown>): Record<string, unknown> {
  const rest = Object.fromEntries(Object.entries(meta).filter(([key]) => key !== MARK));
  const capabilities = rest[CLIENT_CAPABILITIES];
  if (!isRecord(capabilities)) return rest;
  const extensions = isRecord(capabilities['extensions']) ? capabilities['extensions'] : {};
  return { ...rest, [CLIENT_CAPABILITIES]: { ...capabilities, extensions: { ...extensions, [TASKS_EXTENSION]: {} } } };
}

/**
 * The Tasks extension over one 2.x client: installed on each transport the client gets (a
 * reconnection brings a new one), just before a request of rxheal's goes out on it.
 *
 * @example
 * ```ts
 * const wire = new TaskWire(client);
 * wire.supported(); // the server said it speaks the extension (server/discover)
 * const task = readTask('kb', await wire.request('tasks/get', { taskId }, options));
 * ```
 */
export class TaskWire {
  private readonly installed = new WeakSet<object>();
  /** Ids of marked `tools/call` requests whose answer has not come. */
  private readonly watched = new Set<unknown>();
  /** The tasks the server pushed (`notifications/tasks`), as they came. */
  private readonly pushed = new Subject<McpTask>();

  constructor(private readonly client: TaskClient) {}

  /** The server advertises the extension (in what `server/discover` answered). */
  supported(): boolean {
    const capabilities = typeof this.client.getServerCapabilities === 'function' ? this.client.getServerCapabilities() : undefined;
    return isRecord(capabilities?.extensions) && capabilities.extensions[TASKS_EXTENSION] !== undefined;
  }

  /** `params` marked: sent with the extension declared (and a task handle, if one answers, read back) — once {@link TaskWire.attach | attach}ed to the transport it goes out on. */
  mark<P extends { readonly _meta?: Record<string, unknown> }>(params: P): P {
    return { ...params, _meta: { ...params._meta, [MARK]: true } };
  }

  /** `tasks/get`, `tasks/update` or `tasks/cancel` through the SDK (its deadlines, cancellation and errors), the extension declared. */
  request(method: 'tasks/get' | 'tasks/update' | 'tasks/cancel', params: Record<string, unknown>, options: McpRequestOptions): Promise<unknown> {
    this.attach();
    return this.client.request({ method, params: this.mark(params) }, AS_IS, options);
  }

  /**
   * The changes of one task the server pushes (`notifications/tasks`, where it sends them: on stdio,
   * or on a stream the connection keeps open), from the transports the wire is on; hot, never
   * ending. A pushed task that is not one is dropped (the polls still find the task).
   */
  pushes(taskId: string): Observable<McpTask> {
    return this.pushed.pipe(filter((task) => task.taskId === taskId));
  }

  /** Puts the wire on the client's current transport (once per transport): just before a marked request goes out. */
  attach(): void {
    const transport = this.client.transport as TransportLike | undefined;
    if (transport === undefined || this.installed.has(transport) || typeof transport.send !== 'function') return;
    this.installed.add(transport);
    const send = transport.send.bind(transport);
    transport.send = (message, options) => send(this.outgoing(message), options);
    // the SDK sets onmessage when it connects (and may again): each handler it sets is wrapped
    let handler = transport.onmessage;
    Object.defineProperty(transport, 'onmessage', {
      configurable: true,
      enumerable: true,
      get: () => (handler === undefined ? undefined : (message: Message, extra?: unknown) => handler!(this.incoming(message), extra)),
      set: (next: TransportLike['onmessage']) => void (handler = next),
    });
  }

  /** A marked request: its mark removed, the extension declared; a `tools/call`'s id watched for a task handle. */
  private outgoing(message: Message): Message {
    const meta = message.params?._meta;
    if (!isRecord(meta) || meta[MARK] === undefined) return message;
    if (message.method === 'tools/call' && message.id !== undefined) {
      if (this.watched.size >= WATCHED_AT_MOST) this.watched.delete(this.watched.values().next().value);
      this.watched.add(message.id);
    }
    return { ...message, params: { ...message.params, _meta: declared(meta) } };
  }

  /** A task handle answering a watched `tools/call`: handed to the SDK as a complete result that carries it. A pushed task: read, then passed on as it came. */
  private incoming(message: Message): Message {
    if (message.method === TASK_NOTIFICATION && message.id === undefined) this.push(message.params);
    if (message.id === undefined || message.method !== undefined || !this.watched.delete(message.id)) return message;
    const result = message.result;
    if (!isRecord(result) || result['resultType'] !== 'task') return message;
    const { _meta, ...task } = result;
    delete task['resultType'];
    // isError: the SDK checks no output schema against it (rxheal reads the task, never this content)
    return { ...message, result: { resultType: 'complete', content: [], isError: true, _meta: { ...(isRecord(_meta) ? _meta : {}), [TASK_META_KEY]: task } } };
  }

  /** A pushed task to whoever follows it; one that breaks the extension's shapes is dropped. */
  private push(params: unknown): void {
    let task: McpTask;
    try {
      task = readTask('', params);
    } catch {
      return;
    }
    this.pushed.next(task);
  }
}
