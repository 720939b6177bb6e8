#!/usr/bin/env node
/**
 * `rxheal-mcp-proxy`: any MCP host gets healing tools without code —
 * `npx rxheal-mcp-proxy --retries 2 -- node my-server.js` (a stdio upstream) or
 * `npx rxheal-mcp-proxy --url http://127.0.0.1:3000/mcp`. Options: `--retries N` (default 2: a
 * safe tool's failed call is tried again N times), `--timeout MS` (default 60000: no result nor
 * progress for that long fails the call). A stdio upstream runs with the proxy's environment (the
 * host configured the proxy in the server's place). Everything but the MCP messages goes to stderr.
 *
 * @module
 */
import { parseArgs, startMcpProxy } from './proxy.js';

const settings = parseArgs(process.argv.slice(2));
if (typeof settings === 'string') {
  process.stderr.write(`${settings}\n`);
  process.exit(2);
}
startMcpProxy(settings).catch((error: unknown) => {
  process.stderr.write(`rxheal-mcp-proxy: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
