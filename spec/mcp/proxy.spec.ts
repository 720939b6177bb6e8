/**
 * `rxheal-mcp-proxy` (src/mcp/cli.ts) between the SDK's own client and a faulty upstream (the
 * stdio fixture server), each a real child process: the upstream's tools listed as they are, a
 * safe tool's call healed across the upstream's death (reconnected, retried), a destructive one
 * run once and answered as an `isError` result, bad arguments refused before the upstream, the
 * upstream's isError passed through, list changes forwarded, and a bad command line refused.
 * Then what is not a tool call, passed through both ways (compared with a client straight on the
 * upstream): identity, instructions, capabilities, the tools offered only to a client declaring
 * sampling, elicitation or roots, prompts, completions, resources, logging, the upstream's errors.
 * And one forwarded call the host cancels (forwardCall): it settles, and is cancelled upstream.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  type ClientCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import { parseArgs } from '../../src/mcp/args.js';
import { toolset } from '../../src/mcp/fromMcp.js';
import { forwardCall } from '../../src/mcp/proxy.js';
import { connected, ledger, SERVER, stdio, until } from './support.js';

const CLI = new URL('../../src/mcp/cli.ts', import.meta.url).pathname;

describe('rxheal-mcp-proxy between an MCP client and a faulty upstream', function () {
  this.timeout(30_000);
  let client: Client;
  let book: ReturnType<typeof ledger>;
  let marker: string;
  before(async () => {
    book = ledger();
    marker = join(book.path, '..', 'marker');
    client = new Client({ name: 'host', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['--import', 'tsx', CLI, '--retries', '2', '--timeout', '5000', '--', process.execPath, '--import', 'tsx', SERVER],
        env: { ...(process.env as Record<string, string>), MCP_LEDGER: book.path, MCP_MARKER: marker },
        stderr: 'ignore',
      }),
    );
  });
  after(async () => {
    await client.close();
  });
  const text = (result: { readonly [key: string]: unknown }): string => (result['content'] as { text: string }[] | undefined)?.[0]?.text ?? '';

  it('lists the upstream tools as they are (names, schemas, annotations)', async () => {
    const { tools } = await client.listTools();
    const weather = tools.find((t) => t.name === 'get_weather')!;
    expect(weather.annotations).to.deep.equal({ readOnlyHint: true });
    expect(weather.inputSchema['required']).to.deep.equal(['city', 'units']);
    expect(tools.map((t) => t.name)).to.include.members(['echo', 'charge', 'flaky', 'stats']);
  });

  it("forwards the upstream's progress to the host, under the host's own progress token: a host timeout reset by progress lets a long tool finish", async () => {
    const seen: { progress: number; total?: number }[] = [];
    // 6 steps of 400 ms (2.4 s) against a host timeout of 1 s that each progress notification resets
    const result = await client.callTool({ name: 'progress', arguments: { steps: 6, intervalMs: 400 } }, undefined, {
      timeout: 1000,
      resetTimeoutOnProgress: true,
      onprogress: (p) => void seen.push({ progress: p.progress, ...(p.total === undefined ? {} : { total: p.total }) }),
    });
    expect(result.isError ?? false).to.equal(false);
    expect(text(result)).to.equal('done after 6 steps (token sent)');
    // in order, each with its total; the SDK's own server side writes the last notification after the
    // result (a client straight on the fixture also gets 1-5 and an "unknown token" error for 6)
    expect(seen.length).to.be.within(5, 6);
    expect(seen).to.deep.equal([1, 2, 3, 4, 5, 6].slice(0, seen.length).map((progress) => ({ progress, total: 6 })));
  });

  it('a safe tool whose upstream dies mid-call is healed: the proxy reconnects and retries', async () => {
    const result = await client.callTool({ name: 'flaky', arguments: {} });
    expect(result.isError ?? false).to.equal(false);
    expect(text(result)).to.equal('ok');
    expect(existsSync(marker), 'the upstream did die once').to.equal(true);
  });

  it('a destructive tool whose upstream dies after charging runs once: the host gets an isError result', async () => {
    const result = await client.callTool({ name: 'charge', arguments: { amount: 5, die: true } });
    expect(result.isError).to.equal(true);
    expect(text(result)).to.match(/connection closed/);
    expect(book.lines()).to.deep.equal(['5']);
  });

  it("bad arguments are refused before the upstream; the upstream's isError passes through", async () => {
    const bad = await client.callTool({ name: 'get_weather', arguments: { city: 'Paris', units: 'kelvin' } });
    expect(bad.isError).to.equal(true);
    expect(text(bad)).to.match(/units/);
    const unknown = await client.callTool({ name: 'get_weather', arguments: { city: 'Atlantis', units: 'celsius' } });
    expect(unknown.isError).to.equal(true);
    expect(text(unknown)).to.equal("unknown city 'Atlantis'; known cities: Paris, London, Tokyo");
    const stats = await client.callTool({ name: 'stats', arguments: {} });
    expect((stats.structuredContent as { calls: Record<string, number> }).calls['get_weather']).to.equal(1);
  });

  it("forwards the upstream's tools/list_changed", async () => {
    let changed = 0;
    const { ToolListChangedNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
    await client.callTool({ name: 'add_tool', arguments: { name: 'late' } });
    await until(() => changed > 0);
    await until(async () => (await client.listTools()).tools.some((t) => t.name === 'late'));
  });

  it('a bad command line is refused with the usage (exit code 2)', () => {
    expect(parseArgs(['--retries', 'x', '--', 'node']))
      .to.have.property('error')
      .that.matches(/bad argument "--retries" "x"/);
    expect(parseArgs([]))
      .to.have.property('error')
      .that.matches(/no upstream/);
    expect(parseArgs(['--url', 'http://127.0.0.1:1/mcp'])).to.deep.equal({
      serve: { upstream: { url: 'http://127.0.0.1:1/mcp' }, retries: 2, timeoutMs: 60_000, failureThreshold: 5, resetTimeoutMs: 60_000 },
    });
    const run = spawnSync(process.execPath, ['--import', 'tsx', CLI, '--'], { encoding: 'utf8' });
    expect(run.status).to.equal(2);
    expect(run.stderr).to.match(/usage: rxheal-mcp-proxy/);
  });
});

describe('rxheal-mcp-proxy passes through what is not a tool call (compared with a client straight on the upstream)', function () {
  this.timeout(30_000);
  const capabilities: ClientCapabilities = { sampling: {}, elicitation: {}, roots: { listChanged: true } };
  const logs: { level: string; data: unknown }[] = [];
  /** A host that can answer sampling, elicitation and roots. */
  const host = (): Client => {
    const c = new Client({ name: 'host', version: '1.0.0' }, { capabilities });
    c.setRequestHandler(CreateMessageRequestSchema, (request) => {
      const content = request.params.messages[0]!.content as { text?: string };
      return { model: 'stand-in', role: 'assistant', content: { type: 'text', text: `the model says: ${content.text ?? ''}` } };
    });
    c.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { name: 'Ada' } }));
    c.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
    return c;
  };
  let proxied: Client;
  let direct: Client;
  before(async () => {
    proxied = host();
    proxied.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push({ level: n.params.level, data: n.params.data }));
    await proxied.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['--import', 'tsx', CLI, '--', process.execPath, '--import', 'tsx', SERVER],
        env: { ...(process.env as Record<string, string>), MCP_EXTRAS: '1' },
        stderr: 'ignore',
      }),
    );
    direct = host();
    await direct.connect(stdio({ MCP_EXTRAS: '1' })());
  });
  after(async () => {
    await Promise.all([proxied.close(), direct.close()]);
  });
  const text = (result: { readonly [key: string]: unknown }): string => (result['content'] as { text: string }[] | undefined)?.[0]?.text ?? '';
  const rejection = (promise: Promise<unknown>): Promise<McpError> =>
    promise.then(
      () => Promise.reject(new Error('expected a JSON-RPC error')),
      (error: McpError) => error,
    );

  it("the upstream's identity, instructions and capabilities", () => {
    expect(proxied.getServerVersion()).to.deep.equal({ name: 'fixture', version: '1.0.0' });
    expect(proxied.getInstructions()).to.equal('Tools that fail on purpose.');
    expect(proxied.getServerCapabilities()).to.deep.equal(direct.getServerCapabilities());
    expect(proxied.getServerCapabilities()).to.include.keys('tools', 'prompts', 'resources', 'completions', 'logging');
  });

  it('every tool the upstream offers this host, those for sampling, elicitation and roots included, each answered by the host', async () => {
    const names = async (c: Client): Promise<string[]> => (await c.listTools()).tools.map((t) => t.name).sort();
    expect(await names(proxied)).to.deep.equal(await names(direct));
    expect(await names(proxied)).to.include.members(['ask_model', 'ask_user', 'list_roots']);
    expect(text(await proxied.callTool({ name: 'ask_model', arguments: { question: 'why?' } }))).to.equal('the model says: why?');
    expect(text(await proxied.callTool({ name: 'ask_user', arguments: {} }))).to.equal('hello Ada');
    expect(text(await proxied.callTool({ name: 'list_roots', arguments: {} }))).to.equal('file:///work');
  });

  it('prompts, completions and resources as the upstream answers them, and its errors as it sent them', async () => {
    expect(await proxied.listPrompts()).to.deep.equal(await direct.listPrompts());
    const prompt = await proxied.getPrompt({ name: 'forecast', arguments: { city: 'Paris' } });
    expect(prompt.messages[0]!.content).to.deep.equal({ type: 'text', text: 'What is the weather in Paris?' });
    const completion = await proxied.complete({ ref: { type: 'ref/prompt', name: 'forecast' }, argument: { name: 'city', value: 'L' } });
    expect(completion.completion.values).to.deep.equal(['London']);
    expect(await proxied.listResources()).to.deep.equal(await direct.listResources());
    const read = await proxied.readResource({ uri: 'fixture://cities' });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).to.deep.equal(['Paris', 'London', 'Tokyo']);
    const mine = await rejection(proxied.getPrompt({ name: 'nope' }));
    const theirs = await rejection(direct.getPrompt({ name: 'nope' }));
    expect(mine).to.be.instanceOf(McpError);
    expect({ code: mine.code, message: mine.message }).to.deep.equal({ code: theirs.code, message: theirs.message });
  });

  it("logging: the host's level reaches the upstream (which filters), its messages reach the host", async () => {
    await proxied.setLoggingLevel('warning');
    expect(text(await proxied.callTool({ name: 'log', arguments: { levels: ['debug', 'info', 'warning', 'error'] } }))).to.equal('logged');
    await until(() => logs.length >= 2);
    expect(logs).to.deep.equal([
      { level: 'warning', data: 'a warning message' },
      { level: 'error', data: 'a error message' },
    ]);
  });

  it("the host's notifications reach the upstream (roots/list_changed)", async () => {
    await proxied.sendRootsListChanged();
    await until(async () => ((await proxied.callTool({ name: 'stats', arguments: {} })).structuredContent as { rootsChanged: number }).rootsChanged === 1);
  });
});

