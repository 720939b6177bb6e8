/**
 * The demo page in real Chromium (Debian's `chromium`, driven by playwright-core): the agent
 * heals itself in the browser, against the two local providers — and the healing shows where
 * the user looks, at 1280×720, at 800 px wide and at a phone's 390 px: markers under the answer,
 * each linked to its log line; the input, the header and the log always in the viewport, nothing
 * overlapping, nothing cut off at the side (the fault table, the circuits' names), the summary
 * not covered; one column under 600 px. Every glyph the page shows renders with the machine's
 * fonts (Debian's default, DejaVu), none as the empty box of a missing glyph.
 * Screenshots go to test-artifacts/; the README's picture (docs/demo.png) is taken here too,
 * and retaken whenever the page's sources change (their hash is stored in the PNG).
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { chromium, type Browser, type Page } from 'playwright-core';
import { MARKS } from '../../examples/demo/marks.js';
import { startDemo, type Demo } from '../../examples/demo/serve.js';
import { RIVER_STORY } from '../../src/server/index.js';
import { runSpecFiles } from '../support/runSpecFiles.js';
import { requireProgram } from '../support/systemPackage.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const ROOT = new URL('../../', import.meta.url).pathname;
const ARTIFACTS = `${ROOT}test-artifacts/`;
const DOCS_PICTURE = `${ROOT}docs/demo.png`;
/** What the README's picture shows (the page, the scenario, the answer's text): when one of these changes, the spec retakes it. */
const PICTURE_SOURCES = [
  'examples/demo/marks.ts',
  'examples/demo/runAsTest.ts',
  'examples/demo/toolAnswers.ts',
  'examples/demo/mcpTools.ts',
  'examples/demo/index.html',
  'examples/demo/styles.css',
  'examples/demo/app.ts',
  'examples/demo/agent.ts',
  'spec/demo/browser.spec.ts',
];
const SIZES = [
  { name: '1280x720', width: 1280, height: 720 },
  { name: '800x720', width: 800, height: 720 },
  { name: '390x844', width: 390, height: 844 },
] as const;
type Size = { readonly name: string; readonly width: number; readonly height: number };

/** A run of 3+ words that appears twice: what concatenating two attempts' text produces. */
function repeatedFragment(text: string): string | undefined {
  const words = text.split(/\s+/).filter(Boolean);
  const seen = new Set<string>();
  for (let i = 0; i + 3 <= words.length; i++) {
    const gram = words.slice(i, i + 3).join(' ');
    if (seen.has(gram)) return gram;
    seen.add(gram);
  }
  return undefined;
}

// ---- the README picture: a PNG carrying the hash of what it shows (a tEXt chunk) ------------------

const sourcesHash = (): string => {
  const hash = createHash('sha256');
  for (const file of PICTURE_SOURCES)
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(`${ROOT}${file}`))
      .update('\0');
  return hash.update(RIVER_STORY).digest('hex');
};

/** The value of a PNG's `tEXt` chunk `key`, if any. */
function pngText(png: Buffer, key: string): string | undefined {
  for (let at = 8; at + 12 <= png.length;) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    if (type === 'tEXt') {
      const data = png.subarray(at + 8, at + 8 + length);
      const nul = data.indexOf(0);
      if (nul !== -1 && data.toString('latin1', 0, nul) === key) return data.toString('latin1', nul + 1);
    }
    if (type === 'IEND') break;
    at += 12 + length;
  }
  return undefined;
}

/** The PNG with a `tEXt` chunk `key` = `value` after its header chunk. */
function withPngText(png: Buffer, key: string, value: string): Buffer {
  const data = Buffer.from(`${key}\0${value}`, 'latin1');
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  chunk.write('tEXt', 4, 'latin1');
  data.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(chunk.subarray(4, 8 + data.length)), 8 + data.length);
  const afterHeader = 8 + 12 + png.readUInt32BE(8); // signature, then IHDR
  return Buffer.concat([png.subarray(0, afterHeader), chunk, png.subarray(afterHeader)]);
}

// ---- reading the page -------------------------------------------------------------------------

interface Box {
  readonly top: number;
  readonly left: number;
  readonly bottom: number;
  readonly right: number;
  readonly width: number;
  readonly height: number;
}

/** Bounding boxes of the visible elements matching each selector (the first match). */
async function boxes(page: Page, selectors: readonly string[]): Promise<Record<string, Box | null>> {
  return page.evaluate((list) => {
    const out: Record<string, Box | null> = {};
    for (const selector of list) {
      const element = document.querySelector<HTMLElement>(selector);
      if (element === null || element.hidden || element.getClientRects().length === 0) {
        out[selector] = null;
        continue;
      }
      const r = element.getBoundingClientRect();
      out[selector] = { top: r.top, left: r.left, bottom: r.bottom, right: r.right, width: r.width, height: r.height };
    }
    return out;
  }, selectors);
}

const overlap = (a: Box, b: Box): boolean =>
  Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
const inside = (a: Box, size: { width: number; height: number }): boolean =>
  a.top >= 0 && a.left >= 0 && a.bottom <= size.height + 0.5 && a.right <= size.width + 0.5;

/**
 * The layout holds: no page scroll; header, input, send button and log inside the viewport;
 * the page's regions, and the parts of the chat pane and of the panel, never overlap; the panel
 * beside the chat on a wide window, under it (the chat keeping the window's width) on a narrow one.
 */
