/**
 * rxheal/mcp on MCP 2026-07-28 (a 2.x client and a 2.x server, `createMcpHandler` over Streamable
 * HTTP on 127.0.0.1, stateless): no session to expire, so a restarted server is just there again;
 * no resumability, so a broken stream is retried only for a tool whose annotations say it is safe
 * and is otherwise an unknown outcome (never run again); multi-round calls (`input_required`)
 * answered by `onInputRequired` with the server's `requestState` sent back, under the same
 * deadlines and cancellation, or by the client's own handlers, or failing with
 * McpInputRequiredError. And the old handshake when a 2.x client meets a 1.x server over HTTP.
 */
import { expect } from 'chai';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { lastValueFrom } from 'rxjs';
import { callTool, CircuitBreakerRegistry, classifyError, retryWithBackoff, ToolError } from '../../src/index.js';
import { fromMcp, McpInputRequiredError, McpOutcomeUnknownError, McpTimeoutError, type McpInputRequest } from '../../src/mcp/index.js';
import { startHttpFixture } from './fixtures/httpServer.js';
import { startHttpFixture2, type FixtureHttpServer2 } from './fixtures/httpServer2.js';
import { failure, ledger, run, serverStats, toolNamed, until } from './support.js';

describe('rxheal/mcp on MCP 2026-07-28 (a 2.x client, a stateless 2.x server over Streamable HTTP)', function () {
  this.timeout(20_000);
  let server: FixtureHttpServer2;
  let book: ReturnType<typeof ledger>;
  const clients: Client[] = [];
  beforeEach(async () => {
    book = ledger();
    server = await startHttpFixture2({ ledger: book.path });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
    await server.stop();
  });
  const connect = async (url: URL = server.url): Promise<Client> => {
    const client = new Client({ name: 'rxheal-spec', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: { form: {} } } });
    await client.connect(new StreamableHTTPClientTransport(url));
    clients.push(client);
    return client;
  };
  const retrying = (tools: Awaited<ReturnType<typeof fromMcp>>, name: string, args: Record<string, unknown>): Promise<unknown> =>
    lastValueFrom(
      callTool(toolNamed(tools, name), { id: `r-${name}`, name, args }).pipe(retryWithBackoff({ maxRetries: 2, initialBackoffMs: 10, jitter: 'none' })),
    );

  it('no handshake but server/discover, no session: a restarted server answers again (a safe call retried past the connection it dropped), nothing re-initialised', async () => {
    const client = await connect();
    expect(client.getProtocolEra()).to.equal('modern');
    const tools = await fromMcp(client, { id: 'web' });
    expect(await run(tools, 'get_weather', { city: 'Tokyo', units: 'celsius' })).to.deep.equal({ city: 'Tokyo', temperature: 22, units: 'celsius' });
    await server.restart();
    expect(await retrying(tools, 'echo', { text: 'after' })).to.equal('after');
    expect(server.methods, 'one discover, no initialize').to.include({ 'server/discover': 1 }).and.not.have.property('initialize');
  });

  it('progress pushes the idle deadline back over HTTP too, and a 2 MB result arrives whole', async () => {
    const tools = await fromMcp(await connect(), { id: 'web', timeoutMs: 600 });
    expect(await run(tools, 'progress', { steps: 6, intervalMs: 150 })).to.equal('done after 6 steps (token sent)');
    expect(await run(tools, 'big', { bytes: 2 * 1024 * 1024 })).to.have.length(2 * 1024 * 1024);
  });

  it('a broken stream of a tool not safe to repeat: McpOutcomeUnknownError (it ran once, the ledger says), never retried', async () => {
    const tools = await fromMcp(await connect(), { id: 'web' });
    server.dropNext(1);
    const error = await failure(retrying(tools, 'charge', { amount: 7 }));
    expect(error).to.be.instanceOf(ToolError);
    expect((error as ToolError).cause).to.be.instanceOf(McpOutcomeUnknownError);
    expect((error as ToolError).message).to.match(/whether it ran is unknown/);
    expect(classifyError(error)).to.include({ category: 'connection' });
    await until(() => book.lines().length === 1);
    expect(book.lines(), 'run once, not again').to.deep.equal(['7']);
  });

  it('a broken stream of a tool whose annotations say it is safe is retried, and answers', async () => {
    const client = await connect();
    const tools = await fromMcp(client, { id: 'web' });
    // the servers of this process count together
    const before = (await serverStats(client)).calls['echo'] ?? 0;
    server.dropNext(1);
    expect(await retrying(tools, 'echo', { text: 'again' })).to.equal('again');
    expect((await serverStats(client)).calls['echo'], 'sent twice: the first answer was lost').to.equal(before + 2);
  });

  it('a server down is a refused connection (the call never left: not an unknown outcome), counted by the breaker', async () => {
    const breakers = new CircuitBreakerRegistry({ failureThreshold: 2 });
    const tools = await fromMcp(await connect(), { id: 'web', breakers });
    await server.stop();
    // the first exchange finds the kept-alive connection closed under it (sent or not: nobody can say)
    await failure(run(tools, 'echo', { text: 'x' }));
    const error = await failure(run(tools, 'charge', { amount: 1 }));
    expect((error as ToolError).cause).to.not.be.instanceOf(McpOutcomeUnknownError);
    expect(classifyError(error).category).to.equal('connection');
    expect(breakers.get('mcp:web').state).to.equal('open');
    server = await startHttpFixture2({ ledger: book.path });
  });

  it("a multi-round call: onInputRequired answers each round, the server's requestState goes back as it was sent", async () => {
    const asked: Omit<McpInputRequest, 'signal'>[] = [];
    const tools = await fromMcp(await connect(), {
      id: 'web',
      onInputRequired: ({ signal: _signal, ...request }) => {
        asked.push(request);
        return { sure: { action: 'accept', content: { sure: true } } };
      },
    });
    expect(await run(tools, 'confirm', { file: 'a.txt' })).to.equal('deleted a.txt (state asked:a.txt)');
    expect(asked).to.have.length(1);
    expect(asked[0]).to.deep.include({ server: 'web', tool: 'confirm', arguments: { file: 'a.txt' }, round: 1 });
    expect(asked[0]!.inputRequests['sure']).to.deep.include({ method: 'elicitation/create' });
  });

  it('…rounds that never end fail with McpInputRequiredError after maxInputRounds; an answer that throws fails the call with it', async () => {
    const client = await connect();
    const declining = await fromMcp(client, { id: 'web', maxInputRounds: 2, onInputRequired: () => ({ sure: { action: 'decline' } }) });
    const error = await failure(run(declining, 'confirm', { file: 'b.txt' }));
    expect((error as ToolError).cause).to.be.instanceOf(McpInputRequiredError);
    expect((error as ToolError).message).to.match(/still asking after 2 rounds/);
    expect(classifyError(error)).to.include({ category: 'bad_request', retryable: false });
    const throwing = await fromMcp(client, {
      id: 'web',
      onInputRequired: () => {
        throw new RangeError('no user here');
      },
    });
    expect(((await failure(run(throwing, 'confirm', { file: 'c.txt' }))) as ToolError).cause).to.be.instanceOf(RangeError);
  });

  it('…under the same deadline and cancellation: an answer that never comes times out, its signal aborted', async () => {
    let signal: AbortSignal | undefined;
    const tools = await fromMcp(await connect(), {
      id: 'web',
      timeoutMs: 300,
      onInputRequired: (request) => {
        signal = request.signal;
        return new Promise<never>(() => undefined);
      },
    });
    const error = await failure(run(tools, 'confirm', { file: 'd.txt' }));
    expect((error as ToolError).cause).to.be.instanceOf(McpTimeoutError);
    expect(signal?.aborted, 'the answer is told to stop').to.equal(true);
  });

  it("without onInputRequired the 2.x client's own handler answers; with neither, McpInputRequiredError (the call never finished)", async () => {
    const withHandler = await connect();
    withHandler.setRequestHandler('elicitation/create', () => ({ action: 'accept', content: { sure: true } }));
    expect(await run(await fromMcp(withHandler, { id: 'web' }), 'confirm', { file: 'e.txt' })).to.equal('deleted e.txt (state asked:e.txt)');
    const bare = await connect();
    const error = await failure(run(await fromMcp(bare, { id: 'web' }), 'confirm', { file: 'f.txt' }));
    expect((error as ToolError).cause).to.be.instanceOf(McpInputRequiredError);
  });

  it('a 2.x client and a 1.x server over HTTP: the old handshake (a session), healed by the same rules', async () => {
    const old = await startHttpFixture();
    try {
      const client = await connect(old.url);
      expect(client.getProtocolEra()).to.equal('legacy');
      const tools = await fromMcp(client, { id: 'old' });
      expect(await run(tools, 'echo', { text: 'old' })).to.equal('old');
      expect(old.opened, 'one session').to.equal(1);
    } finally {
      await old.stop();
    }
  });
});
