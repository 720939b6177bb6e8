import { expect } from 'chai';
import { of, Subject, throwError, concat } from 'rxjs';
import { InvalidOptionError } from '../../src/core/errors/errors.js';
import type { AgentEvent, HealEvent } from '../../src/core/events/events.js';
import { summarize, summarizeEvents, type ResilienceSummary, type TimedEvent } from '../../src/observe/summarize.js';
import { record } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';
import { runHealingRun } from './healingRun.js';

/**
 * The run's summary at its end (3550 ms): the breaker is still open, search was degraded 210 ms.
 * The run's 3 model calls made 4 provider attempts (primary failed in step 1, secondary answered).
 */
const RUN_SUMMARY: ResilienceSummary = {
  at: 3550,
  events: 50,
  calls: { model: 3, tool: 10 },
  targets: {
    'model:fallback(primary, secondary)': { calls: 3, errors: {}, retries: 0, retriesByCategory: {}, retriesSucceeded: 0, retryRate: 0 },
    'model:primary': { calls: 3, errors: { service_unavailable: 1 }, retries: 0, retriesByCategory: {}, retriesSucceeded: 0, retryRate: 0 },
    'model:secondary': { calls: 1, errors: {}, retries: 0, retriesByCategory: {}, retriesSucceeded: 0, retryRate: 0 },
    'tool:get_weather': {
      calls: 3,
      errors: { validation_error: 1, service_unavailable: 1 },
      retries: 1,
      retriesByCategory: { service_unavailable: 1 },
      retriesSucceeded: 1,
      retryRate: 1 / 3,
    },
    // the 5th retry was rejected by the open breaker: 5 retries, 5 executions
    'tool:broken_api': {
      calls: 5,
      errors: { service_unavailable: 5 },
      retries: 5,
      retriesByCategory: { service_unavailable: 5 },
      retriesSucceeded: 0,
      retryRate: 1,
    },
    'tool:knowledge_search': { calls: 2, errors: {}, retries: 0, retriesByCategory: {}, retriesSucceeded: 0, retryRate: 0 },
  },
  retries: { total: 6, succeeded: 1, withheld: 0, byCategory: { service_unavailable: 6 } },
  circuits: {
    'tool:broken_api': { state: 'open', opened: 1, closed: 0, rejected: 1, openMs: 3120, longestOpenMs: 3120, meanOpenMs: 3120, openSince: 430 },
  },
  fallbacks: { total: 1, midStream: 0, byRoute: { 'model:primary > model:secondary': 1 }, byReason: { service_unavailable: 1 }, perModelCall: 1 / 3 },
  reflections: { total: 1, exhausted: 0, corrected: 1, successRate: 1 },
  validations: { checks: 0, invalid: 0, corrected: 0, successRate: null },
  capabilities: { 'knowledge-search': { degraded: 1, restored: 1, degradedMs: 210, reason: 'no result within 3000 ms' } },
  budgetExceeded: {},
};

/** summarizeEvents over [ms, event] pairs. */
const timed = (...events: [number, AgentEvent][]): TimedEvent[] => events;

