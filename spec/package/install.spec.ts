/**
 * The README's install lines, as written, as a new user types them, on Node 20 (the engines
 * floor, 20.19.0) and Node 24 — the binaries .ci/node pins (bash .ci/run installs them; without
 * one, that Node's suite runs on the machine's Node when it is of that line, else it is skipped
 * with a printed notice, and under CI=true it fails). Node 22 is left out: npm resolves every line
 * there exactly as on 24 (each newest major — `ai` 7, `openai` 7 — wants Node ≥ 22, so 22 and 24
 * get the same versions), and it would add half again to this spec's time.
 *
 * On each Node: `npm pack`'s tarball installed into a fresh project with the "Install" block's
 * line (`npm install rxheal rxjs`, rxheal being the tarball), then, each in a copy of that
 * project, every install cell of the entry-point table (`npm install ai @ai-sdk/provider`…). npm
 * picks the newest version whose `engines` fit the Node (on 20, `ai` 6 and `openai` 6; on 24, 7),
 * so each line must be accepted by rxheal's peer ranges as npm resolves it there: no ERESOLVE,
 * never `--legacy-peer-deps`, nothing at all on stderr (no EBADENGINE or other warning), `npm ls
 * --all` clean, the resolved peers inside package.json's ranges, and the entry the line is for
 * loads by `import` and `require` on that Node. On Node 24 only, the agent-framework table's
 * lines too (`npm install rxheal rxjs @openai/agents …`, whole lines, each in a fresh project: the
 * frameworks need Node ≥ 22), with the same checks, `rxheal/ai-sdk` and the frameworks loading by
 * `import`.
 *
 * npm needs the registry here (its cache first: `--prefer-offline`; `--no-audit --no-fund` drop
 * the two network notices). The npm work of the two Nodes runs side by side from the suite's
 * start, each Node's lines one after another; each test awaits and checks its own line's. Measured
 * on this 2-core machine: 35–60 s inside .ci/run, 80–110 s alone under other jobs' load — each line
 * costs an install (2–6 s) and a copy of the base project (3 700 files, 2–5 s: rxjs's).
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import semver from 'semver';
import { requireProgram } from '../support/systemPackage.js';
import { expectLoaded, frameworkLines, installLines, loadEntries, npmEnv, npmPack, packageJson, subpathTable } from './npmPack.js';
import { INSTALL_NODES, nodeOfLine, pinnedNodes, type NodeBinary } from './nodes.js';

const pkg = packageJson();
const lines = installLines();
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
const frameworkEntries = (command: string): string[] => ['rxheal/ai-sdk', ...packagesOf(command).filter((name) => ![pkg.name, 'rxjs', 'zod', '@ai-sdk/provider'].includes(name))];

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

/** One README line as npm args: `npm install rxheal rxjs` → `install <tarball> rxjs`, plus the spec's cache and notice flags. */
const argsOf = (command: string, tarball: string): string[] => [
  ...command
    .split(/\s+/)
    .slice(1)
    .map((w) => (w === pkg.name ? tarball : w)),
  '--prefer-offline',
  '--no-audit',
  '--no-fund',
  '--loglevel=warn',
];

/** The names a line installs (`ai @ai-sdk/provider`), versions stripped. */
const packagesOf = (command: string): string[] => command.split(/\s+/).slice(2).map((w) => w.replace(/(.)@.*$/, '$1'));

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
      await cp(base, project, { recursive: true, verbatimSymlinks: true });
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
  return { npmNode: (JSON.parse(version.stdout || '{}') as Record<string, string>)['node'] ?? `(npm version failed: ${version.stderr})`, root, rows, frameworks: fresh };
}

