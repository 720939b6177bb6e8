/**
 * The demo page in real Chromium (Debian's `chromium`, driven by playwright-core): the agent
 * heals itself in the browser, against the two local providers.
 */
import { expect } from 'chai';
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startDemo, type Demo } from '../../examples/demo/serve.js';
import { requireProgram } from '../support/systemPackage.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url).pathname;

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

describe('the demo page in Chromium', function () {
  this.timeout(30_000);
  let demo: Demo;
  let browser: Browser;
  let page: Page;
  let pageErrors: string[];

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

  beforeEach(async () => {
    demo.primary.faults.clear();
    demo.secondary.faults.clear();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(demo.url);
    await page.waitForSelector('body[data-ready="true"]');
  });

  afterEach(async () => {
    expect(pageErrors, 'errors thrown in the page').to.deep.equal([]);
    expect(await page.isVisible('#page-error'), 'the page shows an unexpected error').to.equal(false);
    await page.close();
  });

  const ask = async (question: string): Promise<string> => {
    await page.fill('#question', question);
    await page.click('#send');
    await page.waitForSelector('.bubble.assistant.done, .bubble.assistant.failed', { timeout: 20_000 });
    return (await page.textContent('.bubble.assistant.done .live')) ?? '';
  };

  it('primary off: the answer arrives via the secondary, the primary’s circuit shows open, no repeated text', async () => {
    await page.check('[data-toggle="primary:off"]');
    await page.waitForSelector('.note.toggle');
    const answer = await ask("What's the weather in Paris?");
    expect(answer).to.equal('It is 22 °C and sunny in Paris.');
    expect(repeatedFragment(answer)).to.equal(undefined);
    expect(await page.getAttribute('[data-breaker="model:primary"]', 'data-state')).to.equal('open');
    expect(await page.textContent('[data-breaker="model:primary"] .countdown')).to.match(/^probe in \d+\.\d s$/);
    expect(await page.getAttribute('[data-breaker="model:secondary"]', 'data-state')).to.equal('closed');
    const log = await page.$$eval('#log li', (items) => items.map((i) => i.textContent ?? ''));
    expect(log.some((l) => l.includes('fallback model:primary → model:secondary'))).to.equal(true);
    expect(log.some((l) => l.includes('retry 1/2'))).to.equal(true);
    // the secondary answered: its server saw the completed requests, the primary none
    expect(demo.secondary.requests.filter((r) => r.end === 'completed').length).to.be.greaterThan(0);
    expect(demo.primary.requests.filter((r) => r.end === 'completed')).to.have.length(0);
    // the summary (summarize over the hub) counts the breaker opening and the fallbacks
    const summary = await page.$$eval('#summary tr', (rows) => rows.map((r) => r.textContent ?? ''));
    expect(summary.some((r) => /^model:primary opened1×/.test(r))).to.equal(true);
    expect(summary.some((r) => /^retries \(succeeded\)2 \(0\)$/.test(r))).to.equal(true);
    await page.screenshot({ path: `${ARTIFACTS}demo-primary-off.png` });
  });

  it('primary dies mid-answer: the partial text is visibly discarded and the secondary’s answer is shown once', async () => {
    await page.check('[data-toggle="primary:reset"]');
    await page.waitForSelector('.note.toggle');
    const answer = await ask('Tell me something nice about rivers');
    expect(repeatedFragment(answer)).to.equal(undefined);
    const discarded = await page.$$eval('.bubble.assistant del.discarded', (items) => items.map((i) => i.textContent ?? ''));
    expect(discarded.length).to.be.greaterThan(0);
    expect(answer.length).to.be.greaterThan(discarded[0]!.length);
    // what a reader sees, struck-through part aside, starts with the discarded words (same answer, restarted)
    expect(answer.startsWith(discarded[0]!.trim())).to.equal(true);
    await page.screenshot({ path: `${ARTIFACTS}demo-mid-stream-restart.png` });
  });

  it("'continue': the secondary continues the partial answer with no repeated text and nothing discarded", async () => {
    await page.selectOption('#mid-stream', 'continue');
    await page.check('[data-toggle="primary:reset"]');
    await page.waitForSelector('.note.toggle');
    const answer = await ask('Tell me something nice about rivers');
    expect(answer).to.equal(
      'I am the local rxheal assistant. You said: "Tell me something nice about rivers". Ask me about the weather in a city, or about the refund policy, and I will use a tool to answer.',
    );
    expect(repeatedFragment(answer)).to.equal(undefined);
    expect(await page.$$('.bubble.assistant del.discarded')).to.have.length(0);
    const continued = demo.secondary.requests.at(-1)?.body as { messages?: { role: string }[] } | undefined;
    expect(continued?.messages?.some((m) => m.role === 'assistant')).to.equal(true);
  });

  it('bad tool arguments: the agent reflects, corrects itself and answers', async () => {
    await page.check('[data-toggle="primary:bad-args"]');
    await page.waitForSelector('.note.toggle');
    const answer = await ask("What's the weather in Oslo?");
    expect(answer).to.equal('It is 22 °C and sunny in Oslo.');
    const log = await page.$$eval('#log li', (items) => items.map((i) => i.textContent ?? ''));
    expect(log.some((l) => l.includes('reflection on get_weather (1/3)'))).to.equal(true);
  });

  it('serves the page script minified with a linked source map (not inlined)', async () => {
    const app = await (await fetch(`${demo.url}/app.js`)).text();
    expect(app).to.match(/\/\/# sourceMappingURL=app\.js\.map\s*$/);
    expect(app.length).to.be.below(300_000);
    const map = (await (await fetch(`${demo.url}/app.js.map`)).json()) as { sources: string[] };
    expect(map.sources.some((f) => f.endsWith('operators/retryWithBackoff.ts'))).to.equal(true);
  });
});
