/**
 * The docs site `npm run docs` builds (TypeDoc, typedoc.json; spec/support/site.ts builds it into a
 * temporary folder): every entry point of package.json's exports has its API reference, every guide
 * and every operators' page is a document of it, TypeDoc finds nothing to warn about (a broken
 * `{@link}`, a document link or anchor that resolves to nothing, a type referenced but not
 * documented), and every internal link and image of the built HTML resolves — to a file of the
 * site, and, with a `#anchor`, to an element with that id. Then Chromium opens the landing page (the
 * README), a guide and an API page from a 127.0.0.1 server: each renders its content and
 * navigation, with no console error or warning, no page error and no failed request.
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { builtSite, filesOf, serveSite, type BuiltSite } from '../support/site.js';
import { requireProgram } from '../support/systemPackage.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

const typedoc = JSON.parse(readFileSync(join(ROOT, 'typedoc.json'), 'utf8')) as { entryPoints: string[]; projectDocuments: string[]; readme: string };
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, string | { import?: string }> };

/** The `children` of a document's front matter: display name → path relative to the document. */
function children(page: string): Map<string, string> {
  const front = /^---\n([\s\S]*?)\n---\n/.exec(readFileSync(join(ROOT, page), 'utf8'))?.[1] ?? '';
  const out = new Map<string, string>();
  let inside = false;
  for (const line of front.split('\n')) {
    if (line === 'children:') inside = true;
    else if (inside && /^\s+\S/.test(line)) {
      const colon = line.indexOf(': ');
      out.set(line.slice(0, colon).trim(), line.slice(colon + 2).trim());
    } else inside = false;
  }
  return out;
}

/** The relative `href` and `src` targets of an HTML file (external, `data:` and `javascript:` ones left out). */
function targets(html: string): string[] {
  return [...html.matchAll(/\s(?:href|src)="([^"]*)"/g)]
    .map((m) => m[1]!.replace(/&amp;/g, '&'))
    .filter((t) => t !== '' && t !== '#' && !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith('//'));
}

