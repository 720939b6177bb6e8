/**
 * `npm start`: two local providers with fault injection (primary: OpenAI protocol — Chat
 * Completions, or the Responses API with resume when `DEMO_PRIMARY_PROTOCOL=responses` —,
 * secondary: Anthropic protocol) and the chat page on 127.0.0.1. The page runs rxheal in the browser.
 *
 * The page's port: `PORT`, else 5173 or the next free one after it (5173 is Vite's default, so
 * often taken). An explicit `PORT` that is taken is an error naming it.
 *
 * With `OPENAI_BASE_URL` + `OPENAI_API_KEY` (and/or `ANTHROPIC_API_KEY`) set, the page talks to
 * the real providers first, through a proxy here that adds the keys (they never reach the
 * browser), with the local providers as fallback. The proxy forwards only what the page sends
 * — `POST /proxy/openai/chat/completions` (`/proxy/openai/responses` with `OPENAI_PROTOCOL=responses`)
 * and `POST /proxy/anthropic/v1/messages`, JSON, from the
 * page itself (its own `Origin` and `Host`) — and nothing else: no other path, no other method.
 */
import { build } from 'esbuild';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { requestGuard, type RequestGuard } from '../../src/server/guard.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import type { McpConfig, ProviderConfig } from './agent.js';
import { demoMcp, type DemoMcp } from './mcpTools.js';

const HERE = new URL('.', import.meta.url).pathname;

/** The page's port when neither `port` nor `PORT` says otherwise (taken: the next free one). */
export const DEFAULT_PORT = 5173;
/** Ports tried after a taken default one before letting the system pick any free port. */
const FALLBACK_TRIES = 20;

export interface Demo {
  readonly url: string;
  readonly port: number;
  readonly primary: LocalProvider;
  readonly secondary: LocalProvider;
  /** The providers the page is configured with, for a page at `url`. */
  readonly providers: readonly ProviderConfig[];
  /** The MCP server of the page's tools (at `url` + `/mcp`), and its faults. */
  readonly mcp: DemoMcp;
  /** Where the page finds it. */
  readonly mcpConfig: McpConfig;
  close(): Promise<void>;
}

export interface DemoOptions {
  /**
   * Port of the page: it must be free (0 picks any free one). Defaults to `PORT`, which must be
   * free too; without either, 5173 or the next free port after it.
   */
  readonly port?: number;
  /** Delay between streamed tokens of the local providers. Defaults to 35 ms. */
  readonly tokenDelayMs?: number;
  /** Real providers from the environment, and `PORT`. Defaults to `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * What the local primary is spoken with: `'openai'` (Chat Completions) or `'responses'` (the
   * Responses API, resuming a cut stream). Defaults to `DEMO_PRIMARY_PROTOCOL`, else `'openai'`.
   */
  readonly primaryProtocol?: 'openai' | 'responses';
}

/** The page's port is taken, or not a port: a one-line message naming it, no stack trace needed. */
export class DemoPortError extends Error {
  override readonly name = 'DemoPortError';
  constructor(
    message: string,
    readonly port: number | string,
  ) {
    super(message);
  }
}

/**
 * Listens on 127.0.0.1: on `port`, or — with `fallback` — on the next free port after it (then
 * any free one). An explicit port that is taken rejects with a {@link DemoPortError} naming it
 * and `source` (`PORT`, `port`). Resolves to the port listened on.
 */
