/**
 * `rxheal-mcp-proxy`'s command line and process (src/mcp/cli.ts, src/mcp/args.ts), each run a real
 * child process: `--help` and `--version`, one line when the optional peer is missing, the
 * breaker's flags, and the MCP stdio shutdown — the host closes the proxy's stdin, the proxy closes
 * its upstream (a process stopped, an HTTP session ended with DELETE) and exits.
 */
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { parseArgs } from '../../src/mcp/args.js';
import { startHttpFixture, type FixtureHttpServer } from './fixtures/httpServer.js';
import { SERVER, until } from './support.js';

const CLI = new URL('../../src/mcp/cli.ts', import.meta.url).pathname;
const PACKAGE = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** A loader hook that makes `@modelcontextprotocol/sdk` unresolvable, as where the peer is not installed. */
const HIDE_SDK = `data:text/javascript,${encodeURIComponent(
  `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(\`export async function resolve(specifier, context, next) {
  if (specifier.startsWith('@modelcontextprotocol/sdk')) {
    const error = new Error("Cannot find package '@modelcontextprotocol/sdk' imported from " + context.parentURL);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}\`));`,
)}`;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('rxheal-mcp-proxy: its command line and its process', function () {
  this.timeout(30_000);
  const children: ChildProcessWithoutNullStreams[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });

  /** The proxy as a raw child process, initialised by hand: the host's side of the shutdown (its stdin) is the spec's. */
  async function initialised(args: readonly string[], env: Record<string, string> = {}): Promise<ChildProcessWithoutNullStreams> {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { env: { ...(process.env as Record<string, string>), ...env } });
    children.push(child);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.stderr.resume();
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'host', version: '1.0.0' } },
    };
    child.stdin.write(`${JSON.stringify(initialize)}\n`);
    await until(() => out.includes('"id":1'), 15_000);
    expect(out).to.include('"result"');
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    return child;
  }

  it('exits when the host closes its stdin (the MCP stdio shutdown), its stdio upstream stopped first', async () => {
    const pidfile = join(mkdtempSync(join(tmpdir(), 'rxheal-cli-')), 'upstream.pid');
    const proxy = await initialised(['--', process.execPath, '--import', 'tsx', SERVER], { MCP_PIDFILE: pidfile });
    const upstream = Number(readFileSync(pidfile, 'utf8'));
    expect(alive(upstream)).to.equal(true);
    proxy.stdin.end();
    await until(() => proxy.exitCode !== null, 15_000);
    expect(proxy.exitCode).to.equal(0);
    expect(alive(upstream), 'the upstream is gone too').to.equal(false);
  });

  it("an upstream that can't be reached: the host's initialize is answered with why, and the proxy exits (code 1) saying so", async () => {
    const proxy = spawn(process.execPath, ['--import', 'tsx', CLI, '--', '/nonexistent/mcp-server'], { env: process.env });
    children.push(proxy);
    let out = '';
    let err = '';
    proxy.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    proxy.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    proxy.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'host', version: '1.0.0' } } })}\n`,
    );
    await until(() => proxy.exitCode !== null, 15_000);
    expect(proxy.exitCode).to.equal(1);
    const answer = JSON.parse(out.trim()) as { id: number; error: { message: string } };
    expect(answer.id).to.equal(1);
    expect(answer.error.message).to.match(/the upstream \(\/nonexistent\/mcp-server\) could not be reached: .*ENOENT/);
    expect(err.trim()).to.match(/^rxheal-mcp-proxy: the upstream \(\/nonexistent\/mcp-server\) could not be reached/);
  });

  describe('with an HTTP upstream', () => {
    let server: FixtureHttpServer;
    beforeEach(async () => {
      server = await startHttpFixture();
    });
    afterEach(async () => {
      await server.stop();
    });

    it('…ends its session with DELETE before it exits', async () => {
      const proxy = await initialised(['--url', server.url.href]);
      expect(server.opened).to.equal(1);
      proxy.stdin.end();
      await until(() => proxy.exitCode !== null, 15_000);
      expect(proxy.exitCode).to.equal(0);
      expect(server.terminated, 'the session ended').to.equal(1);
    });

    it("the breaker's flags: --failure-threshold 1 opens it at the first failure, --reset-timeout lets a call probe again soon", async () => {
      const host = new Client({ name: 'host', version: '1.0.0' });
      await host.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: ['--import', 'tsx', CLI, '--retries', '0', '--failure-threshold', '1', '--reset-timeout', '300', '--url', server.url.href],
          stderr: 'ignore',
        }),
      );
      try {
        server.dropNext();
        const lost = await host.callTool({ name: 'echo', arguments: { text: 'x' } });
        expect(lost.isError).to.equal(true);
        const refused = await host.callTool({ name: 'echo', arguments: { text: 'x' } });
        expect(refused.isError).to.equal(true);
        expect((refused.content as { text: string }[])[0]!.text).to.match(/circuit.*open/i);
        await until(async () => !(await host.callTool({ name: 'echo', arguments: { text: 'back' } })).isError, 5000);
      } finally {
        await host.close();
      }
    });
  });

  it('without its peer @modelcontextprotocol/sdk it says so in one line (exit code 1), no stack trace', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--import', HIDE_SDK, CLI, '--', 'node', 'server.js'], { encoding: 'utf8' });
    expect(run.status).to.equal(1);
    expect(run.stderr.trim().split('\n')).to.deep.equal([
      'rxheal-mcp-proxy: needs @modelcontextprotocol/sdk 1.x (an optional peer of rxheal): npm install @modelcontextprotocol/sdk',
    ]);
    // what needs no peer still answers
    const help = spawnSync(process.execPath, ['--import', 'tsx', '--import', HIDE_SDK, CLI, '--help'], { encoding: 'utf8' });
    expect(help.status).to.equal(0);
  });

  it('--help: the usage, every option with its default, the peer to install and a host configuration; --version: the package version', () => {
    const help = spawnSync(process.execPath, ['--import', 'tsx', CLI, '--help'], { encoding: 'utf8' });
    expect(help.status).to.equal(0);
    for (const text of [
      'usage: rxheal-mcp-proxy',
      '--retries N',
      '--timeout MS',
      '--failure-threshold N',
      '--reset-timeout MS',
      '--url URL',
      'npm install @modelcontextprotocol/sdk',
      '"mcpServers"',
    ])
      expect(help.stdout).to.include(text);
    const config = /(\{\n\s+"mcpServers"[\s\S]*\n {2}\})/.exec(help.stdout)?.[1];
    expect(JSON.parse(config!).mcpServers.weather.args.slice(0, 1)).to.deep.equal(['rxheal-mcp-proxy']);
    const version = spawnSync(process.execPath, ['--import', 'tsx', CLI, '--version'], { encoding: 'utf8' });
    expect(version.status).to.equal(0);
    expect(version.stdout).to.equal(`rxheal-mcp-proxy ${PACKAGE.version}\n`);
  });

  it("the MCP guide's proxy section: its command lines and its host configuration are ones the proxy reads", () => {
    const guide = readFileSync(new URL('../../docs/guides/mcp-tools.md', import.meta.url), 'utf8');
    const heading = '## Any MCP host, without code: `rxheal-mcp-proxy`';
    expect(guide).to.include(heading);
    const section = guide.slice(guide.indexOf(heading));
    // npx runs the bin from the packed tarball (`npx -y -p <tarball> -p @modelcontextprotocol/sdk rxheal-mcp-proxy …`): what follows its name is the proxy's
    const proxyArgs = (words: string[]): string[] => {
      expect(words, words.join(' ')).to.include('rxheal-mcp-proxy');
      return words.slice(words.indexOf('rxheal-mcp-proxy') + 1);
    };
    const lines = /```sh\n([\s\S]*?)```/.exec(section)![1]!.trim().split('\n');
    for (const line of lines) expect(parseArgs(proxyArgs(line.split(' '))), line).not.to.have.property('error');
    const config = JSON.parse(/```json\n([\s\S]*?)```/.exec(section)![1]!) as { mcpServers: Record<string, { command: string; args: string[] }> };
    const [server] = Object.values(config.mcpServers);
    expect(server!.command).to.equal('npx');
    expect(parseArgs(proxyArgs(server!.args))).to.have.property('serve');
  });

  it("reads the flags: the breaker's, and a bad value refused naming it", () => {
    expect(parseArgs(['--failure-threshold', '2', '--reset-timeout', '5000', '--', 'node', 's.js'])).to.deep.equal({
      serve: { upstream: { command: 'node', args: ['s.js'] }, retries: 2, timeoutMs: 60_000, failureThreshold: 2, resetTimeoutMs: 5000 },
    });
    expect(parseArgs(['--failure-threshold', '0', '--', 'node']))
      .to.have.property('error')
      .that.matches(/bad argument "--failure-threshold" "0"/);
    expect(parseArgs(['--version'])).to.deep.equal({ version: true });
  });
});
