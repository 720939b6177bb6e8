/**
 * (l) The cost of a `fromMcp` tool call over the SDK's own `client.callTool`, the same in-process
 * `McpServer` (an `echo` tool) on the SDK's `InMemoryTransport` pair, the same arguments: rxheal's
 * path (`callTool(tool, call)` — the arguments checked by the SDK's ajv validator, the server's
 * breaker, the scheduled idle deadline, the result mapped) against `client.callTool` alone, and
 * against `client.callTool` asked for what `fromMcp` asks it for (an `AbortSignal` to cancel, a
 * progress callback — so the server is sent a progress token — and the SDK's timer out of the
 * way): what any client with cancellation and progress-reset timeouts pays the SDK. All cases run
 * interleaved in one process; the overhead is the paired ratio minus 1, per call. The same two
 * ends over stdio (the fixture server of spec/mcp, a child process): a real transport's share.
 *
 * `fromMcp` and `callTool` are bundled from `src/` with esbuild by `lib/rxheal.ts`, as for the
 * other figures. Run alone: `npx tsx bench/figures/mcp.ts`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { lastValueFrom } from 'rxjs';
import { z } from 'zod';
import { interleave, pairedRatio, rowsOf, type Row, type Samples, type Stats } from '../lib/harness.js';
import { loadLib, ROOT } from '../lib/rxheal.js';

export const FIGURE = 'l. MCP tool call, in process';
const RAW = 'client.callTool({ name: "echo", arguments })';
const WITH_OPTIONS = 'client.callTool(…, { signal, onprogress, timeout }): what fromMcp asks of the SDK';
const STDIO_RAW = 'over stdio: client.callTool({ name: "echo", arguments })';
const STDIO_HEALED = 'over stdio: callTool(fromMcp(client) tool, call)';
const HEALED = 'callTool(fromMcp(client) tool, call): schema check, breaker, deadline, result mapping';

type Lib = typeof import('../../src/mcp/index.js') & Pick<typeof import('../../src/index.js'), 'callTool'>;

const loadMcp = (): Promise<Lib> =>
  loadLib<Lib>(
    process.env['BENCH_LIB_ROOT'] ?? ROOT,
    'mcp',
    ["export * from './src/mcp/index.ts';", "export { callTool } from './src/sources/tool.ts';"].join('\n'),
  );

/** What figure l measured: the overhead over the bare call (the target's), over the call with the same SDK options, and over stdio. */
export interface McpOverhead {
  readonly rows: Row[];
  /** Over `client.callTool` alone (the target: ≤ 3 %). */
  readonly overhead: Stats;
  /** Over `client.callTool` with the signal, progress callback and timeout `fromMcp` passes. */
  readonly overSameOptions: Stats;
  /** Over `client.callTool` alone, over stdio (a child process). */
  readonly overStdio: Stats;
  /** ns per call: the bare in-process call, and rxheal's path minus it. */
  readonly rawNs: number;
  readonly addedNs: number;
}

const minus1 = (r: Stats): Stats => ({ ...r, median: r.median - 1, min: r.min - 1, max: r.max - 1 });

export async function mcpOverhead(options: { n: number; reps: number; warmup: number }): Promise<McpOverhead> {
  const lib = await loadMcp();
  const server = new McpServer({ name: 'bench', version: '1.0.0' });
  server.registerTool('echo', { description: 'Says it back', inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
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
          name: WITH_OPTIONS,
          run: async (n) => {
            const noop = (): void => undefined;
            for (let i = 0; i < n; i++)
              await client.callTool({ name: 'echo', arguments: args }, undefined, {
                signal: new AbortController().signal,
                timeout: 2_147_483_647,
                resetTimeoutOnProgress: true,
                onprogress: noop,
              });
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
    const stdio = await overStdio(lib, { n: Math.max(50, Math.round(options.n / 10)), reps: options.reps, warmup: options.warmup });
    const raw = samples.get(RAW)!;
    const healed = samples.get(HEALED)!;
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    return {
      rows: [...rowsOf(FIGURE, 'ns/call', samples, RAW), ...rowsOf(FIGURE, 'ns/call', stdio, STDIO_RAW)],
      overhead: minus1(pairedRatio(samples, HEALED, RAW)),
      overSameOptions: minus1(pairedRatio(samples, HEALED, WITH_OPTIONS)),
      overStdio: minus1(pairedRatio(stdio, STDIO_HEALED, STDIO_RAW)),
      rawNs: median(raw),
      addedNs: median(healed.map((h, i) => h - raw[i]!)),
    };
  } finally {
    await client.close();
    await server.close();
  }
}

/** The bare call and rxheal's, over stdio to the specs' fixture server (a child process running it with tsx). */
async function overStdio(lib: Lib, options: { n: number; reps: number; warmup: number }): Promise<Samples> {
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', `${ROOT}/spec/mcp/fixtures/stdioServer.ts`],
      env: { ...(process.env as Record<string, string>), MCP_LEDGER: `${ROOT}/node_modules/.cache/bench-mcp-ledger` },
      stderr: 'ignore',
    }),
  );
  try {
    const echo = (await lib.fromMcp(client, { id: 'stdio' })).find((t) => t.name === 'echo')!;
    const args = { text: 'hello' };
    return await interleave(
      [
        {
          name: STDIO_RAW,
          run: async (n) => {
            for (let i = 0; i < n; i++) await client.callTool({ name: 'echo', arguments: args });
          },
        },
        {
          name: STDIO_HEALED,
          run: async (n) => {
            for (let i = 0; i < n; i++) await lastValueFrom(lib.callTool(echo, { id: `c${i}`, name: 'echo', args }));
          },
        },
      ],
      options,
    );
  } finally {
    await client.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const l = await mcpOverhead(process.env['BENCH_QUICK'] === '1' ? { n: 500, reps: 5, warmup: 1 } : { n: 2_000, reps: 21, warmup: 3 });
  for (const row of l.rows) console.log(`${row.name}: ${Math.round(row.value)} ns/call (${Math.round(row.min ?? 0)}–${Math.round(row.max ?? 0)})`);
  const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
  console.log(
    `overhead over client.callTool: ${pct(l.overhead.median)} (${pct(l.overhead.min)}–${pct(l.overhead.max)}); +${Math.round(l.addedNs)} ns on ${Math.round(l.rawNs)} ns`,
  );
  console.log(
    `over client.callTool with the same SDK options: ${pct(l.overSameOptions.median)}; over stdio: ${pct(l.overStdio.median)} (${pct(l.overStdio.min)}–${pct(l.overStdio.max)})`,
  );
}
