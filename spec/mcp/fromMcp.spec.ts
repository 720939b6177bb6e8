/**
 * rxheal/mcp's fromMcp against a real MCP server (the SDK's McpServer) over stdio, a child
 * process: listing, validation, annotations, results, isError, cancellation, progress-reset
 * timeouts, a 2 MB result, a server that dies or writes garbage mid-call, JSON-RPC errors, a tool
 * whose inputSchema does not compile — on each pairing of the SDK majors (support.ts: 1.x and 2.x
 * clients, servers built with either, MCP 2026-07-28 between two 2.x). And watchMcpTools with a
 * stand-in client whose listings the spec answers out of order.
 */
import { expect } from 'chai';
import { ProtocolError, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { lastValueFrom, type Observable } from 'rxjs';
import {
  CapabilityRegistry,
  CircuitBreakerRegistry,
  callTool,
  classifyError,
  reflectOnError,
  Reflection,
  ToolError,
  InvalidOptionError,
  type Tool,
} from '../../src/index.js';
import { isServiceFailure, shouldReflectByDefault } from '../../src/providers/index.js';
import {
  fromMcp,
  isIdempotentTool,
  McpConnectionError,
  McpInputRequiredError,
  McpProtocolError,
  McpTimeoutError,
  McpToolResultError,
  watchMcpTools,
  type McpToolInfo,
  type McpWatchableClient,
} from '../../src/mcp/index.js';
import { mcpFailure } from '../../src/mcp/errors.js';
import { connected, failure, PAIRINGS, run, serverStats, stdio, toolNamed, until, type AnyClient } from './support.js';

for (const pairing of PAIRINGS)
  describe(`rxheal/mcp fromMcp over stdio (a real McpServer in a child process): ${pairing.label}`, function () {
    this.timeout(20_000);
    let client: AnyClient;
    const open: AnyClient[] = [];
    /** A client of this pairing; `server` overrides its server's major (a fixture only the 1.x server has: paging, a bad schema). */
    const connect = async (env: Record<string, string> = {}, server?: 1 | 2): Promise<AnyClient> => {
      const c = await pairing.connect(pairing.transport(env, server));
      open.push(c);
      return c;
    };
    before(async () => {
      client = await connect();
    });
    after(async () => {
      await Promise.all(open.map((c) => c.close().catch(() => undefined)));
    });
    const stats = (c: AnyClient = client): Promise<{ calls: Record<string, number>; cancelled: number }> => serverStats(c);

    it('speaks the revision the pairing can: 2026-07-28 between two 2.x, the old handshake otherwise', () => {
      const era = 'getProtocolEra' in client ? client.getProtocolEra() : 'legacy';
      expect(era).to.equal(pairing.client === 2 && pairing.server === 2 ? 'modern' : 'legacy');
    });

    it('one tool per MCP tool: its name (after the prefix), description, inputSchema as parameters, idempotent from the annotations', async () => {
      const tools = await fromMcp(client, { prefix: 'fx_' });
      const { tools: listed } = await client.listTools();
      expect(tools.map((t) => t.name)).to.deep.equal(listed.map((t) => `fx_${t.name}`));
      const weather = toolNamed(tools, 'fx_get_weather');
      expect(weather.description).to.equal('Current temperature of a city');
      expect(weather.parameters).to.deep.equal(listed.find((t) => t.name === 'get_weather')!.inputSchema);
      expect(Object.fromEntries(tools.map((t) => [t.name, t.idempotent]))).to.include({
        fx_get_weather: true,
        fx_echo: true,
        fx_charge: false,
        fx_add_tool: false,
      });
      expect(isIdempotentTool({ annotations: { readOnlyHint: true, destructiveHint: true } })).to.equal(false);
      expect(isIdempotentTool({})).to.equal(false);
      // the server is called by its own name
      expect(await run(tools, 'fx_echo', { text: 'hi' })).to.equal('hi');
    });

    it('lists every page of tools/list', async () => {
      const paged = await connect({ MCP_PAGE_SIZE: '3', MCP_PAD: '8' }, 1);
      const first = await paged.listTools({ cursor: '0' });
      expect(first.nextCursor, 'the server pages its list').to.equal('3');
      const tools = await fromMcp(paged);
      expect(tools.map((t) => t.name)).to.include.members(['tool_0', 'tool_7', 'get_weather', 'stats']);
      // every tool of the unpaged server, and the 8 padding ones
      expect(tools).to.have.length((await (await connect({}, 1)).listTools()).tools.length + 8);
    });

    it("validates the arguments against inputSchema with the SDK's validator first: a ToolError (validate) and the server never sees the call", async () => {
      const tools = await fromMcp(client);
      const before = (await stats()).calls['get_weather'] ?? 0;
      const error = await failure(run(tools, 'get_weather', { city: 'Paris', units: 'kelvin' }));
      expect(error).to.be.instanceOf(ToolError);
      expect((error as ToolError).phase).to.equal('validate');
      expect((error as ToolError).message)
        .to.match(/units/)
        .and.match(/allowed values/);
      expect(classifyError(error).category).to.equal('validation_error');
      expect((await stats()).calls['get_weather'] ?? 0).to.equal(before);
    });

    it('a tool whose inputSchema does not compile is refused alone, named; the rest of the listing stands', async () => {
      const c = await connect({ MCP_BAD_SCHEMA: '1' }, 1);
      const tools = await fromMcp(c);
      expect(tools.map((t) => t.name)).to.include.members(['echo', 'broken']);
      expect(await run(tools, 'echo', { text: 'fine' })).to.equal('fine');
      const error = await failure(run(tools, 'broken', { a: 1 }));
      expect(error).to.be.instanceOf(ToolError);
      expect((error as ToolError).phase).to.equal('validate');
      expect((error as ToolError).message)
        .to.match(/'broken'/)
        .and.match(/inputSchema does not compile/)
        .and.match(/can't resolve reference #\/\$defs\/missing/);
      expect((await stats(c)).calls['broken'], 'never sent').to.equal(undefined);
    });

    it('a success is structuredContent when present, else the text of the content', async () => {
      const tools = await fromMcp(client);
      expect(await run(tools, 'get_weather', { city: 'Paris', units: 'celsius' })).to.deep.equal({ city: 'Paris', temperature: 18, units: 'celsius' });
      expect(await run(tools, 'echo', { text: 'plain text' })).to.equal('plain text');
    });

    it('isError: true is a ToolError (execute) carrying its text, which reflectOnError hands to the model', async () => {
      const tools = await fromMcp(client);
      const error = await failure(run(tools, 'get_weather', { city: 'Pariss', units: 'celsius' }));
      expect(error).to.be.instanceOf(ToolError);
      expect((error as ToolError).phase).to.equal('execute');
      expect((error as ToolError).cause).to.be.instanceOf(McpToolResultError);
      expect((error as ToolError).message).to.equal("unknown city 'Pariss'; known cities: Paris, London, Tokyo");
      expect(shouldReflectByDefault(error as ToolError)).to.equal(true);
      expect(classifyError(error).retryable).to.equal(false);
      const tool = toolNamed(tools, 'get_weather');
      const reflected = await lastValueFrom(
        callTool(tool, { id: 'r1', name: 'get_weather', args: { city: 'Pariss', units: 'celsius' } }).pipe(reflectOnError()),
      );
      expect(reflected).to.be.instanceOf(Reflection);
      expect((reflected as Reflection).prompt).to.contain("unknown city 'Pariss'");
    });

    it('unsubscribing cancels the request: the server gets notifications/cancelled', async () => {
      const tools = await fromMcp(client);
      const before = (await stats()).cancelled;
      const subscription = callTool(toolNamed(tools, 'slow'), { id: 's1', name: 'slow', args: { ms: 10_000 } }).subscribe();
      await new Promise((r) => setTimeout(r, 200));
      subscription.unsubscribe();
      await until(async () => (await stats()).cancelled === before + 1);
    });

    it('timeoutMs is reset by each progress notification (the SDK sends a progress token because onprogress is wired)', async () => {
      const tools = await fromMcp(client, { timeoutMs: 600 });
      // 6 steps of 150 ms: 900 ms in all, more than timeoutMs, never 600 ms without news
      expect(await run(tools, 'progress', { steps: 6, intervalMs: 150 })).to.equal('done after 6 steps (token sent)');
    });

    it('without progress, timeoutMs fails the call with McpTimeoutError (timeout, retryable) and cancels it on the server', async () => {
      const tools = await fromMcp(client, { timeoutMs: 300 });
      const before = (await stats()).cancelled;
      const started = Date.now();
      const error = await failure(run(tools, 'slow', { ms: 5000 }));
      expect(Date.now() - started).to.be.lessThan(2000);
      expect((error as ToolError).cause).to.be.instanceOf(McpTimeoutError);
      expect((error as ToolError).cause).to.include({ kind: 'idle', timeoutMs: 300 });
      expect(classifyError(error)).to.include({ category: 'timeout', retryable: true });
      await until(async () => (await stats()).cancelled === before + 1);
    });

    it('maxTotalTimeoutMs bounds a call however much it progresses', async () => {
      const tools = await fromMcp(client, { timeoutMs: 600, maxTotalTimeoutMs: 500 });
      const error = await failure(run(tools, 'progress', { steps: 10, intervalMs: 100 }));
      expect((error as ToolError).cause).to.include({ kind: 'total', timeoutMs: 500 });
    });

    it('a 2 MB result arrives whole', async () => {
      const tools = await fromMcp(client);
      const value = await run(tools, 'big', { bytes: 2 * 1024 * 1024 });
      expect(value)
        .to.be.a('string')
        .with.length(2 * 1024 * 1024);
    });

    it('a server writing a line that is not JSON-RPC mid-call: the call fails by its timeout, never hangs', async () => {
      const garbling = await connect();
      const tools = await fromMcp(garbling, { timeoutMs: 400 });
      const error = await failure(run(tools, 'garble', {}));
      expect((error as ToolError).cause).to.be.instanceOf(McpTimeoutError);
      // the connection survives the bad line
      expect(await run(tools, 'echo', { text: 'still here' })).to.equal('still here');
    });

    it('a server that dies mid-call: the call fails at once with McpConnectionError (connection, retryable), later calls too (no reconnect given)', async () => {
      const dying = await connect();
      const tools = await fromMcp(dying);
      const error = await failure(run(tools, 'crash', {}));
      expect((error as ToolError).cause).to.be.instanceOf(McpConnectionError);
      expect(classifyError(error)).to.include({ category: 'connection', retryable: true });
      expect(isServiceFailure(classifyError(error))).to.equal(true);
      const later = await failure(run(tools, 'echo', { text: 'x' }));
      expect((later as ToolError).cause).to.be.instanceOf(McpConnectionError);
      expect((later as ToolError).message).to.match(/not connected/);
    });

    it('JSON-RPC errors: method not found / invalid params are not retried and not counted by the breaker; an internal error is', async () => {
      // a real one: the fixture has no prompts, so prompts/get is answered -32601 — but by the 2.x server to a 2.x
      // client (whose MCP 2026-07-28 revision names it otherwise): an unknown tool, answered -32602
      const modern = pairing.client === 2 && pairing.server === 2;
      const real = await (modern ? client.callTool({ name: 'nope', arguments: {} }) : client.getPrompt({ name: 'nope' })).catch((e: unknown) => e);
      expect(real).to.be.instanceOf(pairing.client === 1 ? McpError : ProtocolError);
      const notFound = mcpFailure('fx', 'prompts/get', real, 1000);
      expect(notFound)
        .to.be.instanceOf(McpProtocolError)
        .and.include({ rpcCode: modern ? -32602 : -32601, status: 400 });
      expect(classifyError(notFound)).to.include({ category: 'bad_request', retryable: false });
      expect(isServiceFailure(classifyError(notFound))).to.equal(false);
      const badParams = mcpFailure('fx', 'x', new McpError(ErrorCode.InvalidParams, 'Unknown tool: nope'), 1000);
      expect(classifyError(badParams).retryable).to.equal(false);
      const internal = mcpFailure('fx', 'x', new McpError(ErrorCode.InternalError, 'boom'), 1000);
      expect(classifyError(internal)).to.include({ category: 'server_error', retryable: true });
      expect(mcpFailure('fx', 'x', new McpError(ErrorCode.ConnectionClosed, 'Connection closed'), 1000)).to.be.instanceOf(McpConnectionError);
      expect(mcpFailure('fx', 'x', new McpError(ErrorCode.RequestTimeout, 'Request timed out'), 1000)).to.be.instanceOf(McpTimeoutError);
      expect(mcpFailure('fx', 'x', new Error('Not connected'), 1000)).to.be.instanceOf(McpConnectionError);
    });
  });

describe('rxheal/mcp fromMcp: its options, and what a 2.x client throws', () => {
  it("2.x's SdkError codes and ProtocolError in rxheal's words: connection, timeout, input nobody can give", () => {
    const sdk = (code: SdkErrorCode, data?: unknown): SdkError => new SdkError(code, `sdk ${code}`, data);
    for (const code of [SdkErrorCode.ConnectionClosed, SdkErrorCode.NotConnected, SdkErrorCode.SendFailed]) {
      expect(mcpFailure('fx', 'x', sdk(code), 1000), code).to.be.instanceOf(McpConnectionError);
    }
    expect(classifyError(mcpFailure('fx', 'x', sdk(SdkErrorCode.ConnectionClosed), 1000))).to.include({ category: 'connection', retryable: true });
    expect(mcpFailure('fx', 'x', sdk(SdkErrorCode.RequestTimeout), 1000))
      .to.be.instanceOf(McpTimeoutError)
      .and.include({ timeoutMs: 1000 });
    const rounds = mcpFailure(
      'fx',
      'x',
      sdk(SdkErrorCode.InputRequiredRoundsExceeded, { lastResult: { inputRequests: { a: { method: 'elicitation/create' } } } }),
      1000,
    );
    expect(rounds).to.be.instanceOf(McpInputRequiredError);
    expect((rounds as McpInputRequiredError).inputRequests).to.have.keys('a');
    expect(classifyError(rounds)).to.include({ category: 'bad_request', retryable: false });
    expect(mcpFailure('fx', 'x', new ProtocolError(-32021, 'Cannot request input'), 1000)).to.be.instanceOf(McpInputRequiredError);
    expect(mcpFailure('fx', 'x', new ProtocolError(-32603, 'boom'), 1000))
      .to.be.instanceOf(McpProtocolError)
      .and.include({ status: 500 });
  });

  it('bad input gets a clear error at once: a client that is not an MCP Client of either major, an unknown option', async () => {
    const client = await connected(stdio());
    try {
      expect(() => fromMcp({} as never)).to.throw(
        InvalidOptionError,
        /option "client" must be a connected MCP Client of @modelcontextprotocol\/sdk 1\.x or @modelcontextprotocol\/client 2\.x \(no listTools\(\)\)/,
      );
      expect(() => fromMcp(client, { timeout: 5 } as never)).to.throw(InvalidOptionError, /option "timeout" must be one of the known options/);
      expect(() => fromMcp(client, { timeoutMs: -1 })).to.throw(InvalidOptionError, /timeoutMs/);
      expect(() => fromMcp(client, { maxInputRounds: 0 })).to.throw(InvalidOptionError, /maxInputRounds/);
      expect(() => fromMcp(client, { onInputRequired: 'yes' as never })).to.throw(InvalidOptionError, /onInputRequired/);
    } finally {
      await client.close();
    }
  });
});

describe('rxheal/mcp watchMcpTools when listings answer out of order (a stand-in client)', () => {
  interface Listing {
    resolve(page: { tools: McpToolInfo[] }): void;
    reject(error: unknown): void;
  }
  const tool = (name: string): McpToolInfo => ({ name, inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } });
  function standIn(): { client: McpWatchableClient; listings: Listing[]; changed: () => void } {
    const listings: Listing[] = [];
    let handler: (() => void) | undefined;
    const client: McpWatchableClient = {
      listTools: () => new Promise((resolve, reject) => listings.push({ resolve, reject })),
      // the server is gone: every call fails, so the breaker opens and disables the server's tools
      callTool: () => Promise.reject(new McpError(ErrorCode.ConnectionClosed, 'Connection closed')),
      ping: () => Promise.resolve({}),
      connect: () => Promise.resolve(),
      close: () => Promise.resolve(),
      getServerVersion: () => ({ name: 'stand-in', version: '1' }),
      setNotificationHandler: (_schema, h) => void (handler = h as () => void),
      removeNotificationHandler: () => void (handler = undefined),
    };
    return { client, listings, changed: () => handler!() };
  }

  it('an older listing that answers after a newer one changes nothing: not emitted, and the breaker disables the newest tools', async () => {
    const { client, listings, changed } = standIn();
    const capabilities = new CapabilityRegistry();
    const lists: Tool<Record<string, unknown>, unknown>[][] = [];
    const subscription = watchMcpTools(client, { capabilities, breakers: new CircuitBreakerRegistry({ failureThreshold: 1 }) }).subscribe((list) =>
      lists.push(list),
    );
    await until(() => listings.length === 1);
    listings[0]!.resolve({ tools: [tool('first')] });
    await until(() => lists.length === 1);
    changed();
    changed();
    listings[2]!.resolve({ tools: [tool('newest')] });
    await until(() => lists.length === 2);
    listings[1]!.resolve({ tools: [tool('older')] });
    await new Promise((r) => setImmediate(r));
    expect(lists.map((list) => list.map((t) => t.name))).to.deep.equal([['first'], ['newest']]);
    await lastValueFrom(lists[1]![0]!.execute({}, { signal: new AbortController().signal }) as Observable<unknown>).catch(() => undefined);
    expect([...capabilities.degraded().keys()], "the newest listing's tools").to.deep.equal(['newest']);
    subscription.unsubscribe();
  });

  it("an older listing's failure after a newer one answered does not end the watch", async () => {
    const { client, listings, changed } = standIn();
    let failed: unknown;
    const lists: string[][] = [];
    const subscription = watchMcpTools(client).subscribe({ next: (list) => lists.push(list.map((t) => t.name)), error: (error: unknown) => (failed = error) });
    await until(() => listings.length === 1);
    changed();
    listings[1]!.resolve({ tools: [tool('newest')] });
    await until(() => lists.length === 1);
    listings[0]!.reject(new McpError(ErrorCode.InternalError, 'too late'));
    await new Promise((r) => setImmediate(r));
    expect(failed).to.equal(undefined);
    changed();
    listings[2]!.resolve({ tools: [tool('later')] });
    await until(() => lists.length === 2);
    expect(lists).to.deep.equal([['newest'], ['later']]);
    subscription.unsubscribe();
  });
});
