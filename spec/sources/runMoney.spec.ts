import { expect } from 'chai';
import fc from 'fast-check';
import { Observable, timer, type SchedulerLike } from 'rxjs';
import { BudgetExceededError, HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { AgentEvent, AssistantMessage, BudgetEvent, SpendEvent, TurnEvent } from '../../src/core/events/events.js';
import type { SpendContext, SpendGate, SpendHold } from '../../src/core/money/spendGate.js';
import { costUsd, type Prices } from '../../src/core/money/prices.js';
import { SpendLimiter } from '../../src/core/money/spendLimiter.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { hedge } from '../../src/operators/hedge.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent, type AgentConfig } from '../../src/sources/runAgent.js';
import { RunMoney } from '../../src/sources/runMoney.js';
import type { AttemptSpend } from '../../src/core/money/meter.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { describeEvent, finish, record, scriptedModel, scriptedTool, textDeltas, toolCall } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';

// $1 per million input tokens, $10 per million output: 300 bytes of output (100 estimated tokens) cost $0.001
const prices: Prices = { m: { input: 1, output: 10 }, cheap: { input: 0.1, output: 1 }, pricey: { input: 10, output: 100 } };
const user = [{ role: 'user' as const, content: 'x' }];
// the request's estimate: 1 byte → 1 token, plus 4 for the message: 5 tokens, $0.000005 at m's input price
const INPUT_USD = 5 / 1e6;
const chunk = (n: number): TurnEvent => ({ type: 'text-delta', text: 'a'.repeat(n) });

function run(events$: Observable<AgentEvent>) {
  let result!: ReturnType<typeof record<AgentEvent>>;
  testScheduler().run(({ flush }) => {
    result = record(events$);
    flush();
  });
  const events = result.events.map(([, e]) => e);
  const labels = events.map(describeEvent).filter((l) => !l.startsWith('call-'));
  return { ...result, events, labels };
}

const spendOf = (events: readonly AgentEvent[]) => events.filter((e): e is SpendEvent => e.type === 'spend');
const budgetOf = (events: readonly AgentEvent[]) => events.filter((e): e is BudgetEvent => e.type === 'budget-exceeded');

/** A spend gate that records the protocol: each reservation, and how each hold ended. */
function recordingGate(options: { limitUsd?: number; delayMs?: number; scheduler?: SchedulerLike } = {}) {
  const log: string[] = [];
  let used = 0;
  const gate: SpendGate & { log: string[]; used: () => number } = {
    name: 'team',
    log,
    used: () => used,
    reserve(usd: number, context: SpendContext) {
      return new Observable<SpendHold>((subscriber) => {
        const grant = () => {
          if (options.limitUsd !== undefined && used + usd > options.limitUsd) {
            log.push(`refused ${context.model}`);
            return subscriber.error(new BudgetExceededError('usd', options.limitUsd, used + usd));
          }
          used += usd;
          log.push(`reserved ${context.model} ${context.tags?.team ?? '-'}`);
          let ended = false;
          subscriber.next({
            usd,
            settle: (actual) => {
              if (ended) return;
              ended = true;
              used += actual - usd;
              log.push(`settled ${actual.toFixed(6)}`);
            },
            refund: () => {
              if (ended) return;
              ended = true;
              used -= usd;
              log.push('refunded');
            },
          });
          subscriber.complete();
        };
        if (options.delayMs === undefined) return grant();
        let granted = false;
        const wait = timer(options.delayMs, options.scheduler).subscribe(() => {
          granted = true;
          grant();
        });
        return () => {
          if (!granted) log.push('left before the grant');
          wait.unsubscribe();
        };
      });
    },
  };
  return gate;
}

const config = (over: Partial<AgentConfig>): AgentConfig => ({ model: scriptedModel('m', []), messages: user, prices, ...over });

