/**
 * The README's install lines, as written, as a new user types them, on Node 20 (the engines
 * floor, 20.19.0) and Node 24 — the binaries .ci/node pins (bash .ci/run installs them; without
 * one, that Node's suite runs on the machine's Node when it is of that line, else it is skipped
 * with a printed notice, and under CI=true it fails). Node 22 is left out: npm resolves every line
 * there exactly as on 24 (each newest major — `ai` 7, `openai` 7 — wants Node ≥ 22, so 22 and 24
 * get the same versions), and it would add a third of this spec's time (~40 s here). On each Node: `npm pack`'s
 * tarball installed into a fresh project with the "Install" block's line (`npm install rxheal
 * rxjs`, rxheal being the tarball), then, each in a copy of that project, every install cell of the
 * entry-point table (`npm install ai @ai-sdk/provider`…). npm picks the newest version whose
 * `engines` fit the Node (on 20, `ai` 6 and `openai` 6; on 22 and 24, 7), so each line must be
 * accepted by rxheal's peer ranges as npm resolves it there: no ERESOLVE, never
 * `--legacy-peer-deps`, no warning at all, `npm ls --all` clean, the resolved peers inside
 * package.json's ranges, and the entry the line is for loads by `import` and `require` on that
 * Node. npm runs with the registry (its cache first: `--prefer-offline`; `--no-audit --no-fund`
 * drop the two network notices); each install takes 1–4 s.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import semver from 'semver';
import { requireProgram } from '../support/systemPackage.js';
import { expectLoaded, installLines, loadEntries, npmEnv, npmPack, packageJson, subpathTable } from './npmPack.js';
import { INSTALL_NODES, nodeOfLine, pinnedNodes } from './nodes.js';

const pkg = packageJson();
const lines = installLines();
const rootLines = lines.filter((l) => l.for === 'the root entry');
const peerLines = lines.filter((l) => l.for !== 'the root entry');
/** The entries that need no optional peer: what the root line alone must make loadable. */
const bare = subpathTable()
  .filter((row) => row.peers.length === 0)
  .map((row) => ({ specifier: row.specifier }));

/** What one npm command did. */
interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** npm run by the given Node binary (its directory first on PATH: npm's `#!/usr/bin/env node` picks it up). */
function npmWith(node: string, cwd: string, args: string[]): Run {
  const env = { ...npmEnv(), PATH: `${dirname(node)}${delimiter}${process.env['PATH'] ?? ''}` };
  const result = spawnSync('npm', args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 110_000 });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? `${String(result.error)}` };
}

/** One README line as npm args: `npm install rxheal rxjs` → `install <tarball> rxjs`, plus the spec's cache and notice flags. */
function argsOf(command: string, tarball: string): string[] {
  const words = command.split(/\s+/);
  expect(words.slice(0, 2), command).to.deep.equal(['npm', 'install']);
  return [...words.slice(1).map((w) => (w === pkg.name ? tarball : w)), '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=warn'];
}

/** The names a line installs (`ai @ai-sdk/provider`), versions stripped. */
const packagesOf = (command: string): string[] => command.split(/\s+/).slice(2).map((w) => w.replace(/(.)@.*$/, '$1'));

/** The top-level versions npm resolved in `cwd`, after checking `npm ls --all` finds nothing invalid, missing or extraneous. */
function cleanTree(node: string, cwd: string): Record<string, string> {
  const ls = npmWith(node, cwd, ['ls', '--all']);
  expect({ status: ls.status, stderr: ls.stderr.trim() }, `npm ls --all:\n${ls.stdout}`).to.deep.equal({ status: 0, stderr: '' });
  expect(ls.stdout, 'npm ls --all').not.to.match(/\binvalid:|UNMET (?!OPTIONAL)|\bextraneous\b/);
  const json = JSON.parse(npmWith(node, cwd, ['ls', '--json', '--depth=0']).stdout) as { dependencies?: Record<string, { version: string }> };
  return Object.fromEntries(Object.entries(json.dependencies ?? {}).map(([name, d]) => [name, d.version]));
}

