/**
 * `npm run docs`: renders every ```marble block of marble-docs/*.md to an SVG with swirly's
 * parser and node renderer (no browser), links each SVG under its block, then builds the TypeDoc
 * reference (docs/api) from the TSDoc of every export, with the marble-docs pages included.
 */
import { parseMarbleDiagramSpecification } from '@swirly/parser';
import { renderMarbleDiagram } from '@swirly/renderer-node';
import { lightStyles } from '@swirly/theme-default-light';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { TestScheduler } from 'rxjs/testing';
import { all, named, one, parseBlocks, type MarbleBlock } from './marbleBlocks.js';

const ROOT = new URL('..', import.meta.url).pathname;
const dirArg = process.argv.indexOf('--dir');
const DOCS = dirArg > 0 && process.argv[dirArg + 1] ? process.argv[dirArg + 1]! : join(ROOT, 'marble-docs');
const SVG = join(DOCS, 'svg');

interface Line {
  readonly marbles: string;
  readonly messages: { frame: number; kind: string; symbol: string }[];
}

/** Frames of a run-mode marble string (1 frame = 1 ms), with the symbol drawn for each. */
function parse(marbles: string): Line {
  const factor = TestScheduler.frameTimeFactor;
  TestScheduler.frameTimeFactor = 1;
  try {
    const letters: Record<string, string> = {};
    for (const ch of marbles.replace(/\d+(ms|s|m)/g, '')) if (/[A-Za-z0-9]/.test(ch)) letters[ch] = ch;
    const parsed = TestScheduler.parseMarbles(marbles, letters, 'error', false, true);
    return {
      marbles,
      messages: parsed.map(({ frame, notification }) => ({
        frame,
        kind: notification.kind,
        symbol: notification.kind === 'N' ? String(notification.value) : notification.kind === 'E' ? '#' : '|',
      })),
    };
  } finally {
    TestScheduler.frameTimeFactor = factor;
  }
}

/**
 * Dash-only marbles for swirly: frames are mapped to columns with long gaps compressed (a 60 s
 * wait is a few dashes), the same mapping for every line of a diagram so they stay aligned.
 */
function layout(lines: Line[], minWidth = 0): string[] {
  const frames = [...new Set(lines.flatMap((l) => l.messages.map((m) => m.frame)))].sort((a, b) => a - b);
  const column = new Map<number, number>();
  let col = 1;
  let previous = 0;
  for (const frame of frames) {
    const gap = frame - previous;
    col += gap <= 6 ? gap : 6 + Math.ceil(Math.log10(gap));
    column.set(frame, col);
    previous = frame;
  }
  // swirly sizes the operator box by the streams: widen short diagrams so the title fits
  const lead = Math.max(0, minWidth - (col + 2));
  for (const [frame, c] of column) column.set(frame, c + lead);
  const width = col + 2 + lead;
  return lines.map((line) => {
    const cells: string[] = Array.from({ length: width }, () => '-');
    const byColumn = new Map<number, string[]>();
    for (const m of line.messages) {
      const c = column.get(m.frame)!;
      byColumn.set(c, [...(byColumn.get(c) ?? []), m.symbol]);
    }
    let out = '';
    for (let c = 0; c < width; c++) {
      const symbols = byColumn.get(c);
      out += symbols ? (symbols.length === 1 ? symbols[0] : `(${symbols.join('')})`) : cells[c];
    }
    // nothing after the end of the stream
    return out.replace(/([#|]\)?)-+$/, '$1');
  });
}

function title(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 60 ? `${flat.slice(0, 57)}…` : flat;
}

/** The swirly text of one block: inputs, the operator, outputs. */
function swirly(block: MarbleBlock): string | undefined {
  const inputs: string[] = [];
  const calls = one(block, 'calls');
  if (calls !== undefined) inputs.push(calls);
  else {
    const source = one(block, 'source');
    if (source !== undefined) inputs.push(source);
    inputs.push(...all(block, 'attempt'));
  }
  // the diagram shows the main output: `result`, else the first `expect` (later ones assert side data)
  const expects = named(block, 'expect');
  const main = one(block, 'result') ?? expects[0]?.[1];
  const outputs = main === undefined ? [] : [main];
  if (inputs.length === 0 && outputs.length === 0) return undefined;
  const heading = headingOf(block, expects);
  const lines = layout([...inputs, ...outputs].map(parse), Math.ceil(heading.length * 0.5) + 2);
  return [...lines.slice(0, inputs.length), `> ${heading}`, ...lines.slice(inputs.length)].join('\n\n');
}

/** The operator box's text: the operator, or what the first `expect` observes (a `let`'s expression). */
function headingOf(block: MarbleBlock, expects: [string, string][]): string {
  const subject = expects[0]?.[0];
  const defined = subject === undefined ? undefined : named(block, 'let').find(([name]) => name === subject)?.[1];
  const operator = one(block, 'operator') ?? defined ?? subject ?? block.title;
  return title(one(block, 'calls') !== undefined ? `each call through ${operator}` : operator);
}

function render(): number {
  rmSync(SVG, { recursive: true, force: true });
  mkdirSync(SVG, { recursive: true });
  let count = 0;
  for (const page of readdirSync(DOCS).filter((f) => f.endsWith('.md')).sort()) {
    const path = join(DOCS, page);
    const markdown = readFileSync(path, 'utf8');
    const blocks = parseBlocks(path, markdown);
    const lines = markdown.split('\n');
    // from the last block up, so line numbers stay valid while inserting
    for (let i = blocks.length - 1; i >= 0; i--) {
      const block = blocks[i]!;
      const text = swirly(block);
      if (!text) continue;
      const name = `${basename(page, '.md')}-${i + 1}.svg`;
      writeFileSync(join(SVG, name), renderMarbleDiagram(parseMarbleDiagramSpecification(text), { theme: lightStyles }).xml);
      count++;
      let end = block.line;
      while (end < lines.length && lines[end]!.trim() !== '```') end++;
      const image = `![${block.title.replace(/[[\]]/g, '')}](svg/${name})`;
      // replace a previous link, or insert one after the block's closing fence
      if (lines[end + 2]?.startsWith('![') && lines[end + 2]?.includes('](svg/')) lines[end + 2] = image;
      else lines.splice(end + 1, 0, '', image);
    }
    writeFileSync(path, lines.join('\n'));
  }
  return count;
}

const rendered = render();
console.log(`rendered ${rendered} diagrams into marble-docs/svg`);
if (!process.argv.includes('--no-typedoc')) {
  execFileSync('npx', ['typedoc'], { cwd: ROOT, stdio: 'inherit' });
}
