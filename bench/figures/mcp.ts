/**
 * (l) The cost of a `fromMcp` tool call over the SDK's own `client.callTool`, the same in-process
 * `McpServer` (an `echo` tool) on the SDK's `InMemoryTransport` pair, the same arguments: rxheal's
 * path (`callTool(tool, call)` — the arguments checked by the SDK's ajv validator, the server's
 * breaker, the scheduled idle deadline, the result mapped) against `client.callTool` alone. Both
 * cases run interleaved in one process; the overhead is the paired ratio minus 1, per call.
 *
 * `fromMcp` and `callTool` are bundled from `src/` with esbuild by `lib/rxheal.ts`, as for the
 * other figures. Run alone: `npx tsx bench/figures/mcp.ts`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { lastValueFrom } from 'rxjs';
import { z } from 'zod';
import { interleave, pairedRatio, rowsOf, type Row, type Stats } from '../lib/harness.js';
import { loadLib, ROOT } from '../lib/rxheal.js';

export const FIGURE = 'l. MCP tool call, in process';
const RAW = 'client.callTool({ name: "echo", arguments })';
const HEALED = 'callTool(fromMcp(client) tool, call): schema check, breaker, deadline, result mapping';

type Lib = typeof import('../../src/mcp/index.js') & Pick<typeof import('../../src/index.js'), 'callTool'>;

const loadMcp = (): Promise<Lib> =>
  loadLib<Lib>(process.env['BENCH_LIB_ROOT'] ?? ROOT, 'mcp', ["export * from './src/mcp/index.ts';", "export { callTool } from './src/sources/tool.ts';"].join('\n'));

export async function mcpOverhead(options: { n: number; reps: number; warmup: number }): Promise<{ rows: Row[]; overhead: Stats }> {
  const lib = await loadMcp();
  const server = new McpServer({ name: 'bench', version: '1.0.0' });
  server.registerTool('echo', { description: 'Says it back', inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } }, ({ text }) => ({ content: [{ type: 'text', text }] }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(clientSide);
  const [echo] = await lib.fromMcp(client, { id: 'bench' });
  const args = { text: 'hello' };
  try {
    const samples = await interleave(
      [
        {
          name: RAW,
          run: async (n) => {
            for (let i = 0; i < n; i++) await client.callTool({ name: 'echo', arguments: args });
          },
        },
        {
          name: HEALED,
          run: async (n) => {
            for (let i = 0; i < n; i++) await lastValueFrom(lib.callTool(echo!, { id: `c${i}`, name: 'echo', args }));
          },
        },
      ],
      options,
    );
    const ratio = pairedRatio(samples, HEALED, RAW);
    return { rows: rowsOf(FIGURE, 'ns/call', samples, RAW), overhead: { ...ratio, median: ratio.median - 1, min: ratio.min - 1, max: ratio.max - 1 } };
  } finally {
    await client.close();
    await server.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { rows, overhead } = await mcpOverhead(process.env['BENCH_QUICK'] === '1' ? { n: 500, reps: 5, warmup: 1 } : { n: 2_000, reps: 21, warmup: 3 });
  for (const row of rows) console.log(`${row.name}: ${Math.round(row.value)} ns/call (${Math.round(row.min ?? 0)}–${Math.round(row.max ?? 0)})`);
  const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
  console.log(`overhead over client.callTool: ${pct(overhead.median)} (${pct(overhead.min)}–${pct(overhead.max)})`);
}
