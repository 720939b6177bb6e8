/**
 * `mcpTask(server, options)` for the executable diagrams of marble-docs/tasks.md: one call of an
 * `rxheal/mcp` tool (`fromMcp`'s, over its real link and the real MCP Tasks rules of tasks.ts)
 * whose server answers `tools/call` with a task handle (`t1`, `working`) and each `tasks/get` with
 * the task as `server` (a hot observable of letters) last said: `w` working, `i` input_required
 * (asking `approve`), `c` completed (the text `rendered`), `f` failed (-32603), `x` cancelled. The
 * client answers in the same frame (a thenable, not a promise), so every poll lands at its virtual
 * time. What the call did is observable: `call` (its result; subscribing it makes the call;
 * `result` the same with an error as a value: `timeout(kind)` for an `McpTimeoutError`, else the
 * name of what failed the call),
 * `polls` (each `tasks/get`, as the letter it found), `updates` (each `tasks/update`: `u`),
 * `cancels` (each `tasks/cancel`: `x`). With `pushes` (a hot observable of the same letters), the
 * server also pushes the task as each letter says (`notifications/tasks` on the client's
 * transport), as a server on stdio may.
 */
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { catchError, defer, Observable, of, Subject } from 'rxjs';
import * as rxheal from '../src/index.js';
import { McpTimeoutError } from '../src/mcp/index.js';
import { toolset, type FromMcpOptions, type McpSchemaValidator } from '../src/mcp/fromMcp.js';

const STATUS: Readonly<Record<string, string>> = { w: 'working', i: 'input_required', c: 'completed', f: 'failed', x: 'cancelled' };

/** What a diagram's task call is: the call, and what it sent. */
export interface DiagramTask {
  readonly call: Observable<unknown>;
  readonly result: Observable<unknown>;
  readonly polls: Observable<string>;
  readonly updates: Observable<string>;
  readonly cancels: Observable<string>;
}

/** A value now, as a thenable (the SDK's promise, without its microtask). */
const now = <T>(value: () => T) => ({
  then: (ok: (v: T) => void, fail: (e: unknown) => void) => {
    let v: T;
    try {
      v = value();
    } catch (error) {
      fail(error);
      return;
    }
    ok(v);
  },
});

export function mcpTask(
  server: Observable<string>,
  options: FromMcpOptions & { readonly pollIntervalMs?: number; readonly resumed?: boolean; readonly pushes?: Observable<string> } = {},
): DiagramTask {
  const { pollIntervalMs, resumed, pushes, ...fromMcpOptions } = options;
  const polls = new Subject<string>();
  const updates = new Subject<string>();
  const cancels = new Subject<string>();
  let state = 'w';
  server.subscribe((letter) => (state = letter));
  const task = (letter: string): Record<string, unknown> => ({
    taskId: 't1',
    status: STATUS[letter],
    ...(pollIntervalMs === undefined ? {} : { pollIntervalMs }),
    ...(letter === 'i' ? { inputRequests: { approve: { method: 'elicitation/create', params: { message: 'Go on?' } } } } : {}),
    ...(letter === 'c' ? { result: { content: [{ type: 'text', text: 'rendered' }] } } : {}),
    ...(letter === 'f' ? { error: { code: -32603, message: 'renderer crashed' } } : {}),
  });
  // the transport the wire reads pushed tasks from (the SDK's own handler: nothing to do here)
  const transport: { send(): Promise<void>; onmessage?: (message: unknown) => void } = { send: () => Promise.resolve(), onmessage: () => undefined };
  pushes?.subscribe((letter) => transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/tasks', params: task(letter) }));
  const client = {
    transport,
    callTool: () => now(() => ({ content: [], isError: true, _meta: { 'io.rxheal/task': task('w') } })),
    request: ({ method }: { method: string }) =>
      now(() => {
        if (method === 'tasks/get') polls.next(state);
        if (method === 'tasks/update') updates.next('u');
        if (method === 'tasks/cancel') cancels.next('x');
        return method === 'tasks/get' ? { ...task(state), resultType: 'complete' } : { resultType: 'complete' };
      }),
    discover: () => Promise.resolve({}),
    getProtocolEra: () => 'modern' as const,
    getServerCapabilities: () => ({ extensions: { 'io.modelcontextprotocol/tasks': {} } }),
    listTools: () => Promise.resolve({ tools: [] }),
    ping: () => Promise.resolve({}),
    connect: () => Promise.resolve(),
    close: () => Promise.resolve(),
    getServerVersion: () => ({ name: 'docs', version: '2.0.0' }),
  };
  const set = toolset('fromMcp', client, { id: 'docs', ...fromMcpOptions });
  const [tool] = set.toolsOf([{ name: 'render', inputSchema: { type: 'object' } }], new AjvJsonSchemaValidator() as unknown as McpSchemaValidator);
  const context = {
    signal: new AbortController().signal,
    callId: 'call-1',
    ...(resumed === true ? { resumed: { mcpTask: { server: 'docs', tool: 'render', taskId: 't1' } } } : {}),
  };
  const call = defer(() =>
    resumed === true ? (tool!.execute({}, context) as Observable<unknown>) : rxheal.callTool(tool!, { id: 'call-1', name: 'render', args: {} }),
  );
  const failed = (error: unknown): string => {
    const cause = error instanceof rxheal.ToolError && error.cause !== undefined ? error.cause : error;
    return cause instanceof McpTimeoutError ? `timeout(${cause.kind})` : cause instanceof Error ? cause.name : String(cause);
  };
  return { call, result: call.pipe(catchError((error: unknown) => of(failed(error)))), polls, updates, cancels };
}
