/**
 * `npm start` (examples/demo/serve.ts) over real HTTP on 127.0.0.1: the key-carrying proxy
 * forwards only the page's own POSTs to the one endpoint each provider is used for; every route
 * answers only to its own host; the local providers let the page (and nobody else) drive their
 * faults; the page's port falls back when 5173 is taken, and an explicit PORT that is taken is
 * a one-line error.
 */
import { expect } from 'chai';
import { execFile, spawn } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo, createConnection } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, npmEnv } from '../package/npmPack.js';
import { rawRequest } from '../support/rawHttp.js';
import { DEFAULT_PORT, DemoPortError, listenLocal, startDemo, type Demo } from '../../examples/demo/serve.js';
import { createDemoAgent } from '../../examples/demo/agent.js';
import { lastValueFrom, toArray } from 'rxjs';

const SERVE = fileURLToPath(new URL('../../examples/demo/serve.ts', import.meta.url));

const send = rawRequest;

/** A stand-in for the real APIs: records every request that reaches it, with its headers. */
async function fakeUpstream(): Promise<{
  url: string;
  seen: { method: string; path: string; headers: IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}> {
  const seen: { method: string; path: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'session=upstream', 'access-control-allow-origin': '*', 'x-request-id': 'up_1' });
      res.end(JSON.stringify({ ok: true }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Holds a port on 127.0.0.1 (any free one, or the one asked) until closed; undefined if it is taken. */
async function occupy(port = 0): Promise<Server | undefined> {
  const server = createServer();
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolve(undefined) : reject(error)));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}
const portOf = (server: Server): number => (server.address() as AddressInfo).port;

/** Whether something accepts connections on 127.0.0.1:port. */
const listening = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/**
 * Starts the demo with `command` (PORT=0: any free port), waits for its three ports (page,
 * primary, secondary) from what it prints, sends SIGTERM to the process spawned — the npm or tsx
 * wrapper, as `kill <pid>` or a process manager does — and resolves to whether each port is
 * still served once all are free or `waitMs` passed (looked at every 250 ms: a loaded machine
 * takes longer to stop a process than an idle one).
 */
async function servedAfterSigterm(command: string, args: string[], waitMs = 10_000): Promise<{ ports: number[]; served: boolean[] }> {
  // its own process group: whatever it leaves behind is killed with the group at the end
  const child = spawn(command, args, { cwd: ROOT, env: { ...npmEnv(), PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const ports: number[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        out += chunk;
        if (/Ctrl-C to stop/.test(out)) {
          ports.push(...new Set([...out.matchAll(/http:\/\/127\.0\.0\.1:(\d+)/g)].map((m) => Number(m[1]))));
          resolve();
        }
      });
      child.once('exit', (code) => reject(new Error(`${command} exited with ${code} before serving: ${out}`)));
    });
    expect(new Set(ports).size, 'the page and the two providers').to.equal(3);
    for (const port of ports) expect(await listening(port), `port ${port} serves before SIGTERM`).to.equal(true);
    child.kill('SIGTERM');
    const until = performance.now() + waitMs;
    let served = await Promise.all(ports.map(listening));
    while (served.some(Boolean) && performance.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      served = await Promise.all(ports.map(listening));
    }
    return { ports, served };
  } finally {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // the group is gone: nothing was left behind
    }
  }
}
const closeServer = (server: Server | undefined): Promise<void> => new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));

