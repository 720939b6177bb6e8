/**
 * The healing MCP proxy behind `rxheal-mcp-proxy` (cli.ts): an MCP server on stdio whose tools
 * are an upstream MCP server's (a stdio command or a Streamable-HTTP URL), every call forwarded
 * by `fromMcp`'s rules — arguments checked, the upstream's breaker, progress-aware timeouts,
 * reconnection — and retried (`retries` times, with backoff) only for tools whose annotations say
 * they are safe. The upstream's progress notifications go on to the host (when it asked for them,
 * with a progress token), so a host whose timeout progress resets lets a long tool finish. Results pass through as the upstream sent them (`isError` ones included); a
 * call that fails after all that is an `isError` result naming why.
 *
 * @module
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { describeProblems, formatProblem, isLeft } from '../core/errors/options.js';
import { errorText } from '../core/errors/sanitize.js';
import { retryWithBackoff } from '../operators/retryWithBackoff.js';
import { toolset } from './fromMcp.js';

/** Where the upstream is: a command to run (stdio) or a URL (Streamable HTTP). */
export type Upstream = { readonly command: string; readonly args: readonly string[] } | { readonly url: string };

/** What the proxy is told (cli.ts reads it from the command line). */
export interface ProxySettings {
  readonly upstream: Upstream;
  /** Retries of a safe tool's failed call. */
  readonly retries: number;
  /** `fromMcp`'s `timeoutMs`. */
  readonly timeoutMs: number;
}

const USAGE = 'usage: rxheal-mcp-proxy [--retries N] [--timeout MS] (--url URL | -- COMMAND [ARGS...])';

/** The settings a command line asks for, or the reason it is wrong. */
export function parseArgs(argv: readonly string[]): ProxySettings | string {
  let retries = 2;
  let timeoutMs = 60_000;
  let url: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      const [command, ...args] = argv.slice(i + 1);
      if (command === undefined) return `no command after --\n${USAGE}`;
      return { upstream: { command, args }, retries, timeoutMs };
    }
    const value = argv[i + 1];
    if (arg === '--retries' && value !== undefined && /^\d+$/.test(value)) retries = Number(value);
    else if (arg === '--timeout' && value !== undefined && /^\d+$/.test(value) && Number(value) > 0) timeoutMs = Number(value);
    else if (arg === '--url' && value !== undefined && URL.canParse(value)) url = value;
    else return `bad argument ${JSON.stringify(arg)}${value === undefined ? '' : ` ${JSON.stringify(value)}`}\n${USAGE}`;
    i++;
  }
  return url === undefined ? `no upstream: --url URL or -- COMMAND\n${USAGE}` : { upstream: { url }, retries, timeoutMs };
}

/** A fresh transport to the upstream, each time it is asked (a closed one can't be restarted). */
function transportTo(upstream: Upstream): () => Transport {
  if ('url' in upstream) return () => new StreamableHTTPClientTransport(new URL(upstream.url));
  // the proxy stands in the server's place: the upstream gets the environment the host gave it
  return () => new StdioClientTransport({ command: upstream.command, args: [...upstream.args], env: process.env as Record<string, string>, stderr: 'inherit' });
}

const failed = (text: string): { content: { type: 'text'; text: string }[]; isError: true } => ({ content: [{ type: 'text', text }], isError: true });

/**
 * Connects to the upstream, then serves its tools on `downstream` (stdio by default). Resolves
 * once serving; the returned function closes both sides.
 */
export async function startMcpProxy(settings: ProxySettings, downstream: Transport = new StdioServerTransport()): Promise<() => Promise<void>> {
  const connect = transportTo(settings.upstream);
  const client = new Client({ name: 'rxheal-mcp-proxy', version: '1.0.0' });
  await client.connect(connect());
  const tools = toolset('rxheal-mcp-proxy', client, { id: 'upstream', reconnect: connect, timeoutMs: settings.timeoutMs });
  await tools.list();
  const server = new Server({ name: 'rxheal-mcp-proxy', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools.listed.values()].map((t) => t.info) as never }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const tool = tools.listed.get(request.params.name);
    if (!tool) return failed(`unknown tool '${request.params.name}'; available: ${[...tools.listed.keys()].join(', ')}`);
    const decoded = tool.args.decode(request.params.arguments ?? {});
    if (isLeft(decoded)) return failed(describeProblems(decoded.left).map(formatProblem).join('; '));
    // only a safe tool is tried again: anything else runs at most once, whatever fails
    // the upstream's progress goes on to the host, under the host's own token (the proxy's timeout is reset by it too)
    // in order: the result goes out after the progress before it (the host drops progress that arrives after the result)
    const token = request.params._meta?.progressToken;
    let forwarded: Promise<unknown> = Promise.resolve();
    const forward =
      token === undefined
        ? undefined
        : (progress: { progress: number; total?: number; message?: string }): void => {
            forwarded = forwarded.then(() => extra.sendNotification({ method: 'notifications/progress', params: { ...progress, progressToken: token } })).catch(() => undefined);
          };
    const call$ = tools.callRaw(tool.info.name, decoded.right, tool.idempotent, forward).pipe(retryWithBackoff({ maxRetries: tool.idempotent ? settings.retries : 0, initialBackoffMs: 200 }));
    return new Promise((resolve) => {
      const subscription = call$.subscribe({
        next: (result) => void forwarded.then(() => resolve(result as never)),
        error: (error: unknown) => void forwarded.then(() => resolve(failed(errorText(error)))),
      });
      // the host cancelled: so is the upstream call
      extra.signal.addEventListener('abort', () => subscription.unsubscribe(), { once: true });
    });
  });
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    await tools.list();
    await server.sendToolListChanged();
  });
  await server.connect(downstream);
  return async () => {
    await server.close();
    await client.close();
  };
}