describe('runAgent: money (prices, budget.maxUsd, spend)', () => {
  describe('options', () => {
    it('maxUsd without prices is an InvalidOptionError naming prices', () => {
      expect(() => runAgent({ model: scriptedModel('m', []), messages: user, budget: { maxUsd: 1 } })).to.throw(InvalidOptionError, /"prices".*budget\.maxUsd/);
    });

    it('a model without a price — also one inside a fallbackModel — is an InvalidOptionError naming it, at construction', () => {
      expect(() => runAgent(config({ model: scriptedModel('gpt-9', []), budget: { maxUsd: 1 } }))).to.throw(InvalidOptionError, /"gpt-9"/);
      const chain = fallbackModel([scriptedModel('m', []), scriptedModel('claude-x', [])]);
      expect(() => runAgent(config({ model: chain, budget: { maxUsd: 1 } }))).to.throw(InvalidOptionError, /"claude-x"/);
      // the chain itself needs no price: its models are the provider attempts
      expect(() => runAgent(config({ model: fallbackModel([scriptedModel('m', []), scriptedModel('cheap', [])]), budget: { maxUsd: 1 } }))).not.to.throw();
    });

    it('a bad price, onExhausted, reserveOutputTokens or spend entry is named', () => {
      expect(() => runAgent(config({ prices: { m: { input: 1, output: -1 } }, budget: { maxUsd: 1 } }))).to.throw(InvalidOptionError, /prices\.m\.output/);
      expect(() => runAgent(config({ budget: { maxUsd: 1, onExhausted: 'stop' as never } }))).to.throw(InvalidOptionError, /"budget"/);
      expect(() => runAgent(config({ budget: { maxUsd: 1, reserveOutputTokens: 0 } }))).to.throw(InvalidOptionError, /"budget"/);
      expect(() => runAgent(config({ spend: [{ name: 'x' } as never] }))).to.throw(InvalidOptionError, /"spend"/);
    });
  });

  describe('reservations', () => {
    it('refuses an attempt whose worst case does not fit: the model is never called, the run errors (resource usd)', () => {
      const model = scriptedModel('m', [[...textDeltas('hi'), finish()]]);
      // 4 096 output tokens at $10/M = $0.04096 > $0.01
      const result = run(runAgent(config({ model, budget: { maxUsd: 0.01 } })));
      expect(model.calls).to.equal(0);
      const error = result.error() as BudgetExceededError;
      expect([error.resource, error.limit]).to.deep.equal(['usd', 0.01]);
      expect(error.used).to.be.closeTo(INPUT_USD + 0.04096, 1e-12);
      expect(budgetOf(result.events)).to.deep.equal([{ type: 'budget-exceeded', resource: 'usd', limit: 0.01, used: error.used, cut: false, model: 'm' }]);
    });

    it("charges each attempt its usage at the model's prices (cache reads at their own), and the next turn reserves from what is left", () => {
      const usage = { inputTokens: 10_000, cachedInputTokens: 8_000, outputTokens: 500 };
      const withCache: Prices = { m: { input: 1, output: 10, cachedInput: 0.1 } };
      const model = scriptedModel('m', [[...textDeltas('hi'), finish('stop', usage)]]);
      const result = run(runAgent(config({ model, prices: withCache, budget: { maxUsd: 1 } })));
      expect(result.completed()).to.equal(true);
      const [spend] = spendOf(result.events);
      expect(spend).to.deep.equal({ type: 'spend', model: 'm', usd: costUsd(withCache.m!, usage), totalUsd: costUsd(withCache.m!, usage), estimated: false });
      expect(spend!.usd).to.be.closeTo((2_000 * 1 + 8_000 * 0.1 + 500 * 10) / 1e6, 1e-15);
    });

    it('every retry is an attempt of its own: a failure before any output gives its reservation back, the success is charged', () => {
      const gate = recordingGate();
      const model = scriptedModel('m', [
        { marbles: '-#', error: new HttpError(503) },
        [...textDeltas('ok'), finish('stop', { inputTokens: 5, outputTokens: 2 })],
      ]);
      const result = run(
        runAgent(
          config({
            model,
            spend: [gate],
            tags: { team: 'search' },
            modelPipeline: (_r, turn$, { scheduler }) => turn$.pipe(retryWithBackoff({ jitter: 'none', scheduler })),
          }),
        ),
      );
      expect(result.completed()).to.equal(true);
      expect(gate.log).to.deep.equal(['reserved m search', 'refunded', 'reserved m search', `settled ${((5 * 1 + 2 * 10) / 1e6).toFixed(6)}`]);
      expect(gate.used()).to.be.closeTo(25 / 1e6, 1e-15);
    });

    it('a fleet-wide limit that answers later: the model is called once the hold arrives; its refusal ends the run, no model called', () => {
      const scheduler = testScheduler();
      scheduler.run(({ flush }) => {
        const gate = recordingGate({ delayMs: 5 });
        const model = scriptedModel('m', [[...textDeltas('ok'), finish('stop', { inputTokens: 5, outputTokens: 2 })]]);
        const calledAt: number[] = [];
        const timed = {
          ...model,
          stream: (r: Parameters<typeof model.stream>[0], c: Parameters<typeof model.stream>[1]) => (calledAt.push(scheduler.now()), model.stream(r, c)),
        };
        const result = record(runAgent(config({ model: timed, spend: [gate] })));
        flush();
        expect(calledAt).to.deep.equal([5]);
        expect(result.completed()).to.equal(true);

        const refusing = recordingGate({ limitUsd: 0.001 });
        const never = scriptedModel('m', [[finish()]]);
        const refused = record(runAgent(config({ model: never, spend: [refusing] })));
        flush();
        expect(never.calls).to.equal(0);
        expect((refused.error() as BudgetExceededError).resource).to.equal('usd');
        expect(refusing.log).to.deep.equal(['refused m']);
      });
    });

    it('leaving before a hold arrives cancels the reservation; leaving mid-stream charges what was generated (the estimate)', () => {
      const scheduler = testScheduler();
      scheduler.run(({ flush }) => {
        const gate = recordingGate({ delayMs: 5 });
        const sub = runAgent(config({ model: scriptedModel('m', [[finish()]]), spend: [gate] })).subscribe();
        timer(2).subscribe(() => sub.unsubscribe());
        flush();
        expect(gate.log).to.deep.equal(['left before the grant']);

        const live = recordingGate();
        const model = scriptedModel('m', [{ marbles: 'a 9ms b', values: { a: chunk(300), b: finish() } }]);
        const cancelled = runAgent(config({ model, spend: [live] })).subscribe();
        timer(3).subscribe(() => cancelled.unsubscribe());
        flush();
        expect(model.cancelled).to.equal(1);
        expect(live.log).to.deep.equal(['reserved m -', `settled ${(INPUT_USD + 0.001).toFixed(6)}`]);
      });
    });
  });

  describe('with SpendLimiter (rxheal/fleet) on a memory store', () => {
    it("runs of one team share its limit: each attempt reserves there, keyed by the run's tags; another team's runs are not counted", () => {
      testScheduler().run(({ flush }) => {
        // $0.05 per team per hour; each attempt reserves ~$0.041 (4 096 output tokens at $10/M) and is charged $0.00003
        const team = new SpendLimiter({ name: 'team', usd: 0.05, per: 'hour', key: (c) => c.tags?.team ?? 'none' });
        const answer = () => scriptedModel('m', [{ marbles: '-a-(b|)', values: { a: chunk(3), b: finish('stop', { inputTokens: 10, outputTokens: 2 }) } }]);
        const a = record(runAgent(config({ model: answer(), spend: [team], tags: { team: 'search' } })));
        // while a's attempt holds $0.041, a second run of the team does not fit; one of another team does
        const b = record(runAgent(config({ model: answer(), spend: [team], tags: { team: 'search' } })));
        const c = record(runAgent(config({ model: answer(), spend: [team], tags: { team: 'ads' } })));
        flush();
        expect(a.completed()).to.equal(true);
        expect((b.error() as BudgetExceededError).resource).to.equal('usd');
        expect(c.completed()).to.equal(true);
        // once a settled, the team's window holds only what it was charged: a next run fits again
        const d = record(runAgent(config({ model: answer(), spend: [team], tags: { team: 'search' } })));
        flush();
        expect(d.completed()).to.equal(true);
      });
    });
  });

  describe('maxOutputTokens', () => {
    it('is sent with every request, and is what each attempt reserves for its output (not reserveOutputTokens)', () => {
      const gate = recordingGate();
      const model = scriptedModel('m', [[...textDeltas('hi'), finish('stop', { inputTokens: 5, outputTokens: 1 })]]);
      const result = run(runAgent(config({ model, maxOutputTokens: 50, spend: [gate], budget: { maxUsd: 0.000506, reserveOutputTokens: 4096 } })));
      expect(result.completed()).to.equal(true);
      expect(model.requests[0]!.maxOutputTokens).to.equal(50);
      // $0.000005 of input and 50 output tokens at $10/M: $0.000505, within $0.000506 (4 096 would not be)
      expect(gate.log[0]).to.equal('reserved m -');
      expect(() => runAgent(config({ maxOutputTokens: 0 }))).to.throw(InvalidOptionError, /"maxOutputTokens"/);
    });

    it('the live count stops at the cap (the provider stops there): an answer the estimate puts past it is not cut at a fleet hold', () => {
      const gate = recordingGate();
      // 600 bytes: 200 estimated tokens, past the cap of 50 the provider keeps to (it reports 50)
      const model = scriptedModel('m', [
        { marbles: 'a-b-(c|)', values: { a: chunk(300), b: chunk(300), c: finish('length', { inputTokens: 5, outputTokens: 50 }) } },
      ]);
      const result = run(runAgent(config({ model, maxOutputTokens: 50, spend: [gate] })));
      expect(result.completed()).to.equal(true);
      expect(result.labels).to.include('finish:length');
      expect(gate.log).to.deep.equal(['reserved m -', `settled ${((5 + 50 * 10) / 1e6).toFixed(6)}`]);
    });
  });

  describe('the cut-off', () => {
    // 100 output tokens reserved ($0.001 + the input): the second 300-byte delta passes it, and $0.002 cannot hold it
    const budget = { maxUsd: 0.002, reserveOutputTokens: 100 };
    const long = () => scriptedModel('m', [{ marbles: 'a-b-c-d-(e|)', values: { a: chunk(300), b: chunk(300), c: chunk(300), d: chunk(300), e: finish() } }]);

    it("cuts the call where its output would cross what is left: the delta passed on, the provider's stream torn down, finish 'budget', then the error", () => {
      const model = long();
      const result = run(runAgent(config({ model, budget })));
      expect(model.cancelled).to.equal(1);
      expect(result.labels).to.deep.equal([
        `text:${'a'.repeat(300)}`,
        `text:${'a'.repeat(300)}`,
        'budget-exceeded:usd:cut',
        'spend:m',
        'finish:budget',
        'message:assistant',
      ]);
      const message = (result.events.find((e) => e.type === 'message') as { message: AssistantMessage }).message;
      expect(message).to.deep.equal({ role: 'assistant', content: 'a'.repeat(600), cut: true });
      const error = result.error() as BudgetExceededError;
      expect([error.resource, error.limit]).to.deep.equal(['usd', 0.002]);
      // spent: the input and 200 output tokens — past $0.002 by less than one delta's price ($0.001)
      const [spend] = spendOf(result.events);
      expect(spend!.usd).to.be.closeTo(INPUT_USD + 0.002, 1e-12);
      expect(spend!.estimated).to.equal(true);
    });

    it("onExhausted: 'finish' completes with the partial answer", () => {
      const result = run(runAgent(config({ model: long(), budget: { ...budget, onExhausted: 'finish' } })));
      expect(result.completed()).to.equal(true);
      expect(result.labels.slice(-2)).to.deep.equal(['finish:budget', 'message:assistant']);
    });

    it('cutOff: false lets the attempt run past its reservation (charged in full at its end)', () => {
      const result = run(runAgent(config({ model: long(), budget: { ...budget, cutOff: false } })));
      expect(result.completed()).to.equal(true);
      expect(spendOf(result.events)[0]!.usd).to.be.closeTo(INPUT_USD + 0.004, 1e-12);
    });

    it('a call past what a fleet-wide limit granted is cut there (that hold cannot grow mid-stream)', () => {
      const gate = recordingGate();
      const result = run(runAgent(config({ model: long(), spend: [gate], budget: { reserveOutputTokens: 100 } })));
      expect(result.labels).to.include('finish:budget');
      expect(budgetOf(result.events)[0]).to.include({ cut: true, limiter: 'spend' });
      expect(gate.log[1]).to.equal(`settled ${(INPUT_USD + 0.002).toFixed(6)}`);
    });
  });

  describe('with hedge', () => {
    it("a hedge the run's money cannot reserve is denied, never called; the first attempt goes on and answers", () => {
      // one attempt reserves $0.001005 (100 output tokens): two do not fit in $0.0015
      const model = scriptedModel('m', [{ marbles: '---a-(b|)', values: { a: chunk(3), b: finish('stop', { inputTokens: 5, outputTokens: 1 }) } }]);
      const result = run(
        runAgent(
          config({
            model,
            budget: { maxUsd: 0.0015, reserveOutputTokens: 100 },
            modelPipeline: (_r, turn$, { hub, scheduler }) => turn$.pipe(hedge({ after: 1, hub, scheduler, target: 'model:m' })),
          }),
        ),
      );
      expect(result.completed()).to.equal(true);
      expect(model.calls).to.equal(1);
      expect(result.labels.filter((l) => l.startsWith('hedge') || l.startsWith('budget'))).to.deep.equal([
        'hedge:model:m#1:started',
        'budget-exceeded:usd',
        'hedge:model:m#1:denied',
        'hedge:model:m#0:won',
      ]);
      expect(result.labels.slice(-3)).to.deep.equal(['spend:m', 'finish:stop', 'message:assistant']);
    });
  });

  describe("fallbackModel's cheaperBelow", () => {
    it('under pressure the chain starts from its cheapest model that fits, and says so', () => {
      // turn 1 on pricey costs $0.6 of $1 ($100/M × 6 000 output tokens): turn 2 starts with 40 % left, under 50 %
      const pricey = scriptedModel('pricey', [[toolCall('c1', 'read', {}), finish('tool-calls', { inputTokens: 0, outputTokens: 6_000 })]]);
      const cheap = scriptedModel('cheap', [[...textDeltas('done'), finish('stop', { inputTokens: 10, outputTokens: 2 })]]);
      const read = scriptedTool('read', [{ result: 'ok' }], { idempotent: true });
      const model = fallbackModel([pricey, cheap], { cheaperBelow: 0.5 });
      const result = run(runAgent(config({ model, tools: [read], budget: { maxUsd: 1, reserveOutputTokens: 1000 } })));
      expect(result.completed()).to.equal(true);
      expect([pricey.calls, cheap.calls]).to.deep.equal([1, 1]);
      expect(result.events.filter((e) => e.type === 'fallback')).to.deep.equal([
        { type: 'fallback', from: 'model:pricey', to: 'model:cheap', reason: 'budget', midStream: false },
      ]);
    });

    it('with enough left, or no money budget, the chain starts from its first model', () => {
      const pricey = scriptedModel('pricey', [[...textDeltas('hi'), finish('stop', { inputTokens: 1, outputTokens: 1 })]]);
      const model = fallbackModel([pricey, scriptedModel('cheap', [])], { cheaperBelow: 0.5 });
      const result = run(runAgent(config({ model, budget: { maxUsd: 1, reserveOutputTokens: 1000 } })));
      expect(result.completed()).to.equal(true);
      expect(pricey.calls).to.equal(1);
      expect(() => fallbackModel([pricey], { cheaperBelow: 2 })).to.throw(InvalidOptionError, /"cheaperBelow"/);
    });
  });

  describe('the property, concurrent attempts (hedges, a run beside its fallbacks) on one RunMoney', () => {
    it('at every step spent + held ≤ maxUsd + one delta per call cut; every hold given back at the end; nothing charged twice', () => {
      type Op = { kind: 'start' } | { kind: 'delta'; bytes: number } | { kind: 'finish'; usage: boolean } | { kind: 'leave' };
      const op = fc.oneof(
        fc.constant<Op>({ kind: 'start' }),
        fc.integer({ min: 1, max: 600 }).map((bytes): Op => ({ kind: 'delta', bytes })),
        fc.boolean().map((usage): Op => ({ kind: 'finish', usage })),
        fc.constant<Op>({ kind: 'leave' }),
      );
      fc.assert(
        fc.property(
          fc.record({
            maxUsd: fc.double({ min: 0.001, max: 0.05, noNaN: true }),
            output: fc.double({ min: 1, max: 60, noNaN: true }),
            reserve: fc.integer({ min: 1, max: 300 }),
            steps: fc.array(fc.tuple(fc.nat(3), op), { maxLength: 60 }),
          }),
          ({ maxUsd, output, reserve, steps }) => {
            const money = new RunMoney(
              { prices: { m: { input: 1, output } }, maxUsd, reserveOutputTokens: reserve, cutOff: true, gates: [], context: () => ({ runId: 'r' }) },
              new HealHub(),
            );
            const request = { messages: user, tools: [] };
            const reservation = money.quote('m', request);
            const live: (AttemptSpend | undefined)[] = [undefined, undefined, undefined, undefined];
            const outBytes = [0, 0, 0, 0];
            let cuts = 0;
            let maxDelta = 0;
            for (const [i, step] of steps) {
              const attempt = live[i];
              if (step.kind === 'start') {
                if (attempt) continue;
                try {
                  live[i] = money.reserve('m', request) as AttemptSpend;
                  outBytes[i] = 0;
                } catch (error) {
                  expect(error).to.be.instanceOf(BudgetExceededError);
                }
              } else if (attempt && step.kind === 'delta') {
                maxDelta = Math.max(maxDelta, (Math.ceil(step.bytes / 3) * output) / 1e6);
                outBytes[i]! += step.bytes;
                if (!attempt.output(chunk(step.bytes))) {
                  attempt.cut();
                  cuts++;
                  live[i] = undefined;
                }
              } else if (attempt && step.kind === 'finish') {
                // a provider's usage at most rxheal's estimate (the estimate errs high)
                attempt.settle(step.usage ? { inputTokens: 5, outputTokens: Math.floor(outBytes[i]! / 3) } : undefined);
                live[i] = undefined;
              } else if (attempt && step.kind === 'leave') {
                attempt.release();
                live[i] = undefined;
              }
              expect(money.spentUsd + money.heldUsd).to.be.at.most(maxUsd + cuts * maxDelta + 1e-12);
              // every attempt in flight holds at least its reservation (holds only grow), and nothing more is held
              const inFlight = live.filter(Boolean).length;
              expect(money.heldUsd).to.be.at.least(inFlight * reservation - 1e-12);
              if (inFlight === 0) expect(money.heldUsd).to.be.closeTo(0, 1e-12);
            }
            for (const attempt of live) attempt?.release();
            expect(money.heldUsd).to.be.closeTo(0, 1e-12);
            expect(money.spentUsd).to.be.at.most(maxUsd + cuts * maxDelta + 1e-12);
          },
        ),
        { numRuns: 500 },
      );
    });
  });

  describe('the property', () => {
    it('spent ≤ maxUsd + one delta at any prices, deltas, failures and cancellations (cut-off on); ≤ maxUsd + the excess over holds (off)', () => {
      const attempt = fc.record({
        deltas: fc.array(fc.integer({ min: 1, max: 900 }), { maxLength: 8 }),
        end: fc.constantFrom('finish', 'usage', 'error', 'cut-short'),
      });
      fc.assert(
        fc.property(
          fc.record({
            input: fc.double({ min: 0.01, max: 20, noNaN: true }),
            output: fc.double({ min: 0.1, max: 80, noNaN: true }),
            maxUsd: fc.double({ min: 0.0005, max: 0.05, noNaN: true }),
            reserve: fc.integer({ min: 1, max: 400 }),
            cutOff: fc.boolean(),
            attempts: fc.array(attempt, { minLength: 1, maxLength: 6 }),
            leaveAt: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
          }),
          ({ input, output, maxUsd, reserve, cutOff, attempts, leaveAt }) => {
            const price = { input, output };
            const turns = attempts.map(({ deltas, end }) => {
              // one letter per delta, a frame apart
              const letters: Record<string, TurnEvent> = {};
              deltas.forEach((n, i) => (letters[String.fromCharCode(97 + i)] = chunk(n)));
              const marbles = Object.keys(letters)
                .map((l) => `${l}-`)
                .join('');
              const tail = end === 'error' ? '#' : end === 'cut-short' ? '|' : '(z|)';
              const usage = end === 'usage' ? { inputTokens: 5, outputTokens: Math.ceil(deltas.reduce((a, b) => a + b, 0) / 3) } : undefined;
              letters.z = finish('stop', usage);
              return { marbles: `${marbles}${tail}`, values: letters, error: new HttpError(503) };
            });
            const model = scriptedModel('m', turns);
            let spent = 0;
            let maxDelta = 0;
            for (const { deltas } of attempts) for (const n of deltas) maxDelta = Math.max(maxDelta, (Math.ceil(n / 3) * output) / 1e6);
            testScheduler().run(({ flush }) => {
              const run$ = runAgent({
                model,
                messages: user,
                prices: { m: price },
                budget: { maxUsd, reserveOutputTokens: reserve, cutOff },
                modelPipeline: (_r, turn$, { scheduler }) => turn$.pipe(retryWithBackoff({ jitter: 'none', maxRetries: attempts.length, scheduler })),
              });
              const sub = run$.subscribe({ next: (e) => e.type === 'spend' && (spent = e.totalUsd), error: () => undefined });
              if (leaveAt !== undefined) timer(leaveAt).subscribe(() => sub.unsubscribe());
              flush();
            });
            // without the cut-off an attempt may run past its hold: by at most its output beyond the reservation
            const slack = cutOff ? maxDelta : attempts.reduce((a, { deltas }) => a + (Math.ceil(deltas.reduce((x, y) => x + y, 0) / 3) * output) / 1e6, 0);
            expect(spent).to.be.at.most(maxUsd + slack + 1e-12);
          },
        ),
        { numRuns: 300 },
      );
    });
  });
});
