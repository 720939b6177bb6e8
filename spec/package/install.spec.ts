/**
 * The install lines of the README and the guides, as written, as a new user types them, on Node 20 (the engines
 * floor, 20.19.0) and Node 24 — the binaries .ci/node pins (bash .ci/run installs them; without
 * one, that Node's suite runs on the machine's Node when it is of that line, else it is skipped
 * with a printed notice, and under CI=true it fails). Node 22 is left out: npm resolves every line
 * there exactly as on 24 (each newest major — `ai` 7, `openai` 7 — wants Node ≥ 22, so 22 and 24
 * get the same versions), and it would add half again to this spec's time.
 *
 * rxheal is not on the registry yet, so every line starts from the tarball: first the "Install"
 * section's pack line (`npm pack`) in this repository, which builds dist/ and writes
 * `rxheal-<version>.tgz` — the file every install line names (`/path/to/rxheal-0.1.0.tgz`, the
 * spec puts the real path in). Then on each Node: the "Install" block's line (`npm install
 * /path/to/rxheal-0.1.0.tgz rxjs io-ts`) in a fresh project, then, each in a copy of that project,
 * every install cell of the entry-point table (`npm install ai @ai-sdk/provider`…). npm picks the
 * newest version whose `engines` fit the Node (on 20, `ai` 6 and `openai` 6; on 24, 7), so each
 * line must be accepted by rxheal's peer ranges as npm resolves it there: no ERESOLVE, never
 * `--legacy-peer-deps`, nothing at all on stderr (no EBADENGINE or other warning), `npm ls --all`
 * clean, the resolved peers inside package.json's ranges, and the entry the line is for loads by
 * `import` and `require` on that Node. On Node 24 only, the frameworks guide's agent-framework table's lines too
 * (whole lines, each in a fresh project: the frameworks need Node ≥ 22), with the same checks,
 * `rxheal/ai-sdk` and the frameworks loading by `import`, and the guide's snippet for that
 * framework compiling in the project the line made (what `tsc` sees after a user's install, not
 * the repository's own copies). And on each Node, the MCP guide's `npx` lines of `rxheal-mcp-proxy` (`npx -y
 * -p /path/to/rxheal-0.1.0.tgz -p @modelcontextprotocol/sdk rxheal-mcp-proxy …`), run by the SDK's
 * client as an MCP host runs them: the stdio line with its `node my-server.js` upstream (a small
 * MCP server the spec writes), the URL line against the rxheal/mcp specs' HTTP fixture; the npx
 * installs they leave in npm's cache are removed after.
 *
 * npm needs the registry here (its cache first: `--prefer-offline`; `--no-audit --no-fund` drop
 * the two network notices). The npm work of the two Nodes runs side by side from the suite's
 * start, each Node's lines one after another; each test awaits and checks its own line's. Measured
 * on this 2-core machine: 35–60 s inside .ci/run, 80–110 s alone under other jobs' load — each line
 * costs an install (2–6 s) and a copy of the base project (3 700 files: `cp -a`, a fraction of a second).
 */
import { expect } from 'chai';
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import semver from 'semver';
import { frameworkOf, frameworkSnippets } from '../support/agentFrameworks.js';
import { requireProgram } from '../support/systemPackage.js';
import { typeErrorsIn } from '../support/tsBlocks.js';
import { startHttpFixture, type FixtureHttpServer } from '../mcp/fixtures/httpServer.js';
import {
  expectLoaded,
  frameworkLines,
  hostConfigs,
  installLines,
  isTarball,
  loadEntries,
  npmEnv,
  npxLines,
  packageJson,
  packLine,
  PAGES,
  ROOT,
  subpathTable,
  tarballName,
  withTarball,
} from './npmPack.js';
import { INSTALL_NODES, nodeOfLine, pinnedNodes, type NodeBinary } from './nodes.js';

