/**
 * `npm start`: two local providers with fault injection (primary: OpenAI protocol, secondary:
 * Anthropic protocol) and the chat page on 127.0.0.1. The page runs rxheal in the browser.
 *
 * With `OPENAI_BASE_URL` + `OPENAI_API_KEY` (and/or `ANTHROPIC_API_KEY`) set, the page talks to
 * the real providers first, through a proxy here that adds the keys (they never reach the
 * browser), with the local providers as fallback.
 */
import { build } from 'esbuild';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import type { ProviderConfig } from './agent.js';

const HERE = new URL('.', import.meta.url).pathname;

export interface Demo {
  readonly url: string;
  readonly primary: LocalProvider;
  readonly secondary: LocalProvider;
  readonly providers: readonly ProviderConfig[];
  close(): Promise<void>;
}

export interface DemoOptions {
  /** Port of the page. Defaults to `PORT` or 5173; 0 picks a free one. */
  readonly port?: number;
  /** Delay between streamed tokens of the local providers. Defaults to 35 ms. */
  readonly tokenDelayMs?: number;
  /** Real providers from the environment. Defaults to `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
}

/** Forwards `/proxy/<name>/…` to a real provider, adding the credentials. */
function proxy(req: IncomingMessage, res: ServerResponse, target: string, headers: Record<string, string>): void {
  const url = new URL(target);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const upstream = send(
    url,
    { method: req.method, headers: { 'content-type': req.headers['content-type'] ?? 'application/json', accept: req.headers.accept ?? '*/*', ...headers } },
    (response) => {
      res.writeHead(response.statusCode ?? 502, response.headers);
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

/** Starts the providers and the page. */
export async function startDemo(options: DemoOptions = {}): Promise<Demo> {
  const env = options.env ?? process.env;
  const tokenDelayMs = options.tokenDelayMs ?? 35;
  const [primary, secondary] = await Promise.all([
    startLocalProvider({ name: 'primary', tokenDelayMs }),
    startLocalProvider({ name: 'secondary', tokenDelayMs }),
  ]);
  const providers: ProviderConfig[] = [];
  if (env['OPENAI_BASE_URL'] && env['OPENAI_API_KEY']) {
    providers.push({ id: 'openai', label: 'OpenAI (real)', protocol: 'openai', baseURL: '/proxy/openai', model: env['OPENAI_MODEL'] ?? 'gpt-4o-mini' });
  }
  if (env['ANTHROPIC_API_KEY']) {
    providers.push({ id: 'anthropic', label: 'Anthropic (real)', protocol: 'anthropic', baseURL: '/proxy/anthropic', model: env['ANTHROPIC_MODEL'] ?? 'claude-sonnet-4-5' });
  }
  providers.push(
    { id: 'primary', label: 'primary', protocol: 'openai', baseURL: primary.openAIBaseURL, model: 'local', admin: primary.url },
    { id: 'secondary', label: 'secondary', protocol: 'anthropic', baseURL: secondary.anthropicBaseURL, model: 'local', admin: secondary.url },
  );

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
  });
  const output = (suffix: string): string => bundle.outputFiles.find((f) => f.path.endsWith(suffix))!.text;
  const files: Record<string, [string, string]> = {
    '/': ['text/html; charset=utf-8', readFileSync(`${HERE}index.html`, 'utf8')],
    '/styles.css': ['text/css; charset=utf-8', readFileSync(`${HERE}styles.css`, 'utf8')],
    '/app.js': ['text/javascript; charset=utf-8', output('app.js')],
    '/app.js.map': ['application/json', output('app.js.map')],
  };

  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path === '/config.json') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      return void res.end(JSON.stringify({ providers }));
    }
    if (path.startsWith('/proxy/openai/') && env['OPENAI_BASE_URL'] && env['OPENAI_API_KEY']) {
      const rest = path.slice('/proxy/openai'.length);
      return proxy(req, res, `${env['OPENAI_BASE_URL'].replace(/\/$/, '')}${rest}`, { authorization: `Bearer ${env['OPENAI_API_KEY']}` });
    }
    if (path.startsWith('/proxy/anthropic/') && env['ANTHROPIC_API_KEY']) {
      const rest = path.slice('/proxy/anthropic'.length);
      const base = (env['ANTHROPIC_BASE_URL'] ?? 'https://api.anthropic.com').replace(/\/$/, '');
      return proxy(req, res, `${base}${rest}`, { 'x-api-key': env['ANTHROPIC_API_KEY'], 'anthropic-version': '2023-06-01' });
    }
    const file = files[path];
    if (!file) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      return void res.end('not found');
    }
    res.writeHead(200, { 'content-type': file[0], 'cache-control': 'no-store' });
    res.end(file[1]);
  });
  const port = options.port ?? Number(env['PORT'] ?? 5173);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    primary,
    secondary,
    providers,
    close: async () => {
      server.closeAllConnections();
      await Promise.all([new Promise<void>((resolve) => server.close(() => resolve())), primary.close(), secondary.close()]);
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const demo = await startDemo();
  console.log(`rxheal demo: ${demo.url}`);
  console.log(`  primary   (OpenAI protocol)    ${demo.primary.url}   faults: ${demo.primary.url}/admin/faults`);
  console.log(`  secondary (Anthropic protocol) ${demo.secondary.url}   faults: ${demo.secondary.url}/admin/faults`);
  if (demo.providers.length > 2) console.log(`  real providers first: ${demo.providers.slice(0, -2).map((p) => p.label).join(', ')}`);
  console.log('Open the page, toggle faults beside the chat, and ask. Ctrl-C to stop.');
  const stop = (): void => {
    void demo.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
