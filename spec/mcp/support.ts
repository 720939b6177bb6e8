/** What the rxheal/mcp specs share: a client on the stdio fixture, a call as a promise, waiting for a condition. */
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { lastValueFrom } from 'rxjs';
import { callTool, type Tool } from '../../src/index.js';

export const SERVER = new URL('./fixtures/stdioServer.ts', import.meta.url).pathname;

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