const pkg = packageJson();
const pack = packLine();
const lines = installLines();
const proxyLines = npxLines();
const rootLines = lines.filter((l) => l.for === 'the root entry');
const peerLines = lines.filter((l) => l.for !== 'the root entry');
/** The entries that need no optional peer: what the root line alone must make loadable. */
const bare = subpathTable()
  .filter((row) => row.peers.length === 0)
  .map((row) => ({ specifier: row.specifier }));

/** The Node lines this spec installs on (each pinned in .ci/node). */
const LINES = [20, 24];
/**
 * The agent-framework table's lines (whole lines: `npm install rxheal rxjs @openai/agents …`),
 * run on Node 24 only, each in a fresh project: the frameworks need Node ≥ 22 (on Node 20 npm
 * picks `@mastra/core` 0.24, which the README says does not work).
 */
const frameworks = frameworkLines();
const FRAMEWORK_NODE = 24;
/** What a framework line's project loads: `rxheal/ai-sdk` and each framework package it names (not rxheal, rxjs, zod, the AI SDK's types). */
const frameworkEntries = (command: string): string[] => [
  'rxheal/ai-sdk',
  ...packagesOf(command).filter((name) => ![pkg.name, 'rxjs', 'zod', '@ai-sdk/provider'].includes(name)),
];

