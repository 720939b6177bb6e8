/**
 * Every relative link and image of README.md, the guides (docs/guides/*.md, and the site's index
 * pages docs/Guides.md and docs/Operators.md) and marble-docs/*.md resolves to a file that
 * `npm pack` puts in the tarball (so it works on the package page and in node_modules, not only
 * in a clone), and every `#anchor` names a heading of its page. Absolute http(s) links are not
 * fetched. (The built site's links: spec/docs/site.spec.ts.)
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { ROOT, npmPack } from '../package/npmPack.js';

export interface Link {
  readonly page: string;
  readonly line: number;
  readonly target: string;
}

/** Inline Markdown links and images, and HTML `src`/`href` attributes, outside code. */
export function links(page: string, markdown: string): Link[] {
  const found: Link[] = [];
  let fenced = false;
  markdown.split('\n').forEach((raw, i) => {
    if (/^\s*```/.test(raw)) fenced = !fenced;
    if (fenced) return;
    const line = raw.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) found.push({ page, line: i + 1, target: m[1]! });
    for (const m of line.matchAll(/\s(?:src|href)="([^"]+)"/g)) found.push({ page, line: i + 1, target: m[1]! });
  });
  return found;
}

/** GitHub's anchors for the headings of a page (lower case, punctuation dropped, spaces to dashes, repeats numbered). */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

function pages(): string[] {
  const dir = (name: string): string[] =>
    readdirSync(join(ROOT, name))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => `${name}/${f}`);
  return ['README.md', 'docs/Guides.md', 'docs/Operators.md', ...dir('docs/guides'), ...dir('marble-docs')];
}

describe('links in README, the guides and marble-docs (each resolves inside the published tarball)', function () {
  this.timeout(60_000);
  let packed = new Set<string>();
  const all = pages().flatMap((page) => links(page, readFileSync(join(ROOT, page), 'utf8')));

  before(() => {
    packed = npmPack().files;
  });

  it('finds the links', () => {
    expect(all.length).to.be.greaterThan(10);
  });

  it('every relative link or image is a file in `npm pack`', () => {
    const broken: string[] = [];
    for (const { page, line, target } of all) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
      const path = decodeURIComponent(target.replace(/[#?].*$/, ''));
      const file = relative(ROOT, normalize(join(ROOT, dirname(page), path)));
      if (!packed.has(file))
        broken.push(`${page}:${line} → ${target} (${file} is not in the tarball: ship it via package.json "files", or link an absolute URL)`);
    }
    expect(broken).to.deep.equal([]);
  });

  it('every #anchor names a heading of its page', () => {
    const broken: string[] = [];
    for (const { page, line, target } of all) {
      const hash = target.indexOf('#');
      if (hash < 0 || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const path = target.slice(0, hash);
      const file = path === '' ? page : relative(ROOT, normalize(join(ROOT, dirname(page), path)));
      if (!file.endsWith('.md')) continue;
      const anchor = decodeURIComponent(target.slice(hash + 1));
      if (!anchors(readFileSync(join(ROOT, file), 'utf8')).has(anchor)) broken.push(`${page}:${line} → ${target}`);
    }
    expect(broken).to.deep.equal([]);
  });
});

describe('commands and paths the docs name exist', () => {
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const contributing = readFileSync(join(ROOT, 'CONTRIBUTING.md'), 'utf8');

  it('every `npm run NAME` / `npm start` / `npm test` in README, the guides, marble-docs, CONTRIBUTING.md, bench/README.md and the examples is a package.json script', () => {
    const texts = [
      ...[...pages(), 'CONTRIBUTING.md', 'bench/README.md'].map((p) => [p, readFileSync(join(ROOT, p), 'utf8')]),
      ...['examples/basic.ts', 'examples/agent.ts'].map((p) => [p, readFileSync(join(ROOT, p), 'utf8')]),
    ];
    const missing: string[] = [];
    let count = 0;
    for (const [page, text] of texts) {
      for (const m of text!.matchAll(/\bnpm (?:run ([\w-]+(?::[\w-]+)*)|(start|test)\b)/g)) {
        count++;
        const name = m[1] ?? m[2]!;
        if (!(name in scripts)) missing.push(`${page}: npm ${m[1] ? 'run ' : ''}${name}`);
      }
    }
    expect(count).to.be.greaterThan(5);
    expect(missing).to.deep.equal([]);
  });

  it("each example's header names the script that runs it (npm start is the demo's)", () => {
    for (const file of ['examples/basic.ts', 'examples/agent.ts']) {
      const header = /^\/\*\*([\s\S]*?)\*\//.exec(readFileSync(join(ROOT, file), 'utf8'))?.[1] ?? '';
      const command = /`npm (?:run )?([\w:-]+)`/.exec(header)?.[1];
      expect(command, `${file}: its header starts with the command that runs it`).to.be.a('string');
      expect(command, file).not.to.equal('start');
      expect(scripts[command!], `${file}: npm run ${command}`).to.contain('examples/basic.ts');
    }
    expect(scripts['start']).to.contain('examples/demo/');
  });

  it("CONTRIBUTING.md's Layout names folders that exist, and says what examples/ and examples/demo/ are run with", () => {
    const layout = /## Layout\n[\s\S]*?\n```[a-z]*\n([\s\S]*?)```/.exec(contributing)?.[1];
    expect(layout, 'a ## Layout section with a fenced block').to.be.a('string');
    const folders = [...layout!.matchAll(/^(\S+\/)\s/gm)].map((m) => m[1]!);
    expect(folders.length).to.be.greaterThan(5);
    for (const folder of folders) expect(existsSync(join(ROOT, folder)), folder).to.equal(true);
    expect(layout).to.match(/^examples\/\s+npm run example/m);
    expect(layout).to.match(/^examples\/demo\/\s+npm start/m);
  });

  it('the README says the package is ESM-first and how CommonJS and TypeScript consumers load it', () => {
    expect(readme).to.match(/ESM-first/);
    expect(readme).to.match(/require\(esm\)|`require\(\)` an ES module/);
    for (const resolution of ['node16', 'nodenext', 'bundler']) expect(readme).to.contain(`\`${resolution}\``);
  });
});