export async function listenLocal(server: Server, port: number, options: { readonly fallback: boolean; readonly source?: string }): Promise<number> {
  const attempt = (p: number): Promise<number> =>
    new Promise((resolve, reject) => {
      const failed = (error: Error): void => {
        server.off('listening', listening);
        reject(error);
      };
      const listening = (): void => {
        server.off('error', failed);
        resolve((server.address() as AddressInfo).port);
      };
      server.once('error', failed);
      server.once('listening', listening);
      server.listen(p, '127.0.0.1');
    });
  const taken = (error: unknown): boolean => (error as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE';
  if (!options.fallback) {
    return attempt(port).catch((error: unknown) => {
      if (!taken(error)) throw error;
      const source = options.source === undefined ? '' : ` (${options.source})`;
      throw new DemoPortError(
        `port ${port}${source} is already in use on 127.0.0.1: stop what uses it, or choose another port, e.g. PORT=${port + 1} npm start`,
        port,
      );
    });
  }
  for (let p = port; p < Math.min(port + FALLBACK_TRIES, 65536); p++) {
    try {
      return await attempt(p);
    } catch (error) {
      if (!taken(error)) throw error;
    }
  }
  return attempt(0);
}

/** `PORT` as a port number, or a {@link DemoPortError}. */
function portFromEnv(value: string): number {
  const port = Number(value);
  if (!/^\d{1,5}$/.test(value.trim()) || port > 65535)
    throw new DemoPortError(`PORT must be a port number from 0 to 65535, got ${JSON.stringify(value)}`, value);
  return port;
}

/** The real providers the proxy may forward to: the one path the page's adapter calls, and the key. */
interface ProxyRoute {
  /** The only path forwarded, under `/proxy/<id>`. */
  readonly path: string;
  readonly target: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** Upstream response headers not passed on to the page (cookies, hop-by-hop, the upstream's CORS). */
const DROPPED_RESPONSE_HEADERS = /^(set-cookie|connection|keep-alive|transfer-encoding|access-control-.*)$/i;

/** Forwards one POST to a real provider, adding the credentials; only JSON, only what the page sent. */
function forward(req: IncomingMessage, res: ServerResponse, route: ProxyRoute): void {
  const url = new URL(route.target);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const upstream = send(
    url,
    { method: 'POST', headers: { 'content-type': 'application/json', accept: req.headers.accept ?? '*/*', ...route.headers } },
    (response) => {
      const headers: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(response.headers)) if (value !== undefined && !DROPPED_RESPONSE_HEADERS.test(name)) headers[name] = value;
      res.writeHead(response.statusCode ?? 502, headers);
      response.pipe(res);
    },
  );
  upstream.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `proxy: ${e.message}` } }));
  });
  req.pipe(upstream);
  res.on('close', () => upstream.destroy());
}

const refuse = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'content-type': 'application/json', connection: 'close', ...headers });
  res.end(JSON.stringify({ error: { message: `rxheal demo: ${message}` } }));
};

/** The proxy's one rule: the page's own POST of JSON to the one path of a configured provider. */
function proxyRefusal(
  req: IncomingMessage,
  guard: RequestGuard,
  route: ProxyRoute | undefined,
  rest: string,
): [number, string, Record<string, string>?] | undefined {
  const refused = guard.refusal(req.headers, { requireOrigin: true });
  if (refused !== undefined) return [403, refused];
  if (route === undefined || rest !== route.path) return [404, 'the proxy forwards only the endpoints the page uses'];
  if (req.method !== 'POST') return [405, `the proxy forwards only POST ${route.path}`, { allow: 'POST' }];
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) return [415, `the proxy forwards only application/json, got ${JSON.stringify(type)}`];
  return undefined;
}