/** Runs a README line in `cwd` and checks it: exit 0, nothing on stderr (no ERESOLVE, EBADENGINE or other warning), a clean tree, the peers it installed inside rxheal's ranges. */
function expectInstalls(node: string, cwd: string, command: string, tarball: string): Record<string, string> {
  const run = npmWith(node, cwd, argsOf(command, tarball));
  expect(run.status, `${command} exited with ${run.status}:\n${run.stderr}`).to.equal(0);
  expect(run.stderr.split('\n').filter((l) => l.trim() !== ''), `${command}: what npm printed on stderr`).to.deep.equal([]);
  const versions = cleanTree(node, cwd);
  for (const name of packagesOf(command)) {
    const range = pkg.peerDependencies?.[name];
    if (range === undefined || name === pkg.name) continue;
    expect(versions[name], `${command}: ${name} installed`).to.be.a('string');
    expect(semver.satisfies(versions[name]!, range), `${command}: ${name}@${versions[name]} is inside rxheal's peer range ${range}`).to.equal(true);
  }
  return versions;
}

/** The Node lines this spec installs on (each must be pinned in .ci/node). */
const LINES = [20, 24];

describe("the README's install lines, as written, in a fresh project on Node 20 and Node 24", function () {
  this.timeout(120_000);
  let dir = '';
  let tarball = '';

  before(() => {
    expect(rootLines.map((l) => l.command), 'the Install section starts with the root line').to.deep.equal([`npm install ${pkg.name} rxjs`]);
    expect(peerLines.length, 'the entry-point table has install lines').to.be.greaterThan(0);
    dir = mkdtempSync(join(tmpdir(), 'rxheal-install-'));
    tarball = npmPack(dir).tarball!;
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('.ci/node pins a binary of each of these Node lines', () => {
    expect(pinnedNodes().map((n) => n.line)).to.include.members(LINES);
  });

  for (const line of LINES) {
    const { found, expected } = nodeOfLine(line);
    const title = found ? `on Node ${found.version} (${found.source === 'pinned' ? '.ci/node' : 'the Node running the specs'})` : `on Node ${line}`;

    describe(title, () => {
      let node = '';
      let base = '';
      let rootVersions: Record<string, string> = {};

      before(function () {
        node = requireProgram(this, { name: `Node ${line}`, path: found?.path ?? expected, install: INSTALL_NODES });
        const where = join(dir, `node-${line}`);
        mkdirSync(where);
        const version = (JSON.parse(npmWith(node, where, ['version', '--json']).stdout) as Record<string, string>)['node'];
        expect(version, `npm runs on ${node}`).to.equal(found?.version);
        base = join(where, 'base');
        mkdirSync(base);
        writeFileSync(join(base, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2));
        rootVersions = expectInstalls(node, base, rootLines[0]!.command, tarball);
      });

      it(`\`${rootLines[0]?.command}\` (README.md:${rootLines[0]?.line}): no warning, npm ls clean; ${bare.map((e) => e.specifier).join(', ')} load by import and require`, () => {
        expect(Object.keys(rootVersions).sort()).to.deep.equal([pkg.name, 'rxjs']);
        expect(semver.satisfies(rootVersions['rxjs']!, pkg.peerDependencies!['rxjs']!), `rxjs@${rootVersions['rxjs']}`).to.equal(true);
        const names = bare.map((e) => e.specifier);
        expectLoaded(loadEntries(base, 'esm', names, node), loadEntries(base, 'cjs', names, node), bare);
      });

      for (const { command, for: specifier, line: readmeLine } of peerLines) {
        it(`\`${command}\` for ${specifier} (README.md:${readmeLine}), after the root line: no warning, npm ls clean, peers inside rxheal's ranges; ${specifier} loads by import and require`, () => {
          const project = join(dir, `node-${line}`, specifier.replace(/\W+/g, '-'));
          cpSync(base, project, { recursive: true, verbatimSymlinks: true });
          const versions = expectInstalls(node, project, command, tarball);
          console.log(`      Node ${found?.version}: ${packagesOf(command).map((name) => `${name} ${versions[name]}`).join(', ')}`);
          expectLoaded(loadEntries(project, 'esm', [specifier], node), loadEntries(project, 'cjs', [specifier], node), [{ specifier }]);
        });
      }
    });
  }
});
