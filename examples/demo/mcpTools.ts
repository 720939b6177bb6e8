/**
 * The demo's tools as a local MCP server built with the 2.x SDK (`McpServer` and `createMcpHandler`
 * of `@modelcontextprotocol/server`, served on `node:http` by `toNodeHandler` of
 * `@modelcontextprotocol/node`): `get_weather` and `knowledge_search`, both read-only (so rxheal may
 * send them again). Stateless, as MCP 2026-07-28 is: no `initialize`, no session — a server is
 * built for each request, and a client that speaks the old revision (the 1.x SDK's) is served the
 * old way, statelessly too. Mounted by the demo server at `/mcp` on its own origin (the page's guard
 * checks Host and Origin for it as for every route), and started on a loopback port of its own by
 * `npm run demo:cli`.
 *
 * Faults, set through {@link DemoMcp}'s fields (the page posts them to `/mcp/admin`):
 * - `down`: every request answered 503 (the server is unavailable) — the tools' breaker opens
 *   and the model is told they are unavailable, until a probe finds the server back;
 * - `restart()`: the server restarted — every request in flight has its connection cut (a call
 *   cut so is one whose outcome nobody knows: rxheal sends it again only for a tool whose
 *   annotations say that is safe); there is no session to forget, so the next call is answered as
 *   before, nothing re-initialised;
 * - `slowSearch`: `knowledge_search` answers after 6 s instead of 300 ms (cancellable: a caller
 *   that gives up cancels it).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { requestGuard } from '../../src/server/guard.js';
import { articleFor, SEARCH_MS, weatherIn } from './toolAnswers.js';

/** The MCP server's faults and its request handler (what `/mcp` is served with). */
export interface DemoMcp {
  /** Every request answered 503 while set. */
  down: boolean;
  /** `knowledge_search` takes 6 s while set. */
  slowSearch: boolean;
  /** Restarts so far ({@link restart}). */
  readonly restarts: number;
  /** Requests whose connection a restart cut while they were in flight. */
  readonly cut: number;
  /** Calls of each tool the server ran (cancelled ones included). */
  readonly calls: Readonly<Record<string, number>>;
  /** Requests served, by JSON-RPC method (`server/discover`, `tools/list`, `tools/call`, …; `initialize` only from an old client). */
  readonly methods: Readonly<Record<string, number>>;
  /** The server restarted: every request in flight has its connection cut (there are no sessions to forget). */
  restart(): void;
  /** One request to the MCP endpoint (its body not read yet). */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** One request to the fault switches: GET reads them, POST `{ down?, slowSearch?, restart? }` (JSON) sets them. */
  admin(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Cuts what is in flight and closes the handler. */
  close(): Promise<void>;
}

/** The largest request body read (the tools' arguments are small). */
const MAX_BODY_BYTES = 64 * 1024;

/** Waits `ms`, or rejects (an AbortError) as soon as the call is cancelled. */
const sleep = (ms: number, signal: AbortSignal): Promise<void> => delay(ms, undefined, { signal });

const jsonError = (res: ServerResponse, status: number, code: number, message: string): void => {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
};

/** The JSON-RPC method of a request's body, or its HTTP method when it has none (a GET, a DELETE). */
const methodOf = (req: IncomingMessage, body: unknown): string =>
  typeof body === 'object' && body !== null && typeof (body as { method?: unknown }).method === 'string' ? (body as { method: string }).method : req.method!;

/** The demo's MCP server: its tools, the requests in flight, its faults. */
export function demoMcp(): DemoMcp {
  const calls: Record<string, number> = { get_weather: 0, knowledge_search: 0 };
  const methods: Record<string, number> = {};
  /** The responses still being written (a restart cuts their connections). */
  const inFlight = new Set<ServerResponse>();
  let restarts = 0;
  let cut = 0;

  /** One server for each request: the 2.x SDK's stateless serving. */
  const tools = (): McpServer => {
    const server = new McpServer({ name: 'demo-tools', version: '2.0.0' });
    server.registerTool(
      'get_weather',
      {
        description: 'Current weather for a city',
        inputSchema: z.object({ city: z.string(), units: z.enum(['celsius', 'fahrenheit']) }),
        outputSchema: z.object({ city: z.string(), temperature: z.number(), units: z.string(), condition: z.string() }),
        annotations: { readOnlyHint: true },
      },
      ({ city, units }) => {
        calls['get_weather']!++;
        const weather = weatherIn(city, units);
        return { content: [{ type: 'text', text: JSON.stringify(weather) }], structuredContent: weather };
      },
    );
    server.registerTool(
      'knowledge_search',
      { description: 'Searches the help-centre articles', inputSchema: z.object({ query: z.string() }), annotations: { readOnlyHint: true } },
      async ({ query }, ctx) => {
        calls['knowledge_search']!++;
        await sleep(mcp.slowSearch ? SEARCH_MS.slow : SEARCH_MS.normal, ctx.mcpReq.signal);
        return { content: [{ type: 'text', text: articleFor(query) }] };
      },
    );
    return server;
  };
  const handler = createMcpHandler(tools);
  // handed each body parsed (handle reads it, MAX_BODY_BYTES at most): the adapter reads none of its own
  const serve = toNodeHandler(handler);
  /** Cuts the connection of every request in flight: how many. */
  const cutInFlight = (): number => {
    const n = inFlight.size;
    for (const res of inFlight) res.socket?.destroy();
    inFlight.clear();
    return n;
  };

  const readBody = async (req: IncomingMessage): Promise<unknown> => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) throw new RangeError(`request body over ${MAX_BODY_BYTES} bytes`);
      chunks.push(chunk as Buffer);
    }
    return chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
  };

  const mcp: DemoMcp = {
    down: false,
    slowSearch: false,
    get restarts() {
      return restarts;
    },
    get cut() {
      return cut;
    },
    calls,
    methods,
    restart() {
      restarts++;
      cut += cutInFlight();
    },
    async handle(req, res) {
      if (mcp.down) return jsonError(res, 503, -32000, 'the MCP server is down (demo fault)');
      let body: unknown;
      try {
        body = await readBody(req);
      } catch (error) {
        return jsonError(res, error instanceof RangeError ? 413 : 400, -32700, `parse error: ${error instanceof Error ? error.message : String(error)}`);
      }
      const method = methodOf(req, body);
      methods[method] = (methods[method] ?? 0) + 1;
      inFlight.add(res);
      res.once('close', () => inFlight.delete(res));
      return serve(req, res, body);
    },
    async admin(req, res) {
      const state = (): string => JSON.stringify({ down: mcp.down, slowSearch: mcp.slowSearch, restarts, cut, calls, methods });
      if (req.method === 'GET') return void res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(state());
      if (req.method !== 'POST')
        return void res.writeHead(405, { allow: 'GET, POST', 'content-type': 'application/json' }).end(JSON.stringify({ error: `${req.method} not allowed` }));
      if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? ''))
        return void res.writeHead(415, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'JSON only' }));
      let change: unknown;
      try {
        change = await readBody(req);
      } catch (error) {
        return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(error) }));
      }
      const c = (change ?? {}) as { down?: unknown; slowSearch?: unknown; restart?: unknown };
      const wrong = (['down', 'slowSearch', 'restart'] as const).find((k) => c[k] !== undefined && typeof c[k] !== 'boolean');
      if (typeof change !== 'object' || change === null || wrong !== undefined) {
        return void res.writeHead(400, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            error: `expected { down?: boolean, slowSearch?: boolean, restart?: boolean }${wrong ? `, got ${wrong}: ${JSON.stringify(c[wrong])}` : ''}`,
          }),
        );
      }
      if (typeof c.down === 'boolean') mcp.down = c.down;
      if (typeof c.slowSearch === 'boolean') mcp.slowSearch = c.slowSearch;
      if (c.restart === true) mcp.restart();
      res.writeHead(200, { 'content-type': 'application/json' }).end(state());
    },
    async close() {
      cutInFlight();
      await handler.close();
    },
  };
  return mcp;
}

/**
 * The demo's MCP server on a loopback port of its own (`npm run demo:cli`; the page's server
 * mounts {@link demoMcp} on its own origin instead): `/mcp` and `/mcp/admin`, Host and Origin checked.
 */
export async function serveDemoMcp(): Promise<{ readonly mcp: DemoMcp; readonly url: string; readonly admin: string; close(): Promise<void> }> {
  const mcp = demoMcp();
  /** Set once listening (the guard needs the port). */
  const ready: { guard?: ReturnType<typeof requestGuard> } = {};
  const http = createServer((req, res) => {
    const refused = ready.guard === undefined ? 'starting' : ready.guard.refusal(req.headers);
    if (refused !== undefined) return void res.writeHead(403, { 'content-type': 'text/plain' }).end(refused);
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const served = path === '/mcp' ? mcp.handle(req, res) : path === '/mcp/admin' ? mcp.admin(req, res) : Promise.resolve(void res.writeHead(404).end());
    served.catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  ready.guard = requestGuard({ port, origins: [] });
  const origin = `http://127.0.0.1:${port}`;
  return {
    mcp,
    url: `${origin}/mcp`,
    admin: `${origin}/mcp/admin`,
    close: async () => {
      await mcp.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
