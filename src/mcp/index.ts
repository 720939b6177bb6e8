/**
 * `rxheal/mcp`: an MCP server's tools as rxheal tools that heal — arguments validated against
 * their schemas before the call, retries only for tools whose annotations say they are safe,
 * `isError` results reflected to the model, progress-aware timeouts, cancellation, one breaker
 * per server, and reconnection — on either MCP SDK major: the 1.x `Client` of
 * `@modelcontextprotocol/sdk`, or the 2.x one of `@modelcontextprotocol/client` (MCP 2026-07-28:
 * stateless servers, multi-round calls, long tools as MCP Tasks; the old handshake with an older server). Both are
 * optional peer dependencies: only this subpath needs one, and never both.
 *
 * @example
 * ```ts
 * import { Client } from '@modelcontextprotocol/client';
 * import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
 * import { fromMcp } from 'rxheal/mcp';
 * const client = new Client({ name: 'my-agent', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
 * await client.connect(new StdioClientTransport({ command: 'node', args: ['server.js'] }));
 * const tools = await fromMcp(client);
 * ```
 *
 * @module
 */
export { fromMcp, isIdempotentTool } from './fromMcp.js';
export { watchMcpTools } from './watch.js';
export type {
  FromMcpOptions,
  McpAnyClient,
  McpCallArgs,
  McpCallParams,
  McpClient,
  McpClientBase,
  McpClientV2,
  McpInputAnswer,
  McpInputRequest,
  McpProgressListener,
  McpReconnectBackoff,
  McpRequestOptions,
  McpSchemaValidator,
  McpTaskPolling,
  McpTaskResume,
  McpToolInfo,
  McpTransportFactory,
} from './fromMcp.js';
export type { McpListening, McpWatchableClient } from './watch.js';
export {
  McpConnectionError,
  McpInputRequiredError,
  McpOutcomeUnknownError,
  McpProtocolError,
  McpSessionExpiredError,
  McpTaskCancelledError,
  McpTimeoutError,
  McpToolResultError,
} from './errors.js';
