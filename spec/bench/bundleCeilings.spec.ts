/**
 * The bundle ceilings (bench/bundleCeilings.json, checked by `npm run bench` and
 * `npm run bench:bundles`): one for each of the three sets and for every entry point of
 * package.json's `exports`, so a new entry point cannot go without one. Nothing here bundles or
 * times anything: the sizes are the bench's business.
 */
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleVerdicts, ceilingOf, ceilingsOf, entryPoints, externals, readCeilings, SETS, type BundleResult } from '../../bench/figures/bundle.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown>; peerDependencies: Record<string, string> };

describe('bundle ceilings (bench/bundleCeilings.json)', () => {
  const ceilings = readCeilings();

  it('has one for every entry point of package.json exports, and no other', () => {
    const subpaths = Object.keys(pkg.exports).filter((s) => s !== './package.json');
    expect(entryPoints().map((e) => e.subpath)).to.deep.equal(subpaths);
    expect(Object.keys(ceilings.entries)).to.have.members(subpaths);
    expect(Object.keys(ceilings.entries)).to.have.lengthOf(subpaths.length);
  });

  it('has one for each of the three sets (retry + breaker; the five + classifier; runAgent + fallbackModel + the five), and no other', () => {
    expect(SETS.map((s) => s.key)).to.deep.equal(['retry+breaker', 'five+classifier', 'agent']);
    expect(Object.keys(ceilings.sets)).to.have.members(SETS.map((s) => s.key));
    expect(Object.keys(ceilings.sets)).to.have.lengthOf(3);
  });

  it('each is a whole number of bytes, at least what was measured when it was set', () => {
    for (const [key, c] of [...Object.entries(ceilings.sets), ...Object.entries(ceilings.entries)]) {
      expect(Number.isInteger(c.measured) && c.measured > 0, `${key}: measured`).to.equal(true);
      expect(Number.isInteger(c.ceiling) && c.ceiling >= c.measured, `${key}: ceiling ${c.ceiling} ≥ measured ${c.measured}`).to.equal(true);
    }
  });

  it('entry points are bundled from src/<name>/index.ts, with every peer dependency external', () => {
    for (const e of entryPoints()) expect(existsSync(join(ROOT, e.source)), e.source).to.equal(true);
    expect(entryPoints().find((e) => e.subpath === '.')?.source).to.equal('./src/index.ts');
    expect(entryPoints().find((e) => e.subpath === './redis')).to.deep.equal({ subpath: './redis', specifier: 'rxheal/redis', source: './src/redis/index.ts' });
    for (const peer of Object.keys(pkg.peerDependencies)) expect(externals()).to.include.members([peer, `${peer}/*`]);
  });

  it('verdicts: under its ceiling is met, over it or without one is not; the agent set against streamText at 0.35×', () => {
    const d: BundleResult = {
      rows: [],
      checked: [
        { kind: 'sets', key: 'agent', name: 'agent set', gz: 100, ceiling: 100 },
        { kind: 'entries', key: './x', name: 'entry x', gz: 101, ceiling: 100 },
        { kind: 'entries', key: './new', name: 'entry new', gz: 10, ceiling: undefined },
      ],
      agent: 100,
      streamText: 286,
    };
    const verdicts = bundleVerdicts(d);
    expect(verdicts.map((v) => v.met)).to.deep.equal([true, false, false, true]);
    expect(verdicts[2]!.target).to.contain('"./new" has none');
    expect(verdicts[3]!.measured).to.equal('0.350× (100 vs 286 B)');
    expect(bundleVerdicts({ ...d, streamText: 285 })[3]!.met).to.equal(false);
  });

  it('a ceiling set anew is what was measured + 3 %, rounded up', () => {
    expect(ceilingOf(10_000)).to.equal(10_300);
    expect(ceilingOf(10_399)).to.equal(10_711);
    const table = ceilingsOf(
      {
        rows: [],
        checked: [
          { kind: 'sets', key: 'agent', name: 'a', gz: 200, ceiling: 1 },
          { kind: 'entries', key: '.', name: 'r', gz: 1_000, ceiling: 1 },
        ],
        agent: 200,
        streamText: 1_000,
      },
      'about',
    );
    expect(table).to.deep.equal({ about: 'about', sets: { agent: { measured: 200, ceiling: 206 } }, entries: { '.': { measured: 1_000, ceiling: 1_030 } } });
  });
});