/** Starts the page and the providers (the page first: the providers allow its origin only). */
export async function startDemo(options: DemoOptions = {}): Promise<Demo> {
  const env = options.env ?? process.env;
  const tokenDelayMs = options.tokenDelayMs ?? 35;
  const fromEnv = env['PORT'] !== undefined && env['PORT'] !== '' ? portFromEnv(env['PORT']) : undefined;
  const explicit = options.port ?? fromEnv;
  const primaryProtocol = options.primaryProtocol ?? (env['DEMO_PRIMARY_PROTOCOL'] === 'responses' ? 'responses' : 'openai');

  const routes = new Map<string, ProxyRoute>();
  const real: Omit<ProviderConfig, 'baseURL'>[] = [];
  if (env['OPENAI_BASE_URL'] && env['OPENAI_API_KEY']) {
    // OPENAI_PROTOCOL=responses: the Responses API (the proxy forwards its one POST: no resume through it)
    const path = env['OPENAI_PROTOCOL'] === 'responses' ? '/responses' : '/chat/completions';
    routes.set('openai', {
      path,
      target: `${env['OPENAI_BASE_URL'].replace(/\/+$/, '')}${path}`,
      headers: { authorization: `Bearer ${env['OPENAI_API_KEY']}` },
    });
    real.push({ id: 'openai', label: 'OpenAI (real)', protocol: path === '/responses' ? 'responses' : 'openai', model: env['OPENAI_MODEL'] ?? 'gpt-4o-mini' });
  }
  if (env['ANTHROPIC_API_KEY']) {
    const base = (env['ANTHROPIC_BASE_URL'] ?? 'https://api.anthropic.com').replace(/\/+$/, '');
    routes.set('anthropic', {
      path: '/v1/messages',
      target: `${base}/v1/messages`,
      headers: { 'x-api-key': env['ANTHROPIC_API_KEY'], 'anthropic-version': '2023-06-01' },
    });
    real.push({ id: 'anthropic', label: 'Anthropic (real)', protocol: 'anthropic', model: env['ANTHROPIC_MODEL'] ?? 'claude-sonnet-4-5' });
  }

  // minified, with a linked source map (devtools fetch /app.js.map only when open)
  const bundle = await build({
    entryPoints: [`${HERE}app.ts`],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    minify: true,
    sourcemap: 'linked',
    outfile: 'app.js',
    // the page's MCP client is the 2.x SDK's: fromMcp's imports of the 1.x SDK (its validator, its notification schema) are never taken here
    external: ['@modelcontextprotocol/sdk', '@modelcontextprotocol/sdk/*'],
  });
  const output = (suffix: string): string => bundle.outputFiles.find((f) => f.path.endsWith(suffix))!.text;
  const files: Record<string, [string, string]> = {
    '/': ['text/html; charset=utf-8', readFileSync(`${HERE}index.html`, 'utf8')],
    '/styles.css': ['text/css; charset=utf-8', readFileSync(`${HERE}styles.css`, 'utf8')],
    '/favicon.svg': ['image/svg+xml', readFileSync(`${HERE}favicon.svg`, 'utf8')],
    '/app.js': ['text/javascript; charset=utf-8', output('app.js')],
    '/app.js.map': ['application/json', output('app.js.map')],
  };

  /** Set once listening (the guard needs the port) and the providers are up. */
  const ready: { guard?: RequestGuard; local: readonly ProviderConfig[] } = { local: [] };
  /** The page's providers; the proxied ones at the page's own origin (the one it was opened at). */
  const providersFor = (origin: string): ProviderConfig[] => [...real.map((p) => ({ ...p, baseURL: `${origin}/proxy/${p.id}` })), ...ready.local];

  const mcp = demoMcp();
  const mcpFor = (origin: string): McpConfig => ({ url: `${origin}/mcp`, admin: `${origin}/mcp/admin` });

  const server: Server = createServer((req, res) => {
    // every route: only this server's own names (DNS rebinding), only its own page or no Origin
    const guard = ready.guard;
    const refused = guard === undefined || ready.local.length === 0 ? 'starting' : guard.refusal(req.headers);
    if (refused !== undefined) return refuse(res, 403, refused);
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path === '/proxy' || path.startsWith('/proxy/')) {
      const [, , id = '', ...rest] = path.split('/');
      const route = routes.get(id);
      const restPath = `/${rest.join('/')}`;
      const no = proxyRefusal(req, guard!, route, restPath);
      if (no !== undefined) return refuse(res, no[0], no[1], no[2]);
      return forward(req, res, route!);
    }
    if (path === '/mcp' || path === '/mcp/admin') {
      const served = path === '/mcp' ? mcp.handle(req, res) : mcp.admin(req, res);
      return void served.catch((error: unknown) => (res.headersSent ? res.destroy() : refuse(res, 500, `MCP server: ${String(error)}`)));
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(res, 405, `${req.method} not allowed`, { allow: 'GET' });
    if (path === '/config.json') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      return void res.end(JSON.stringify({ providers: providersFor(`http://${req.headers.host}`), mcp: mcpFor(`http://${req.headers.host}`) }));
    }
    const file = files[path];
    if (!file) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      return void res.end('not found');
    }
    res.writeHead(200, { 'content-type': file[0], 'cache-control': 'no-store' });
    res.end(file[1]);
  });

  const port = await listenLocal(server, explicit ?? DEFAULT_PORT, { fallback: explicit === undefined, source: options.port !== undefined ? 'port' : 'PORT' });
  const url = `http://127.0.0.1:${port}`;
  ready.guard = requestGuard({ port, origins: [] });
  let providers: [LocalProvider, LocalProvider];
  try {
    const allowedOrigins = [url, `http://localhost:${port}`];
    providers = await Promise.all([
      startLocalProvider({ name: 'primary', tokenDelayMs, allowedOrigins }),
      startLocalProvider({ name: 'secondary', tokenDelayMs, allowedOrigins }),
    ]);
  } catch (error) {
    server.close();
    throw error;
  }
  const [primary, secondary] = providers;
  ready.local = [
    primaryProtocol === 'responses'
      ? { id: 'primary', label: 'primary', protocol: 'responses', resume: true, baseURL: primary.openAIBaseURL, model: 'local', admin: primary.url }
      : { id: 'primary', label: 'primary', protocol: 'openai', baseURL: primary.openAIBaseURL, model: 'local', admin: primary.url },
    { id: 'secondary', label: 'secondary', protocol: 'anthropic', baseURL: secondary.anthropicBaseURL, model: 'local', admin: secondary.url },
  ];
  return {
    url,
    port,
    primary,
    secondary,
    providers: providersFor(url),
    mcp,
    mcpConfig: mcpFor(url),
    close: async () => {
      server.closeAllConnections();
      await Promise.all([new Promise<void>((resolve) => server.close(() => resolve())), primary.close(), secondary.close(), mcp.close()]);
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let demo: Demo;
  try {
    demo = await startDemo();
  } catch (error) {
    if (!(error instanceof DemoPortError)) throw error;
    console.error(`rxheal demo: ${error.message}`);
    process.exit(1);
  }
  const moved = process.env['PORT'] === undefined || process.env['PORT'] === '' ? demo.port !== DEFAULT_PORT : false;
  console.log(`rxheal demo: ${demo.url}${moved ? `   (port ${DEFAULT_PORT} is taken; set PORT to choose one)` : ''}`);
  const spoken = demo.providers.at(-2)?.protocol === 'responses' ? 'Responses API' : 'OpenAI protocol';
  console.log(`  primary   (${spoken})${' '.repeat(Math.max(1, 19 - spoken.length))}${demo.primary.url}   faults: ${demo.primary.url}/admin/faults`);
  console.log(`  secondary (Anthropic protocol) ${demo.secondary.url}   faults: ${demo.secondary.url}/admin/faults`);
  console.log(`  tools (MCP, Streamable HTTP)   ${demo.mcpConfig.url}   faults: ${demo.mcpConfig.admin}`);
  if (demo.providers.length > 2)
    console.log(
      `  real providers first: ${demo.providers
        .slice(0, -2)
        .map((p) => p.label)
        .join(', ')}`,
    );
  console.log('Open the page, toggle faults beside the chat, and ask. Ctrl-C to stop.');
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    void demo.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // `npm start` runs this under `sh -c`, and npm passes a SIGTERM (`kill <pid>`, a process
  // manager) to that shell only: a shell that does not exec its command (dash, Debian's and
  // Ubuntu's sh) dies of it without passing it on, and this process is re-parented. Stop then too.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) stop();
  }, 250).unref();
}
