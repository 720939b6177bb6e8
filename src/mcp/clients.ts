/**
 * The clients of both MCP SDK majors, read by shape (no import of either SDK here, so a user of
 * one never needs the other): the 1.x `Client` of `@modelcontextprotocol/sdk` ({@link McpClient})
 * and the 2.x `Client` of `@modelcontextprotocol/client` ({@link McpClientV2}), which takes
 * `callTool`'s options second, has `discover`, and says which revision the connection speaks.
 *
 * @module
 */
import { InvalidOptionError } from '../core/errors/errors.js';
import type { McpCallParams, McpClient, McpClientBase, McpRequestOptions } from './link.js';
import { TaskWire } from './taskWire.js';

/**
 * What `fromMcp` needs of a 2.x MCP client: the `Client` of `@modelcontextprotocol/client`,
 * connected. With `versionNegotiation: { mode: 'auto' }` it speaks MCP 2026-07-28 to a server
 * that does (`server/discover`, no `initialize`, no session) and the old handshake to one that
 * does not; either way `fromMcp` heals its calls by the same rules.
 *
 * @example
 * ```ts
 * import { Client } from '@modelcontextprotocol/client';
 * const client: McpClientV2 = new Client({ name: 'my-agent', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
 * ```
 */
export interface McpClientV2 extends McpClientBase {
  /** `tools/call`, its options second. */
  callTool(params: McpCallParams, options?: McpRequestOptions): Promise<{ readonly [key: string]: unknown }>;
  /** `server/discover` (2026-07-28): what tells a 2.x client from a 1.x one. */
  discover(options?: McpRequestOptions): Promise<unknown>;
  /** `'modern'` on a 2026-07-28 connection (stateless), `'legacy'` after the old `initialize` handshake. */
  getProtocolEra(): 'modern' | 'legacy' | undefined;
  /** Any request, its result checked by `resultSchema` (a Standard Schema): MCP Tasks' `tasks/get`, `tasks/update`, `tasks/cancel`. */
  request(request: { method: string; params?: Record<string, unknown> }, resultSchema: unknown, options?: McpRequestOptions): Promise<unknown>;
  /** What the server said it can do (`server/discover`): MCP Tasks when its `extensions` name them. */
  getServerCapabilities(): { readonly extensions?: Readonly<Record<string, unknown>> } | undefined;
}

/** A client of either major, as `fromMcp` takes it. */
export type McpAnyClient = McpClient | McpClientV2;

/** The client, read: its major, its `tools/call`, and whether its connection is stateless. */
export interface ClientAccess {
  readonly client: McpClientBase;
  readonly major: 1 | 2;
  readonly callTool: (params: McpCallParams, options: McpRequestOptions) => Promise<{ readonly [key: string]: unknown }>;
  /** The connection speaks 2026-07-28 (read on each call: a reconnection may land on another revision). */
  readonly stateless: () => boolean;
  /** Is the server there: `ping`, or `server/discover` on 2026-07-28, which has no `ping`. */
  readonly probe: (options: McpRequestOptions) => Promise<unknown>;
  /** MCP Tasks on a 2.x client (taskWire.ts); none on a 1.x one. */
  readonly tasks: TaskWire | undefined;
}

const METHODS = ['listTools', 'callTool', 'ping', 'connect', 'close', 'getServerVersion'] as const;

/**
 * The client checked by shape: a 1.x `Client`, or a 2.x one (it has `discover`).
 *
 * @example
 * ```ts
 * readClient('fromMcp', client).major; // 1 or 2
 * ```
 * @throws {InvalidOptionError} for anything else, naming the first method it lacks.
 */
export function readClient(target: string, client: unknown): ClientAccess {
  const c = client as Record<string, unknown> | null | undefined;
  const missing = METHODS.find((m) => typeof c?.[m] !== 'function');
  if (missing !== undefined)
    throw new InvalidOptionError(
      target,
      'client',
      client,
      `a connected MCP Client of @modelcontextprotocol/sdk 1.x or @modelcontextprotocol/client 2.x (no ${missing}())`,
    );
  if (typeof c?.['discover'] === 'function') {
    const v2 = client as McpClientV2;
    const stateless = (): boolean => typeof v2.getProtocolEra === 'function' && v2.getProtocolEra() === 'modern';
    const tasks = typeof v2.request === 'function' ? new TaskWire(v2) : undefined;
    return {
      client: v2,
      major: 2,
      tasks,
      // the wire on the transport the call goes out on (a reconnection brings a new one)
      callTool: (params, options) => {
        tasks?.attach();
        return v2.callTool(params, options);
      },
      stateless,
      probe: (options) => (stateless() ? v2.discover(options) : v2.ping(options)),
    };
  }
  const v1 = client as McpClient;
  return {
    client: v1,
    major: 1,
    tasks: undefined,
    callTool: (params, options) => v1.callTool(params, undefined, options),
    stateless: () => false,
    probe: (options) => v1.ping(options),
  };
}
