#!/usr/bin/env node
/**
 * `rxheal-mcp-proxy`: any MCP host gets healing tools without code —
 * `npx rxheal-mcp-proxy --retries 2 -- node my-server.js` (a stdio upstream) or
 * `npx rxheal-mcp-proxy --url http://127.0.0.1:3000/mcp`. `--help` lists the options (args.ts).
 * A stdio upstream runs with the proxy's environment (the host configured the proxy in the
 * server's place). Everything but the MCP messages goes to stderr. It exits when the host closes
 * its stdin (the MCP stdio shutdown) or sends SIGTERM / SIGINT, closing the upstream first; it
 * says in one line that `@modelcontextprotocol/sdk` is missing, when it is.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { parseArgs, PROXY_HELP } from './args.js';

const command = parseArgs(process.argv.slice(2));
if ('help' in command) {
  process.stdout.write(PROXY_HELP);
  process.exit(0);
}
if ('version' in command) {
  // src/mcp/cli.ts and dist/mcp/cli.js alike: the package's root is two levels up
  const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
  process.stdout.write(`rxheal-mcp-proxy ${version}\n`);
  process.exit(0);
}
if ('error' in command) {
  process.stderr.write(`${command.error}\n`);
  process.exit(2);
}

/** The optional peer is not installed: the proxy's own module could not load it. */
const missingSdk = (error: unknown): boolean =>
  (error as { code?: unknown } | null)?.code === 'ERR_MODULE_NOT_FOUND' &&
  String((error as { message?: unknown }).message).includes('@modelcontextprotocol/sdk');

const fail = (message: string): never => {
  process.stderr.write(`rxheal-mcp-proxy: ${message}\n`);
  process.exit(1);
};

try {
  const { startMcpProxy } = await import('./proxy.js');
  const proxy = await startMcpProxy(command.serve);
  const stop = (): void => void proxy.close();
  process.stdin.once('end', stop).once('close', stop);
  process.once('SIGTERM', stop).once('SIGINT', stop);
  proxy.closed.then(
    () => process.exit(0),
    (error: unknown) => fail(error instanceof Error ? error.message : String(error)),
  );
} catch (error) {
  if (missingSdk(error)) fail('needs @modelcontextprotocol/sdk 1.x (an optional peer of rxheal): npm install @modelcontextprotocol/sdk');
  fail(error instanceof Error ? error.message : String(error));
}
