/**
 * The project's mocha configuration (.mocharc.cjs): `npx mocha` alone (and `npm run spec`, which
 * `npm test` runs) loads the whole suite, `npx mocha spec/one.spec.ts` loads that file only — the
 * suite's glob is added only when no spec file is named on the command line (mocha adds a config's
 * `spec` to the files given, it does not replace them) — and `.ci/mocharc.nodes.cjs`, which starts
 * from it, still lists its own set.
 */
import { expect } from 'chai';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { ROOT } from './package/npmPack.js';

const lanesRequire = createRequire(import.meta.url);
/** The environment without a lane (`npm run spec` runs this spec inside one). */
const noLane = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'RXHEAL_LANE'));

const SUITE = 'spec/**/*.spec.ts';

/** The `spec` list of a config file, as mocha started with `args` (after `mocha`) reads it. */
function specOf(config: string, args: readonly string[]): string[] | undefined {
  const body = `process.argv = [process.argv[0], 'node_modules/.bin/mocha', ...JSON.parse(process.argv[1])]; console.log(JSON.stringify(require(${JSON.stringify(join(ROOT, config))}).spec ?? null))`;
  const out = execFileSync(process.execPath, ['-e', body, JSON.stringify(args)], { cwd: ROOT, encoding: 'utf8', env: noLane });
  return (JSON.parse(out) as string[] | null) ?? undefined;
}

describe('the mocha configuration (.mocharc.cjs)', function () {
  this.timeout(60_000);

  it('adds the whole suite when no spec file is named: `mocha`, `npm run spec`, options alone (values included)', () => {
    for (const args of [
      [],
      ['--grep', 'retry'],
      ['-g', 'retry', '--timeout', '60000'],
      ['--reporter=dot', '--bail'],
      ['--reporter-option', 'output=x.json', '-R', 'json'],
      ['--no-diff', '--inspect'],
    ]) {
      expect(specOf('.mocharc.cjs', args), args.join(' ')).to.deep.equal([SUITE]);
    }
  });

  it('adds nothing when a file is named, before, after or between options, or with --spec', () => {
    for (const args of [
      ['spec/one.spec.ts'],
      ['--timeout', '60000', 'spec/one.spec.ts'],
      ['spec/one.spec.ts', '--grep', 'x'],
      ['-g', 'x', 'spec/a.spec.ts', 'spec/b.spec.ts', '--bail'],
      ['--spec', 'spec/one.spec.ts'],
      ['--spec=spec/one.spec.ts'],
      ['--bail', '--', 'spec/one.spec.ts'],
    ]) {
      expect(specOf('.mocharc.cjs', args), args.join(' ')).to.equal(undefined);
    }
  });

  it("keeps the rest of the configuration either way (tsx, .ts, the majors' node_modules ignored, the timeout)", () => {
    const config = execFileSync(process.execPath, ['-e', `console.log(JSON.stringify(require('./.mocharc.cjs')))`], {
      cwd: ROOT,
      encoding: 'utf8',
      env: noLane,
    });
    expect(JSON.parse(config)).to.deep.include({
      'node-option': ['import=tsx'],
      extension: ['ts'],
      ignore: ['spec/support/majors/node_modules/**'],
      timeout: 10000,
    });
  });

  it('`npm run spec` is the suite in its lanes (scripts/spec.mjs), and .ci/mocharc.nodes.cjs still lists its own specs, whatever the command line', () => {
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['spec']).to.equal('node scripts/spec.mjs');
    expect(scripts['test']).to.match(/&& npm run spec$/);
    const nodes = specOf('.ci/mocharc.nodes.cjs', ['--config', '.ci/mocharc.nodes.cjs']);
    expect(nodes).to.include.members(['spec/package.spec.ts', 'spec/package/**/*.spec.ts', 'spec/providers/**/*.spec.ts']);
    expect(nodes).not.to.include(SUITE);
  });

  it('the lanes (spec/lanes.cjs): the parallel one runs every file of a set but the serial ones, the serial one those alone; unset, one plain run', () => {
    const lanesOf = (config: string, lane: string): { spec?: string[]; ignore?: string[]; parallel?: boolean } => {
      const body = `process.argv = [process.argv[0], 'node_modules/.bin/mocha']; console.log(JSON.stringify(require(${JSON.stringify(join(ROOT, config))})))`;
      return JSON.parse(execFileSync(process.execPath, ['-e', body], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, RXHEAL_LANE: lane } })) as never;
    };
    const { SERIAL } = lanesRequire('../spec/lanes.cjs') as { SERIAL: string[] };
    const parallel = lanesOf('.mocharc.cjs', 'parallel');
    expect(parallel.parallel).to.equal(true);
    expect(parallel.spec).to.deep.equal([SUITE]);
    expect(parallel.ignore).to.include.members(SERIAL);
    expect(lanesOf('.mocharc.cjs', 'serial').spec).to.deep.equal(SERIAL);
    expect(lanesOf('.mocharc.cjs', '').parallel).to.equal(undefined);
    // the nodes' set: its serial lane is the part of SERIAL it lists (Redis and Postgres, where they run)
    const nodes = lanesOf('.ci/mocharc.nodes.cjs', 'serial').spec ?? [];
    for (const glob of nodes) expect(SERIAL).to.include(glob);
    expect(lanesOf('.ci/mocharc.nodes.cjs', 'parallel').ignore).to.include.members([...SERIAL, 'spec/package/install.spec.ts']);
  });

  it("CONTRIBUTING.md's `npx mocha` lines name spec files that exist, and the config adds nothing to them", () => {
    const lines = readFileSync(join(ROOT, 'CONTRIBUTING.md'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('npx mocha '));
    expect(lines.length, 'CONTRIBUTING.md says how to run one file').to.be.greaterThan(0);
    for (const line of lines) {
      const args = [...line.slice('npx mocha '.length).matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
      const files = args.filter((a, i) => !a.startsWith('-') && args[i - 1] !== '--grep');
      expect(files.length, line).to.be.greaterThan(0);
      // a glob: the folder it starts from
      for (const file of files) expect(existsSync(join(ROOT, file.split('*')[0]!)), `${line}: ${file}`).to.equal(true);
      expect(specOf('.mocharc.cjs', args), line).to.equal(undefined);
    }
  });

  it('`npx mocha <one spec file>` runs that file only (a real mocha, its JSON report)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rxheal-mocharc-'));
    try {
      const out = join(dir, 'report.json');
      const file = 'spec/layers.spec.ts';
      // which files ran is the point, not whether their tests pass (mocha exits with the number failing)
      await new Promise<void>((resolve, reject) =>
        execFile(
          'npx',
          ['mocha', file, '--reporter', 'json', '--reporter-option', `output=${out}`],
          { cwd: ROOT, timeout: 50_000 },
          (error, _stdout, stderr) => (error && typeof error.code !== 'number' ? reject(new Error(`${error.message}\n${stderr}`)) : resolve()),
        ),
      );
      const report = JSON.parse(readFileSync(out, 'utf8')) as { stats: { tests: number }; tests: { file: string }[] };
      expect(report.stats.tests, 'it ran tests').to.be.greaterThan(0);
      expect([...new Set(report.tests.map((t) => t.file.slice(ROOT.length)))]).to.deep.equal([file]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
