/**
 * rateLimit and RateLimiter in virtual time: GCRA waits with a burst of one period, cost > 1
 * for tokens, reserve-then-reconcile, refunds for calls that never started, refusal past
 * maxWaitMs, sharing through one store, the local share while the store is down or slow,
 * corrections from provider headers, and the `rate-limited` events.
 */
import { expect } from 'chai';
import { catchError, map, mergeMap, type Observable, of } from 'rxjs';
import { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, InvalidOptionError, RateLimitExceededError } from '../../src/core/errors/errors.js';
import type { HealEvent, TurnEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { RateLimiter, type RateLimiterOptions } from '../../src/core/rate-limit/rateLimit.js';
import { gcra, MemoryRateLimitStore } from '../../src/core/rate-limit/rateLimitStore.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { rateLimit, type RateLimitOptions } from '../../src/operators/rateLimit.js';
import { virtual, type VirtualRun } from '../support/marbles.js';

type Run = VirtualRun;

const label = (e: unknown): string =>
  e instanceof RateLimitExceededError ? `refused:${e.retryAfterMs}` : e instanceof HttpError ? `http ${e.status}` : String(e);

const finish = (inputTokens: number, outputTokens: number): TurnEvent => ({ type: 'finish', reason: 'stop', usage: { inputTokens, outputTokens } });

/** Calls through `rateLimit(limiter, options)` at each letter of `marbles`, each subscribing `sources[letter]`. */
function calls<T>(
  run: Run,
  limiter: RateLimiter,
  marbles: string,
  sources: Record<string, Observable<T>>,
  options?: RateLimitOptions<T>,
): Observable<T | string> {
  return run.hot(marbles, sources).pipe(
    mergeMap((source) =>
      source.pipe(
        rateLimit(limiter, options),
        catchError((e: unknown) => of(label(e))),
      ),
    ),
  );
}

const limiter = (options: Partial<RateLimiterOptions>): RateLimiter => new RateLimiter({ name: 'openai:prod', ...options });

describe('rateLimit and RateLimiter (virtual time)', () => {
  it("GCRA: a whole period's worth at once, then one unit every period/limit; past maxWaitMs, refused at once", () => {
    virtual((run) => {
      // 2 per minute: two at once, the third waits 30 s, the fourth would wait 60 s > 30 s
      const l = limiter({ requestsPerMinute: 2, maxWaitMs: 30_000 });
      const s = { a: run.cold('-(a|)') };
      run.expectObservable(calls(run, l, '(aaaa)', s)).toBe('r(aa) 29996ms a', { a: 'a', r: 'refused:60000' });
    });
  });

  it('the wait is spent on the scheduler, and the source is subscribed only when the turn comes', () => {
    virtual((run) => {
      const l = limiter({ requestsPerMinute: 1, maxWaitMs: 60_000 });
      const first = run.cold('-(a|)');
      const second = run.cold('-(b|)');
      calls(run, l, 'a 9ms b', { a: first, b: second }).subscribe();
      run.expectSubscriptions(second.subscriptions).toBe(['60000ms ^!']);
    });
  });

  it('tokens: the estimate is reserved, then reconciled with the finish usage (an over-estimate is given back)', () => {
    virtual((run) => {
      // 1 000 tokens/min: one token is 60 ms. A call estimated 600, using 300, then one estimated 600
      const reconciled = limiter({ tokensPerMinute: 1000 });
      const turn = { t: run.cold('-(f|)', { f: finish(100, 200) }) };
      run
        .expectObservable(calls(run, reconciled, 't 9ms t', turn, { cost: 600 }).pipe(map((v) => (typeof v === 'string' ? v : v.type))))
        .toBe('-f 9ms f', { f: 'finish' });
      // the same without the reconciliation (usage never reported): the second call waits 11 990 ms
      const estimated = limiter({ tokensPerMinute: 1000 });
      const silent = { t: run.cold('-(d|)', { d: { type: 'text-delta', text: 'x' } as TurnEvent }) };
      run
        .expectObservable(calls(run, estimated, 't 9ms t', silent, { cost: 600 }).pipe(map((v) => (typeof v === 'string' ? v : v.type))))
        .toBe('-d 11999ms d', { d: 'text-delta' });
    });
  });

  it('tokens: an under-estimate is charged after the fact, so the next calls wait for it', () => {
    virtual((run) => {
      const l = limiter({ tokensPerMinute: 1000 });
      const turn = { t: run.cold('-(f|)', { f: finish(400, 800) }) };
      // estimated 100 but used 1 200: 200 tokens over the burst → the second call (cost 100) waits 18 000 ms
      run.expectObservable(calls(run, l, 't 9ms t', turn, { cost: 100 }).pipe(map(() => 'f'))).toBe('-f 17999ms f');
      expect(l.estimate).to.equal(0);
    });
  });

  it('a call cancelled while it waits gives its reservation back; a later call does not wait for it', () => {
    virtual((run) => {
      const l = limiter({ requestsPerMinute: 1, maxWaitMs: 120_000 });
      const s = { a: run.cold('-(a|)') };
      calls(run, l, 'a', s).subscribe();
      // b waits for 60 000 ms, but is unsubscribed at 100
      run.expectObservable(calls(run, l, '-a', s), '100ms !').toBe('');
      // c at 200 takes b's turn (60 000), not the one after it (120 000)
      run.expectObservable(calls(run, l, '200ms a', s)).toBe('60001ms a');
    });
  });

  it('calls cancelled while their reservations are in flight give back what the late replies reserved (2/min: two cancelled at once, the third starts at once)', () => {
    virtual((run) => {
      // a store 5 ms away: a reservation sent at 0 runs there at 5, whether or not its caller still listens
      const store = new MemoryRateLimitStore({ latencyMs: 5 });
      const l = limiter({ requestsPerMinute: 2, store, node: 'a' });
      const cancelled = run.cold('-(x|)');
      const third = run.cold('-(c|)');
      // two calls at 0, unsubscribed at 2: the store grants both at 5 and nobody hears it
      run.expectObservable(calls(run, l, '(xx)', { x: cancelled }), '--!').toBe('');
      // the late grants are given back (the refunds land at 10): the call at 20 is granted at 25 with no wait
      run.expectObservable(calls(run, l, '20ms c', { c: third })).toBe('26ms c');
      run.expectSubscriptions(cancelled.subscriptions).toBe([]);
      run.expectSubscriptions(third.subscriptions).toBe('25ms ^!');
    });
  });

  it("a reply that arrives after the store call's timeout: the local share decides, and what the shared store granted meanwhile is given back", () => {
    virtual((run) => {
      // the reservation runs at 50 (before its 100 ms deadline), its answer arrives at 150: 50 ms after the limiter gave up
      const store = new MemoryRateLimitStore({ latencyMs: 50, replyLatencyMs: 100, timeoutMs: 100 });
      const l = limiter({ requestsPerMinute: 2, store, node: 'a' });
      const x = run.cold('-(x|)');
      // the local share (2/min, no burst) lets the call start 30 000 ms after the timeout
      run.expectObservable(calls(run, l, 'x', { x })).toBe('30101ms x');
      run.expectSubscriptions(x.subscriptions).toBe('30100ms ^!');
      // the shared store holds nothing for it: a whole period's reservation at 300 (run at 350, answered at 450) needs no wait
      const probe = { key: 'openai:prod', node: 'probe', maxWaitMs: Infinity, limits: [{ id: 'requests', limit: 2, periodMs: 60_000, cost: 2 }] };
      run
        .expectObservable(
          run.cold('300ms p').pipe(
            mergeMap(() => store.reserve(probe)),
            map((g) => g.waitMs),
          ),
        )
        .toBe('450ms w', { w: 0 });
    });
  });

  it('limiters with the same name share one store (N processes); other names are independent', () => {
    virtual((run) => {
      const store = new MemoryRateLimitStore();
      const a = limiter({ requestsPerMinute: 2, store, node: 'a' });
      const b = limiter({ requestsPerMinute: 2, store, node: 'b' });
      const other = limiter({ name: 'anthropic:prod', requestsPerMinute: 2, store, node: 'b' });
      const s = { x: run.cold('(x|)') };
      run.expectObservable(calls(run, a, 'x', s)).toBe('x');
      run.expectObservable(calls(run, b, '-x-x', s)).toBe('-x 29998ms x');
      run.expectObservable(calls(run, other, '-x', s)).toBe('-x');
    });
  });

  it('the store down: each node falls back to limit ÷ the live nodes it last heard of (no burst), never to no limit', () => {
    virtual((run) => {
      const store = new MemoryRateLimitStore();
      const a = limiter({ requestsPerMinute: 4, store, node: 'a' });
      const b = limiter({ requestsPerMinute: 4, store, node: 'b' });
      const s = { x: run.cold('(x|)') };
      // both reserve: the store tells a there are 2 live nodes
      calls(run, a, 'x-x', s).subscribe();
      calls(run, b, '-x', s).subscribe();
      run.at(5, () => (store.down = true));
      // a alone now has 4 ÷ 2 = 2/min, starting with no burst: one every 30 s; the two others would wait
      // longer than maxWaitMs and are refused (the store's error never reaches a call)
      run.expectObservable(calls(run, a, '10ms (xxx)', s)).toBe('10ms (yy) 29996ms x', { x: 'x', y: 'refused:60000' });
    });
  });

  it("with a hub, the shared store's health: rate-limit-store:<name> closed → open when it stops answering", () => {
    virtual((run) => {
      const store = new MemoryRateLimitStore();
      const hub = new HealHub();
      const a = limiter({ requestsPerMinute: 600, store, node: 'a' });
      const s = { x: run.cold('(x|)') };
      run.at(5, () => (store.down = true));
      // two calls fail to reach the store (at 10 and 20): its breaker opens at the second, and 1 s
      // later lets one call try again; the calls go through on the local share (no burst: 100 ms apart)
      run.expectObservable(calls(run, a, '10ms x 9ms x', s, { hub })).toBe('110ms x 99ms x', { x: 'x' });
      run
        .expectObservable(hub.events$.pipe(map((e) => (e.type === 'circuit' && e.kind === 'transition' ? `${e.breaker}:${e.from}>${e.to}` : e.type))))
        .toBe('10ms r 9ms (or) 996ms h', {
          r: 'rate-limited',
          o: 'rate-limit-store:openai:prod:closed>open',
          h: 'rate-limit-store:openai:prod:open>half-open',
        });
    });
  });

  it('the store slow: after its timeout (100 ms) the local share decides; no store error reaches a call', () => {
    virtual((run) => {
      const store = new MemoryRateLimitStore({ latencyMs: 500, timeoutMs: 100 });
      const a = limiter({ requestsPerMinute: 600, store, node: 'a' });
      const s = { x: run.cold('(x|)') };
      // 600/min alone, starting with no burst: the first call waits one unit (100 ms) after the timeout
      run.expectObservable(calls(run, a, 'x', s)).toBe('200ms x');
    });
  });

  it('a 429 with retry-after holds every process back for that long; remaining-requests headers tighten the limit', () => {
    virtual((run) => {
      const store = new MemoryRateLimitStore();
      const a = limiter({ requestsPerMinute: 600, store, node: 'a' });
      const b = limiter({ requestsPerMinute: 600, store, node: 'b' });
      const s = {
        r: run.cold('-#', undefined, new HttpError(429, { 'retry-after': '10' })),
        x: run.cold('(x|)'),
      };
      run.expectObservable(calls(run, a, 'r', s)).toBe('-y', { y: 'http 429' });
      // b's call at 5 waits until 10 001 (10 s after the 429)
      run.expectObservable(calls(run, b, '-----x', s)).toBe('10001ms x');
    });
  });

  it('a 429 whose retry-after is beyond 60 s (an HTTP date read on a clock a day behind) holds every process back 60 s at most', () => {
    virtual((run) => {
      const store = new MemoryRateLimitStore();
      const a = limiter({ requestsPerMinute: 600, store, node: 'a' });
      const b = limiter({ requestsPerMinute: 600, store, node: 'b', maxWaitMs: 120_000 });
      // this node's clock says 1970-01-01T00:00:00.001Z: the provider's date is a day ahead of it
      const s = {
        r: run.cold('-#', undefined, new HttpError(429, { 'retry-after': 'Fri, 02 Jan 1970 00:00:00 GMT' })),
        x: run.cold('(x|)'),
      };
      expect(classifyError(new HttpError(429, { 'retry-after': 'Fri, 02 Jan 1970 00:00:00 GMT' }), { now: 1 }).retryAfterMs, 'what the node reads').to.equal(
        86_399_999,
      );
      run.expectObservable(calls(run, a, 'r', s)).toBe('-y', { y: 'http 429' });
      // b's call at 5 waits until 60 001 (60 s after the 429), not a day
      run.expectObservable(calls(run, b, '-----x', s)).toBe('60001ms x');
    });
  });

  it("a 429 that could not reach the shared store (down) is sent again before this node's next shared reservation: every process is held for what is left of it", () => {
    virtual((run) => {
      const store = new MemoryRateLimitStore();
      const a = limiter({ requestsPerMinute: 600, store, node: 'a' });
      const b = limiter({ requestsPerMinute: 600, store, node: 'b' });
      const s = {
        r: run.cold('-#', undefined, new HttpError(429, { 'retry-after': '10' })),
        x: run.cold('(x|)'),
      };
      run.at(5, () => (store.down = true));
      run.at(500, () => (store.down = false));
      // a's call at 10 runs on the local share (at 110) and gets the 429 at 111: the block (until 10 111) cannot reach the store
      run.expectObservable(calls(run, a, '10ms r', s)).toBe('111ms y', { y: 'http 429' });
      // the store is back; a's next call (2 000) sends the block again first, and waits for it; so does b's (2 100)
      run.expectObservable(calls(run, a, '2000ms x', s)).toBe('10111ms x');
      run.expectObservable(calls(run, b, '2100ms x', s)).toBe('10211ms x');
    });
  });

  it('x-ratelimit-remaining-tokens below what the limiter thinks: it believes the provider', () => {
    virtual((run) => {
      const l = limiter({ tokensPerMinute: 6000 });
      const s = {
        e: run.cold('-#', undefined, new HttpError(500, { 'x-ratelimit-remaining-tokens': '0' })),
        x: run.cold('(x|)'),
      };
      calls(run, l, 'e', s, { cost: 0 }).subscribe();
      // 0 tokens remain: a call of 60 tokens waits 600 ms (one token is 10 ms)
      run.expectObservable(calls(run, l, '--x', s, { cost: 60 })).toBe('601ms x');
    });
  });

  it('reports each wait, and each refusal, as a rate-limited event on the hub', () => {
    virtual((run) => {
      const hub = new HealHub();
      const events: HealEvent[] = [];
      hub.events$.subscribe((e) => events.push(e));
      const l = limiter({ requestsPerMinute: 1, maxWaitMs: 60_000 });
      const s = { x: run.cold('(x|)') };
      calls(run, l, '(xxx)', s, { hub, cost: 5 }).subscribe();
      run.flush();
      expect(events).to.deep.equal([
        { type: 'rate-limited', limiter: 'openai:prod', waitMs: 60_000, cost: 5 },
        { type: 'rate-limited', limiter: 'openai:prod', waitMs: 120_000, cost: 5, rejected: true },
      ]);
    });
  });

  it('a refusal is classified throttled (not a provider failure): a breaker does not count it', () => {
    const refusal = new RateLimitExceededError('openai:prod', 42_000, 30_000);
    expect(classifyError(refusal)).to.deep.equal({ retryable: false, fallback: true, category: 'throttled', strategy: 'fallback', retryAfterMs: 42_000 });
    virtual((run) => {
      const breaker = new CircuitBreaker({ failureThreshold: 1 });
      const l = limiter({ requestsPerMinute: 1, maxWaitMs: 0 });
      const s = { x: run.cold('(x|)') };
      run
        .hot('(xxx)', s)
        .pipe(
          mergeMap((src) =>
            src.pipe(
              rateLimit(l),
              circuitBreak(breaker),
              catchError((e: unknown) => of(label(e))),
            ),
          ),
        )
        .subscribe();
      run.flush();
      expect(breaker.state).to.equal('closed');
    });
  });

  it('a throwing cost or usage function errors the call or only loses the reconciliation, never hangs', () => {
    virtual((run) => {
      const l = limiter({ tokensPerMinute: 1000 });
      const s = { x: run.cold('(x|)') };
      const boom = (): number => {
        throw new Error('boom');
      };
      run.expectObservable(calls(run, l, 'x', s, { cost: boom })).toBe('x', { x: 'Error: boom' });
      run.expectObservable(calls(run, l, '-x', s, { cost: 1, usage: boom })).toBe('-x');
    });
  });

  it('validates its options at once, naming the option', () => {
    expect(() => new RateLimiter({ name: 'k' })).to.throw(InvalidOptionError, /requestsPerMinute/);
    expect(() => new RateLimiter({ name: '', requestsPerMinute: 1 })).to.throw(InvalidOptionError, /"name"/);
    expect(() => new RateLimiter({ name: 'k', tokensPerMinute: 0 })).to.throw(InvalidOptionError, /tokensPerMinute/);
    expect(() => new RateLimiter({ name: 'k', requestsPerMinute: 1, store: {} as never })).to.throw(InvalidOptionError, /store/);
    expect(() => rateLimit(new RateLimiter({ name: 'k', requestsPerMinute: 1 }), { cost: -1 })).to.throw(InvalidOptionError, /cost/);
    expect(() => rateLimit({} as RateLimiter)).to.throw(InvalidOptionError, /limiter/);
  });

  it('gcra: the rule in one line (reserve moves tat by cost × period/limit; the burst is one period)', () => {
    const limit = { id: 'tokens', limit: 1000, periodMs: 60_000 };
    expect(gcra(undefined, 0, limit, 1000)).to.deep.equal({ waitMs: 0, tat: 60_000 });
    expect(gcra(60_000, 0, limit, 10)).to.deep.equal({ waitMs: 600, tat: 60_600 });
    expect(gcra(60_000, 120_000, limit, 10)).to.deep.equal({ waitMs: 0, tat: 120_600 });
  });
});