describe('npm start (examples/demo/serve.ts)', function () {
  this.timeout(30_000);

  describe('the key-carrying proxy', () => {
    let upstream: Awaited<ReturnType<typeof fakeUpstream>>;
    let demo: Demo;
    let page: { host: string; origin: string };
    const json = JSON.stringify({ model: 'gpt', messages: [{ role: 'user', content: 'Hi' }] });

    before(async () => {
      upstream = await fakeUpstream();
      demo = await startDemo({
        port: 0,
        tokenDelayMs: 1,
        env: {
          OPENAI_BASE_URL: `${upstream.url}/v1`,
          OPENAI_API_KEY: 'sk-secret-openai',
          ANTHROPIC_API_KEY: 'sk-ant-secret',
          ANTHROPIC_BASE_URL: upstream.url,
        },
      });
      page = { host: `127.0.0.1:${demo.port}`, origin: demo.url };
    });
    after(async () => {
      await demo?.close();
      await upstream?.close();
    });
    beforeEach(() => (upstream.seen.length = 0));

    it('forwards the page’s own POST of JSON to the one endpoint each provider is used for, adding the key', async () => {
      const openai = await send(demo.port, {
        method: 'POST',
        path: '/proxy/openai/chat/completions',
        headers: { origin: page.origin, 'content-type': 'application/json' },
        body: json,
      });
      expect(openai.status).to.equal(200);
      expect(openai.text).to.equal('{"ok":true}');
      expect(openai.headers['x-request-id']).to.equal('up_1');
      expect(openai.headers['set-cookie'], 'upstream cookies are not passed on').to.equal(undefined);
      expect(openai.headers['access-control-allow-origin'], 'nor the upstream’s CORS grant').to.equal(undefined);
      const anthropic = await send(demo.port, {
        method: 'POST',
        path: '/proxy/anthropic/v1/messages',
        headers: { origin: page.origin, 'content-type': 'application/json; charset=utf-8' },
        body: json,
      });
      expect(anthropic.status).to.equal(200);
      expect(upstream.seen.map((r) => `${r.method} ${r.path}`)).to.deep.equal(['POST /v1/chat/completions', 'POST /v1/messages']);
      expect(upstream.seen[0]!.headers.authorization).to.equal('Bearer sk-secret-openai');
      expect(upstream.seen[1]!.headers['x-api-key']).to.equal('sk-ant-secret');
      expect(upstream.seen[0]!.body).to.equal(json);
      // the page opened at localhost: its own origin and host there
      const local = await send(demo.port, {
        method: 'POST',
        path: '/proxy/openai/chat/completions',
        headers: { host: `localhost:${demo.port}`, origin: `http://localhost:${demo.port}`, 'content-type': 'application/json' },
        body: json,
      });
      expect(local.status).to.equal(200);
    });

    it('a cross-site text/plain POST (a form, a no-preflight fetch) is refused and never forwarded', async () => {
      const attempts: Record<string, string>[] = [
        { origin: 'https://evil.example', 'content-type': 'text/plain' },
        { origin: 'https://evil.example', 'content-type': 'application/json' },
        { origin: 'null', 'content-type': 'text/plain' },
        { origin: 'http://127.0.0.1:5173', 'content-type': 'application/json' },
        { 'sec-fetch-site': 'cross-site', 'content-type': 'text/plain' },
      ];
      for (const headers of attempts) {
        const response = await send(demo.port, { method: 'POST', path: '/proxy/openai/chat/completions', headers, body: json });
        expect(response.status, JSON.stringify(headers)).to.equal(403);
        expect(response.text).not.to.contain('sk-');
      }
      // the page's own origin, but not JSON: not what the page sends
      const text = await send(demo.port, {
        method: 'POST',
        path: '/proxy/openai/chat/completions',
        headers: { origin: page.origin, 'content-type': 'text/plain' },
        body: json,
      });
      expect(text.status).to.equal(415);
      expect(upstream.seen).to.deep.equal([]);
    });

    it('a rebound Host (DNS rebinding: the attacker’s name, resolving to 127.0.0.1) is refused on every route, and never forwarded', async () => {
      const rebound = `evil.example:${demo.port}`;
      for (const [method, path] of [
        ['POST', '/proxy/openai/chat/completions'],
        ['POST', '/proxy/anthropic/v1/messages'],
        ['GET', '/config.json'],
        ['GET', '/'],
        ['GET', '/app.js'],
      ] as const) {
        const variants: Record<string, string>[] = [{ host: rebound, origin: `http://${rebound}` }, { host: rebound }];
        for (const headers of variants) {
          const response = await send(demo.port, {
            method,
            path,
            headers: { ...headers, 'content-type': 'application/json' },
            ...(method === 'POST' ? { body: json } : {}),
          });
          expect(response.status, `${method} ${path} ${JSON.stringify(headers)}`).to.equal(403);
        }
      }
      expect(upstream.seen).to.deep.equal([]);
    });

    it('only the endpoints the page uses, only POST: DELETE /v1/files/…, GET /models, other paths are never forwarded', async () => {
      const own = { origin: page.origin, 'content-type': 'application/json' };
      const cases: [string, string, number][] = [
        ['DELETE', '/proxy/openai/files/file-abc123', 404],
        ['DELETE', '/proxy/openai/chat/completions', 405],
        ['GET', '/proxy/openai/chat/completions', 405],
        ['PUT', '/proxy/anthropic/v1/messages', 405],
        ['GET', '/proxy/openai/models', 404],
        ['POST', '/proxy/openai/files', 404],
        ['POST', '/proxy/openai/chat/completions/../../files', 404],
        ['POST', '/proxy/openai/chat/completions/x', 404],
        ['POST', '/proxy/anthropic/v1/messages/batches', 404],
        ['DELETE', '/proxy/anthropic/v1/files/file_1', 404],
        ['POST', '/proxy/other/v1/messages', 404],
        ['POST', '/proxy', 404],
      ];
      for (const [method, path, status] of cases) {
        const response = await send(demo.port, { method, path, headers: own, body: method === 'GET' ? undefined : json } as never);
        expect(response.status, `${method} ${path}`).to.equal(status);
      }
      // a request without an Origin (not the page: curl, another program) gets no key either
      const noOrigin = await send(demo.port, {
        method: 'POST',
        path: '/proxy/openai/chat/completions',
        headers: { 'content-type': 'application/json' },
        body: json,
      });
      expect(noOrigin.status).to.equal(403);
      expect(upstream.seen).to.deep.equal([]);
    });

    it('the page’s config names the proxy at the page’s own origin and never carries a key', async () => {
      const config = JSON.parse((await send(demo.port, { method: 'GET', path: '/config.json' })).text) as { providers: { id: string; baseURL: string }[] };
      expect(config.providers.map((p) => [p.id, p.baseURL])).to.deep.equal([
        ['openai', `${demo.url}/proxy/openai`],
        ['anthropic', `${demo.url}/proxy/anthropic`],
        ['primary', demo.primary.openAIBaseURL],
        ['secondary', demo.secondary.anthropicBaseURL],
      ]);
      const viaLocalhost = JSON.parse((await send(demo.port, { method: 'GET', path: '/config.json', headers: { host: `localhost:${demo.port}` } })).text) as {
        providers: { baseURL: string }[];
      };
      expect(viaLocalhost.providers[0]!.baseURL).to.equal(`http://localhost:${demo.port}/proxy/openai`);
      expect(JSON.stringify(config)).not.to.contain('secret');
    });

    it('the local providers let the page drive their faults, and refuse other origins', async () => {
      for (const origin of [demo.url, `http://localhost:${demo.port}`]) {
        const allowed = await send(demo.primary.port, { method: 'GET', path: '/admin/faults', headers: { host: `127.0.0.1:${demo.primary.port}`, origin } });
        expect(allowed.status, origin).to.equal(200);
        expect(allowed.headers['access-control-allow-origin']).to.equal(origin);
      }
      const foreign = await send(demo.primary.port, {
        method: 'POST',
        path: '/admin/faults',
        headers: { host: `127.0.0.1:${demo.primary.port}`, origin: 'https://evil.example', 'content-type': 'text/plain' },
        body: '{"kind":"down"}',
      });
      expect(foreign.status).to.equal(403);
      expect(demo.primary.faults.list()).to.deep.equal([]);
    });

    it('the tools’ MCP server (/mcp) and its faults (/mcp/admin): the page’s own origin only, a rebound Host refused, switches checked', async () => {
      const initialize = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'spec', version: '1' } },
      });
      const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const own = await send(demo.port, { method: 'POST', path: '/mcp', headers: { ...mcpHeaders, origin: page.origin }, body: initialize });
      expect(own.status).to.equal(200);
      // a 2.x server: the old revision's handshake answered statelessly (no session), by the demo's tools server
      expect(own.text).to.contain('"name":"demo-tools"');
      expect(own.headers['mcp-session-id'], 'stateless: no session').to.equal(undefined);
      expect(demo.mcp.methods).to.include({ initialize: 1 });
      for (const headers of [{ origin: 'https://evil.example' }, { host: `evil.example:${demo.port}` }] as Record<string, string>[]) {
        for (const [path, body] of [
          ['/mcp', initialize],
          ['/mcp/admin', '{"down":true}'],
        ] as const) {
          const refused = await send(demo.port, { method: 'POST', path, headers: { ...mcpHeaders, ...headers }, body });
          expect(refused.status, `${path} ${JSON.stringify(headers)}`).to.equal(403);
        }
      }
      expect(demo.mcp.down).to.equal(false);
      const bad = await send(demo.port, {
        method: 'POST',
        path: '/mcp/admin',
        headers: { 'content-type': 'application/json', origin: page.origin },
        body: '{"down":"yes"}',
      });
      expect(bad.status).to.equal(400);
      expect(JSON.parse(bad.text).error).to.contain('got down: "yes"');
      const set = await send(demo.port, {
        method: 'POST',
        path: '/mcp/admin',
        headers: { 'content-type': 'application/json', origin: page.origin },
        body: '{"down":true}',
      });
      expect(set.status).to.equal(200);
      expect(demo.mcp.down).to.equal(true);
      const down = await send(demo.port, { method: 'POST', path: '/mcp', headers: { ...mcpHeaders, origin: page.origin }, body: initialize });
      expect(down.status).to.equal(503);
      demo.mcp.down = false;
    });
  });

  describe('the protocol per provider', () => {
    it('primaryProtocol: "responses" (DEMO_PRIMARY_PROTOCOL): the local primary is spoken with the Responses API and resumes a connection cut mid-answer — a resume marker, no fallback, the whole answer', async () => {
      const demo = await startDemo({ port: 0, tokenDelayMs: 2, env: { DEMO_PRIMARY_PROTOCOL: 'responses' } });
      try {
        expect(demo.providers.map((p) => [p.id, p.protocol])).to.deep.equal([
          ['primary', 'responses'],
          ['secondary', 'anthropic'],
        ]);
        const config = (await (await fetch(`${demo.url}/config.json`)).json()) as { providers: { protocol: string; resume?: boolean }[] };
        expect(config.providers[0]).to.include({ protocol: 'responses', resume: true });
        demo.primary.faults.add({ kind: 'reset', afterChunks: 3, times: 1 });
        const agent = createDemoAgent(demo.providers, demo.mcpConfig);
        const events = await lastValueFrom(agent.ask([{ role: 'user', content: 'Tell me something nice about rivers' }]).pipe(toArray()));
        expect(events.filter((e) => e.type === 'resume')).to.have.length(1);
        expect(events.filter((e) => e.type === 'fallback' || e.type === 'reset')).to.deep.equal([]);
        expect(events.map((e) => (e.type === 'text-delta' ? e.text : '')).join('')).to.match(
          /^I am the local rxheal assistant\. You said: "Tell me something nice about rivers"\./,
        );
        expect(demo.primary.requests.map((r) => r.path)).to.deep.equal(['/v1/responses']);
      } finally {
        await demo.close();
      }
    });

    it('OPENAI_PROTOCOL=responses: the real OpenAI is spoken with the Responses API through the proxy (its one POST)', async () => {
      const demo = await startDemo({
        port: 0,
        tokenDelayMs: 1,
        env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'sk-x', OPENAI_PROTOCOL: 'responses' },
      });
      try {
        expect(demo.providers[0]).to.include({ id: 'openai', protocol: 'responses', baseURL: `${demo.url}/proxy/openai` });
        const refused = await fetch(`${demo.url}/proxy/openai/chat/completions`, {
          method: 'POST',
          headers: { origin: demo.url, 'content-type': 'application/json' },
          body: '{}',
        });
        expect(refused.status).to.equal(404);
      } finally {
        await demo.close();
      }
    });
  });

  describe('stopping it', () => {
    for (const [name, command, args] of [
      ['npm start (npm, its shell, then node)', 'npm', ['start']],
      ['tsx examples/demo/serve.ts (tsx and the node it spawns)', join(ROOT, 'node_modules/.bin/tsx'), ['examples/demo/serve.ts']],
    ] as const) {
      it(`${name}: SIGTERM to the process started stops the server — the page's port and the providers' are freed`, async () => {
        const { ports, served } = await servedAfterSigterm(command, [...args]);
        expect(served, `ports ${ports.join(', ')} still served after SIGTERM`).to.deep.equal([false, false, false]);
      });
    }
  });

  describe('the page’s port', () => {
    it('listenLocal with fallback: a taken port → the next free one', async () => {
      const held = (await occupy())!;
      const server = createServer();
      try {
        const port = await listenLocal(server, portOf(held), { fallback: true });
        expect(port).to.be.greaterThan(portOf(held));
        expect(port).to.be.at.most(portOf(held) + 20);
      } finally {
        await closeServer(server);
        await closeServer(held);
      }
    });

    it('an explicit port that is taken: a DemoPortError naming it (startDemo({ port }) and PORT alike)', async () => {
      const held = (await occupy())!;
      try {
        const taken = portOf(held);
        const fromOption = await startDemo({ port: taken, env: {} }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(fromOption).to.be.instanceOf(DemoPortError);
        expect((fromOption as Error).message).to.contain(`port ${taken} (port) is already in use`);
        const fromEnv = await startDemo({ env: { PORT: String(taken) } }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect((fromEnv as Error).message).to.contain(`port ${taken} (PORT) is already in use`);
        const bad = await startDemo({ env: { PORT: 'eighty' } }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect((bad as Error).message).to.equal('PORT must be a port number from 0 to 65535, got "eighty"');
      } finally {
        await closeServer(held);
      }
    });

    it('the real command: PORT taken → exit 1 with one line naming the port, no stack trace', async () => {
      const held = (await occupy())!;
      try {
        const taken = portOf(held);
        const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
          const child = execFile(
            process.execPath,
            ['--import', 'tsx', SERVE],
            { env: { ...process.env, PORT: String(taken) }, timeout: 25_000 },
            (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
          );
        });
        expect(result.code).to.equal(1);
        const lines = result.stderr.trim().split('\n');
        expect(lines).to.have.length(1);
        expect(lines[0]).to.equal(
          `rxheal demo: port ${taken} (PORT) is already in use on 127.0.0.1: stop what uses it, or choose another port, e.g. PORT=${taken + 1} npm start`,
        );
        expect(result.stderr).not.to.match(/\bat .+:\d+:\d+/);
        expect(result.stdout).to.equal('');
      } finally {
        await closeServer(held);
      }
    });

    it(`the real command: ${DEFAULT_PORT} taken, no PORT → the next free port, and it prints the URL`, async () => {
      // hold 5173 (if something else holds it already, it is taken all the same)
      const held = await occupy(DEFAULT_PORT);
      const env = { ...process.env };
      delete env['PORT'];
      delete env['OPENAI_API_KEY'];
      delete env['ANTHROPIC_API_KEY'];
      const child = spawn(process.execPath, ['--import', 'tsx', SERVE], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      try {
        const first = await new Promise<string>((resolve, reject) => {
          let out = '';
          child.stdout.setEncoding('utf8');
          child.stdout.on('data', (chunk: string) => {
            out += chunk;
            if (out.includes('\n')) resolve(out.split('\n')[0]!);
          });
          child.on('exit', (code) => reject(new Error(`exited with ${code}`)));
        });
        const match = /^rxheal demo: http:\/\/127\.0\.0\.1:(\d+) {3}\(port 5173 is taken; set PORT to choose one\)$/.exec(first);
        expect(match, first).not.to.equal(null);
        const port = Number(match![1]);
        expect(port).to.be.greaterThan(DEFAULT_PORT);
        const page = await send(port, { method: 'GET', path: '/' });
        expect(page.status).to.equal(200);
        expect(page.text).to.contain('<title>rxheal');
      } finally {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGTERM');
          await exited;
        }
        await closeServer(held);
      }
    });
  });
});
