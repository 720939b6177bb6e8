/**
 * The house's rooms (scripts/layers.ts, the one table of their order): every file of src/ lives in
 * a declared room, every import points to its own room or one declared before it, no file reaches
 * itself through its imports (type-only imports included), every entry point of the package
 * is `src/<name>/index.ts`, and no file is over MAX_LINES lines unless its header says it is one
 * state machine or one table.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cycles, importGraph, importsOf, MAX_LINES, ROOMS, ROOT, roomOf, sourceFiles, tooLong, upwardImports } from '../scripts/layers.js';

describe('layers (scripts/layers.ts)', () => {
  const graph = importGraph();

  it('finds the source tree and reads every kind of import (type-only, re-export, dynamic)', () => {
    expect(graph.size).to.be.greaterThan(50);
    const text = [
      "import type { A } from './a.js';",
      "export { B } from '../b/b.js';",
      "export * from './c.js';",
      "const d = await import('./d.js');",
      "import './e.js';",
      "// import { F } from './f.js';",
      "/* import { G } from './g.js'; */",
      "import { x } from 'rxjs';",
    ].join('\n');
    expect(importsOf('core/x/file.ts', text)).to.deep.equal(['core/b/b.ts', 'core/x/a.ts', 'core/x/c.ts', 'core/x/d.ts', 'core/x/e.ts']);
  });

  it('every file of src/ is in a declared room, and every room holds a file', () => {
    expect(
      sourceFiles().filter((f) => roomOf(f) < 0),
      'files in no room: add their folder to ROOMS',
    ).to.deep.equal([]);
    const empty = ROOMS.filter((_, i) => !sourceFiles().some((f) => roomOf(f) === i)).map((r) => r.path);
    expect(empty, 'rooms with no file').to.deep.equal([]);
  });

  it('no import cycle between files, anywhere in src/', () => {
    expect(cycles(graph)).to.deep.equal([]);
  });

  it('finds a cycle, and one through a type-only import', () => {
    const g = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['d.ts']],
      ['e.ts', ['a.ts']],
    ]);
    expect(cycles(g)).to.deep.equal([['a.ts', 'b.ts', 'c.ts'], ['d.ts']]);
    expect(
      cycles(
        new Map([
          ['x.ts', importsOf('x.ts', "import type { Y } from './y.js';")],
          ['y.ts', importsOf('y.ts', "import { X } from './x.js';")],
        ]),
      ),
    ).to.deep.equal([['x.ts', 'y.ts']]);
  });

  it('every import points to its own room or one declared before it (the breaker never imports the fleet built on it)', () => {
    expect(upwardImports(graph)).to.deep.equal([]);
  });

  it('an import against the order fails, naming both rooms', () => {
    const breaker = ROOMS.findIndex((r) => r.path === 'core/breaker');
    const fleet = ROOMS.findIndex((r) => r.path === 'core/fleet');
    expect(breaker).to.be.below(fleet);
    const g = new Map([['core/breaker/CircuitBreaker.ts', ['core/fleet/fleet.ts']]]);
    expect(upwardImports(g)).to.deep.equal(['core/breaker/CircuitBreaker.ts → core/fleet/fleet.ts (core/breaker may not import core/fleet)']);
  });

  it('every entry point of package.json exports is src/<name>/index.ts (the root: src/index.ts), each its own room', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { exports: Record<string, string | { types?: string }> };
    const wrong: string[] = [];
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (typeof target === 'string' || target.types === undefined) continue;
      const expected = subpath === '.' ? './dist/index.d.ts' : `./dist/${subpath.slice(2)}/index.d.ts`;
      if (target.types !== expected) wrong.push(`${subpath}: ${target.types} (expected ${expected})`);
      const room = subpath === '.' ? 'index.ts' : subpath.slice(2);
      if (!ROOMS.some((r) => r.path === room)) wrong.push(`${subpath}: no room '${room}' in ROOMS`);
    }
    expect(wrong).to.deep.equal([]);
  });

  it(`a file of src/ stays under ${MAX_LINES} lines unless its header says it is one state machine or one table`, () => {
    const long = sourceFiles().filter((f) => tooLong(readFileSync(join(ROOT, 'src', f), 'utf8')));
    expect(long, 'split each at a seam, or say in its header that it is one state machine or one table').to.deep.equal([]);
  });

  it('tells a long file from one whose header says it is one state machine or one table', () => {
    const body = 'const x = 1;\n'.repeat(MAX_LINES + 1);
    expect(tooLong(body)).to.equal(true);
    expect(tooLong(`/**\n * The parser of X.\n */\n${body}`)).to.equal(true);
    expect(tooLong(`/**\n * The parser of X: one state\n * machine, every state × event below.\n */\n${body}`)).to.equal(false);
    expect(tooLong(`// Node only\n/** The status table: one table. */\n${body}`)).to.equal(false);
    expect(tooLong('const x = 1;\n'.repeat(MAX_LINES))).to.equal(false);
  });

  // how many runtime values the root entry may have: spec/surface.spec.ts
});
