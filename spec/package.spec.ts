import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import semver from 'semver';
import { pinnedNodes } from './package/nodes.js';
import {
  entryPoints,
  hostConfigs,
  installLines,
  isTarball,
  packageCommands,
  packageJson,
  packLine,
  page,
  PAGES,
  userPages,
  subpathTable,
  tarballName,
  versionsTable,
} from './package/npmPack.js';
import { tsBlocks } from './support/tsBlocks.js';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as Record<string, unknown>;

/**
 * What the specs install of each package: the project's devDependencies, and spec/support/majors's
 * under their own names (the packages that need Node ≥ 22 — the engines' SDKs —, not its npm
 * aliases of other majors).
 */
function testedWith(json: { devDependencies?: Record<string, string> }): Record<string, string> {
  const majors = JSON.parse(readFileSync(new URL('./support/majors/package.json', import.meta.url), 'utf8')) as { devDependencies: Record<string, string> };
  const own = Object.fromEntries(Object.entries(majors.devDependencies).filter(([, range]) => !range.startsWith('npm:')));
  return { ...own, ...json.devDependencies };
}

describe('the published package', () => {
  it('is ESM, side-effect free, with types and an exports map', () => {
    expect(pkg['name']).to.equal('rxheal');
    expect(pkg['type']).to.equal('module');
    expect(pkg['sideEffects']).to.equal(false);
    expect(pkg['exports']).to.deep.include({ '.': { types: './dist/index.d.ts', import: './dist/index.js', default: './dist/index.js' } });
  });

  it('gives every entry point types first, then import, and a default for require(esm) (Node ≥ 20.19), all to the same file', () => {
    for (const { specifier, conditions } of entryPoints()) {
      expect(Object.keys(conditions), specifier).to.deep.equal(['types', 'import', 'default']);
      expect(conditions['default'], specifier).to.equal(conditions['import']);
      expect(conditions['types'], specifier).to.equal(conditions['import']!.replace(/\.js$/, '.d.ts'));
    }
    expect((pkg['engines'] as Record<string, string>)['node']).to.equal('>=20.19.0');
  });

  it('has an MIT LICENSE file, as package.json says', () => {
    expect(pkg['license']).to.equal('MIT');
    expect(readFileSync(new URL('../LICENSE', import.meta.url), 'utf8'))
      .to.match(/^MIT License\n/)
      .and.to.contain('THE SOFTWARE IS PROVIDED "AS IS"');
  });

  it("the README's entry-point table has one row per entry point, naming exactly its optional peers and how to install them", () => {
    const rows = subpathTable();
    const json = packageJson();
    expect(rows.map((r) => r.specifier).sort(), 'rows of the table vs entry points of the exports map').to.deep.equal(
      entryPoints(json)
        .map((e) => e.specifier)
        .sort(),
    );
    const optional = Object.keys(json.peerDependenciesMeta ?? {}).filter((p) => json.peerDependenciesMeta![p]!.optional);
    for (const row of rows) {
      for (const peer of row.peers) {
        expect(optional, `README.md:${row.line}: ${peer} is an optional peer in package.json`).to.include(peer);
        expect(
          testedWith(json),
          `README.md:${row.line}: ${peer} is a devDependency (the tests use it), of the project or of spec/support/majors`,
        ).to.have.property(peer);
        // one install line, or one per alternative ("… or …": either major of a peer)
        const installed = [...row.install.matchAll(/npm install ([^`]+)/g)].flatMap((m) => m[1]!.trim().split(/\s+/));
        expect(installed, `README.md:${row.line}: the install line names ${peer}`).to.include(peer);
      }
      if (row.peers.length === 0) expect(row.install, `README.md:${row.line}: no peer, nothing to install`).to.equal('—');
    }
    // every optional peer belongs to some entry point, and the root entry needs none
    expect([...new Set(rows.flatMap((r) => r.peers))].sort()).to.deep.equal([...optional].sort());
    expect(rows[0]).to.include({ specifier: 'rxheal' }).and.to.have.property('peers').that.deep.equals([]);
  });

  it("the install guide's versions table names each peer's majors as its range does (one ^ range a major, no open upper bound, the version the specs use inside), and the Node lines .ci/run tests on", () => {
    const json = packageJson();
    const peers = json.peerDependencies ?? {};
    const rows = versionsTable();
    expect(rows[0]?.name, 'the first row is Node').to.equal('Node');
    expect(
      rows
        .slice(1)
        .map((r) => r.name)
        .sort(),
      'then one row per peer dependency',
    ).to.deep.equal(Object.keys(peers).sort());
    // a range part ^X.0.0 reads "X.x", ^X.Y.0 "X.Y+"
    const shown = (min: semver.SemVer): string => (min.minor === 0 && min.patch === 0 ? `${min.major}.x` : `${min.major}.${min.minor}+`);
    for (const row of rows.slice(1)) {
      const range = peers[row.name]!;
      const parts = range.split('||').map((p) => p.trim());
      for (const part of parts)
        expect(part, `${row.name}: each part of "${range}" is a ^ range (one major, no open upper bound)`).to.match(/^\^\d+\.\d+\.\d+$/);
      const mins = parts.map((p) => semver.minVersion(p)!);
      expect(
        mins.map((m) => m.major),
        `${row.name}: "${range}" names each major once, in order`,
      ).to.deep.equal([...new Set(mins.map((m) => m.major))].sort((a, b) => a - b));
      expect(row.versions, `${PAGES.install}:${row.line}: ${row.name} as package.json's "${range}"`).to.equal(mins.map(shown).join(' · '));
      const used = testedWith(json)[row.name];
      expect(
        used !== undefined && semver.satisfies(semver.minVersion(used)!, range),
        `${row.name}: the devDependency the specs run (${used}) is inside "${range}"`,
      ).to.equal(true);
    }
    const floor = semver.minVersion((json['engines'] as { node: string }).node)!;
    const lines = pinnedNodes()
      .map((n) => n.line)
      .filter((l) => l !== floor.major);
    expect(rows[0]!.versions, `${PAGES.install}:${rows[0]!.line}: the engines floor, then each Node line .ci/node pins`).to.equal(
      [shown(floor), ...lines].join(' · '),
    );
  });

  it('starts every command of the README and the guides that installs or runs rxheal from the packed tarball (rxheal is not on the registry: `npm install rxheal` answers E404)', () => {
    const commands = userPages().flatMap((where) => packageCommands(page(where)).map((c) => ({ ...c, where })));
    expect(commands.length).to.be.greaterThan(5);
    for (const { command, line, where } of commands) {
      const words = command.split(/\s+/);
      expect(
        words.filter((w) => w === 'rxheal' || w.startsWith('rxheal@')),
        `${where}:${line}: ${command}`,
      ).to.deep.equal([]);
      if (words[0] === 'npx' && words.includes('rxheal-mcp-proxy'))
        expect(words.slice(0, 4), `${where}:${line}: npx runs the bin from the tarball`).to.satisfy(
          (w: string[]) => w[1] === '-y' && w[2] === '-p' && isTarball(w[3]!),
        );
    }
    // an MCP host's configuration runs the bin the same way
    const hosts = hostConfigs();
    expect(hosts.length, `${PAGES.mcp} has a host configuration`).to.be.greaterThan(0);
    for (const { name, command, args, line } of hosts) {
      expect([command, ...args.slice(0, 3)], `${PAGES.mcp}:${line}: ${name} runs the bin from the tarball`).to.satisfy(
        (w: string[]) => w[0] === 'npx' && w[1] === '-y' && w[2] === '-p' && isTarball(w[3]!),
      );
    }
    const { command } = packLine();
    expect(command, 'the Install section packs the repository').to.equal('npm pack');
  });

  it('names io-ts in the Install line: the snippets of the README and the guides that import it (defineTool) must not rely on npm hoisting it from rxheal', () => {
    const importing = userPages().flatMap((where) => tsBlocks(where, page(where)).filter((b) => /from 'io-ts'/.test(b.code)));
    expect(importing.map((b) => b.page)).to.include('README.md');
    const root = installLines().filter((l) => l.for === 'the root entry');
    expect(root.map((l) => l.command.split(/\s+/).slice(2))).to.deep.equal([[`/path/to/${tarballName()}`, 'rxjs', 'io-ts']]);
    expect(pkg['dependencies'], 'io-ts is a dependency of rxheal (so npm hoists it; pnpm does not)').to.have.property('io-ts');
  });

  it('takes rxjs as a peer (one copy, so TestScheduler virtualises our timers)', () => {
    expect(pkg['peerDependencies']).to.have.property('rxjs', '^7.8.0');
    // every other peer is optional (e.g. @opentelemetry/api for rxheal/otel)
    const optional = pkg['peerDependenciesMeta'] as Record<string, { optional?: boolean }> | undefined;
    for (const name of Object.keys(pkg['peerDependencies'] as object)) if (name !== 'rxjs') expect(optional?.[name]?.optional, name).to.equal(true);
    expect(pkg['dependencies']).not.to.have.property('rxjs');
  });

  it('resolves "rxheal" through its exports map to the built ESM, with the same API as src', async () => {
    const built = (await import('rxheal')) as Record<string, unknown>;
    const source = (await import('../src/index.js')) as Record<string, unknown>;
    expect(Object.keys(built).sort()).to.deep.equal(Object.keys(source).sort());
    for (const name of ['retryWithBackoff', 'circuitBreak', 'classifyError', 'createClassifier', 'CircuitBreaker', 'CircuitBreakerRegistry']) {
      expect(built[name], name).to.be.a('function');
    }
    const testing = (await import('rxheal/testing')) as Record<string, unknown>;
    for (const name of ['scriptedModel', 'scriptedTool', 'fromMarbles', 'describeEvent', 'record']) expect(testing[name], name).to.be.a('function');
    const providers = (await import('rxheal/providers')) as Record<string, unknown>;
    for (const name of ['SseParser', 'parseSse', 'fetchSse', 'decodeSse', 'openAICompatibleModel', 'anthropicModel'])
      expect(providers[name], name).to.be.a('function');
    const events = (await import('rxheal/events')) as Record<string, unknown>;
    for (const name of ['TextDeltaCodec', 'ToolResultEventCodec', 'AgentEventCodec']) expect(events[name], name).to.have.property('decode');
    const otel = (await import('rxheal/otel')) as Record<string, unknown>;
    expect(otel['instrument']).to.be.a('function');
    const types = readFileSync(new URL('../dist/index.d.ts', import.meta.url), 'utf8');
    expect(types).to.contain('retryWithBackoff').and.to.contain('CircuitBreaker');
  });
});