describe('the docs site (npm run docs: the README, the guides, the operators’ pages and the API reference of every entry point)', function () {
  this.timeout(300_000);
  let site: BuiltSite;

  before(async () => {
    site = await builtSite();
  });

  it('typedoc.json documents every entry point of package.json’s exports, and lands on the README', () => {
    const sources = Object.values(pkg.exports)
      .map((target) => (typeof target === 'string' ? target : target.import))
      .filter((target): target is string => target !== undefined && target.endsWith('.js'))
      .map((target) => target.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts'));
    expect([...typedoc.entryPoints].sort()).to.deep.equal([...new Set(sources)].sort());
    expect(typedoc.readme).to.equal('README.md');
    expect(typedoc.projectDocuments).to.deep.equal(['docs/Guides.md', 'docs/Operators.md']);
  });

  it('docs/Guides.md has every guide of docs/guides/ as a child, and docs/Operators.md every page of marble-docs/', () => {
    const guides = [...children('docs/Guides.md').values()].filter((p) => p.startsWith('./guides/')).map((p) => p.slice('./guides/'.length));
    expect(guides.sort()).to.deep.equal(
      readdirSync(join(ROOT, 'docs', 'guides'))
        .filter((f) => f.endsWith('.md'))
        .sort(),
    );
    const operators = [...children('docs/Operators.md').values()].map((p) => p.replace('../marble-docs/', ''));
    expect(operators.sort()).to.deep.equal(
      readdirSync(join(ROOT, 'marble-docs'))
        .filter((f) => f.endsWith('.md'))
        .sort(),
    );
    for (const page of ['docs/Guides.md', 'docs/Operators.md'])
      for (const [name, path] of children(page)) expect(existsSync(join(ROOT, dirname(page), path)), `${page}: ${name} → ${path}`).to.equal(true);
  });

  it('builds with no TypeDoc warning or error', () => {
    expect(site.problems).to.deep.equal([]);
    expect(site.code).to.equal(0);
    expect(existsSync(join(site.dir, 'index.html'))).to.equal(true);
  });

  it('has a page for each guide, each operators’ page, and each entry point’s module', () => {
    const files = new Set(filesOf(site.dir));
    for (const page of ['docs/Guides.md', 'docs/Operators.md']) {
      const parent = page.slice('docs/'.length, -'.md'.length);
      expect(files.has(`documents/${parent}.html`), parent).to.equal(true);
      for (const name of children(page).keys()) expect(files.has(`documents/${parent}.${name.replace(/\W/g, '_')}.html`), `${parent} → ${name}`).to.equal(true);
    }
    expect([...files].filter((f) => f.startsWith('modules/')).length, 'a module page per entry point').to.equal(typedoc.entryPoints.length);
  });

  it('every internal link and image of every page resolves: to a file of the site, and its #anchor to an element of that file', () => {
    const files = filesOf(site.dir).filter((f) => f.endsWith('.html'));
    const ids = new Map<string, Set<string>>();
    const idsOf = (file: string): Set<string> => {
      let found = ids.get(file);
      if (!found) {
        const text = readFileSync(join(site.dir, file), 'utf8');
        found = new Set([...text.matchAll(/\s(?:id|name)="([^"]+)"/g)].map((m) => m[1]!));
        ids.set(file, found);
      }
      return found;
    };
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      for (const target of targets(readFileSync(join(site.dir, file), 'utf8'))) {
        checked++;
        const hash = target.indexOf('#');
        const path = (hash < 0 ? target : target.slice(0, hash)).replace(/\?.*$/, '');
        const into = path === '' ? file : relative(site.dir, normalize(join(site.dir, dirname(file), decodeURIComponent(path))));
        if (into.startsWith('..') || !existsSync(join(site.dir, into))) {
          broken.push(`${file} → ${target} (no file ${into})`);
          continue;
        }
        const anchor = hash < 0 ? '' : decodeURIComponent(target.slice(hash + 1));
        if (anchor !== '' && /\.(html|svg)$/.test(into) && !idsOf(into).has(anchor)) broken.push(`${file} → ${target} (no id "${anchor}" in ${into})`);
      }
    }
    expect(checked).to.be.greaterThan(1000);
    expect(broken.slice(0, 40)).to.deep.equal([]);
  });

  describe('in Chromium', () => {
    let browser: Browser | undefined;
    let served: Awaited<ReturnType<typeof serveSite>> | undefined;

    before(async function () {
      const executablePath = requireProgram(this, {
        name: 'Chromium',
        path: CHROMIUM,
        install: 'apt-get install chromium (.ci/run does), or set CHROMIUM_PATH',
      });
      served = await serveSite(site.dir);
      browser = await chromium.launch({
        executablePath,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
      });
    });
    after(async () => {
      await browser?.close();
      await served?.close();
    });

    /** Opens a page of the site: its title, first heading, code blocks, navigation links, and every problem the browser reported. */
    const open = async (path: string) => {
      const page = await browser!.newPage();
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} (${r.failure()?.errorText ?? ''})`));
      page.on('response', (r) => {
        if (r.status() >= 400) problems.push(`${r.status()}: ${r.url()}`);
      });
      await page.goto(new URL(path, served!.url).href, { waitUntil: 'load' });
      // the navigation tree is filled in by the site's script from assets/navigation.js
      await page.waitForSelector('.tsd-navigation a[href*="documents/Guides"]', { timeout: 20_000 });
      const seen = {
        title: await page.title(),
        heading: (await page.locator('.col-content h1').first().textContent())?.trim(),
        code: await page.locator('.col-content pre code').count(),
        nav: await page.locator('.tsd-navigation a').count(),
        text: (await page.locator('.col-content').innerText()).replace(/\s+/g, ' '),
      };
      await page.close();
      return { ...seen, problems };
    };

    it('the landing page is the README: its pitch and first example, the navigation to the guides and entry points', async () => {
      const seen = await open('index.html');
      expect(seen.problems).to.deep.equal([]);
      expect(seen.heading).to.equal('rxheal');
      expect(seen.text).to.contain('Self-healing LLM agents on RxJS 7.');
      expect(seen.text).to.contain('retryWithBackoff({ maxRetries: 3, initialBackoffMs: 500 })');
      expect(seen.code).to.be.at.least(4);
      expect(seen.nav).to.be.greaterThan(20);
    });

    it('a guide renders, with its code', async () => {
      const seen = await open('documents/Guides.Agents_that_heal_themselves.html');
      expect(seen.problems).to.deep.equal([]);
      expect(seen.heading).to.equal('Agents that heal themselves');
      expect(seen.text).to.contain('Resuming a cut stream instead of restarting it');
      expect(seen.code).to.be.greaterThan(3);
    });

    it('an API page renders: retryWithBackoff with its signature and example', async () => {
      const seen = await open('functions/index.retryWithBackoff.html');
      expect(seen.problems).to.deep.equal([]);
      expect(seen.heading).to.match(/retryWithBackoff$/);
      expect(seen.text).to.match(/retryWithBackoff<T>\(\s*options\?: RetryWithBackoffOptions<T>,?\s*\): MonoTypeOperatorFunction<T>/);
      expect(seen.code).to.be.greaterThan(0);
    });
  });
});
