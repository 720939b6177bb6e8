/**
 * What the rxheal/mcp specs share: a client on the stdio fixture (of either SDK major, against the
 * fixture server of either major), a call as a promise, waiting for a condition.
 */
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as Client2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioClientTransport2 } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { lastValueFrom } from 'rxjs';
import { callTool, type Tool } from '../../src/index.js';

export const SERVER = new URL('./fixtures/stdioServer.ts', import.meta.url).pathname;
/** The same fixture built with the 2.x SDK (it speaks 2026-07-28, and the old revision to a client that initialises). */
export const SERVER2 = new URL('./fixtures/stdioServer2.ts', import.meta.url).pathname;

/** A fresh transport to the stdio fixture (a new child process each time). */
export function stdio(env: Record<string, string> = {}): () => StdioClientTransport {
  return () =>
    new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', SERVER],
      env: { ...(process.env as Record<string, string>), ...env },
      stderr: 'ignore',
    });
}

export async function connected(transport: () => unknown): Promise<Client> {
  const client = new Client({ name: 'rxheal-spec', version: '1.0.0' });
  await client.connect(transport() as StdioClientTransport);
  return client;
}

/** A fresh 2.x transport to a stdio fixture (`server` 2: the 2.x one). */
export function stdio2(env: Record<string, string> = {}, server: 1 | 2 = 2): () => StdioClientTransport2 {
  return () =>
    new StdioClientTransport2({
      command: process.execPath,
      args: ['--import', 'tsx', server === 2 ? SERVER2 : SERVER],
      env: { ...(process.env as Record<string, string>), ...env },
      stderr: 'ignore',
    });
}

/** A 2.x client, connected: it probes with `server/discover` (2026-07-28) and falls back to `initialize`; it can be asked for a form. */
export async function connected2(transport: () => unknown): Promise<Client2> {
  const client = new Client2({ name: 'rxheal-spec', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: { form: {} } } });
  await client.connect(transport() as StdioClientTransport2);
  return client;
}

/** A client of either major. */
export type AnyClient = Client | Client2;

/** One pairing of the SDK majors the specs run on: the client's and the stdio server's. */
export interface Pairing {
  readonly label: string;
  readonly client: 1 | 2;
  readonly server: 1 | 2;
  /** A fresh transport to this pairing's server (`server` overrides it: a fixture only one major serves). */
  transport(env?: Record<string, string>, server?: 1 | 2): () => unknown;
  connect(transport: () => unknown): Promise<AnyClient>;
  /** A transport to a command that does not exist (every connection on it fails). */
  missing(): unknown;
  /** The connection speaks MCP 2026-07-28 (two 2.x). */
  readonly modern: boolean;
}

const pairing = (client: 1 | 2, server: 1 | 2, label: string): Pairing => ({
  label,
  client,
  server,
  transport: (env = {}, s = server) => (client === 1 ? () => v1To(env, s) : stdio2(env, s)),
  connect: (transport) => (client === 1 ? connected(transport) : connected2(transport)),
  missing: () =>
    client === 1 ? new StdioClientTransport({ command: '/nonexistent/mcp-server' }) : new StdioClientTransport2({ command: '/nonexistent/mcp-server' }),
  modern: client === 2 && server === 2,
});

/** A 1.x transport to the fixture of major `server`. */
function v1To(env: Record<string, string>, server: 1 | 2): StdioClientTransport {
  return new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', server === 2 ? SERVER2 : SERVER],
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: 'ignore',
  });
}

/** Today's cases run on each: both majors on their own, and each against the other's server (the old handshake). */
export const PAIRINGS: readonly Pairing[] = [
  pairing(1, 1, '1.x client, 1.x server'),
  pairing(2, 2, '2.x client, 2.x server (MCP 2026-07-28, stateless)'),
  pairing(2, 1, '2.x client, 1.x server (the old handshake)'),
  pairing(1, 2, '1.x client, 2.x server (the old handshake)'),
];

/** `stats` of the fixture server, through a client of either major. */
export async function serverStats(client: AnyClient): Promise<{ calls: Record<string, number>; cancelled: number }> {
  const call = client.callTool.bind(client) as (params: { name: string; arguments: Record<string, unknown> }) => Promise<{ structuredContent?: unknown }>;
  return (await call({ name: 'stats', arguments: {} })).structuredContent as { calls: Record<string, number>; cancelled: number };
}

export function toolNamed(tools: readonly Tool<Record<string, unknown>, unknown>[], name: string): Tool<Record<string, unknown>, unknown> {
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name} in ${tools.map((t) => t.name).join(', ')}`);
  return tool;
}

let calls = 0;
/** One call of a tool, as a promise (through callTool: validation and ToolError as runAgent sees them). */
export function run(tools: readonly Tool<Record<string, unknown>, unknown>[], name: string, args: unknown): Promise<unknown> {
  return lastValueFrom(callTool(toolNamed(tools, name), { id: `c${++calls}`, name, args }));
}

/** The error a promise rejects with (fails if it resolves). */
export async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    const value = await promise;
    throw new Error(`expected a failure, got ${JSON.stringify(value).slice(0, 200)}`);
  } catch (error) {
    return error;
  }
}

/** Polls `condition` every 20 ms for up to `ms`. */
export async function until(condition: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A fresh ledger file for the destructive tool, and its lines. */
export function ledger(): { path: string; lines: () => string[] } {
  const path = join(mkdtempSync(join(tmpdir(), 'rxheal-mcp-')), 'ledger');
  return {
    path,
    lines: () =>
      existsSync(path)
        ? readFileSync(path, 'utf8')
            .split('\n')
            .filter((l) => l !== '')
        : [],
  };
}