async function expectLayout(page: Page, size: Size): Promise<void> {
  const scroll = await page.evaluate(() => ({
    h: document.documentElement.scrollHeight,
    w: document.documentElement.scrollWidth,
    ih: innerHeight,
    iw: innerWidth,
  }));
  expect(scroll.h, 'the page does not scroll vertically').to.be.at.most(scroll.ih);
  expect(scroll.w, 'the page does not scroll horizontally').to.be.at.most(scroll.iw);
  const b = await boxes(page, [
    'header',
    '#controls',
    '.chat-pane',
    'aside',
    '#degraded',
    '#chat',
    '#chips',
    '#ask',
    '#question',
    '#send',
    '.panel-circuits',
    '.panel-summary',
    '.panel-log',
    '#log',
  ]);
  for (const selector of ['header', '#question', '#send', '.panel-log', '#log', '#chat', '#chips']) {
    expect(b[selector], `${selector} is shown`).not.to.equal(null);
    expect(inside(b[selector]!, size), `${selector} ${JSON.stringify(b[selector])} is inside the ${size.name} viewport`).to.equal(true);
  }
  expect(b['#log']!.height, 'the log has room for lines').to.be.at.least(80);
  const apart = (names: string[]): void => {
    const shown = names.filter((n) => b[n] !== null);
    for (let i = 0; i < shown.length; i++) {
      for (let j = i + 1; j < shown.length; j++) expect(overlap(b[shown[i]!]!, b[shown[j]!]!), `${shown[i]} overlaps ${shown[j]}`).to.equal(false);
    }
  };
  apart(['header', '#controls', '.chat-pane', 'aside']);
  apart(['#degraded', '#chat', '#chips', '#ask']);
  apart(['.panel-circuits', '.panel-summary', '.panel-log']);
  apart(['#question', '.panel-log']);
  const chat = b['.chat-pane']!;
  const panel = b['aside']!;
  if (size.width >= 900) {
    expect(panel.left, 'the panel is beside the chat').to.be.at.least(chat.right);
    expect(chat.width).to.be.at.least(600);
  } else {
    expect(panel.top, 'the panel is under the chat').to.be.at.least(chat.bottom);
    expect(chat.width, 'the chat keeps the window’s width').to.be.at.least(size.width - 40);
    expect(b['#chat']!.height, 'the chat keeps room for the conversation').to.be.at.least(150);
  }
  if (size.width < 600) {
    // one column: the circuits, then the summary, then the log, each the panel's width
    const [circuits, summary, log] = [b['.panel-circuits']!, b['.panel-summary']!, b['.panel-log']!];
    expect(summary.top, 'one column: the summary under the circuits').to.be.at.least(circuits.bottom - 0.5);
    expect(log.top, 'one column: the log under the summary').to.be.at.least(summary.bottom - 0.5);
    for (const part of [circuits, summary, log]) expect(part.width, 'one column: each part as wide as the panel').to.be.at.least(panel.width - 1);
  }
  // nothing reaches past the window's right edge (body's overflow: hidden would cut it off unseen), but inside a box
  // that scrolls sideways (the chips on a phone), where it is scrolled to
  const past = await page.evaluate(
    (width) =>
      [...document.querySelectorAll<HTMLElement>('header, #controls *, main *')]
        .filter((e) => e.getClientRects().length > 0 && e.getBoundingClientRect().right > width + 0.5)
        .filter((e) => {
          for (let up = e.parentElement; up !== null; up = up.parentElement)
            if (['auto', 'scroll'].includes(getComputedStyle(up).overflowX) && up.getBoundingClientRect().right <= width + 0.5) return false;
          return true;
        })
        .map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}.${e.className}`),
    size.width,
  );
  expect(past, 'elements cut off at the right edge').to.deep.equal([]);
  // every circuit's name shown whole (not squeezed to nothing or an ellipsis)
  const names = await page.$$eval('.circuit .name', (items) =>
    items.map((n) => ({ text: n.textContent ?? '', width: n.getBoundingClientRect().width, scroll: n.scrollWidth, client: n.clientWidth })),
  );
  expect(names.length, 'the circuits are listed').to.be.greaterThan(0);
  for (const n of names) expect(n.width > 0 && n.scroll <= n.client + 1, `circuit ${n.text}: shown whole (${n.client} of ${n.scroll} px)`).to.equal(true);
  // the summary's first row is in view and on top (not covered by the log)
  const covered = await page.evaluate(() => {
    const row = document.querySelector('#summary tr');
    if (row === null) return null; // nothing to cover yet (no event since the page loaded)
    const r = row.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + 4, r.top + r.height / 2);
    return hit !== null && document.querySelector('.panel-summary')!.contains(hit)
      ? null
      : `covered by ${hit?.tagName.toLowerCase() ?? 'nothing'}.${hit?.className ?? ''}`;
  });
  expect(covered, 'the summary’s first row is seen').to.equal(null);
  // the last answer's markers are in view in the chat
  const markers = await boxes(page, ['.bubble.assistant:last-of-type .markers']);
  const last = markers['.bubble.assistant:last-of-type .markers'];
  if (last !== null && last !== undefined) expect(overlap(last, b['#chat']!), 'the last answer’s markers are in view').to.equal(true);
}

/**
 * The fault bar, open, fits the window: every toggle of every provider inside it and reachable
 * (the topmost element at its centre is the toggle or its label), each with its fault's name in
 * view in its row or its column.
 */
async function expectFaultsFit(page: Page, size: Size): Promise<void> {
  const toggles = await page.$$eval('[data-toggle]', (inputs) =>
    inputs.map((input) => {
      const r = input.getBoundingClientRect();
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      // the fault's name: its column's header when that is shown, else the toggle's own label
      const cell = input.closest('td')!;
      const header = (cell.closest('table') as HTMLTableElement).rows[0]!.cells[cell.cellIndex];
      const headerShown = header !== undefined && header.getClientRects().length > 0 && header.getBoundingClientRect().right <= innerWidth + 0.5;
      const name = (headerShown ? header.innerText : (input.closest('label') as HTMLElement).innerText).trim();
      return {
        toggle: (input as HTMLElement).dataset['toggle'] ?? '',
        name,
        box: { top: r.top, left: r.left, bottom: r.bottom, right: r.right, width: r.width, height: r.height },
        reachable: hit === input || (hit !== null && hit.contains(input)),
      };
    }),
  );
  expect(toggles.length, 'a toggle per fault and local provider').to.equal(22);
  for (const t of toggles) {
    expect(inside(t.box, size) && t.box.width > 0, `${t.toggle} ${JSON.stringify(t.box)} inside the ${size.name} window`).to.equal(true);
    expect(t.reachable, `${t.toggle} can be clicked (nothing on top of it)`).to.equal(true);
    expect(t.name, `${t.toggle}: its fault's name is shown`).to.not.equal('');
  }
  const table = (await boxes(page, ['#faults']))['#faults']!;
  expect(table.right, 'the fault table is not cut off').to.be.at.most(size.width + 0.5);
}

