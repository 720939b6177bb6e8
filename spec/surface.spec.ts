/**
 * The tiers of the public surface: the root entry is the learnable core (at most 50 runtime values),
 * and every name CHANGELOG.md's migration table moves out of it is gone from the root and exported by
 * the entry point the table names — as a value where the table imports a value, as a type where it
 * says `import type` (read from that entry's API report, api/*.api.md, which spec/api.spec.ts keeps
 * equal to the build).
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as root from '../src/index.js';

const ROOT = new URL('../', import.meta.url).pathname;

/** At most this many runtime values in `rxheal`: what a newcomer learns first. */
const ROOT_VALUES = 50;

/** The source of each entry point the table may name. */
const SOURCES: Record<string, string> = {
  'rxheal/fleet': '../src/fleet/index.js',
  'rxheal/events': '../src/events/index.js',
  'rxheal/providers': '../src/providers/index.js',
  'rxheal/testing': '../src/testing/index.js',
};

interface Move {
  readonly name: string;
  readonly to: string;
  readonly type: boolean;
  readonly line: number;
}

/** The rows of CHANGELOG.md's migration tables: `import { X } from 'rxheal'` → `import { X } from 'rxheal/…'`. */
function moves(): Move[] {
  const out: Move[] = [];
  readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8')
    .split('\n')
    .forEach((line, i) => {
      const m = /^\| `import (type )?\{ (\w+) \} from 'rxheal'` \| `import (type )?\{ (\w+) \} from '(rxheal\/[\w-]+)'`/.exec(line);
      if (!m) return;
      expect(m[4], `CHANGELOG.md:${i + 1}: the same name on both sides`).to.equal(m[2]);
      expect(Boolean(m[3]), `CHANGELOG.md:${i + 1}: type on both sides, or on neither`).to.equal(Boolean(m[1]));
      out.push({ name: m[2]!, to: m[5]!, type: Boolean(m[1]), line: i + 1 });
    });
  return out;
}

/** The names an API report declares as exported (`export interface X`, `export function X`, `export { X }`…). */
function reported(report: string): Set<string> {
  const text = readFileSync(join(ROOT, 'api', report), 'utf8');
  const names = new Set<string>();
  for (const m of text.matchAll(/^export (?:declare )?(?:abstract )?(?:const|function|class|interface|type|namespace|enum) (\w+)/gm)) names.add(m[1]!);
  for (const m of text.matchAll(/^export \{ (\w+) \}/gm)) names.add(m[1]!);
  return names;
}

describe('the tiers of the public surface (CHANGELOG.md records each move)', () => {
  const table = moves();

  it(`the root entry has at most ${ROOT_VALUES} runtime values`, () => {
    const values = Object.keys(root);
    expect(values.length, values.join(', ')).to.be.at.most(ROOT_VALUES);
  });

  it('the changelog moves names out of the root into rxheal/fleet, rxheal/events, rxheal/providers and rxheal/testing', () => {
    expect(new Set(table.map((m) => m.to))).to.deep.equal(new Set(Object.keys(SOURCES)));
    expect(table.filter((m) => !m.type).length).to.be.greaterThan(30);
  });

  it('a name moved as a value is no runtime value of the root, and is one of its new entry point', async () => {
    const wrong: string[] = [];
    for (const move of table.filter((m) => !m.type)) {
      const home = (await import(SOURCES[move.to]!)) as Record<string, unknown>;
      if (move.name in root) wrong.push(`CHANGELOG.md:${move.line}: ${move.name} is still a value of rxheal`);
      if (home[move.name] === undefined) wrong.push(`CHANGELOG.md:${move.line}: ${move.to} has no value ${move.name}`);
    }
    expect(wrong).to.deep.equal([]);
  });

  it('a name moved as a type is not in the root report, and is in its new entry point’s', () => {
    const rootNames = reported('rxheal.api.md');
    const wrong: string[] = [];
    for (const move of table.filter((m) => m.type)) {
      if (rootNames.has(move.name)) wrong.push(`CHANGELOG.md:${move.line}: api/rxheal.api.md still exports ${move.name}`);
      if (!reported(`${move.to.slice('rxheal/'.length)}.api.md`).has(move.name))
        wrong.push(`CHANGELOG.md:${move.line}: ${move.to}'s report has no ${move.name}`);
    }
    expect(wrong).to.deep.equal([]);
  });
});
