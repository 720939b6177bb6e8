/**
 * A tool call's idempotency key on the wire: rxheal/mcp sends it in `tools/call`'s `_meta` under
 * `io.rxheal/idempotency-key` (IDEMPOTENCY_META_KEY) — the same key for a retry of the call, a
 * different one for the next call — and the proxy passes a host's key on upstream. A real 1.x
 * McpServer (in memory) records the `_meta` of each request it gets.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { from, lastValueFrom, toArray } from 'rxjs';
import { z } from 'zod';
import { IDEMPOTENCY_META_KEY, memoryJournal } from '../../src/durable/index.js';
import { defineTool, retryWithBackoff, runAgent } from '../../src/index.js';
import { fromMcp, toolset } from '../../src/mcp/fromMcp.js';
import { forwardCall } from '../../src/mcp/proxy.js';
import { finish, scriptedModel, textDeltas, toolCall } from '../../src/testing/index.js';

/** A server with one destructive tool, `book` (its first answer an `isError` one when `busyFirst`); what `_meta` each call carried. */
async function bookingServer(busyFirst = true): Promise<{ client: Client; metas: (Record<string, unknown> | undefined)[] }> {
  const metas: (Record<string, unknown> | undefined)[] = [];
  const server = new McpServer({ name: 'bookings', version: '1.0.0' });
  server.registerTool(
    'book',
    { description: 'Books a seat', inputSchema: { seat: z.string() }, annotations: { destructiveHint: true, idempotentHint: false } },
    ({ seat }, extra) => {
      metas.push(extra._meta as Record<string, unknown> | undefined);
      const busy = busyFirst && metas.length === 1;
      return { content: [{ type: 'text', text: busy ? 'busy' : `booked ${seat}` }], isError: busy };
    },
  );
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'rxheal-spec', version: '1.0.0' });
  await client.connect(clientSide);
  return { client, metas };
}

describe('rxheal/mcp: the idempotency key in _meta', function () {
  this.timeout(20_000);

  it("a run's tool call sends its key (<runId>/<step>/<index>/<tool>); the reflected call of the next turn has its own", async () => {
    const { client, metas } = await bookingServer();
    try {
      const tools = await fromMcp(client, { id: 'bookings' });
      const model = scriptedModel('m', [
        [toolCall('call_1', 'book', { seat: '12A' }), finish('tool-calls')],
        [toolCall('call_2', 'book', { seat: '12A' }), finish('tool-calls')],
        [...textDeltas('Booked.'), finish()],
      ]);
      const events = await lastValueFrom(
        runAgent({ model, tools, messages: [{ role: 'user', content: 'Book 12A' }], runId: 'trip-9', journal: memoryJournal() }).pipe(toArray()),
      );
      expect(events.filter((e) => e.type === 'tool-error' || e.type === 'tool-result').map((e) => e.type)).to.deep.equal(['tool-error', 'tool-result']);
      expect(metas.map((m) => m?.[IDEMPOTENCY_META_KEY])).to.deep.equal(['trip-9/1/0/book', 'trip-9/2/0/book']);
    } finally {
      await client.close();
    }
  });

  it('a retry of one call sends the same key again (a by-key tool of the run whose first answer is lost, retried by retryWithBackoff)', async () => {
    const { client, metas } = await bookingServer(false);
    try {
      const [book] = await fromMcp(client, { id: 'bookings' });
      let answers = 0;
      // the same MCP tool, declared deduplicating by key: then, and only then, it is retried
      const byKey = defineTool({
        name: 'book',
        description: 'Books a seat',
        args: t.type({ seat: t.string }),
        idempotent: 'by-key',
        // the answer of the first attempt lost on the way back (the booking made): a connection reset
        execute: async (args, ctx) => {
          const result = await lastValueFrom(from(book!.execute(args, ctx)));
          if (++answers === 1) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
          return result;
        },
      });
      const model = scriptedModel('m', [
        [toolCall('call_1', 'book', { seat: '12A' }), finish('tool-calls')],
        [...textDeltas('Booked.'), finish()],
      ]);
      await lastValueFrom(
        runAgent({
          model,
          tools: [byKey],
          messages: [{ role: 'user', content: 'Book 12A' }],
          runId: 'trip-10',
          journal: memoryJournal(),
          toolPipeline: (_call, call$) => call$.pipe(retryWithBackoff({ maxRetries: 2, initialBackoffMs: 1 })),
        }),
      );
      expect(metas.map((m) => m?.[IDEMPOTENCY_META_KEY])).to.deep.equal(['trip-10/1/0/book', 'trip-10/1/0/book']);
    } finally {
      await client.close();
    }
  });

  it('a call made directly (no key) sends no _meta key; the proxy passes a host’s key on upstream', async () => {
    const { client, metas } = await bookingServer();
    try {
      const [book] = await fromMcp(client, { id: 'bookings' });
      await lastValueFrom(book!.execute({ seat: '1A' }, { signal: new AbortController().signal }) as never).catch(() => undefined);
      expect(metas[0]?.[IDEMPOTENCY_META_KEY]).to.equal(undefined);
      const tools = toolset('spec', client, {});
      await tools.list();
      const host = { signal: new AbortController().signal, sendNotification: () => Promise.resolve() };
      await forwardCall(tools, 0, { name: 'book', arguments: { seat: '2B' }, _meta: { [IDEMPOTENCY_META_KEY]: 'host-run/3/1/book' } }, host);
      expect(metas[1]?.[IDEMPOTENCY_META_KEY]).to.equal('host-run/3/1/book');
    } finally {
      await client.close();
    }
  });
});
