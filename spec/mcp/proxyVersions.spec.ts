/**
 * `rxheal-mcp-proxy` between the SDK majors, each side a real child process: a 1.x host in front
 * of a server built with the 2.x SDK, and a 2.x host (negotiating: `server/discover` first) in
 * front of a 1.x server. The proxy speaks the old revision on both sides — every client and server
 * of either major does — and heals the same: a safe tool's call carried across the upstream's
 * death, a destructive one run once and answered as an `isError` result, bad arguments refused
 * before the upstream.
 */
import { expect } from 'chai';
import { join } from 'node:path';
import { Client as Client2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioClientTransport2 } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ledger, SERVER, SERVER2 } from './support.js';

const CLI = new URL('../../src/mcp/cli.ts', import.meta.url).pathname;

const HOSTS = [
  { label: 'a 1.x host in front of a 2.x server', host: 1, upstream: SERVER2 },
  { label: 'a 2.x host in front of a 1.x server', host: 2, upstream: SERVER },
] as const;

for (const { label, host, upstream } of HOSTS)
  describe(`rxheal-mcp-proxy between the SDK majors: ${label}`, function () {
    this.timeout(30_000);
    let client: Client | Client2;
    let book: ReturnType<typeof ledger>;
    before(async () => {
      book = ledger();
      const spawn = {
        command: process.execPath,
        args: ['--import', 'tsx', CLI, '--retries', '2', '--timeout', '5000', '--', process.execPath, '--import', 'tsx', upstream],
        env: { ...(process.env as Record<string, string>), MCP_LEDGER: book.path, MCP_MARKER: join(book.path, '..', 'marker') },
        stderr: 'ignore' as const,
      };
      if (host === 1) {
        const c = new Client({ name: 'host', version: '1.0.0' });
        await c.connect(new StdioClientTransport(spawn));
        client = c;
      } else {
        const c = new Client2({ name: 'host', version: '2.0.0' }, { versionNegotiation: { mode: 'auto' } });
        await c.connect(new StdioClientTransport2(spawn));
        expect(c.getProtocolEra(), 'the proxy answers the old handshake').to.equal('legacy');
        client = c;
      }
    });
    after(async () => {
      await client.close();
    });
    const call = (name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; content?: unknown }> =>
      (client.callTool.bind(client) as (p: { name: string; arguments: Record<string, unknown> }) => Promise<{ isError?: boolean; content?: unknown }>)({
        name,
        arguments: args,
      });
    const text = (result: { content?: unknown }): string => (result.content as { text: string }[] | undefined)?.[0]?.text ?? '';

    it("lists the upstream's tools as they are, and calls them", async () => {
      const { tools } = await client.listTools();
      expect(tools.find((t) => t.name === 'get_weather')!.annotations).to.deep.equal({ readOnlyHint: true });
      expect(text(await call('echo', { text: 'through' }))).to.equal('through');
    });

    it('a safe tool whose upstream dies mid-call is healed: the proxy reconnects and retries', async () => {
      const result = await call('flaky', {});
      expect(result.isError ?? false).to.equal(false);
      expect(text(result)).to.equal('ok');
    });

    it('a destructive tool whose upstream dies after charging runs once: an isError result; bad arguments never reach the upstream', async () => {
      const result = await call('charge', { amount: 5, die: true });
      expect(result.isError).to.equal(true);
      expect(text(result)).to.match(/connection closed/);
      expect(book.lines()).to.deep.equal(['5']);
      const bad = await call('get_weather', { city: 'Paris', units: 'kelvin' });
      expect(bad.isError).to.equal(true);
      expect(text(bad)).to.match(/units/);
    });
  });