/** What one npm command did. */
interface Run {
  readonly command: string;
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** npm run by the given Node binary (its directory first on PATH: npm's `#!/usr/bin/env node` picks it up). */
function npmWith(node: string, cwd: string, args: string[]): Promise<Run> {
  const env = { ...npmEnv(), PATH: `${dirname(node)}${delimiter}${process.env['PATH'] ?? ''}` };
  return new Promise((resolve) => {
    const child = spawn('npm', args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 110_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', (error) => resolve({ command: `npm ${args.join(' ')}`, status: null, stdout, stderr: `${stderr}${String(error)}` }));
    child.once('close', (status) => resolve({ command: `npm ${args.join(' ')}`, status, stdout, stderr }));
  });
}

/** One README line as npm args: `npm install /path/to/rxheal-0.1.0.tgz rxjs` → `install <tarball> rxjs`, plus the spec's cache and notice flags. */
const argsOf = (command: string, tarball: string): string[] => [
  ...withTarball(command, tarball).split(/\s+/).slice(1),
  '--prefer-offline',
  '--no-audit',
  '--no-fund',
  '--loglevel=warn',
];

/** The names a line installs (`ai @ai-sdk/provider`, the tarball as rxheal), versions stripped. */
const packagesOf = (command: string): string[] =>
  command
    .split(/\s+/)
    .slice(2)
    .map((w) => (isTarball(w) ? pkg.name : w.replace(/(.)@.*$/, '$1')));

/** The README's pack line run in the repository, as written (`npm pack`), its tarball written to `destination`. */
function packAsWritten(destination: string): { tarball: string; stderr: string } {
  const args = [...pack.command.split(/\s+/).slice(1), '--pack-destination', destination, '--json', '--loglevel=warn'];
  const run = spawnSync('npm', args, { cwd: ROOT, env: npmEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (run.status !== 0) throw new Error(`${pack.command} (README.md:${pack.line}) exited with ${run.status}:\n${run.stderr}`);
  const [result] = JSON.parse(run.stdout) as { filename: string }[];
  return { tarball: join(destination, result!.filename), stderr: run.stderr };
}

/** A README line run in a project, and `npm ls --all --json` after it. */
interface Installed {
  readonly command: string;
  readonly project: string;
  readonly install: Run;
  readonly ls: Run;
}

/** All the npm work of one Node: the version npm runs on, the root line in a fresh project, each table line in a copy of it. */
interface NodeWork {
  readonly npmNode: string;
  readonly root: Installed;
  /** One promise a table line, in order (each starts when the one before it is done). */
  readonly rows: Promise<Installed>[];
  /** On Node 24, one promise an agent-framework line (after the table's lines), each in a fresh project. */
  readonly frameworks: Promise<Installed>[];
}

/**
 * A copy of the base project: `cp -a` (symlinks kept as they are), ten times faster here than
 * `fs.cp` on its 3 700 files (130 vs 1 330 ms measured on rxjs's tree); `fs.cp` where there is no `cp`.
 */
function copyTree(from: string, to: string): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile('cp', ['-a', from, to], (error) => (error === null ? resolve() : cp(from, to, { recursive: true, verbatimSymlinks: true }).then(resolve, reject))),
  );
}

async function installIn(node: string, project: string, command: string, tarball: string): Promise<Installed> {
  const install = await npmWith(node, project, argsOf(command, tarball));
  const ls = await npmWith(node, project, ['ls', '--all', '--json']);
  return { command, project, install, ls };
}

async function work(node: NodeBinary, dir: string, tarball: string): Promise<NodeWork> {
  const where = join(dir, `node-${node.line}`);
  await mkdir(where);
  const version = await npmWith(node.path, where, ['version', '--json']);
  const base = join(where, 'base');
  await mkdir(base);
  await writeFile(join(base, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2));
  const root = await installIn(node.path, base, rootLines[0]!.command, tarball);
  const rows: Promise<Installed>[] = [];
  for (const { command, for: specifier } of peerLines) {
    const previous = rows.at(-1)?.catch(() => undefined);
    const row = (async () => {
      await previous;
      const project = join(where, specifier.replace(/\W+/g, '-'));
      await copyTree(base, project);
      return installIn(node.path, project, command, tarball);
    })();
    row.catch(() => undefined); // awaited by its test; never an unhandled rejection meanwhile
    rows.push(row);
  }
  const fresh: Promise<Installed>[] = [];
  if (node.line === FRAMEWORK_NODE) {
    for (const { command, framework } of frameworks) {
      const previous = (fresh.at(-1) ?? rows.at(-1))?.catch(() => undefined);
      const row = (async () => {
        await previous;
        const project = join(where, `framework-${framework.replace(/\W+/g, '-')}`);
        await mkdir(project);
        await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2));
        return installIn(node.path, project, command, tarball);
      })();
      row.catch(() => undefined);
      fresh.push(row);
    }
  }
  return {
    npmNode: (JSON.parse(version.stdout || '{}') as Record<string, string>)['node'] ?? `(npm version failed: ${version.stderr})`,
    root,
    rows,
    frameworks: fresh,
  };
}

/** A README line's outcome: exit 0, nothing on stderr, `npm ls` clean, the peers it installed inside rxheal's ranges. Returns the top-level versions. */
function expectInstalled({ command, install, ls }: Installed): Record<string, string> {
  expect(install.status, `${command} exited with ${install.status}:\n${install.stderr}`).to.equal(0);
  expect(
    install.stderr.split('\n').filter((l) => l.trim() !== ''),
    `${command}: what npm printed on stderr`,
  ).to.deep.equal([]);
  const tree = JSON.parse(ls.stdout || '{}') as { problems?: string[]; dependencies?: Record<string, { version: string }> };
  expect({ status: ls.status, problems: tree.problems ?? [] }, `npm ls --all after ${command}:\n${ls.stderr}`).to.deep.equal({ status: 0, problems: [] });
  const versions = Object.fromEntries(Object.entries(tree.dependencies ?? {}).map(([name, d]) => [name, d.version]));
  for (const name of packagesOf(command)) {
    const range = pkg.peerDependencies?.[name];
    if (range === undefined) continue;
    expect(versions[name], `${command}: ${name} installed`).to.be.a('string');
    expect(semver.satisfies(versions[name]!, range), `${command}: ${name}@${versions[name]} is inside rxheal's peer range ${range}`).to.equal(true);
  }
  return versions;
}

/**
 * The upstream of the README's stdio proxy line (`-- node my-server.js`) and host configuration: an MCP server on stdio,
 * built with the SDK's own server side (the project's copy, by path), whose one read-only tool
 * says which Node runs it.
 */
const MY_SERVER = `import { McpServer } from ${JSON.stringify(pathToFileURL(join(ROOT, 'node_modules/@modelcontextprotocol/sdk/dist/esm/server/mcp.js')).href)};
import { StdioServerTransport } from ${JSON.stringify(pathToFileURL(join(ROOT, 'node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js')).href)};
const server = new McpServer({ name: 'my-server', version: '1.0.0' });
server.registerTool('node_version', { description: 'The Node running this server', annotations: { readOnlyHint: true } }, () => ({ content: [{ type: 'text', text: process.versions.node }] }));
await server.connect(new StdioServerTransport());
`;

/** What an MCP client saw through the proxy a README `npx` line started, and what of it was left running once the client closed. */
interface ProxyRun {
  readonly tools: string[];
  readonly text: string;
  readonly stderr: string;
  readonly left: string[];
}

/** The environment a host gives the command: the given Node first on PATH, npm's cache first (the spec's flag), no `npm_*` of an enclosing npm. */
const hostEnv = (node: string): Record<string, string> =>
  ({ ...npmEnv(), PATH: `${dirname(node)}${delimiter}${process.env['PATH'] ?? ''}`, npm_config_prefer_offline: 'true', npm_config_loglevel: 'warn' }) as Record<
    string,
    string
  >;

/**
 * Runs a README `npx` command (its words, the tarball's path and the upstream's URL put in) as an
 * MCP host does: the SDK's `StdioClientTransport` starting it in a folder of the host's; the tools
 * it lists, the text of a call of `tool`, and the processes it started that outlive the client's
 * close (stdin closed, then SIGTERM to npx) by 5 s — ended then.
 */
async function throughProxy(
  node: string,
  cwd: string,
  words: readonly string[],
  tool: { name: string; arguments?: Record<string, unknown> },
): Promise<ProxyRun> {
  const transport = new StdioClientTransport({ command: words[0]!, args: words.slice(1), cwd, env: hostEnv(node), stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'host', version: '1.0.0' });
  let started: Started[] = [];
  let seen: Pick<ProxyRun, 'tools' | 'text'>;
  try {
    await client.connect(transport, { timeout: 120_000 });
    started = await processTree(transport.pid!);
    const { tools } = await client.listTools();
    const result = await client.callTool(tool);
    const text = (result['content'] as { text?: string }[] | undefined)?.[0]?.text ?? '';
    seen = { tools: tools.map((t) => t.name), text: result['isError'] === true ? `isError: ${text}` : text };
  } catch (error) {
    await client.close();
    await endAll(started);
    throw new Error(`${words.join(' ')}: ${String(error)}\n${stderr}`, { cause: error });
  }
  await client.close();
  let left = await alive(started);
  for (let waited = 0; left.length > 0 && waited < 5_000; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    left = await alive(started);
  }
  await endAll(left);
  return { ...seen, stderr, left: left.map((p) => p.command) };
}

/** Runs a README `npx` command that answers and exits (`--help`): its exit code and output. */
function npxOnce(node: string, cwd: string, words: readonly string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(words[0]!, words.slice(1), { cwd, env: hostEnv(node), stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', (error) => resolve({ status: null, stdout, stderr: `${stderr}${String(error)}` }));
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** A process the spec started: its id, its start time (clock ticks after boot) and its command line. */
interface Started {
  readonly pid: number;
  readonly since: string;
  readonly command: string;
}

/** The fields of /proc/<pid>/stat after the command (which may hold spaces and parentheses): state, ppid, …; none when the process is gone. */
async function statOf(pid: number | string): Promise<string[]> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat === '' ? [] : stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** Which of these processes still run: the same process (its start time, field 22), not another that got its id since, and not a zombie. */
async function alive(processes: readonly Started[]): Promise<Started[]> {
  const out: Started[] = [];
  for (const p of processes) {
    const fields = await statOf(p.pid);
    if (fields[19] === p.since && fields[0] !== 'Z') out.push(p);
  }
  return out;
}

/** Ends the processes of a run that still run (SIGTERM). */
async function endAll(processes: readonly Started[]): Promise<void> {
  for (const p of await alive(processes)) {
    try {
      process.kill(p.pid, 'SIGTERM');
    } catch {
      // gone meanwhile
    }
  }
}

/** A process and every process under it (Linux: their parent ids in /proc/<pid>/stat). */
async function processTree(root: number): Promise<Started[]> {
  const all = new Map<number, Started & { readonly parent: number }>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = await statOf(entry);
    if (fields.length === 0) continue;
    const command = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0').join(' ').trim();
    all.set(Number(entry), { pid: Number(entry), since: fields[19]!, command, parent: Number(fields[1]) });
  }
  const tree: Started[] = [];
  for (
    let next = [all.get(root)].filter((p) => p !== undefined);
    next.length > 0;
    next = [...all.values()].filter((p) => next.some((n) => n.pid === p.parent))
  ) {
    tree.push(...next.map(({ pid, since, command }) => ({ pid, since, command })));
  }
  return tree;
}

/** npx's installs of the tarball in npm's cache (`_npx/<hash>`, one a set of `-p` packages): removed after the spec. */
async function removeNpxInstalls(tarballDir: string): Promise<void> {
  const cache = execFileSync('npm', ['config', 'get', 'cache'], { env: npmEnv(), encoding: 'utf8' }).trim();
  const npx = join(cache, '_npx');
  for (const hash of await readdir(npx).catch(() => [] as string[])) {
    const manifest = await readFile(join(npx, hash, 'package.json'), 'utf8').catch(() => '');
    if (manifest.includes(tarballDir)) await rm(join(npx, hash), { recursive: true, force: true });
  }
}

describe("the README's install lines, as written, in a fresh project on Node 20 and Node 24", function () {
  this.timeout(180_000);
  let dir = '';
  let packed: { tarball: string; stderr: string } | undefined;
  const works = new Map<number, Promise<NodeWork>>();
  const snippets = frameworkSnippets();
  let upstream: FixtureHttpServer | undefined;

  before(async () => {
    expect(rootLines.length, 'the Install section has one install line').to.equal(1);
    expect(peerLines.length, 'the entry-point table has install lines').to.be.greaterThan(0);
    dir = mkdtempSync(join(tmpdir(), 'rxheal-install-'));
    packed = packAsWritten(dir);
    for (const line of LINES) {
      const { found } = nodeOfLine(line);
      if (found === undefined) continue;
      const promise = work(found, dir, packed.tarball);
      promise.catch(() => undefined); // awaited by the tests
      works.set(line, promise);
    }
    upstream = await startHttpFixture();
  });

  after(async function () {
    this.timeout(300_000);
    await upstream?.stop();
    // let every npm child end before its directory goes
    await Promise.allSettled([...works.values()].map(async (w) => Promise.allSettled([...(await w).rows, ...(await w).frameworks])));
    if (dir) await removeNpxInstalls(dir);
    // async: the ~90 000 files of both Nodes' projects take 10+ s to remove on a loaded machine, which a sync rm would spend blocking the event loop
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('.ci/node pins a binary of each of these Node lines', () => {
    expect(pinnedNodes().map((n) => n.line)).to.include.members(LINES);
  });

  it(`\`${pack.command}\` (README.md:${pack.line}), in the repository: builds and writes ${tarballName()}, the file every install line names; no warning`, () => {
    expect(packed!.tarball.split('/').at(-1)).to.equal(tarballName());
    // what npm prints of the prepack script (the build): its "> rxheal@… prepack" banners, nothing else
    expect(packed!.stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('> '))).to.deep.equal([]);
    expect(packed!.stderr).to.match(/> rxheal@\S+ prepack\n> npm run build/);
    const named = (command: string): number => command.split(/\s+/).filter((w) => isTarball(w)).length;
    for (const { command, line, where } of [
      ...rootLines.map((l) => ({ ...l, where: PAGES.readme })),
      ...frameworks.map((l) => ({ ...l, where: PAGES.frameworks })),
      ...proxyLines.map((l) => ({ ...l, where: PAGES.mcp })),
    ])
      expect(named(command), `${where}:${line}: ${command} starts from ${tarballName()}`).to.equal(1);
    // the entry-point table's lines add peers to the project the root line made
    for (const { command, line } of peerLines) expect(named(command), `README.md:${line}: ${command}`).to.equal(0);
  });

  for (const line of LINES) {
    const { found, expected } = nodeOfLine(line);
    const title = found ? `on Node ${found.version} (${found.source === 'pinned' ? '.ci/node' : 'the Node running the specs'})` : `on Node ${line}`;

    describe(title, () => {
      let node = '';
      let done: NodeWork;

      before(async function () {
        node = requireProgram(this, { name: `Node ${line}`, path: found?.path ?? expected, install: INSTALL_NODES });
        done = await works.get(line)!;
        expect(done.npmNode, `npm runs on ${node}`).to.equal(found?.version);
      });

      it(`\`${rootLines[0]?.command}\` (README.md:${rootLines[0]?.line}): nothing on stderr, npm ls clean, rxjs and io-ts the project's own; ${bare.map((e) => e.specifier).join(', ')} load by import and require`, () => {
        const versions = expectInstalled(done.root);
        // io-ts a dependency of the project (what the defineTool snippets import), not only rxheal's hoisted one: pnpm hoists nothing
        expect(Object.keys(versions).sort()).to.deep.equal(['io-ts', pkg.name, 'rxjs']);
        expect(semver.satisfies(versions['rxjs']!, pkg.peerDependencies!['rxjs']!), `rxjs@${versions['rxjs']}`).to.equal(true);
        const ioTs = (pkg['dependencies'] as Record<string, string>)['io-ts']!;
        expect(semver.satisfies(versions['io-ts']!, ioTs), `io-ts@${versions['io-ts']} inside rxheal's dependency ${ioTs}`).to.equal(true);
        const names = bare.map((e) => e.specifier);
        expectLoaded(loadEntries(done.root.project, 'esm', names, node), loadEntries(done.root.project, 'cjs', names, node), bare);
      });

      peerLines.forEach(({ command, for: specifier, line: readmeLine }, i) => {
        it(`\`${command}\` for ${specifier} (README.md:${readmeLine}), after the root line: nothing on stderr, npm ls clean, peers inside rxheal's ranges; ${specifier} loads by import and require`, async () => {
          const installed = await done.rows[i]!;
          const versions = expectInstalled(installed);
          console.log(
            `      Node ${found?.version}: ${packagesOf(command)
              .map((name) => `${name} ${versions[name]}`)
              .join(', ')}`,
          );
          expectLoaded(loadEntries(installed.project, 'esm', [specifier], node), loadEntries(installed.project, 'cjs', [specifier], node), [{ specifier }]);
        });
      });

      if (line === FRAMEWORK_NODE) {
        frameworks.forEach(({ command, framework, line: readmeLine }, i) => {
          const entries = frameworkEntries(command);
          const snippet = snippets.find((s) => s.framework === frameworkOf(command));
          it(`\`${command}\` (the ${framework} row, ${PAGES.frameworks}:${readmeLine}), in a fresh project: nothing on stderr, npm ls clean, peers inside rxheal's ranges; ${entries.join(', ')} load by import; the guide's ${framework} snippet (${PAGES.frameworks}:${snippet?.line}) compiles there`, async () => {
            const installed = await done.frameworks[i]!;
            const versions = expectInstalled(installed);
            console.log(
              `      Node ${found?.version}: ${packagesOf(command)
                .filter((name) => name !== pkg.name)
                .map((name) => `${name} ${versions[name]}`)
                .join(', ')}`,
            );
            const loaded = loadEntries(installed.project, 'esm', entries, node);
            for (const entry of entries) expect(loaded[entry], `import('${entry}')`).to.be.an('array').that.is.not.empty;
            // Node's types (the snippet reads process.env): what the line installed (the Agents SDK brings them), else a
            // TypeScript user's own, the project's linked in
            expect(snippet, `a snippet of ${PAGES.frameworks} for ${framework}`).to.not.equal(undefined);
            const nodeTypes = join(installed.project, 'node_modules', '@types', 'node');
            if (!existsSync(nodeTypes)) {
              await mkdir(dirname(nodeTypes), { recursive: true });
              await symlink(join(ROOT, 'node_modules', '@types', 'node'), nodeTypes, 'dir');
            }
            await writeFile(join(installed.project, 'snippet.ts'), snippet!.code);
            expect(
              typeErrorsIn(installed.project, ['snippet.ts']),
              `${PAGES.frameworks}:${snippet!.line}, with ${Object.entries(versions)
                .map(([n, v]) => `${n} ${v}`)
                .join(', ')}`,
            ).to.deep.equal([]);
          });
        });
      }

      describe('the npx lines of rxheal-mcp-proxy, run by an MCP client as a host runs them', () => {
        let host = '';
        before(async () => {
          host = join(dir, `node-${line}`, 'host');
          await mkdir(host, { recursive: true });
          await writeFile(join(host, 'package.json'), JSON.stringify({ name: 'host', private: true, type: 'module' }));
          // the upstreams the README's lines and host configuration name
          for (const upstreamFile of new Set(['my-server.js', ...hostConfigs().map((c) => c.args.at(-1)!)]))
            await writeFile(join(host, upstreamFile), MY_SERVER);
        });

        for (const { command, line: readmeLine } of proxyLines) {
          const kind = command.endsWith(' --help') ? 'help' : command.includes(' -- ') ? 'stdio' : 'url';
          const does = {
            help: 'prints the usage and exits 0',
            stdio:
              'the proxy lists the upstream’s tools and answers a call, the upstream (node my-server.js) on this Node; closed, nothing of it is left running',
            url: 'the proxy lists the upstream’s tools and answers a call; closed, nothing of it is left running',
          }[kind];
          it(`\`${command}\` (${PAGES.mcp}:${readmeLine}): ${does}`, async () => {
            const words = withTarball(command, packed!.tarball).split(/\s+/);
            if (kind === 'help') {
              const run = await npxOnce(node, host, words);
              expect(run.status, run.stderr).to.equal(0);
              expect(run.stdout).to.match(/^usage: rxheal-mcp-proxy /);
              return;
            }
            const run =
              kind === 'stdio'
                ? await throughProxy(node, host, words, { name: 'node_version' })
                : await throughProxy(
                    node,
                    host,
                    words.map((w) => (/^https?:\/\//.test(w) ? upstream!.url.href : w)),
                    { name: 'echo', arguments: { text: 'healed' } },
                  );
            if (kind === 'stdio') expect({ tools: run.tools, text: run.text }, run.stderr).to.deep.equal({ tools: ['node_version'], text: found?.version });
            else {
              expect(run.tools, run.stderr).to.include.members(['echo', 'get_weather']);
              expect(run.text, run.stderr).to.equal('healed');
            }
            expect(run.left, 'processes left running after the host closed the proxy').to.deep.equal([]);
          });
        }

        for (const { name, command, args, line: readmeLine } of hostConfigs()) {
          it(`the host configuration "${name}" (${PAGES.mcp}:${readmeLine}): \`${command} ${args.join(' ')}\` started as a host starts it, the proxy answers a call of its upstream (node ${args.at(-1)}); closed, nothing of it is left running`, async () => {
            const run = await throughProxy(
              node,
              host,
              [command, ...args].map((w) => (isTarball(w) ? packed!.tarball : w)),
              { name: 'node_version' },
            );
            expect({ tools: run.tools, text: run.text }, run.stderr).to.deep.equal({ tools: ['node_version'], text: found?.version });
            expect(run.left, 'processes left running after the host closed the proxy').to.deep.equal([]);
          });
        }
      });
    });
  }
});
