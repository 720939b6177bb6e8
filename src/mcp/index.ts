/**
 * `rxheal/mcp`: an MCP server's tools as rxheal tools that heal — arguments validated against
 * their schemas before the call, retries only for tools whose annotations say they are safe,
 * `isError` results reflected to the model, progress-aware timeouts, cancellation, one breaker
 * per server, and reconnection. `@modelcontextprotocol/sdk` (1.x) is an optional peer
 * dependency: only this subpath needs it.
 *
 * @example
 * ```ts
 * import { Client } from '@modelcontextprotocol/sdk/client/index.js';
 * import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
 * import { fromMcp } from 'rxheal/mcp';
 * const client = new Client({ name: 'my-agent', version: '1.0.0' });
 * await client.connect(new StdioClientTransport({ command: 'node', args: ['server.js'] }));
 * const tools = await fromMcp(client);
 * ```
 *
 * @module
 */
export { fromMcp, isIdempotentTool, watchMcpTools } from './fromMcp.js';
export type {
  FromMcpOptions,
  McpClient,
  McpProgressListener,
  McpReconnectBackoff,
  McpRequestOptions,
  McpSchemaValidator,
  McpToolInfo,
  McpTransportFactory,
  McpWatchableClient,
} from './fromMcp.js';
export { McpConnectionError, McpProtocolError, McpSessionExpiredError, McpTimeoutError, McpToolResultError } from './errors.js';
