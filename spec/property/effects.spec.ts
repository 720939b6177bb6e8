/**
 * Side effects exactly once, as a property over 10 000 schedules (fast-check, virtual time): an
 * agent pays one or two invoices through the fake payment API, whose every request may end in
 * any way that matters (a timeout, a reset or a 500 after the commit, a 503 before it, a 503
 * that says nothing was charged, a decline), with or without key support on the API's side, the
 * tool plain, with a `verify`, or deduplicating by key; retried or not, hedged or not; its process
 * killed at any ms and the run resumed by another. Whatever happened: at most one applied charge
 * per logical call, every call's outcome either the receipt of its one charge or the model told
 * the outcome is unknown — never a receipt of nothing, never a charge the model was told failed.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { asyncScheduler, type Observable } from 'rxjs';
import type { AgentEvent } from '../../src/core/events/events.js';
import { memoryJournal } from '../../src/durable/index.js';
import { hedge } from '../../src/operators/hedge.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { effectLedger, type EffectState } from '../../src/sources/effectLedger.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { payingModel, ProcessView, processConfig, toolMessages } from '../support/effectRuns.js';
import { testScheduler } from '../support/marbles.js';
import { chargeTool, PAYMENT_FAULTS, PaymentApi } from '../support/paymentApi.js';

interface Schedule {
  readonly calls: number;
  readonly keys: boolean;
  readonly kind: 'plain' | 'verify' | 'by-key';
  readonly retry: boolean;
  readonly hedged: boolean;
  readonly faults: readonly (typeof PAYMENT_FAULTS)[number][];
  readonly crashAt: number | undefined;
  /** The ledger's writes: one before and one after (`claimWith`, `finish`), or a store without them (a claim, two appends). */
  readonly writes: 'one' | 'separate';
}

const scheduleArb: fc.Arbitrary<Schedule> = fc
  .record({
    calls: fc.integer({ min: 1, max: 2 }),
    keys: fc.boolean(),
    kind: fc.constantFrom('plain' as const, 'verify' as const, 'by-key' as const),
    retry: fc.boolean(),
    hedged: fc.boolean(),
    faults: fc.array(fc.constantFrom(...PAYMENT_FAULTS), { maxLength: 6 }),
    crashAt: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
    writes: fc.constantFrom('one' as const, 'separate' as const),
  })
  // a tool that says its API deduplicates by key, on an API that does not, is the defect checkHealing finds (chaos spec)
  .filter((s) => s.kind !== 'by-key' || s.keys);

interface Outcome {
  readonly api: PaymentApi;
  readonly events: readonly AgentEvent[];
  readonly done: boolean;
  readonly error: unknown;
  readonly states: readonly EffectState[];
}

/** One schedule, played in virtual time to its end. */
function play(s: Schedule): Outcome {
  let outcome: Outcome | undefined;
  testScheduler().run(({ flush }) => {
    const api = new PaymentApi(s.faults, s.keys);
    const journal = memoryJournal();
    const tools = [chargeTool(api, { idempotent: s.kind === 'by-key' ? 'by-key' : false, verify: s.kind === 'verify' })];
    const toolPipeline = (_call: unknown, call$: Observable<unknown>): Observable<unknown> => {
      const hedged$ = s.hedged ? call$.pipe(hedge({ after: 3 })) : call$;
      return s.retry ? hedged$.pipe(retryWithBackoff({ maxRetries: 3, initialBackoffMs: 4, jitter: 'none' })) : hedged$;
    };
    const base = { model: payingModel(s.calls), tools, toolPipeline };
    let events: AgentEvent[] = [];
    let done = false;
    let error: unknown;
    const start = (view: ProcessView) => {
      events = [];
      done = false;
      error = undefined;
      return runAgent(processConfig(view, base)).subscribe({ next: (e) => events.push(e), error: (e: unknown) => (error = e), complete: () => (done = true) });
    };
    const first = new ProcessView(journal, undefined, s.writes);
    const run = start(first);
    if (s.crashAt !== undefined) {
      const at = s.crashAt;
      later(at, () => {
        if (done || error !== undefined) return;
        first.kill(run);
        later(200, () => void start(new ProcessView(journal, undefined, s.writes)));
      });
    }
    flush();
    const ledger = effectLedger(journal);
    const states: EffectState[] = [];
    for (let i = 0; i < s.calls; i++) ledger.state(`invoice-run/1/${i}/charge`).subscribe((state) => states.push(state));
    flush();
    outcome = { api, events, done, error, states };
  });
  return outcome!;
}

/** `work` `ms` from now, on the virtual clock (inside `TestScheduler.run`, asyncScheduler is it). */
const later = (ms: number, work: () => void): void => void asyncScheduler.schedule(work, ms);

/** What is wrong with one played schedule (empty: nothing). */
function violations(s: Schedule, o: Outcome): string[] {
  const problems: string[] = [];
  if (!o.done) problems.push(`the run did not complete (${String(o.error)})`);
  const messages = toolMessages(o.events);
  for (let i = 0; i < s.calls; i++) {
    const key = `invoice-run/1/${i}/charge`;
    const applied = o.api.charges.filter((c) => c.key === key);
    if (applied.length > 1) problems.push(`${key}: ${applied.length} charges applied`);
    const content = messages.get(`call_${i + 1}`)?.content;
    const unknown = content !== undefined && /outcome of charge is unknown/.test(content);
    const receipt = applied[0] === undefined ? undefined : JSON.stringify({ charge: applied[0].id, amount: applied[0].amount });
    if (content === undefined) problems.push(`${key}: the model was never told`);
    else if (receipt !== undefined && content !== receipt && !unknown) problems.push(`${key}: charged, but the model was told ${JSON.stringify(content)}`);
    else if (receipt === undefined && content.startsWith('{')) problems.push(`${key}: nothing charged, but the model was told ${JSON.stringify(content)}`);
    const state = o.states[i];
    if (state?.state === 'started' && !unknown && s.kind !== 'by-key') problems.push(`${key}: left unknown in the ledger, and the model was not told so`);
  }
  return problems;
}

const RUNS = Number(process.env['EFFECTS_RUNS'] ?? 10_000);

describe('side effects exactly once (property)', function () {
  this.timeout(120_000);

  it(`holds for ${RUNS} schedules: at most one charge per logical call, every outcome the receipt or reported unknown`, () => {
    fc.assert(
      fc.property(scheduleArb, (s) => {
        const o = play(s);
        expect(violations(s, o), JSON.stringify(s)).to.deep.equal([]);
      }),
      { numRuns: RUNS, seed: 36_000 },
    );
  });

  it('catches the defect it is there for: a tool declared by-key on an API that ignores the key is charged twice when retried', () => {
    const s: Schedule = {
      calls: 1,
      keys: false,
      kind: 'by-key',
      retry: true,
      hedged: false,
      faults: ['timeout-after-commit'],
      crashAt: undefined,
      writes: 'one',
    };
    expect(violations(s, play(s))).to.include('invoice-run/1/0/charge: 2 charges applied');
  });
});