/** Markers under the last answer: kind, text, and the text of the log line each links to. */
async function markers(page: Page): Promise<{ kind: string; text: string; href: string; line: string | null }[]> {
  return page.$$eval('.bubble.assistant:last-of-type .marker', (items) =>
    items.map((item) => {
      const link = item.querySelector('a');
      const href = link?.getAttribute('href') ?? '';
      return {
        kind: (item as HTMLElement).dataset['kind'] ?? '',
        text: item.textContent ?? '',
        href,
        line: href.startsWith('#') ? (document.querySelector(href)?.textContent ?? null) : null,
      };
    }),
  );
}

describe('the demo page in Chromium', function () {
  this.timeout(60_000);
  let demo: Demo;
  let browser: Browser;
  let page: Page;
  let pageErrors: string[];
  /** Console errors about the page's own server (a resource it could not load: a 404 favicon…); the providers' failures are the demo's. */
  let ownErrors: string[];
  let opened = false;

  before(async function () {
    const executablePath = requireProgram(this, { name: 'Chromium', path: CHROMIUM, install: 'apt-get install chromium (.ci/run does), or set CHROMIUM_PATH' });
    mkdirSync(ARTIFACTS, { recursive: true });
    demo = await startDemo({ port: 0, tokenDelayMs: 10, env: {} });
    browser = await chromium.launch({
      executablePath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
    });
  });

  after(async () => {
    await browser?.close();
    await demo?.close();
  });

  const open = async (size: { width: number; height: number } = SIZES[0]): Promise<void> => {
    page = await browser.newPage({ viewport: { width: size.width, height: size.height } });
    opened = true;
    pageErrors = [];
    ownErrors = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      // the tools' MCP server's failures (a restart's 404, down's 503) are the demo's, as the providers' are
      if (m.type() === 'error' && m.location().url.startsWith(demo.url) && !m.location().url.startsWith(`${demo.url}/mcp`))
        ownErrors.push(`${m.text()} (${m.location().url})`);
    });
    await page.goto(demo.url);
    await page.waitForSelector('body[data-ready="true"]');
    // every status line the answers show, as they change (they are cleared once answered)
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { statuses: string[] }).statuses = seen;
      new MutationObserver(() => {
        for (const s of document.querySelectorAll('.bubble .status')) if (s.textContent && seen.at(-1) !== s.textContent) seen.push(s.textContent);
      }).observe(document.querySelector('#chat')!, { subtree: true, childList: true, characterData: true });
    });
  };

  beforeEach(() => {
    demo.primary.faults.clear();
    demo.secondary.faults.clear();
    demo.mcp.down = false;
    demo.mcp.slowSearch = false;
  });

  afterEach(async () => {
    if (!opened) return;
    opened = false;
    expect(pageErrors, 'errors thrown in the page').to.deep.equal([]);
    expect(ownErrors, 'resources of its own the page could not load').to.deep.equal([]);
    expect(await page.isVisible('#page-error'), 'the page shows an unexpected error').to.equal(false);
    await page.close();
  });

  /** Waits for the n-th answer to finish (or fail); returns its text (struck-through parts aside). */
  const answered = async (n: number): Promise<string> => {
    await page.waitForFunction((count) => document.querySelectorAll('.bubble.assistant.done, .bubble.assistant.failed').length >= count, n, {
      timeout: 30_000,
    });
    return (await page.$$eval('.bubble.assistant', (b, i) => b[i]?.querySelector('.live')?.textContent ?? '', n - 1)) ?? '';
  };
  const ask = async (question: string): Promise<string> => {
    const n = (await page.$$('.bubble.assistant')).length + 1;
    await page.fill('#question', question);
    await page.click('#send');
    return answered(n);
  };
  const chip = async (id: string): Promise<string> => {
    const n = (await page.$$('.bubble.assistant')).length + 1;
    await page.click(`[data-chip="${id}"]`);
    return answered(n);
  };
  /** Switches a toggle on (or off), and waits for its log line. */
  const toggle = async (selector: string, on = true): Promise<void> => {
    const notes = (await page.$$('.note.toggle')).length;
    await page.setChecked(selector, on);
    await page.waitForFunction((count) => document.querySelectorAll('.note.toggle').length > count, notes);
  };
  const logLines = (): Promise<string[]> => page.$$eval('#log li', (items) => items.map((i) => i.textContent ?? ''));

  for (const size of SIZES) {
    describe(`at ${size.name}`, () => {
      it('the long-answer chip with “reset after 3 chunks” on: the partial answer is struck through, the next provider’s answer follows once, a marker links to the log', async () => {
        await open(size);
        if (size.width < 900) await page.click('#controls > summary'); // the fault bar folds on a narrow window
        await expectFaultsFit(page, size);
        await toggle('[data-toggle="primary:reset"]');
        const answer = await chip('long');
        expect(answer).to.equal(RIVER_STORY);
        expect(repeatedFragment(answer)).to.equal(undefined);
        const discarded = await page.$$eval('.bubble.assistant del.discarded', (items) =>
          items.map((i) => ({ text: i.textContent ?? '', line: getComputedStyle(i).textDecorationLine, width: i.getBoundingClientRect().width })),
        );
        expect(discarded).to.have.length(1);
        // the 3 chunks sent before the reset (Chromium may drop the last one or two, arriving with the error)
        expect(['Once upon a', 'Once upon', 'Once']).to.include(discarded[0]!.text.trim());
        expect(discarded[0]!.line, 'visibly struck through').to.equal('line-through');
        expect(discarded[0]!.width).to.be.greaterThan(20);
        const marks = await markers(page);
        const restart = marks.find((m) => m.kind === 'fallback');
        expect(restart?.text).to.contain('restarted on model:secondary: model:primary died mid-answer (connection)');
        expect(restart?.line, 'linked to its log line').to.contain('fallback model:primary → model:secondary (connection, mid-answer)');
        // the link shows its line in the log
        await page.click('.bubble.assistant:last-of-type .marker[data-kind="fallback"] a');
        expect(await page.getAttribute(restart!.href, 'class')).to.contain('flash');
        if (size.width < 900) await page.click('#controls > summary');
        await expectLayout(page, size);
        await page.screenshot({ path: `${ARTIFACTS}demo-long-answer-reset-${size.name}.png` });
      });

      it('the weather chip: bad tool arguments → a reflection marker, its text without escape noise; the model corrects itself', async () => {
        await open(size);
        const answer = await chip('weather');
        expect(answer).to.equal('It is 22 °C and sunny in Paris.');
        const marks = await markers(page);
        const reflection = marks.find((m) => m.kind === 'reflection');
        // the MCP server's inputSchema checked by the SDK's own validator (ajv), before the server sees the call
        expect(reflection?.text).to.contain(
          "reflection on get_weather (1/3): expected arguments matching the input schema of 'get_weather' (data/units must be equal to one of the allowed values)",
        );
        expect(reflection?.line).to.contain('reflection on get_weather (1/3)');
        const log = await logLines();
        expect(log.join('\n'), 'no escaped quotes in the log').not.to.contain('\\"');
        expect(marks.map((m) => m.text).join('\n'), 'nor under the answer').not.to.contain('\\"');
        // read back from the provider after the answer (the page asks it once the answer is in)
        const usedUp = await page
          .waitForFunction(() => document.querySelector<HTMLInputElement>('[data-toggle="primary:bad-args"]')?.checked === false, undefined, { timeout: 5_000 })
          .then(
            () => true,
            () => false,
          );
        expect(usedUp, 'the one-shot fault, used up, reads back as off').to.equal(true);
        await expectLayout(page, size);
        await page.screenshot({ path: `${ARTIFACTS}demo-weather-reflection-${size.name}.png` });
      });

      it('the refund-policy chip: the slow search is degraded → a marker, its own log class, the banner within the page, the status saying degraded', async () => {
        await open(size);
        const answer = await chip('refund');
        expect(answer).to.equal("I couldn't search the knowledge base right now, so I can't look that up. Please try again later.");
        const marks = await markers(page);
        const degradation = marks.find((m) => m.kind === 'degradation');
        expect(degradation?.text).to.contain('knowledge_search degraded (no result within 3000 ms)');
        expect(degradation?.line).to.contain('knowledge_search degraded: no result within 3000 ms');
        const statuses = await page.evaluate(() => (window as unknown as { statuses: string[] }).statuses);
        expect(statuses).to.include('knowledge_search degraded (no result within 3000 ms): answering without it');
        expect(statuses.filter((s) => s.includes('knowledge_search answered'))).to.deep.equal([]);
        // the degradation's log line has its own class, not the banner's (no yellow box in the log)
        const entry = await page.$eval('#log li.degradation', (li) => ({
          className: li.className,
          background: getComputedStyle(li).backgroundColor,
          marginLeft: getComputedStyle(li).marginLeft,
        }));
        expect(entry.className).to.equal('note degradation');
        expect(entry.background).to.equal('rgba(0, 0, 0, 0)');
        expect(entry.marginLeft).to.equal('0px');
        expect(await page.isVisible('#degraded')).to.equal(true);
        // the capability is named as its tool's circuit is (tool:knowledge_search), not a third way
        expect(await page.textContent('#degraded')).to.contain('knowledge_search unavailable: no result within 3000 ms');
        expect(await page.$$eval('#circuits .circuit', (rows) => rows.map((r) => (r as HTMLElement).dataset['breaker']))).to.include('tool:knowledge_search');
        expect(await page.isChecked('#slow-search'), 'the chip slowed the search for its one question').to.equal(false);
        await expectLayout(page, size);
        await page.screenshot({ path: `${ARTIFACTS}demo-refund-degraded-${size.name}.png` });
      });
    });
  }

  describe('at 800x900: the three chips in a row', () => {
    const size: Size = { name: '800x900', width: 800, height: 900 };

    /** Each row of the summary: its text, and whether it is wholly in view in its scrolling panel (above the hint, when there is one). */
    const summaryRows = (): Promise<{ text: string; inView: boolean }[]> =>
      page.$$eval('#summary tr', (rows) => {
        const panel = document.querySelector('.panel-summary')!.getBoundingClientRect();
        const hint = document.querySelector<HTMLElement>('#summary-more');
        const bottom = hint && !hint.hidden ? hint.getBoundingClientRect().top : panel.bottom;
        return rows.map((r) => {
          const box = r.getBoundingClientRect();
          return { text: r.textContent ?? '', inView: box.top >= panel.top - 0.5 && box.bottom <= bottom + 0.5 };
        });
      });

    it('each answer shows its own healing path only: no circuit a chip before opened is skipped, its marker in view; every summary row in view, the restart the one fallback', async () => {
      await open(size);
      expect(await chip('long')).to.equal(RIVER_STORY);
      const longMarks = await markers(page);
      expect(
        longMarks.map((m) => m.kind),
        longMarks.map((m) => m.text).join(' | '),
      ).to.deep.equal(['fallback']);
      expect(await page.getAttribute('[data-breaker="model:primary"]', 'data-state'), 'the mid-answer death opened the primary’s circuit').to.equal('open');

      expect(await chip('weather')).to.equal('It is 22 °C and sunny in Paris.');
      const weather = await markers(page);
      expect(
        weather.map((m) => m.text).filter((t) => t.includes('skipped')),
        'the next chip starts from closed circuits',
      ).to.deep.equal([]);
      expect(weather.map((m) => m.kind)).to.deep.equal(['reflection']);
      expect(
        (await logLines()).some((l) => l.includes('circuit model:primary: open → closed (reset)')),
        'the fresh start is in the log',
      ).to.equal(true);
      await expectLayout(page, size);

      await chip('refund');
      expect((await markers(page)).map((m) => m.kind)).to.deep.equal(['degradation']);
      await expectLayout(page, size);
      await page.screenshot({ path: `${ARTIFACTS}demo-three-chips-800x900.png` });

      // the panel grows to its rows as they arrive (a layout pass or more later under load)
      let rows = await summaryRows();
      for (let i = 0; i < 30 && rows.some((r) => !r.inView); i++) {
        await page.waitForTimeout(100);
        rows = await summaryRows();
      }
      expect(
        rows.filter((r) => !r.inView).map((r) => r.text),
        'summary rows clipped',
      ).to.deep.equal([]);
      expect(rows.map((r) => r.text)).to.include.members(['fallbacks per model call1 (17 %)', 'reflections1']);
      expect(rows.some((r) => r.text.startsWith('knowledge_search degraded1×'))).to.equal(true);
      expect(await page.isVisible('#summary-more'), 'no hint when nothing is hidden').to.equal(false);
    });

    it('a summary taller than its panel says how many rows are out of view until scrolled', async () => {
      await open({ width: 800, height: 560 });
      await chip('long');
      await chip('refund');
      await page.waitForFunction(() => document.querySelectorAll('#summary tr').length >= 6);
      await page.waitForTimeout(300); // the next draw
      const hidden = (await summaryRows()).filter((r) => !r.inView).length;
      expect(hidden, 'rows out of view at 800×560').to.be.greaterThan(0);
      expect(await page.isVisible('#summary-more')).to.equal(true);
      expect(await page.textContent('#summary-more')).to.equal(`↓ ${hidden} more ${hidden === 1 ? 'row' : 'rows'}: scroll`);
      // scrolled to the bottom (again, if a row arrived meanwhile under load: at most 10 times)
      let lastInView: boolean | undefined = false;
      for (let i = 0; i < 10 && lastInView !== true; i++) {
        await page.$eval('.panel-summary', (panel) => panel.scrollTo({ top: panel.scrollHeight }));
        await page.waitForFunction(() => document.querySelector<HTMLElement>('#summary-more')?.hidden === true);
        lastInView = (await summaryRows()).at(-1)?.inView;
        if (lastInView !== true) await page.waitForTimeout(100);
      }
      expect(lastInView, 'scrolled down: the last row in view, and no hint').to.equal(true);
    });
  });

  describe('skipping an open circuit', () => {
    it('counts in the summary as the circuit rejecting a call, not as a fallback', async () => {
      await open();
      await toggle('[data-toggle="primary:off"]');
      await ask("What's the weather in Paris?");
      const marks = await markers(page);
      expect(marks.map((m) => m.text)).to.include('⤳ model:primary skipped (circuit open) → model:secondary');
      expect(marks.find((m) => m.text.includes('skipped'))?.line, 'its log line says it the same way').to.contain(
        'model:primary skipped (circuit open) → model:secondary',
      );
      const rows = await page.$$eval('#summary tr', (trs) => trs.map((r) => r.textContent ?? ''));
      // two model calls (the tool call, the answer): the first fell back after its retries, the second skipped the open circuit
      expect(rows).to.include('model calls / tool calls2 / 1');
      expect(rows).to.include('fallbacks per model call1 (50 %)');
      expect(
        rows.some((r) => /^model:primary opened1× · open \d+\.\d s · 1 rejected$/.test(r)),
        rows.join(' | '),
      ).to.equal(true);
    });
  });

  it('every glyph the page shows (the markers’, the header’s, the log’s) renders with the machine’s fonts, none as the empty box of a missing glyph', async () => {
    await open();
    const glyphs = [
      ...new Set(
        [...Object.values(MARKS), ...(await page.evaluate(() => document.body.innerText)), '▍'].filter((c) => c.codePointAt(0)! > 0x7f && /\S/.test(c)),
      ),
    ];
    const drawn = await page.evaluate((list) => {
      // drawn in the markers' font: a glyph no font has is drawn as the .notdef box, the same for every such character;
      // '' (nothing) and U+0378 (unassigned, in no font: the box to compare with) first (no named helper: the page has no tsx)
      const font = `12px ${getComputedStyle(document.body).fontFamily}`;
      const drawings = ['', '\u0378', ...list].map((text) => {
        const canvas = document.createElement('canvas');
        canvas.width = 48;
        canvas.height = 32;
        const context = canvas.getContext('2d')!;
        context.font = font;
        context.fillText(text, 8, 22);
        return Array.from(context.getImageData(0, 0, 48, 32).data.filter((_, i) => i % 4 === 3)).join(',');
      });
      const [blank, notdef] = drawings;
      return { notdefInked: notdef !== blank, missing: list.filter((_, i) => drawings[i + 2] === notdef) };
    }, glyphs);
    expect(drawn.notdefInked, 'a missing glyph draws a box (what the others are compared with)').to.equal(true);
    expect(glyphs, 'the markers’ glyphs are among those checked').to.include.members(Object.values(MARKS));
    expect(drawn.missing, `glyphs drawn as the missing-glyph box, of ${glyphs.join(' ')}`).to.deep.equal([]);
  });

  it('serves the page’s favicon: the browser asks for it, and gets it', async () => {
    await open();
    const href = await page.$eval('link[rel="icon"]', (l) => (l as HTMLLinkElement).href);
    expect(href.startsWith(demo.url), href).to.equal(true);
    const icon = await fetch(href);
    expect(icon.status).to.equal(200);
    expect(icon.headers.get('content-type')).to.match(/^image\//);
    await page.waitForTimeout(300); // Chromium fetches icons after the load
  });

  describe('at 1280x720', () => {
    it('primary off: retry and fallback markers; the answer via the secondary, the primary’s circuit open, its open time counting on', async () => {
      const before = new Set([...demo.primary.requests, ...demo.secondary.requests].map((r) => `${r.path}${r.id}${r.startedAt}`));
      const fresh = (r: { path: string; id: string; startedAt: number }): boolean => !before.has(`${r.path}${r.id}${r.startedAt}`);
      await open();
      await toggle('[data-toggle="primary:off"]');
      const answer = await ask("What's the weather in Paris?");
      expect(answer).to.equal('It is 22 °C and sunny in Paris.');
      expect(repeatedFragment(answer)).to.equal(undefined);
      expect(await page.getAttribute('[data-breaker="model:primary"]', 'data-state')).to.equal('open');
      expect(await page.textContent('[data-breaker="model:primary"] .countdown')).to.match(/^probe in \d+\.\d s$/);
      expect(await page.getAttribute('[data-breaker="model:secondary"]', 'data-state')).to.equal('closed');
      const marks = await markers(page);
      expect(marks.filter((m) => m.kind === 'retry').map((m) => m.text)).to.deep.equal([
        '↻ model:primary retry 1/2: connection, waited 400 ms',
        '↻ model:primary retry 2/2: connection, waited 800 ms',
      ]);
      expect(marks.find((m) => m.kind === 'fallback')?.text).to.equal('⤳ fallback model:primary → model:secondary (connection)');
      for (const m of marks) expect(m.line, `${m.text} links to its log line`).to.be.a('string');
      expect(marks.find((m) => m.kind === 'retry')?.line).to.contain('model:primary: connection, retry 1/2 after 400 ms');
      const log = await logLines();
      expect(log.some((l) => l.includes('fallback model:primary → model:secondary'))).to.equal(true);
      expect(demo.secondary.requests.filter((r) => fresh(r) && r.end === 'completed').length).to.be.greaterThan(0);
      expect(demo.primary.requests.filter((r) => fresh(r) && r.end === 'completed')).to.have.length(0);
      const summary = await page.$$eval('#summary tr', (rows) => rows.map((r) => r.textContent ?? ''));
      expect(summary.some((r) => /^model:primary opened1×/.test(r))).to.equal(true);
      expect(summary.some((r) => /^retries \(succeeded\)2 \(0\)$/.test(r))).to.equal(true);
      // no new event while the circuit stays open: its open time still counts up
      const openFor = (): Promise<number> =>
        page.$eval('[data-summary="circuit:model:primary"] td', (td) => Number(/open (\d+\.\d) s/.exec(td.textContent ?? '')?.[1]));
      const first = await openFor();
      await page.waitForFunction((before) => {
        const text = document.querySelector('[data-summary="circuit:model:primary"] td')?.textContent ?? '';
        return Number(/open (\d+\.\d) s/.exec(text)?.[1]) >= before + 0.5;
      }, first);
      expect(await page.getAttribute('[data-breaker="model:primary"]', 'data-state')).to.equal('open');
      await expectLayout(page, SIZES[0]);
      await page.screenshot({ path: `${ARTIFACTS}demo-primary-off.png` });
    });

    it('“Download this run as a test” under an answer gives the spec that replays it; saved in the project, it passes as written', async () => {
      await open();
      expect(await chip('weather')).to.equal('It is 22 °C and sunny in Paris.');
      const link = '.bubble.assistant:last-of-type .as-test a';
      expect(await page.textContent(link)).to.equal('Download this run as a test');
      const [download] = await Promise.all([page.waitForEvent('download'), page.click(link)]);
      expect(download.suggestedFilename()).to.equal('demo-run-1.spec.ts');
      const source = readFileSync(await download.path(), 'utf8');
      // the provider's bad arguments, read off the answer's events, and the reflection they caused
      expect(source).to.contain('"models": {"primary":[{"kind":"bad-tool-args"},{"kind":"ok"},{"kind":"ok"}]},');
      expect(source).to.contain('"healing": ["reflection get_weather #1"]');
      const dir = mkdtempSync(join(ROOT, '.run-as-test-'));
      try {
        writeFileSync(join(dir, download.suggestedFilename()), source);
        const run = await runSpecFiles([join(dir, download.suggestedFilename())]);
        expect(run.failed).to.deep.equal([]);
        expect(run.passed).to.deep.equal([`the demo's answer to "What's the weather in Paris?" heals as it did`]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('the tools come from the MCP server (2.x, stateless): restarted, nothing to forget — the next call answered, nothing re-initialised (its circuit closed); down, its circuit opens and its tools are unavailable, the model told', async () => {
      await open();
      expect(await ask("What's the weather in Paris?")).to.equal('It is 22 °C and sunny in Paris.');
      expect(demo.mcp.methods['server/discover'], 'MCP 2026-07-28: discovered').to.be.greaterThan(0);
      expect(demo.mcp.methods, 'never initialised').to.not.have.property('initialize');
      const discovered = demo.mcp.methods['server/discover'];
      const restarts = demo.mcp.restarts;
      const weather = demo.mcp.calls['get_weather']!;
      const notes = (await page.$$('.note.toggle')).length;
      await page.click('#mcp-restart');
      await page.waitForFunction((count) => document.querySelectorAll('.note.toggle').length > count, notes);
      expect(demo.mcp.restarts).to.equal(restarts + 1);
      expect(await ask("What's the weather in Rome?")).to.equal('It is 22 °C and sunny in Rome.');
      expect(demo.mcp.calls['get_weather'], 'the call ran once').to.equal(weather + 1);
      expect(demo.mcp.methods['server/discover'], 'no second discovery').to.equal(discovered);
      expect(demo.mcp.methods, 'no handshake').to.not.have.property('initialize');
      expect(await page.getAttribute('[data-breaker="mcp:tools"]', 'data-state')).to.equal('closed');

      await toggle('#mcp-down');
      expect(await page.textContent('#faults-on')).to.equal('— on: MCP tools server: down');
      expect(await ask("What's the weather in Berlin?")).to.equal("Sorry, the get_weather tool is not working right now, so I can't answer that part.");
      expect(await page.getAttribute('[data-breaker="mcp:tools"]', 'data-state')).to.equal('open');
      expect(await page.textContent('#degraded')).to.contain("get_weather unavailable: MCP server 'tools' is unavailable (circuit open)");
      const log = await logLines();
      expect(log.some((l) => l.includes('circuit mcp:tools: closed → open (failure_threshold)'))).to.equal(true);
      await expectLayout(page, SIZES[0]);
      await page.screenshot({ path: `${ARTIFACTS}demo-mcp-down.png` });
      await page.uncheck('#mcp-down');
      await page.waitForFunction(() => document.querySelector('#faults-on')?.textContent === '— none on');
    });

    it('the slow-first-token chip: a hedge after 1.5 s answers, the slow request aborted — hedge markers linked to the log, one answer, nothing mixed', async () => {
      await open();
      const answer = await chip('hedge');
      expect(answer).to.equal(
        'I am the local rxheal assistant. You said: "Tell me about hedged requests". Ask me about the weather in a city, or about the refund policy, and I will use a tool to answer.',
      );
      expect(repeatedFragment(answer)).to.equal(undefined);
      const marks = (await markers(page)).filter((m) => m.kind === 'hedge');
      expect(marks.map((m) => m.text.replace(/after \d+ ms/, 'after N ms'))).to.deep.equal([
        `${MARKS.hedge} model:primary: no first token after N ms — hedge 1 sent`,
        `${MARKS.hedge} model:primary: hedge 1 answered first, the other request aborted`,
      ]);
      for (const m of marks) expect(m.line, `${m.text} links to its log line`).to.be.a('string');
      const started = Number(/after (\d+) ms/.exec(marks[0]!.text)?.[1]);
      expect(started).to.be.within(1500, 2900); // the default until 20 first tokens are seen, well before the slow 3 s
      expect((await logLines()).some((l) => l.includes('model:primary: the first request cancelled (another answered first)'))).to.equal(true);
      // the slow request was aborted by the client, not answered
      await page.waitForFunction(() => true); // (the abort reaches the server within the same answer)
      expect(
        demo.primary.requests.filter((r) => r.end === 'client-closed'),
        'the slow request, aborted by the page',
      ).to.have.length.greaterThan(0);
      await expectLayout(page, SIZES[0]);
    });

    it("'continue': the secondary continues the partial answer — a continuation marker, nothing repeated, nothing discarded", async () => {
      await open();
      await page.selectOption('#mid-stream', 'continue');
      const answer = await chip('long');
      expect(answer).to.equal(RIVER_STORY);
      expect(repeatedFragment(answer)).to.equal(undefined);
      expect(await page.$$('.bubble.assistant del.discarded')).to.have.length(0);
      const marks = await markers(page);
      const continuation = marks.find((m) => m.kind === 'continuation');
      expect(continuation?.text).to.equal('⤳ continued on model:secondary: model:primary died mid-answer (connection)');
      expect(continuation?.line).to.contain('fallback model:primary → model:secondary (connection, mid-answer)');
      const continued = demo.secondary.requests.at(-1)?.body as { messages?: { role: string }[] } | undefined;
      expect(continued?.messages?.some((m) => m.role === 'assistant')).to.equal(true);
      await expectLayout(page, SIZES[0]);
    });

    it('after a reload, the fault toggles read the faults back from the providers', async () => {
      await open();
      await toggle('[data-toggle="primary:503"]');
      demo.secondary.faults.add({ kind: 'down', id: 'toggle-off' }); // set elsewhere (curl, a test)
      await page.reload();
      await page.waitForSelector('body[data-ready="true"]');
      expect(await page.isChecked('[data-toggle="primary:503"]')).to.equal(true);
      expect(await page.isChecked('[data-toggle="secondary:off"]')).to.equal(true);
      expect(await page.isChecked('[data-toggle="primary:off"]')).to.equal(false);
      expect(await page.textContent('#faults-on')).to.equal('— on: primary: 503, secondary: down');
      // and unchecking one removes the fault from the provider, the log saying so in plain words
      await toggle('[data-toggle="secondary:off"]', false);
      await page.waitForFunction(() => document.querySelector('#faults-on')?.textContent === '— on: primary: 503');
      await toggle('[data-toggle="secondary:off"]');
      await page.uncheck('[data-toggle="primary:503"]');
      await page.waitForFunction(() => document.querySelector('#faults-on')?.textContent === '— on: secondary: down');
      await page.waitForFunction(() => document.querySelectorAll('.note.toggle').length >= 3);
      // (the log starts again with the reload)
      expect(await page.$$eval('.note.toggle .text', (items) => items.map((i) => i.textContent).reverse())).to.deep.equal([
        'secondary: refuses connections — fault off',
        'secondary: refuses connections — fault on',
        'primary: HTTP 503 — fault off',
      ]);
      await expectLayout(page, SIZES[0]);
    });

    it('the README’s picture (docs/demo.png) is this page, retaken whenever its sources change', async () => {
      const hash = sourcesHash();
      const current = existsSync(DOCS_PICTURE) ? pngText(readFileSync(DOCS_PICTURE), 'rxheal-sources') : undefined;
      if (current === hash && process.env['UPDATE_DEMO_PNG'] === undefined) return; // up to date
      await open();
      await toggle('[data-toggle="primary:reset"]');
      expect(await chip('long')).to.equal(RIVER_STORY);
      expect(await page.$$('.bubble.assistant del.discarded')).to.have.length(1);
      expect(await page.isVisible('#summary tr')).to.equal(true);
      await expectLayout(page, SIZES[0]);
      const png = await page.screenshot();
      writeFileSync(DOCS_PICTURE, withPngText(png, 'rxheal-sources', hash));
      expect(pngText(readFileSync(DOCS_PICTURE), 'rxheal-sources')).to.equal(hash);
    });

    it('serves the page script minified with a linked source map (not inlined)', async () => {
      const app = await (await fetch(`${demo.url}/app.js`)).text();
      expect(app).to.match(/\/\/# sourceMappingURL=app\.js\.map\s*$/);
      // the 2.x MCP client is in it (with zod and ajv: ~470 KB of the ~720 KB); an inlined source map would more than double it
      expect(app.length).to.be.below(800_000);
      const map = (await (await fetch(`${demo.url}/app.js.map`)).json()) as { sources: string[] };
      expect(map.sources.some((f) => f.endsWith('operators/retryWithBackoff.ts'))).to.equal(true);
    });
  });
});