/** A README line's outcome: exit 0, nothing on stderr, `npm ls` clean, the peers it installed inside rxheal's ranges. Returns the top-level versions. */
function expectInstalled({ command, install, ls }: Installed): Record<string, string> {
  expect(install.status, `${command} exited with ${install.status}:\n${install.stderr}`).to.equal(0);
  expect(install.stderr.split('\n').filter((l) => l.trim() !== ''), `${command}: what npm printed on stderr`).to.deep.equal([]);
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

describe("the README's install lines, as written, in a fresh project on Node 20 and Node 24", function () {
  this.timeout(180_000);
  let dir = '';
  const works = new Map<number, Promise<NodeWork>>();

  before(() => {
    expect(rootLines.map((l) => l.command), 'the Install section starts with the root line').to.deep.equal([`npm install ${pkg.name} rxjs`]);
    expect(peerLines.length, 'the entry-point table has install lines').to.be.greaterThan(0);
    dir = mkdtempSync(join(tmpdir(), 'rxheal-install-'));
    const { tarball } = npmPack(dir);
    for (const line of LINES) {
      const { found } = nodeOfLine(line);
      if (found === undefined) continue;
      const promise = work(found, dir, tarball!);
      promise.catch(() => undefined); // awaited by the tests
      works.set(line, promise);
    }
  });

  after(async function () {
    this.timeout(300_000);
    // let every npm child end before its directory goes
    await Promise.allSettled([...works.values()].map(async (w) => Promise.allSettled([...(await w).rows, ...(await w).frameworks])));
    // async: the ~90 000 files of both Nodes' projects take 10+ s to remove on a loaded machine, which a sync rm would spend blocking the event loop
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('.ci/node pins a binary of each of these Node lines', () => {
    expect(pinnedNodes().map((n) => n.line)).to.include.members(LINES);
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

      it(`\`${rootLines[0]?.command}\` (README.md:${rootLines[0]?.line}): nothing on stderr, npm ls clean; ${bare.map((e) => e.specifier).join(', ')} load by import and require`, () => {
        const versions = expectInstalled(done.root);
        expect(Object.keys(versions).sort()).to.deep.equal([pkg.name, 'rxjs']);
        expect(semver.satisfies(versions['rxjs']!, pkg.peerDependencies!['rxjs']!), `rxjs@${versions['rxjs']}`).to.equal(true);
        const names = bare.map((e) => e.specifier);
        expectLoaded(loadEntries(done.root.project, 'esm', names, node), loadEntries(done.root.project, 'cjs', names, node), bare);
      });

      peerLines.forEach(({ command, for: specifier, line: readmeLine }, i) => {
        it(`\`${command}\` for ${specifier} (README.md:${readmeLine}), after the root line: nothing on stderr, npm ls clean, peers inside rxheal's ranges; ${specifier} loads by import and require`, async () => {
          const installed = await done.rows[i]!;
          const versions = expectInstalled(installed);
          console.log(`      Node ${found?.version}: ${packagesOf(command).map((name) => `${name} ${versions[name]}`).join(', ')}`);
          expectLoaded(loadEntries(installed.project, 'esm', [specifier], node), loadEntries(installed.project, 'cjs', [specifier], node), [{ specifier }]);
        });
      });

      if (line === FRAMEWORK_NODE) {
        frameworks.forEach(({ command, framework, line: readmeLine }, i) => {
          const entries = frameworkEntries(command);
          it(`\`${command}\` (the ${framework} row, README.md:${readmeLine}), in a fresh project: nothing on stderr, npm ls clean, peers inside rxheal's ranges; ${entries.join(', ')} load by import`, async () => {
            const installed = await done.frameworks[i]!;
            const versions = expectInstalled(installed);
            console.log(`      Node ${found?.version}: ${packagesOf(command).filter((name) => name !== pkg.name).map((name) => `${name} ${versions[name]}`).join(', ')}`);
            const loaded = loadEntries(installed.project, 'esm', entries, node);
            for (const entry of entries) expect(loaded[entry], `import('${entry}')`).to.be.an('array').that.is.not.empty;
          });
        });
      }
    });
  }
});