describe('summarize / summarizeEvents (the article’s resilience metrics)', () => {
  describe('the scripted healing run (retry, breaker, fallback, reflection, degradation)', () => {
    it("emit: 'final' gives one summary when the run's stream ends", () => {
      const summaries: ResilienceSummary[] = [];
      runHealingRun((events$) => summarize(events$, { emit: 'final' }).subscribe((s) => summaries.push(s)));
      expect(summaries).to.deep.equal([RUN_SUMMARY]);
    });

    it('summarizeEvents gives the same from the recorded [time, event] pairs', () => {
      const log = runHealingRun();
      expect(summarizeEvents(log.events)).to.deep.equal(RUN_SUMMARY);
    });

    it("on the hub's events$: a running summary per event; the breaker stays open 60 000 ms (half-open at 60 430)", () => {
      const summaries: ResilienceSummary[] = [];
      let received = 0;
      runHealingRun((_events$, hub) => {
        hub.events$.subscribe(() => received++);
        summarize(hub.events$).subscribe((s) => summaries.push(s));
      });
      expect(summaries.map((s) => s.events)).to.deep.equal(Array.from({ length: received }, (_, i) => i + 1));
      const last = summaries.at(-1)!;
      expect(last.at).to.equal(60_430);
      expect(last.circuits).to.deep.equal({
        'tool:broken_api': { state: 'half-open', opened: 1, closed: 0, rejected: 1, openMs: 60_000, longestOpenMs: 60_000, meanOpenMs: 60_000 },
      });
      expect(last.capabilities).to.deep.equal(RUN_SUMMARY.capabilities);
      expect(last.targets).to.deep.equal(RUN_SUMMARY.targets);
      expect(last.fallbacks).to.deep.equal(RUN_SUMMARY.fallbacks);
      // while open, the running summary counts the open period up to each event's time
      const during = summaries.find((s) => s.at === 3040)!;
      expect(during.circuits['tool:broken_api']).to.deep.include({ state: 'open', openMs: 2610, openSince: 430 });
      expect(during.capabilities['knowledge-search']).to.deep.equal({
        degraded: 1,
        restored: 0,
        degradedMs: 10,
        degradedSince: 3030,
        reason: 'no result within 3000 ms',
      });
    });
  });

  describe('self-correction', () => {
    const reflection = (tool: string, attempt: number, exhausted = false): AgentEvent => ({
      type: 'reflection',
      tool,
      callId: `${tool}-${attempt}`,
      attempt,
      max: 2,
      exhausted,
      prompt: '…',
    });

    it("a reflection followed by a success of that tool (tool-result, or a call-end 'success') is a correction", () => {
      const s = summarizeEvents([
        reflection('get_weather', 1),
        { type: 'tool-result', id: 'x', name: 'get_weather', result: {} },
        reflection('search', 1),
        { type: 'call-end', kind: 'tool', name: 'search', id: 'y', step: 2, at: 0, durationMs: 0, outcome: 'success' },
        // both forms of the same success count once
        { type: 'tool-result', id: 'y', name: 'search', result: {} },
      ]);
      expect(s.reflections).to.deep.equal({ total: 2, exhausted: 0, corrected: 2, successRate: 1 });
    });

    it('reflections that end in the give-up instruction, or with no success yet, are not corrections', () => {
      const s = summarizeEvents([
        reflection('get_weather', 1),
        reflection('get_weather', 2),
        reflection('get_weather', 3, true),
        { type: 'tool-result', id: 'x', name: 'get_weather', result: {} },
        reflection('search', 1),
        { type: 'tool-result', id: 'z', name: 'other', result: {} },
      ]);
      expect(s.reflections).to.deep.equal({ total: 4, exhausted: 1, corrected: 0, successRate: 0 });
    });

    it('output validation: answers failing their first check and passing a later one', () => {
      const s = summarizeEvents([
        { type: 'validation', valid: false, attempt: 1, problems: ['no city'] },
        { type: 'validation', valid: true, attempt: 2, problems: [] },
        { type: 'validation', valid: false, attempt: 1, problems: ['no city'] },
        { type: 'validation', valid: false, attempt: 2, problems: ['no city'] },
        { type: 'validation', valid: true, attempt: 1, problems: [] },
      ]);
      expect(s.validations).to.deep.equal({ checks: 5, invalid: 3, corrected: 1, successRate: 0.5 });
    });
  });

  describe('breakers', () => {
    const transition = (from: string, to: string, reason: string): HealEvent =>
      ({ type: 'circuit', breaker: 'model:primary', kind: 'transition', from, to, reason, failures: 0 }) as HealEvent;

    it('opened, closed, time open per period (to half-open), longest and mean; a failed probe opens it again', () => {
      const s = summarizeEvents(
        timed(
          [100, transition('closed', 'open', 'failure_threshold')],
          [500, { type: 'circuit', breaker: 'model:primary', kind: 'rejected', retryAfterMs: 600 }],
          [1100, transition('open', 'half-open', 'reset_timeout')],
          [1150, transition('half-open', 'open', 'probe_failure')],
          [1650, transition('open', 'half-open', 'reset_timeout')],
          [1700, transition('half-open', 'closed', 'probe_success')],
        ),
      );
      expect(s.circuits).to.deep.equal({
        'model:primary': { state: 'closed', opened: 2, closed: 1, rejected: 1, openMs: 1500, longestOpenMs: 1000, meanOpenMs: 750 },
      });
    });

    it('a period still running counts up to `now`; a transition with its own `at` is timed by it', () => {
      const opened = { ...transition('closed', 'open', 'failure_threshold'), at: 40 } as HealEvent;
      expect(summarizeEvents(timed([50, opened]), { now: 1000 }).circuits['model:primary']).to.deep.equal({
        state: 'open',
        opened: 1,
        closed: 0,
        rejected: 0,
        openMs: 960,
        longestOpenMs: 960,
        meanOpenMs: 960,
        openSince: 40,
      });
    });
  });

  it('retries per target and error category; fallbacks per model call; budgets', () => {
    const start = (name: string): AgentEvent => ({ type: 'call-start', kind: 'model', name, id: 'x', step: 1, at: 0 });
    const s = summarizeEvents([
      start('gpt-4o'),
      { type: 'retry', target: 'model:gpt-4o', attempt: 1, max: 3, delayMs: 500, category: 'rate_limit' },
      start('gpt-4o'),
      { type: 'retry', target: 'model:gpt-4o', attempt: 2, max: 3, delayMs: 1000, category: 'server_error' },
      start('gpt-4o'),
      { type: 'retry-succeeded', target: 'model:gpt-4o', attempt: 3 },
      start('gpt-4o'),
      { type: 'fallback', from: 'model:gpt-4o', to: 'model:claude', reason: 'rate_limit', midStream: true },
      { type: 'retry', target: 'tool:search', attempt: 1, max: 3, delayMs: 500, category: 'timeout' },
      { type: 'budget-exceeded', resource: 'tokens', limit: 100, used: 120 },
    ]);
    expect(s.targets['model:gpt-4o']).to.deep.equal({
      calls: 4,
      errors: {},
      retries: 2,
      retriesByCategory: { rate_limit: 1, server_error: 1 },
      retriesSucceeded: 1,
      retryRate: 0.5,
    });
    expect(s.targets['tool:search']).to.deep.equal({
      calls: 0,
      errors: {},
      retries: 1,
      retriesByCategory: { timeout: 1 },
      retriesSucceeded: 0,
      retryRate: null,
    });
    expect(s.retries).to.deep.equal({ total: 3, succeeded: 1, withheld: 0, byCategory: { rate_limit: 1, server_error: 1, timeout: 1 } });
    expect(s.fallbacks).to.deep.equal({
      total: 1,
      midStream: 1,
      byRoute: { 'model:gpt-4o > model:claude': 1 },
      byReason: { rate_limit: 1 },
      perModelCall: 0.25,
    });
    expect(s.budgetExceeded).to.deep.equal({ tokens: 1 });
  });

  it('counts retries withheld for a non-idempotent tool, and provider attempts (parentId) under their own model only', () => {
    const s = summarizeEvents([
      { type: 'call-start', kind: 'model', name: 'fallback(gpt, claude)', id: 'step-1.1', step: 1, at: 0 },
      { type: 'call-start', kind: 'model', name: 'gpt', id: 'step-1.1/1', step: 1, at: 0, parentId: 'step-1.1' },
      { type: 'call-start', kind: 'model', name: 'claude', id: 'step-1.1/2', step: 1, at: 5, parentId: 'step-1.1' },
      { type: 'retry-withheld', target: 'tool:send_email', reason: 'not_idempotent', category: 'service_unavailable' },
    ]);
    expect(s.calls).to.deep.equal({ model: 1, tool: 0 });
    expect([s.targets['model:gpt']?.calls, s.targets['model:claude']?.calls]).to.deep.equal([1, 1]);
    expect(s.retries).to.deep.equal({ total: 0, succeeded: 0, withheld: 1, byCategory: {} });
    expect(s.events).to.equal(4);
  });

  it('a capability degraded again with a new reason is one period; its reason is the latest', () => {
    const s = summarizeEvents(
      timed(
        [1000, { type: 'degraded', capability: 'search', reason: 'no result within 3000 ms' }],
        [1500, { type: 'degraded', capability: 'search', reason: 'failed (timeout)' }],
        [2000, { type: 'restored', capability: 'search' }],
        [5000, { type: 'degraded', capability: 'search', reason: 'failed (timeout)' }],
      ),
      { now: 5500 },
    );
    expect(s.capabilities).to.deep.equal({ search: { degraded: 2, restored: 1, degradedMs: 1500, degradedSince: 5000, reason: 'failed (timeout)' } });
  });

  describe('summarize()', () => {
    it("'each' (default): a fresh summary after each counted event; other events (text, messages) give none", () => {
      let out: [number, ResilienceSummary][] = [];
      testScheduler().run(({ flush, cold }) => {
        const events$ = cold<AgentEvent>('a-b 5ms c|', {
          a: { type: 'text-delta', text: 'Hi' },
          b: { type: 'degraded', capability: 'search', reason: 'slow' },
          c: { type: 'restored', capability: 'search' },
        });
        const log = record(summarize(events$));
        flush();
        out = log.events;
      });
      expect(out.map(([t, s]) => [t, s.at, s.events, s.capabilities['search']?.degradedMs])).to.deep.equal([
        [2, 2, 1, 0],
        [8, 8, 2, 6],
      ]);
      expect(out[0]![1]).not.to.equal(out[1]![1]);
    });

    it("'final' with an input that errors: the summary as of the error, then the error", () => {
      const error = new Error('boom');
      let log!: ReturnType<typeof record<ResilienceSummary>>;
      testScheduler().run(({ flush }) => {
        log = record(
          summarize(
            concat(
              of<AgentEvent>({ type: 'budget-exceeded', resource: 'steps', limit: 10, used: 11 }),
              throwError(() => error),
            ),
            { emit: 'final' },
          ),
        );
        flush();
      });
      expect(log.events.map(([, s]) => s.budgetExceeded)).to.deep.equal([{ steps: 1 }]);
      expect(log.error()).to.equal(error);
    });

    it('is cold and per subscription: each subscriber counts from its own start', () => {
      const events = new Subject<AgentEvent>();
      const summary$ = summarize(events, { emit: 'final' });
      const a: ResilienceSummary[] = [];
      const b: ResilienceSummary[] = [];
      summary$.subscribe((s) => a.push(s));
      events.next({ type: 'restored', capability: 'x' });
      summary$.subscribe((s) => b.push(s));
      events.next({ type: 'restored', capability: 'x' });
      events.complete();
      expect([a[0]!.events, b[0]!.events]).to.deep.equal([2, 1]);
    });

    it('invalid options throw InvalidOptionError at once', () => {
      for (const options of [{ emit: 'sometimes' }, { scheduler: {} }, { every: 1 }, 5]) {
        expect(() => summarize(of(), options as never), JSON.stringify(options)).to.throw(InvalidOptionError);
      }
      expect(() => summarizeEvents('events' as never)).to.throw(InvalidOptionError);
      expect(() => summarizeEvents([], { now: Number.NaN })).to.throw(InvalidOptionError, 'summarizeEvents: option "now" must be a finite number, got NaN');
    });
  });

  it('an empty stream: zeros and null rates', () => {
    expect(summarizeEvents([])).to.deep.equal({
      at: 0,
      events: 0,
      calls: { model: 0, tool: 0 },
      targets: {},
      retries: { total: 0, succeeded: 0, withheld: 0, byCategory: {} },
      circuits: {},
      fallbacks: { total: 0, midStream: 0, byRoute: {}, byReason: {}, perModelCall: null },
      reflections: { total: 0, exhausted: 0, corrected: 0, successRate: null },
      validations: { checks: 0, invalid: 0, corrected: 0, successRate: null },
      capabilities: {},
      budgetExceeded: {},
    });
  });
});
