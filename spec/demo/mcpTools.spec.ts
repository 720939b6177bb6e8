/**
 * The demo's tools server (examples/demo/mcpTools.ts) on its own loopback port, as `npm run
 * demo:cli` starts it: a 2.x `McpServer`, stateless — a 2.x client discovers it (MCP 2026-07-28, no
 * `initialize`, no session), a 1.x client is served the old handshake without a session; its
 * `restart` fault cuts the calls in flight, and a read-only one, sent again under
 * `retryWithBackoff`, is answered; `down` answers 503.
 */
import { expect } from 'chai';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as Transport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { lastValueFrom } from 'rxjs';
import { callTool, classifyError, retryWithBackoff } from '../../src/index.js';
import { fromMcp } from '../../src/mcp/index.js';
import { serveDemoMcp } from '../../examples/demo/mcpTools.js';
import { failure, run, toolNamed, until } from '../mcp/support.js';

describe("the demo's tools server (a stateless 2.x McpServer)", function () {
  this.timeout(20_000);
  let served: Awaited<ReturnType<typeof serveDemoMcp>>;
  const closing: (() => Promise<void>)[] = [];
  beforeEach(async () => {
    served = await serveDemoMcp();
  });
  afterEach(async () => {
    await Promise.all(closing.splice(0).map((close) => close().catch(() => undefined)));
    await served.close();
  });
  const client2 = async (): Promise<Client> => {
    const client = new Client({ name: 'spec', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(served.url)));
    closing.push(() => client.close());
    return client;
  };

  it('a 2.x client: server/discover, no initialize, no session; both tools read-only, answered', async () => {
    const client = await client2();
    expect(client.getProtocolEra()).to.equal('modern');
    const tools = await fromMcp(client, { id: 'tools' });
    expect(tools.map((t) => t.name)).to.deep.equal(['get_weather', 'knowledge_search']);
    expect(await run(tools, 'get_weather', { city: 'Paris', units: 'celsius' })).to.deep.equal({
      city: 'Paris',
      temperature: 22,
      units: 'celsius',
      condition: 'sunny',
    });
    expect(await run(tools, 'knowledge_search', { query: 'refund policy' })).to.equal(
      'Article "refund policy": refunds are accepted within 30 days with the receipt.',
    );
    expect(served.mcp.methods).to.include({ 'server/discover': 1, 'tools/call': 2 }).and.not.have.property('initialize');
  });

  it('a 1.x client: the old handshake, answered statelessly (no session id), the same tools', async () => {
    const transport = new Transport1(new URL(served.url));
    const client = new Client1({ name: 'spec-1', version: '1.0.0' });
    await client.connect(transport);
    closing.push(() => client.close());
    expect(transport.sessionId, 'no session').to.equal(undefined);
    const tools = await fromMcp(client, { id: 'tools' });
    expect(await run(tools, 'get_weather', { city: 'Rome', units: 'fahrenheit' })).to.deep.equal({
      city: 'Rome',
      temperature: 72,
      units: 'fahrenheit',
      condition: 'sunny',
    });
    expect(served.mcp.methods).to.include({ initialize: 1 });
  });

  it('restarted mid-call: the search in flight is cut, sent again under retryWithBackoff (read-only: safe), and answered', async () => {
    const tools = await fromMcp(await client2(), { id: 'tools' });
    served.mcp.slowSearch = true;
    const search = toolNamed(tools, 'knowledge_search');
    const answered = lastValueFrom(
      callTool(search, { id: 's', name: 'knowledge_search', args: { query: 'refunds' } }).pipe(
        retryWithBackoff({ maxRetries: 1, initialBackoffMs: 10, jitter: 'none' }),
      ),
    );
    await until(() => served.mcp.calls['knowledge_search'] === 1);
    served.mcp.slowSearch = false;
    served.mcp.restart();
    expect(await answered).to.equal('Article "refunds": refunds are accepted within 30 days with the receipt.');
    expect(served.mcp.cut, 'the call in flight cut').to.equal(1);
    expect(served.mcp.calls['knowledge_search'], 'run twice: the first answer never left').to.equal(2);
    expect(served.mcp.methods, 'nothing re-initialised').to.include({ 'server/discover': 1 }).and.not.have.property('initialize');
  });

  it('down: every request answered 503, a retryable failure; back up, the next call answered', async () => {
    const tools = await fromMcp(await client2(), { id: 'tools' });
    served.mcp.down = true;
    const error = await failure(run(tools, 'get_weather', { city: 'Oslo', units: 'celsius' }));
    expect(classifyError(error)).to.include({ retryable: true });
    served.mcp.down = false;
    expect(await run(tools, 'get_weather', { city: 'Oslo', units: 'celsius' })).to.deep.include({ city: 'Oslo' });
  });
});
