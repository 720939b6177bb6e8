/**
 * `rxheal-mcp-proxy` (src/mcp/cli.ts) between the SDK's own client and a faulty upstream (the
 * stdio fixture server), each a real child process: the upstream's tools listed as they are, a
 * safe tool's call healed across the upstream's death (reconnected, retried), a destructive one
 * run once and answered as an `isError` result, bad arguments refused before the upstream, the
 * upstream's isError passed through, list changes forwarded, and a bad command line refused.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { parseArgs } from '../../src/mcp/proxy.js';
import { ledger, SERVER, until } from './support.js';

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
  const text = (result: { readonly [key: string]: unknown }): string => ((result['content'] as { text: string }[] | undefined)?.[0]?.text ?? '');

  it('lists the upstream tools as they are (names, schemas, annotations)', async () => {
    const { tools } = await client.listTools();
    const weather = tools.find((t) => t.name === 'get_weather')!;
    expect(weather.annotations).to.deep.equal({ readOnlyHint: true });
    expect(weather.inputSchema['required']).to.deep.equal(['city', 'units']);
    expect(tools.map((t) => t.name)).to.include.members(['echo', 'charge', 'flaky', 'stats']);
  });

  it('forwards the upstream\'s progress to the host, under the host\'s own progress token: a host timeout reset by progress lets a long tool finish', async () => {
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
    expect(parseArgs(['--retries', 'x', '--', 'node'])).to.match(/bad argument "--retries" "x"/);
    expect(parseArgs([])).to.match(/no upstream/);
    expect(parseArgs(['--url', 'http://127.0.0.1:1/mcp'])).to.deep.include({ upstream: { url: 'http://127.0.0.1:1/mcp' }, retries: 2 });
    const run = spawnSync(process.execPath, ['--import', 'tsx', CLI, '--'], { encoding: 'utf8' });
    expect(run.status).to.equal(2);
    expect(run.stderr).to.match(/usage: rxheal-mcp-proxy/);
  });
});
