/**
 * `npm run docs`: runs every ```marble block of marble-docs/*.md against the real operators (a
 * block that fails stops here, as in `npm test`), draws each one from what its run did
 * (scripts/marbleDiagram.ts, swirly's node renderer, no browser) into marble-docs/svg/, links each
 * SVG under its block, then builds the docs site with TypeDoc (typedoc.json) into docs/site/: the
 * README as its landing page, the guides (docs/Guides.md and its children) and the operators' pages
 * (docs/Operators.md: marble-docs/), and the API reference of every entry point from the TSDoc of
 * every export. spec/docs/site.spec.ts builds the same site, checks its links and opens it in
 * Chromium.
 *
 *   npm run docs                          # every page, then the site
 *   npm run docs -- --no-typedoc          # diagrams only
 *   npm run docs -- --dir some/dir        # the pages of another folder (its svg/ beside them)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseBlocks } from './marbleBlocks.js';
import { diagramSvg } from './marbleDiagram.js';
import { runBlock } from './marbleRun.js';

const ROOT = new URL('..', import.meta.url).pathname;

/** The SVG file name of the `index`-th (0-based) block of `page`. */
export function svgName(page: string, index: number): string {
  return `${basename(page, '.md')}-${index + 1}.svg`;
}

/** Every diagram of the pages in `dir`, by SVG file name (blocks with nothing to draw have none). */
export function renderPages(dir: string): Map<string, { page: string; line: number; title: string; svg: string }> {
  const out = new Map<string, { page: string; line: number; title: string; svg: string }>();
  for (const page of readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .sort()) {
    parseBlocks(join(dir, page), readFileSync(join(dir, page), 'utf8')).forEach((block, i) => {
      const svg = diagramSvg(runBlock(block, `${page}:${block.line}`));
      if (svg !== undefined) out.set(svgName(page, i), { page, line: block.line, title: block.title, svg });
    });
  }
  return out;
}

/** Writes the SVGs and links each under its block (replacing a previous link). */
function write(dir: string): number {
  const svgDir = join(dir, 'svg');
  const diagrams = renderPages(dir);
  rmSync(svgDir, { recursive: true, force: true });
  mkdirSync(svgDir, { recursive: true });
  for (const [name, { svg }] of diagrams) writeFileSync(join(svgDir, name), svg);
  for (const page of readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .sort()) {
    const path = join(dir, page);
    const markdown = readFileSync(path, 'utf8');
    const blocks = parseBlocks(path, markdown);
    const lines = markdown.split('\n');
    // from the last block up, so line numbers stay valid while inserting
    for (let i = blocks.length - 1; i >= 0; i--) {
      const block = blocks[i]!;
      const name = svgName(page, i);
      if (!diagrams.has(name)) continue;
      let end = block.line;
      while (end < lines.length && lines[end]!.trim() !== '```') end++;
      const image = `![${block.title.replace(/[[\]]/g, '')}](svg/${name})`;
      if (lines[end + 2]?.startsWith('![') && lines[end + 2]?.includes('](svg/')) lines[end + 2] = image;
      else lines.splice(end + 1, 0, '', image);
    }
    writeFileSync(path, lines.join('\n'));
  }
  return diagrams.size;
}

if (process.argv[1] && new URL(import.meta.url).pathname === process.argv[1]) {
  const dirArg = process.argv.indexOf('--dir');
  const dir = dirArg > 0 && process.argv[dirArg + 1] ? process.argv[dirArg + 1]! : join(ROOT, 'marble-docs');
  console.log(`rendered ${write(dir)} diagrams into ${join(dir, 'svg')}`);
  if (!process.argv.includes('--no-typedoc')) execFileSync('npx', ['typedoc'], { cwd: ROOT, stdio: 'inherit' });
}
