/**
 * The house's layers: every import in src/ points down. `src/index.ts` and the subpath entries
 * (testing, otel, server, adapters…) stand on sources, sources on operators, operators on core;
 * core imports nothing of ours outside core. A lower folder importing a higher one fails here.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const SRC = new URL('../src/', import.meta.url).pathname;

/** Rank of a file by its top folder under src/: higher may import lower, never the reverse. */
function rank(file: string): number {
  const top = relative(SRC, file).split('/')[0];
  switch (top) {
    case 'core':
      return 0;
    case 'operators':
      return 1;
    case 'sources':
      return 2;
    case 'observe':
      return 3;
    default:
      return 4; // index.ts and the subpath entries (testing, otel, server, adapters)
  }
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Relative specifiers of `import … from` / `export … from` / `import()` in a file. */
function relativeImports(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']*)'/g)) found.push(match[1]!);
  return found;
}

describe('layers', () => {
  const all = files(SRC);

  it('finds the source tree', () => {
    expect(all.length).to.be.greaterThan(20);
  });

  it('every import in src/ points down: index → sources → operators → core', () => {
    const upward: string[] = [];
    for (const file of all) {
      for (const spec of relativeImports(readFileSync(file, 'utf8'))) {
        const target = resolve(dirname(file), spec);
        if (rank(target) > rank(file)) upward.push(`${relative(SRC, file)} → ${relative(SRC, target)}`);
      }
    }
    expect(upward).to.deep.equal([]);
  });

  it('the root entry keeps to what users compose (under 80 runtime exports)', async () => {
    const root = (await import('../src/index.js')) as Record<string, unknown>;
    expect(Object.keys(root).length).to.be.below(80);
  });
});
