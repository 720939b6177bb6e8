/**
 * docs/architecture.md, the map of src/: its rooms' section and its diagram (docs/architecture.svg)
 * are what scripts/architecture.ts makes of the code today (so neither is stale), the diagram shows
 * every room, and every source path the page names exists.
 */
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PAGE, roomsSection, SVG, svg, withSection } from '../../scripts/architecture.js';
import { ROOMS, ROOT } from '../../scripts/layers.js';

describe('docs/architecture.md (npm run architecture)', function () {
  this.timeout(30_000);
  const page = readFileSync(PAGE, 'utf8');

  it('its rooms section is the one the code makes today', () => {
    expect(withSection(page, roomsSection()) === page, 'stale: run `npm run architecture` and commit docs/').to.equal(true);
  });

  it('its diagram is the one the code makes today, and shows every room', async () => {
    const current = await svg();
    expect(readFileSync(SVG, 'utf8') === current, 'docs/architecture.svg is stale: run `npm run architecture`').to.equal(true);
    const labels = [...current.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) =>
      m[1]!.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n))),
    );
    for (const room of ROOMS) {
      const name = room.path === 'index.ts' ? 'rxheal (index.ts)' : room.path.replace(/^core\//, '');
      expect(labels, room.path).to.include(name);
    }
    expect(page).to.include('](architecture.svg)');
  });

  it('names only source files that exist, and walks a model call and a tool call through them', () => {
    const paths = [...new Set([...page.matchAll(/`(src\/[\w./-]+\.ts)`/g)].map((m) => m[1]!))];
    expect(paths.length).to.be.greaterThan(15);
    expect(paths.filter((p) => !existsSync(join(ROOT, p)))).to.deep.equal([]);
    expect(page)
      .to.match(/## The path of one model call/)
      .and.to.match(/## The path of one tool call/);
  });

  it('has one row per room, in the order of scripts/layers.ts', () => {
    const rows = [...page.matchAll(/^\| (\d+) \| `([^`]+)` \|/gm)].map((m) => m[2]);
    expect(rows).to.deep.equal(ROOMS.map((r) => r.path));
  });
});
