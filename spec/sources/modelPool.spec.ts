import { expect } from 'chai';
import { type Observable } from 'rxjs';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { AllFallbacksFailedError, HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { HealEvent, PoolEvent, TurnEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { LatencyRegistry } from '../../src/core/latency/registry.js';
import { streamModel, type Model, type ModelCallContext, type ModelRequest } from '../../src/core/model/model.js';
import { RateLimiter } from '../../src/core/rate-limit/rateLimit.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { modelPool, type ModelPoolOptions, type WaitOrMoveFigures } from '../../src/sources/modelPool.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { virtual } from '../support/marbles.js';

/** A member whose n-th call streams `turns[n]` (the last repeats), recording each request. */
interface Member extends Model {
  readonly requests: ModelRequest[];
}
function member(id: string, ...turns: Observable<TurnEvent>[]): Member {
  const requests: ModelRequest[] = [];
  return {
    id,
    requests,
    stream: (request) => {
      requests.push(request);
      return turns[Math.min(requests.length - 1, turns.length - 1)]!;
    },
  };
}

const e429 = (retryAfterS: number): HttpError => new HttpError(429, { 'retry-after': String(retryAfterS) });
const values = {
  a: { type: 'text-delta', text: 'A' } as TurnEvent,
  b: { type: 'text-delta', text: 'B' } as TurnEvent,
  c: { type: 'text-delta', text: 'C' } as TurnEvent,
  f: { type: 'finish', reason: 'stop', usage: { inputTokens: 20_000, outputTokens: 10 } } as TurnEvent,
};
const ask = (key?: string): ModelRequest => ({ messages: [{ role: 'user', content: 'hi' }], tools: [], ...(key ? { promptCacheKey: key } : {}) });

/** The pool events a hub heard. */
function poolEvents(hub: HealHub): PoolEvent[] {
  const out: PoolEvent[] = [];
  hub.events$.subscribe((e: HealEvent) => e.type === 'pool' && out.push(e));
  return out;
}
const heard = (hub: HealHub): HealEvent[] => {
  const out: HealEvent[] = [];
  hub.events$.subscribe((e) => out.push(e));
  return out;
};

describe('modelPool', () => {
  describe('placement and affinity', () => {
    it('places new conversations round-robin and keeps each on its member; the key goes out as promptCacheKey', () => {
      virtual(({ cold, expectObservable }) => {
        const [a, b, c] = ['a', 'b', 'c'].map((id) => member(id, cold('-a-(f|)', values)));
        const pool = modelPool([a!, b!, c!], { affinity: (r) => r.messages[0]!.content });
        const call = (key: string): Observable<TurnEvent> => streamModel(pool, { messages: [{ role: 'user', content: key }], tools: [] });
        expectObservable(call('k1')).toBe('-a-(f|)', values);
        expectObservable(call('k2')).toBe('-a-(f|)', values);
        expectObservable(call('k3')).toBe('-a-(f|)', values);
        expectObservable(call('k1')).toBe('-a-(f|)', values);
        expectObservable(call('k2')).toBe('-a-(f|)', values);
      });
    });

    it('sends the affinity key as promptCacheKey; a request with its own keeps it', () => {
      virtual(({ cold, flush }) => {
        const a = member('a', cold('-(f|)', values));
        const pool = modelPool([a], { affinity: () => 'conv-1' });
        streamModel(pool, ask()).subscribe();
        streamModel(pool, ask('own-key')).subscribe();
        flush();
        expect(a.requests.map((r) => r.promptCacheKey)).to.deep.equal(['conv-1', 'own-key']);
      });
    });

    it('sticks: the same key lands on the same member, a new one on the next', () => {
      virtual(({ cold, flush }) => {
        const a = member('a', cold('-(f|)', values));
        const b = member('b', cold('-(f|)', values));
        const pool = modelPool([a, b]);
        for (const key of ['x', 'x', 'y', 'x', 'y']) streamModel(pool, ask(key)).subscribe();
        flush();
        expect(a.requests.map((r) => r.promptCacheKey)).to.deep.equal(['x', 'x', 'x']);
        expect(b.requests.map((r) => r.promptCacheKey)).to.deep.equal(['y', 'y']);
      });
    });

    it('affinity false: no key, each call placed by the strategy', () => {
      virtual(({ cold, flush }) => {
        const a = member('a', cold('-(f|)', values));
        const b = member('b', cold('-(f|)', values));
        const pool = modelPool([a, b], { affinity: false });
        for (let i = 0; i < 4; i++) streamModel(pool, ask()).subscribe();
        flush();
        expect([a.requests.length, b.requests.length]).to.deep.equal([2, 2]);
        expect(a.requests.every((r) => r.promptCacheKey === undefined)).to.equal(true);
      });
    });

    it("by default the run's id is the key: a run's turns stay on one member, two runs are spread", () => {
      virtual(({ cold, flush }) => {
        const turn = cold('-(f|)', values);
        const a = member('a', turn);
        const b = member('b', turn);
        const pool = modelPool([a, b]);
        const ids: string[] = [];
        for (const runId of ['run-1', 'run-2']) {
          const context: ModelCallContext = { runId };
          streamModel(pool, ask(), context).subscribe();
          streamModel(pool, ask(), context).subscribe();
          ids.push(runId);
        }
        flush();
        expect(a.requests.map((r) => r.promptCacheKey)).to.deep.equal(['run-1', 'run-1']);
        expect(b.requests.map((r) => r.promptCacheKey)).to.deep.equal(['run-2', 'run-2']);
      });
    });

    it('runAgent hands its run id to the pool: every turn of a run on one member', async () => {
      const calls: string[] = [];
      const tool = { name: 'now', description: 'The time', execute: () => '12:00' };
      const member2 = (id: string): Model => ({
        id,
        stream: (request) => {
          calls.push(`${id}:${request.promptCacheKey}`);
          const asked = request.messages.some((m) => m.role === 'tool');
          return asked
            ? [
                { type: 'text-delta', text: 'noon' },
                { type: 'finish', reason: 'stop' },
              ]
            : [
                { type: 'tool-call', id: 'c1', name: 'now', args: {} },
                { type: 'finish', reason: 'tool-calls' },
              ];
        },
      });
      const pool = modelPool([member2('a'), member2('b')]);
      const { defineTool } = await import('../../src/sources/tool.js');
      const t = await import('io-ts');
      const now = defineTool({ ...tool, args: t.type({}), execute: async () => '12:00' });
      const { lastValueFrom, toArray } = await import('rxjs');
      for (let run = 0; run < 2; run++)
        await lastValueFrom(runAgent({ model: pool, tools: [now], messages: [{ role: 'user', content: 'time?' }] }).pipe(toArray()));
      // two turns per run (the tool call, then the answer), each run on its own member under its own key
      expect(calls.map((c) => c.split(':')[0])).to.deep.equal(['a', 'a', 'b', 'b']);
      expect(calls[0]).to.equal(calls[1]);
      expect(calls[2]).to.equal(calls[3]);
      expect(calls[0]).to.not.equal(calls[2]);
      expect(calls[0]).to.not.match(/undefined/);
    });
  });

  describe('wait or move on a 429', () => {
    it('a short retry-after is waited for on the warm member: a wait event, the member called again after it', () => {
      virtual(({ cold, expectObservable, expectSubscriptions, flush }) => {
        const first = cold<TurnEvent>('-#', undefined, e429(2));
        const again = cold('-a-(f|)', values);
        const a = member('a', first, again);
        const b = member('b', cold('-b-(f|)', values));
        const hub = new HealHub();
        const events = poolEvents(hub);
        const pool = modelPool([a, b], { hub, maxWaitMs: 5_000 });
        expectObservable(streamModel(pool, ask('k'))).toBe('- 2000ms -a-(f|)', values);
        expectSubscriptions(first.subscriptions).toBe('^!');
        expectSubscriptions(again.subscriptions).toBe('- 2000ms ^--!');
        flush();
        expect(b.requests).to.deep.equal([]);
        expect(events.map((e) => [e.kind, e.from, e.to, e.waitMs])).to.deep.equal([['wait', 'model:a', 'model:b', 2_000]]);
      });
    });

    it('a retry-after past maxWaitMs moves: the next member answers, a move event, and the conversation stays there', () => {
      virtual(({ cold, expectObservable, flush, at }) => {
        const a = member('a', cold<TurnEvent>('-#', undefined, e429(20)));
        const b = member('b', cold('-b-(f|)', values));
        const hub = new HealHub();
        const events = poolEvents(hub);
        const all = heard(hub);
        const pool = modelPool([a, b], { hub, maxWaitMs: 5_000 });
        expectObservable(streamModel(pool, ask('k'))).toBe('--b-(f|)', values);
        // a later turn within the block goes to b at once: a is not tried
        at(100, () => streamModel(pool, ask('k')).subscribe());
        flush();
        expect(a.requests.length).to.equal(1);
        expect(b.requests.length).to.equal(2);
        expect(events.map((e) => [e.kind, e.from, e.to, e.reason])).to.deep.equal([['move', 'model:a', 'model:b', 'rate_limit']]);
        expect(events[0]).to.include({ waitMs: 20_000, cachedTokens: 0 });
        expect(all.some((e) => e.type === 'fallback' && e.from === 'model:a' && e.to === 'model:b')).to.equal(true);
      });
    });

    it('weighs the wait against the cache it would throw away, at the prices: waits 4 s for a $0.069 prefix, moves rather than wait 8 s', () => {
      const prices = { a: { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 }, b: { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 } };
      for (const [seconds, expected] of [
        [4, 'wait'],
        [8, 'move'],
      ] as const) {
        virtual(({ cold, flush, at }) => {
          // the first call caches 20 000 tokens on a; the second meets a 429
          const a = member('a', cold('-(f|)', values), cold<TurnEvent>('-#', undefined, e429(seconds)), cold('-(f|)', values));
          const b = member('b', cold('-(f|)', values));
          const hub = new HealHub();
          const events = poolEvents(hub);
          const decided: WaitOrMoveFigures[] = [];
          const pool = modelPool([a, b], {
            hub,
            prices,
            maxWaitMs: 10_000,
            decide: (f) => {
              decided.push(f);
              return f.waitUsd <= f.moveUsd! ? 'wait' : 'move';
            },
          });
          streamModel(pool, ask('k')).subscribe();
          at(10, () => streamModel(pool, ask('k')).subscribe());
          flush();
          expect(decided).to.have.length(1);
          expect(decided[0]).to.deep.include({ key: 'k', member: 'model:a', to: 'model:b', waitMs: seconds * 1000, cachedTokens: 20_000 });
          expect(decided[0]!.moveUsd).to.be.closeTo((20_000 * (3.75 - 0.3)) / 1e6, 1e-12);
          expect(decided[0]!.waitUsd).to.be.closeTo(seconds * 0.01, 1e-12);
          expect(events.map((e) => e.kind)).to.deep.equal([expected]);
          expect(b.requests.length).to.equal(expected === 'wait' ? 0 : 1);
        });
      }
    });

    it("the default rule is the documented one (waitOrMove): same decisions as the spec's decide above", () => {
      const prices = { a: { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 }, b: { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 } };
      for (const [seconds, calledB] of [
        [4, 0],
        [8, 1],
      ] as const) {
        virtual(({ cold, flush, at }) => {
          const a = member('a', cold('-(f|)', values), cold<TurnEvent>('-#', undefined, e429(seconds)), cold('-(f|)', values));
          const b = member('b', cold('-(f|)', values));
          const pool = modelPool([a, b], { prices, maxWaitMs: 10_000 });
          streamModel(pool, ask('k')).subscribe();
          at(10, () => streamModel(pool, ask('k')).subscribe());
          flush();
          expect(b.requests.length).to.equal(calledB);
        });
      }
    });

    it('a member still blocked by another conversation’s 429 is waited for (the rest of the retry-after) by the conversations on it', () => {
      virtual(({ cold, flush, at }) => {
        // round-robin: k1 on a, k2 on b, k3 on a; k1's second call meets a 429 of 3 s at t=11
        const ok = cold('-(f|)', values);
        const a = member('a', ok, ok, cold<TurnEvent>('-#', undefined, e429(3)), ok);
        const b = member('b', ok);
        const hub = new HealHub();
        const events = poolEvents(hub);
        const pool = modelPool([a, b], { hub });
        for (const key of ['k1', 'k2', 'k3']) streamModel(pool, ask(key)).subscribe();
        at(10, () => streamModel(pool, ask('k1')).subscribe());
        at(1_000, () => {
          const before = a.requests.length;
          streamModel(pool, ask('k3')).subscribe();
          expect(a.requests.length).to.equal(before);
        });
        flush();
        expect(events.map((e) => [e.kind, e.key, e.waitMs])).to.deep.equal([
          ['wait', 'k1', 3_000],
          ['wait', 'k3', 2_011],
        ]);
        expect(a.requests.map((r) => r.promptCacheKey)).to.deep.equal(['k1', 'k3', 'k1', 'k1', 'k3']);
        expect(b.requests.map((r) => r.promptCacheKey)).to.deep.equal(['k2']);
      });
    });

    it('never waits past the deadline', () => {
      virtual(({ cold, flush }) => {
        const a = member('a', cold<TurnEvent>('-#', undefined, e429(3)));
        const b = member('b', cold('-(f|)', values));
        const hub = new HealHub();
        const events = poolEvents(hub);
        const pool = modelPool([a, b], { hub, deadline: () => 2_000 });
        streamModel(pool, ask('k')).subscribe();
        flush();
        expect(events.map((e) => [e.kind, e.deadlineLeftMs])).to.deep.equal([['move', 1_999]]);
        expect(b.requests.length).to.equal(1);
      });
    });

    it('unsubscribing during a wait cancels it: the member is not called again', () => {
      virtual(({ cold, expectObservable, expectSubscriptions }) => {
        const first = cold<TurnEvent>('-#', undefined, e429(2));
        const again = cold('-a-(f|)', values);
        const a = member('a', first, again);
        const pool = modelPool([a, member('b', cold('-(f|)', values))]);
        expectObservable(streamModel(pool, ask('k')), '^ 999ms !').toBe('');
        expectSubscriptions(again.subscriptions).toBe([]);
      });
    });

    it('a decide that throws errors the call; one that answers something else is a TypeError', () => {
      for (const decide of [
        () => {
          throw new Error('boom');
        },
        () => 'later' as never,
      ]) {
        virtual(({ cold, flush }) => {
          const a = member('a', cold<TurnEvent>('-#', undefined, e429(2)));
          const pool = modelPool([a, member('b', cold('-(f|)', values))], { decide });
          let error: unknown;
          streamModel(pool, ask('k')).subscribe({ error: (e: unknown) => (error = e) });
          flush();
          expect(error).to.be.instanceOf(Error);
          expect(String(error)).to.match(/boom|decide must return 'wait' or 'move'/);
        });
      }
    });
  });

  describe('return', () => {
    it('goes back once the retry-after passed and a probe succeeded: a return event, and it stays', () => {
      virtual(({ cold, flush, at }) => {
        const a = member('a', cold<TurnEvent>('-#', undefined, e429(20)), cold('-(f|)', values));
        const b = member('b', cold('-(f|)', values));
        const hub = new HealHub();
        const events = poolEvents(hub);
        const pool = modelPool([a, b], { hub, maxWaitMs: 5_000 });
        streamModel(pool, ask('k')).subscribe();
        at(10_000, () => streamModel(pool, ask('k')).subscribe()); // still blocked: b
        at(25_000, () => streamModel(pool, ask('k')).subscribe()); // the probe: a
        at(30_000, () => streamModel(pool, ask('k')).subscribe()); // a
        flush();
        expect(a.requests.length).to.equal(3);
        expect(b.requests.length).to.equal(2);
        expect(events.map((e) => [e.kind, e.from, e.to])).to.deep.equal([
          ['move', 'model:a', 'model:b'],
          ['return', 'model:b', 'model:a'],
        ]);
      });
    });

    it('a probe that fails leaves the conversation where it is (no return), answered there in the same call', () => {
      virtual(({ cold, flush, at }) => {
        const a = member('a', cold<TurnEvent>('-#', undefined, e429(20)), cold<TurnEvent>('-#', undefined, new HttpError(503)), cold('-(f|)', values));
        const b = member('b', cold('-(f|)', values));
        const hub = new HealHub();
        const events = poolEvents(hub);
        const pool = modelPool([a, b], { hub, maxWaitMs: 5_000 });
        streamModel(pool, ask('k')).subscribe();
        at(25_000, () => streamModel(pool, ask('k')).subscribe()); // probe fails (503) → b
        at(26_000, () => streamModel(pool, ask('k')).subscribe()); // probe again → a answers
        flush();
        expect(b.requests.length).to.equal(2);
        expect(events.map((e) => e.kind)).to.deep.equal(['move', 'return']);
      });
    });

    it('one probe at a time: while one is in flight the other moved conversations stay where they are', () => {
      virtual(({ cold, flush, at }) => {
        const a = member('a', cold<TurnEvent>('-#', undefined, e429(20)), cold<TurnEvent>('-#', undefined, e429(20)), cold('----(f|)', values));
        const b = member('b', cold('-(f|)', values));
        const pool = modelPool([a, b, member('c', cold('-(f|)', values))], { maxWaitMs: 0 });
        // k1 and k4 are placed on a (round-robin over 3); both move
        for (const k of ['k1', 'k2', 'k3', 'k4']) streamModel(pool, ask(k)).subscribe();
        at(25_000, () => {
          streamModel(pool, ask('k1')).subscribe(); // the probe
          const before = a.requests.length;
          streamModel(pool, ask('k4')).subscribe(); // not a second probe
          expect(a.requests.length).to.equal(before);
        });
        flush();
        expect(a.requests.length).to.equal(3);
      });
    });
  });

  describe('skipping', () => {
    it('a member whose breaker is open is skipped without a call; the conversation moves (reason circuit_open)', () => {
      virtual(({ cold, flush }) => {
        const breakers = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 60_000 });
        const a = member('a', cold('-(f|)', values));
        const b = member('b', cold('-(f|)', values));
        const hub = new HealHub();
        const events = poolEvents(hub);
        const pool = modelPool([a, b], { hub, breakers });
        streamModel(pool, ask('k')).subscribe();
        flush();
        breakers.get('model:a').isolate();
        streamModel(pool, ask('k')).subscribe();
        flush();
        expect(a.requests.length).to.equal(1);
        expect(b.requests.length).to.equal(1);
        expect(events.map((e) => [e.kind, e.reason])).to.deep.equal([['move', 'circuit_open']]);
      });
    });

    it('a member whose limiter would wait past its maxWaitMs is skipped (RateLimitExceededError): the next answers', () => {
      virtual(({ cold, flush }) => {
        const limiter = new RateLimiter({ name: 'key-a', requestsPerMinute: 1, maxWaitMs: 1_000 });
        const a = member('a', cold('-(f|)', values));
        const b = member('b', cold('-(f|)', values));
        const pool = modelPool([{ model: a, limiter }, b], { affinity: () => 'k' });
        streamModel(pool, ask()).subscribe();
        flush();
        streamModel(pool, ask()).subscribe();
        flush();
        expect(a.requests.length).to.equal(1);
        expect(b.requests.length).to.equal(1);
      });
    });

    it('every member failing: AllFallbacksFailedError with each error', () => {
      virtual(({ cold, flush }) => {
        const pool = modelPool([
          member('a', cold<TurnEvent>('-#', undefined, new HttpError(503))),
          member('b', cold<TurnEvent>('-#', undefined, new HttpError(502))),
        ]);
        let error: unknown;
        streamModel(pool, ask('k')).subscribe({ error: (e: unknown) => (error = e) });
        flush();
        expect(error).to.be.instanceOf(AllFallbacksFailedError);
        expect((error as AllFallbacksFailedError).errors.map((e) => (e as HttpError).status)).to.deep.equal([503, 502]);
      });
    });

    it('a failure after output follows midStream: restart shows a reset, then the next member', () => {
      virtual(({ cold, expectObservable }) => {
        const a = member('a', cold('-a-#', values, new HttpError(503)));
        const b = member('b', cold('-b-(f|)', values));
        const pool = modelPool([a, b]);
        expectObservable(streamModel(pool, ask('k'))).toBe('-a-rb-(f|)', { ...values, r: { type: 'reset', reason: 'fallback', target: 'model:b' } });
      });
    });
  });

  describe('as a model among models', () => {
    it('is one link of a fallbackModel chain: every member failing hands the call to the next model', () => {
      virtual(({ cold, expectObservable, flush }) => {
        const pool = modelPool(
          [member('a', cold<TurnEvent>('-#', undefined, new HttpError(503))), member('b', cold<TurnEvent>('-#', undefined, new HttpError(503)))],
          {
            id: 'gpt-pool',
          },
        );
        const claude = member('claude', cold('-c(f|)', values));
        const hub = new HealHub();
        const all = heard(hub);
        expectObservable(streamModel(fallbackModel([pool, claude], { hub }), ask('k'))).toBe('---c(f|)', values);
        flush();
        expect(all.filter((e) => e.type === 'fallback').map((e) => e.type === 'fallback' && `${e.from}>${e.to}`)).to.deep.equal([
          'model:a>model:b',
          'model:gpt-pool>model:claude',
        ]);
      });
    });

    it('in runAgent with prices: each member is priced by its own id, its cached input at the cached price', async () => {
      const usage = { inputTokens: 10_000, cachedInputTokens: 8_000, outputTokens: 100 };
      const priced = (id: string): Model => ({
        id,
        stream: () => [
          { type: 'text-delta', text: 'hi' },
          { type: 'finish', reason: 'stop', usage },
        ],
      });
      const pool = modelPool([priced('a'), priced('b')]);
      const prices = { a: { input: 3, cachedInput: 0.3, output: 15 }, b: { input: 3, cachedInput: 0.3, output: 15 } };
      const { lastValueFrom, toArray } = await import('rxjs');
      const events = await lastValueFrom(
        runAgent({ model: pool, tools: [], messages: [{ role: 'user', content: 'hi' }], prices, budget: { maxUsd: 1 } }).pipe(toArray()),
      );
      const spend = events.find((e) => e.type === 'spend');
      expect(spend).to.deep.include({ model: 'a', estimated: false });
      expect((spend as { usd: number }).usd).to.be.closeTo((2_000 * 3 + 8_000 * 0.3 + 100 * 15) / 1e6, 1e-12);
    });

    it('in runAgent with prices, a member without a price is an InvalidOptionError naming it', () => {
      const pool = modelPool([member('a'), member('b')]);
      expect(() =>
        runAgent({ model: pool, tools: [], messages: [{ role: 'user', content: 'hi' }], prices: { a: { input: 1, output: 1 } }, budget: { maxUsd: 1 } }),
      ).to.throw(InvalidOptionError, /"b"/);
    });
  });

  describe('strategies', () => {
    it('least-loaded places a new conversation on the member with the fewest calls in flight', () => {
      virtual(({ cold, flush }) => {
        const a = member('a', cold('-----(f|)', values));
        const b = member('b', cold('-----(f|)', values));
        const pool = modelPool([a, b], { strategy: 'least-loaded' });
        streamModel(pool, ask('k1')).subscribe(); // a (both idle)
        streamModel(pool, ask('k1')).subscribe(); // a (affinity): 2 in flight
        streamModel(pool, ask('k2')).subscribe(); // b
        streamModel(pool, ask('k3')).subscribe(); // b (1 vs 2)
        flush();
        expect(a.requests.map((r) => r.promptCacheKey)).to.deep.equal(['k1', 'k1']);
        expect(b.requests.map((r) => r.promptCacheKey)).to.deep.equal(['k2', 'k3']);
      });
    });

    it('lowest-latency measures each member, then places on the fastest first token', () => {
      virtual(({ cold, flush, at }) => {
        const latency = new LatencyRegistry();
        const a = member('a', cold('-----a(f|)', values));
        const b = member('b', cold('-a(f|)', values));
        const pool = modelPool([a, b], { strategy: 'lowest-latency', latency });
        streamModel(pool, ask('k1')).subscribe(); // a: neither measured yet
        at(100, () => streamModel(pool, ask('k2')).subscribe()); // b: not measured yet (a took 5 ms)
        at(200, () => streamModel(pool, ask('k3')).subscribe()); // b: 1 ms against a's 5
        flush();
        expect(a.requests.map((r) => r.promptCacheKey)).to.deep.equal(['k1']);
        expect(b.requests.map((r) => r.promptCacheKey)).to.deep.equal(['k2', 'k3']);
      });
    });
  });

  describe('bad input', () => {
    const ok = { id: 'a', stream: () => [] };
    const cases: [string, () => unknown, RegExp][] = [
      ['no members', () => modelPool([]), /members/],
      ['a limiter that is not one', () => modelPool([{ model: ok, limiter: {} as never }]), /members\[0\]\.limiter/],
      ['duplicate ids', () => modelPool([ok, ok]), /members\[1\]\.id/],
      ['an unknown strategy', () => modelPool([ok], { strategy: 'random' as never }), /strategy/],
      ['lowest-latency without trackers', () => modelPool([ok], { strategy: 'lowest-latency' }), /latency/],
      ['prices without a member', () => modelPool([ok], { prices: { b: { input: 1, output: 1 } } }), /"a"/],
      ['a negative maxWaitMs', () => modelPool([ok], { maxWaitMs: -1 } as ModelPoolOptions), /maxWaitMs/],
      ['cheaperBelow (a chain option a pool has no use for)', () => modelPool([ok], { cheaperBelow: 0.5 } as ModelPoolOptions), /cheaperBelow/],
    ];
    for (const [name, make, message] of cases) {
      it(`${name}: InvalidOptionError at construction`, () => {
        expect(make).to.throw(InvalidOptionError, message);
      });
    }

    it('a deadline that is not a time errors the call, naming what it returned', () => {
      virtual(({ cold, flush }) => {
        const pool = modelPool([member('a', cold('-(f|)', values))], { deadline: () => 'soon' as never });
        let error: unknown;
        streamModel(pool, ask('k')).subscribe({ error: (e: unknown) => (error = e) });
        flush();
        expect(error).to.be.instanceOf(TypeError).with.property('message').that.contains('soon');
      });
    });

    it('an affinity that throws errors the call', () => {
      virtual(({ cold, flush }) => {
        const pool = modelPool([member('a', cold('-(f|)', values))], {
          affinity: () => {
            throw new Error('no key');
          },
        });
        let error: unknown;
        streamModel(pool, ask()).subscribe({ error: (e: unknown) => (error = e) });
        flush();
        expect(String(error)).to.contain('no key');
      });
    });
  });
});
