/**
 * The rendered diagrams (marble-docs/svg/*.svg, from `npm run docs`): each is what the renderer
 * makes of its block today (so none is stale), is linked under its block, and reads cleanly — no
 * two marbles, error marks, completion bars or labels overlap (the SVG is parsed and each shape's
 * box computed), and every marble's name fits inside it. The testing guide shows two of them, the
 * default backoff among them with its attempts spaced 500 → 1 000 → 2 000 ms and labelled.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderPages } from '../../scripts/docs.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const DOCS = join(ROOT, 'marble-docs');
const SVG = join(DOCS, 'svg');

interface Node {
  readonly name: string;
  readonly attrs: Record<string, string>;
  readonly children: Node[];
  text: string;
}

/** A small XML reader for the SVGs swirly writes (elements, attributes, text; no entities beyond the five). */
export function parseXml(xml: string): Node {
  const root: Node = { name: '#root', attrs: {}, children: [], text: '' };
  const stack: Node[] = [root];
  const unescape = (s: string): string =>
    s
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'")
      .replace(/&amp;/g, '&');
  let i = 0;
  while (i < xml.length) {
    const open = xml.indexOf('<', i);
    if (open < 0) break;
    if (open > i) stack[stack.length - 1]!.text += unescape(xml.slice(i, open));
    const close = xml.indexOf('>', open);
    if (close < 0) throw new Error('unterminated tag');
    const tag = xml.slice(open + 1, close);
    i = close + 1;
    if (tag.startsWith('?') || tag.startsWith('!')) continue;
    if (tag.startsWith('/')) {
      stack.pop();
      continue;
    }
    const selfClosing = tag.endsWith('/');
    const body = selfClosing ? tag.slice(0, -1) : tag;
    const name = /^[\w:-]+/.exec(body)![0];
    const attrs: Record<string, string> = {};
    for (const m of body.slice(name.length).matchAll(/([\w:-]+)="([^"]*)"/g)) attrs[m[1]!] = unescape(m[2]!);
    const node: Node = { name, attrs, children: [], text: '' };
    stack[stack.length - 1]!.children.push(node);
    if (!selfClosing) stack.push(node);
  }
  return root;
}

interface Box {
  readonly kind: 'marble' | 'error' | 'complete' | 'text';
  readonly x1: number;
  readonly y1: number;
  readonly x2: number;
  readonly y2: number;
  readonly what: string;
}

function translation(transform: string | undefined): [number, number] {
  let x = 0;
  let y = 0;
  if (transform === undefined) return [x, y];
  for (const m of transform.matchAll(/(\w+)\(([^)]*)\)/g)) {
    const args = m[2]!
      .split(/[\s,]+/)
      .filter(Boolean)
      .map(Number);
    if (m[1] === 'translate') {
      x += args[0] ?? 0;
      y += args[1] ?? 0;
    } else if (!(m[1] === 'rotate' && args[0] === 0)) {
      throw new Error(`unexpected transform ${m[0]}`);
    }
  }
  return [x, y];
}

const num = (n: Node, a: string): number => Number(n.attrs[a] ?? 0);
/** Arial averages about 0.6 em per character (the renderer sizes its labels the same way). */
const textWidth = (text: string, size: number): number => [...text].length * size * 0.6;

/** Every marble, error mark, completion bar and text of a diagram, with its box in SVG coordinates. */
export function boxes(svg: Node): { boxes: Box[]; misfits: string[] } {
  const out: Box[] = [];
  const misfits: string[] = [];
  const walk = (node: Node, dx: number, dy: number): void => {
    const [tx, ty] = translation(node.attrs['transform']);
    const x = dx + tx;
    const y = dy + ty;
    const lines = node.children.filter((c) => c.name === 'line');
    const ellipse = node.children.find((c) => c.name === 'ellipse');
    if (
      node.name === 'g' &&
      lines.length === 2 &&
      node.children.length === 2 &&
      lines.every((l) => num(l, 'x1') !== num(l, 'x2') && num(l, 'y1') !== num(l, 'y2'))
    ) {
      const xs = lines.flatMap((l) => [num(l, 'x1'), num(l, 'x2')]);
      const ys = lines.flatMap((l) => [num(l, 'y1'), num(l, 'y2')]);
      out.push({ kind: 'error', x1: x + Math.min(...xs), y1: y + Math.min(...ys), x2: x + Math.max(...xs), y2: y + Math.max(...ys), what: '✕' });
      return;
    }
    if (node.name === 'g' && ellipse) {
      const cx = x + num(ellipse, 'cx');
      const cy = y + num(ellipse, 'cy');
      const rx = num(ellipse, 'rx');
      const ry = num(ellipse, 'ry');
      const label = node.children.find((c) => c.name === 'text');
      const name = label?.text ?? '';
      out.push({ kind: 'marble', x1: cx - rx, y1: cy - ry, x2: cx + rx, y2: cy + ry, what: `(${name})` });
      if (label && textWidth(name, parseFloat(label.attrs['font-size'] ?? '18')) > 2 * rx + 2) misfits.push(`"${name}" does not fit in its marble`);
      return;
    }
    if (node.name === 'line') {
      const vertical = num(node, 'x1') === num(node, 'x2') && Math.abs(num(node, 'y2') - num(node, 'y1')) >= 20;
      if (vertical)
        out.push({
          kind: 'complete',
          x1: x + num(node, 'x1') - 1,
          y1: y + Math.min(num(node, 'y1'), num(node, 'y2')),
          x2: x + num(node, 'x1') + 1,
          y2: y + Math.max(num(node, 'y1'), num(node, 'y2')),
          what: '|',
        });
    }
    if (node.name === 'text' && node.text.trim() !== '') {
      const [ox, oy] = [x + num(node, 'x'), y + num(node, 'y')];
      const size = parseFloat(node.attrs['font-size'] ?? '16');
      const w = textWidth(node.text, size);
      const left = node.attrs['text-anchor'] === 'middle' ? ox - w / 2 : node.attrs['text-anchor'] === 'end' ? ox - w : ox;
      out.push({ kind: 'text', x1: left, y1: oy - size / 2, x2: left + w, y2: oy + size / 2, what: `"${node.text}"` });
    }
    for (const child of node.children) walk(child, x, y);
  };
  walk(svg, 0, 0);
  return { boxes: out, misfits };
}

