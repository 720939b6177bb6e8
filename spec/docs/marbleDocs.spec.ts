/**
 * Executes every ```marble block of marble-docs/*.md against the real operators in
 * TestScheduler.run: a diagram that no longer matches the code fails `npm test`.
 * The block format is documented in scripts/marbleBlocks.ts; the runner, shared with
 * `npm run docs` (which draws each diagram from what the run did), is scripts/marbleRun.ts.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { readBlocks } from '../../scripts/marbleBlocks.js';
import { runBlock } from '../../scripts/marbleRun.js';

const DOCS = new URL('../../marble-docs/', import.meta.url).pathname;

describe('marble-docs (every diagram runs against the real operator)', () => {
  const blocks = readBlocks(DOCS);

  it('has a page with diagrams for each of the five operators, bulkhead, hedge, rxheal/mcp and its Tasks', () => {
    const pages = new Set(blocks.map((b) => basename(b.file)));
    for (const page of [
      'retryWithBackoff.md',
      'circuitBreak.md',
      'reflectOnError.md',
      'fallbackTo.md',
      'degradeAfter.md',
      'bulkhead.md',
      'hedge.md',
      'mcp.md',
      'tasks.md',
    ]) {
      expect(pages.has(page), page).to.equal(true);
    }
  });

  it('keeps no diagram outside a marble block (every fenced block names its language)', () => {
    for (const page of readdirSync(DOCS).filter((f) => f.endsWith('.md'))) {
      let open = false;
      readFileSync(join(DOCS, page), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (!line.trim().startsWith('```')) return;
          if (!open) expect(line.trim(), `${page}:${i + 1}: a fenced block without a language (a diagram? make it a marble block)`).not.to.equal('```');
          open = !open;
        });
    }
  });

  for (const block of blocks) {
    it(`${basename(block.file)}:${block.line} ${block.title}`, () => {
      runBlock(block, `${basename(block.file)}:${block.line}`);
    });
  }
});
