/**
 * rxheal/mcp over Streamable HTTP on 127.0.0.1 (the SDK's StreamableHTTPServerTransport, stateful):
 * an expired session (the server restarted: 404) re-initialised and an idempotent call made once
 * more, a destructive one never (McpSessionExpiredError: not run); a restarted server healed by a
 * retry; a server down (connection refused) and back; a server dying mid-call; one exchange's
 * network error, which is not a dead session (the calls in flight keep their answers, no new
 * session, and without a transport factory the next calls, retries and probes go out as before);
 * the server's Host and Origin guard.
 */
import { expect } from 'chai';
import { request } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { lastValueFrom } from 'rxjs';
import { CapabilityRegistry, callTool, CircuitBreakerRegistry, classifyError, retryWithBackoff, ToolError } from '../../src/index.js';
import { fromMcp, McpSessionExpiredError, McpTimeoutError } from '../../src/mcp/index.js';
import { startHttpFixture, type FixtureHttpServer } from './fixtures/httpServer.js';
import { failure, ledger, run, toolNamed, until } from './support.js';

describe('rxheal/mcp over Streamable HTTP (a real McpServer on 127.0.0.1)', function () {
  this.timeout(20_000);
  let server: FixtureHttpServer;
  let book: ReturnType<typeof ledger>;
  const clients: Client[] = [];
  beforeEach(async () => {
    book = ledger();
    server = await startHttpFixture({ ledger: book.path });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
    await server.stop();
  });
  const transport = (): StreamableHTTPClientTransport => new StreamableHTTPClientTransport(server.url);
  const connect = async (): Promise<Client> => {
    const client = new Client({ name: 'rxheal-spec', version: '1.0.0' });
    await client.connect(transport());
    clients.push(client);
    return client;
  };

  it('lists and calls over HTTP, the 2 MB result included', async () => {
    const tools = await fromMcp(await connect(), { id: 'web' });
    expect(await run(tools, 'get_weather', { city: 'Tokyo', units: 'celsius' })).to.deep.equal({ city: 'Tokyo', temperature: 22, units: 'celsius' });
    expect(await run(tools, 'big', { bytes: 2 * 1024 * 1024 })).to.have.length(2 * 1024 * 1024);
  });

  it('an expired session (404: the server forgot it) is re-initialised and an idempotent call made once more', async () => {
    let made = 0;
    const tools = await fromMcp(await connect(), { id: 'web', reconnect: () => (made++, transport()) });
    expect(await run(tools, 'echo', { text: 'before' })).to.equal('before');
    server.expireSessions();
    expect(await run(tools, 'echo', { text: 'after' })).to.equal('after');
    expect(server.expired, 'the old session was refused once').to.equal(1);
    expect(made, 'one new session').to.equal(1);
  });

  it("…inside one permit of the server's breaker: a breaker that opens on the first failure stays closed, the call answered (the demo's settings)", async () => {
    const breakers = new CircuitBreakerRegistry({ failureThreshold: 1 });
    const tools = await fromMcp(await connect(), { id: 'web', reconnect: transport, breakers });
    expect(await run(tools, 'echo', { text: 'before' })).to.equal('before');
    server.expireSessions();
    expect(await run(tools, 'echo', { text: 'after' })).to.equal('after');
    expect(breakers.get('mcp:web').state).to.equal('closed');
    expect(server.expired).to.equal(1);
  });

  it('a restarted server (its sockets dropped, its sessions gone): an idempotent call heals under retryWithBackoff, on one new session', async () => {
    let made = 0;
    const tools = await fromMcp(await connect(), { id: 'web', reconnect: () => (made++, transport()) });
    expect(await run(tools, 'echo', { text: 'before' })).to.equal('before');
    await server.restart();
    const echo = toolNamed(tools, 'echo');
    expect(
      await lastValueFrom(callTool(echo, { id: 'r', name: 'echo', args: { text: 'after' } }).pipe(retryWithBackoff({ maxRetries: 2, initialBackoffMs: 10 }))),
    ).to.equal('after');
    expect(made, 'one new session').to.equal(1);
  });

  it('…a destructive call on an expired session fails with McpSessionExpiredError (not run, never silently lost, never repeated)', async () => {
    const tools = await fromMcp(await connect(), { id: 'web', reconnect: transport });
    await server.expireSessions();
    const error = await failure(run(tools, 'charge', { amount: 7 }));
    expect((error as ToolError).cause).to.be.instanceOf(McpSessionExpiredError);
    expect(classifyError(error)).to.include({ retryable: false, withheld: 'not_idempotent' });
    expect(book.lines()).to.deep.equal([]);
    // the session was re-initialised: the next call runs (once)
    expect(await run(tools, 'charge', { amount: 7 })).to.equal('charged 7');
    expect(book.lines()).to.deep.equal(['7']);
  });

  it('without a transport factory an expired session is an McpSessionExpiredError, never a timeout', async () => {
    const tools = await fromMcp(await connect(), { id: 'web' });
    server.expireSessions();
    const error = await failure(run(tools, 'echo', { text: 'x' }));
    expect((error as ToolError).cause).to.be.instanceOf(McpSessionExpiredError);
  });

  it('a server that is down: connection refused is a retryable connection failure; back up, the next call reconnects', async () => {
    const tools = await fromMcp(await connect(), { id: 'web', reconnect: transport, reconnectBackoff: { initialMs: 1, maxMs: 1 } });
    const url = server.url;
    await server.stop();
    const down = await failure(run(tools, 'echo', { text: 'x' }));
    expect(classifyError(down)).to.include({ category: 'connection', retryable: true });
    server = await startHttpFixture({ ledger: book.path, port: Number(url.port) });
    expect(await run(tools, 'echo', { text: 'up' })).to.equal('up');
  });

  it("one exchange's network error is not a dead session: a destructive call in flight keeps its answer, the next call goes out on the same session", async () => {
    let made = 0;
    const tools = await fromMcp(await connect(), { id: 'web', reconnect: () => (made++, transport()) });
    const charging = run(tools, 'charge', { amount: 7, delayMs: 2000 });
    await until(() => book.lines().length === 1);
    server.dropNext();
    const lost = await failure(run(tools, 'echo', { text: 'lost' }));
    expect(classifyError(lost)).to.include({ category: 'connection', retryable: true });
    expect(await run(tools, 'echo', { text: 'next' })).to.equal('next');
    expect(await charging, 'the server ran it: its result is not lost').to.equal('charged 7');
    expect(book.lines()).to.deep.equal(['7']);
    expect(made, 'no reconnection').to.equal(0);
    expect(server.opened, 'no session abandoned for a new one').to.equal(1);
  });

  it("…and without a transport factory the link goes on: a read-only tool's retry and a destructive tool's next run are sent", async () => {
    const tools = await fromMcp(await connect(), { id: 'web' });
    server.dropNext();
    const echo = toolNamed(tools, 'echo');
    expect(
      await lastValueFrom(callTool(echo, { id: 'n1', name: 'echo', args: { text: 'again' } }).pipe(retryWithBackoff({ maxRetries: 2, initialBackoffMs: 10 }))),
    ).to.equal('again');
    server.dropNext();
    await failure(run(tools, 'charge', { amount: 3 }));
    expect(book.lines(), 'the dropped charge never reached the tool').to.deep.equal([]);
    expect(await run(tools, 'charge', { amount: 4 })).to.equal('charged 4');
    expect(book.lines()).to.deep.equal(['4']);
  });

  it('…nor does a breaker opened by it stay open: the half-open probe reaches the server, the tools come back', async () => {
    const breakers = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 200 });
    const capabilities = new CapabilityRegistry();
    const tools = await fromMcp(await connect(), { id: 'web', breakers, capabilities });
    server.dropNext();
    await failure(run(tools, 'echo', { text: 'x' }));
    expect(breakers.get('mcp:web').state).to.equal('open');
    expect(capabilities.isAvailable('echo')).to.equal(false);
    await until(() => capabilities.isAvailable('echo'));
    expect(breakers.get('mcp:web').state).to.equal('closed');
    expect(await run(tools, 'echo', { text: 'back' })).to.equal('back');
  });

  it('a server dying mid-call: the SDK leaves the call pending (it waits to resume the stream); the timeout ends it, nothing hangs', async () => {
    const tools = await fromMcp(await connect(), { id: 'web', timeoutMs: 1000 });
    const started = Date.now();
    const error = await failure(run(tools, 'crash', {}));
    expect(Date.now() - started).to.be.lessThan(3000);
    expect((error as ToolError).cause).to.be.instanceOf(McpTimeoutError);
    expect(classifyError(error)).to.include({ category: 'timeout', retryable: true });
  });

  it('the fixture server is guarded: a foreign Host is refused (421), a browser Origin too (403)', async () => {
    const status = (headers: Record<string, string>): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port: Number(server.url.port), path: '/mcp', method: 'POST', headers: { 'content-type': 'application/json', ...headers } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end('{}');
      });
    expect(await status({ host: 'evil.example' })).to.equal(421);
    expect(await status({ origin: 'https://evil.example' })).to.equal(403);
  });
});