describe('rxheal-mcp-proxy: one forwarded call the host cancels (forwardCall)', function () {
  this.timeout(20_000);
  it('settles (a handler left pending would be kept for ever) and is cancelled upstream; one cancelled before it starts is never sent', async () => {
    const client = await connected(stdio());
    try {
      const stats = async (): Promise<{ calls: Record<string, number>; cancelled: number }> =>
        (await client.callTool({ name: 'stats', arguments: {} })).structuredContent as never;
      const tools = toolset('spec', client, {});
      await tools.list();
      const cancel = new AbortController();
      const pending = forwardCall(tools, 2, { name: 'slow', arguments: { ms: 10_000 } }, { signal: cancel.signal, sendNotification: () => Promise.resolve() });
      await until(async () => (await stats()).calls['slow'] === 1);
      cancel.abort();
      expect(await pending).to.deep.equal({ content: [{ type: 'text', text: 'cancelled by the host' }], isError: true });
      await until(async () => (await stats()).cancelled === 1);
      const gone = new AbortController();
      gone.abort();
      expect(
        await forwardCall(tools, 2, { name: 'echo', arguments: { text: 'x' } }, { signal: gone.signal, sendNotification: () => Promise.resolve() }),
      ).to.include({ isError: true });
      expect((await stats()).calls['echo'], 'never sent').to.equal(undefined);
    } finally {
      await client.close();
    }
  });
});