/** Pairs of boxes that overlap by more than half a pixel each way. */
export function overlaps(list: Box[]): string[] {
  const found: string[] = [];
  for (let i = 0; i < list.length; i++) {
    for (let j = i + 1; j < list.length; j++) {
      const a = list[i]!;
      const b = list[j]!;
      const w = Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1);
      const h = Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1);
      if (w > 0.5 && h > 0.5)
        found.push(`${a.kind} ${a.what} at ${Math.round(a.x1)},${Math.round(a.y1)} overlaps ${b.kind} ${b.what} at ${Math.round(b.x1)},${Math.round(b.y1)}`);
    }
  }
  return found;
}

describe('marble-docs/svg (the rendered diagrams)', function () {
  this.timeout(60_000);
  const files = readdirSync(SVG)
    .filter((f) => f.endsWith('.svg'))
    .sort();
  let rendered = new Map<string, { page: string; line: number; title: string; svg: string }>();

  before(() => {
    rendered = renderPages(DOCS);
  });

  it('every diagram is rendered as `npm run docs` renders it today (run it after changing a block or the renderer)', () => {
    expect(files, 'the SVG files').to.deep.equal([...rendered.keys()].sort());
    const stale = [...rendered]
      .filter(([name, { svg }]) => readFileSync(join(SVG, name), 'utf8') !== svg)
      .map(([name, { page, line }]) => `${name} (${page}:${line})`);
    expect(stale, 'stale: run npm run docs').to.deep.equal([]);
  });

  it('every diagram is linked under its block', () => {
    for (const [name, { page }] of rendered) expect(readFileSync(join(DOCS, page), 'utf8'), `${page} links svg/${name}`).to.contain(`](svg/${name})`);
  });

  for (const file of files) {
    it(`${file}: no two marbles, error marks, completion bars or labels overlap; every marble's name fits in it`, () => {
      const svg = parseXml(readFileSync(join(SVG, file), 'utf8'));
      const { boxes: found, misfits } = boxes(svg);
      expect(found.filter((b) => b.kind !== 'text').length, 'marbles found').to.be.greaterThan(0);
      expect(misfits).to.deep.equal([]);
      expect(overlaps(found)).to.deep.equal([]);
    });
  }

  it('the testing guide shows two diagrams; the default backoff has one line per attempt, spaced 500 → 1 000 → 2 000 ms, with those labels', () => {
    const guide = readFileSync(join(ROOT, 'docs', 'guides', 'testing.md'), 'utf8');
    const shown = [...guide.matchAll(/\]\(\.\.\/\.\.\/(marble-docs\/svg\/[\w-]+\.svg)\)/g)].map((m) => m[1]!);
    expect(shown).to.have.length(2);
    expect(shown).to.include('marble-docs/svg/retryWithBackoff-1.svg');
    const svg = parseXml(readFileSync(join(ROOT, 'marble-docs/svg/retryWithBackoff-1.svg'), 'utf8'));
    const texts = boxes(svg)
      .boxes.filter((b) => b.kind === 'text')
      .map((b) => b.what);
    for (const label of [
      '"attempt 1"',
      '"attempt 2"',
      '"attempt 3"',
      '"attempt 4"',
      '"500 ms"',
      '"1 000 ms"',
      '"2 000 ms"',
      '"RetriesExhaustedError after 4 attempts"',
    ])
      expect(texts).to.include(label);
    // the four attempts' ✕, left to right, each gap wider than the one before
    const errors = boxes(svg)
      .boxes.filter((b) => b.kind === 'error')
      .map((b) => b.x1)
      .slice(0, 4);
    const gaps = errors.slice(1).map((x, i) => x - errors[i]!);
    expect(gaps[0]).to.be.greaterThan(0);
    expect(gaps[1]).to.be.greaterThan(gaps[0]!);
    expect(gaps[2]).to.be.greaterThan(gaps[1]!);
  });
});
