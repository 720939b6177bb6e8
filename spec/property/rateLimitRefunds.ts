/**
 * Property: the shared rate limit holds exactly what the calls that ran used. Calls go through
 * `rateLimit` to a `MemoryRateLimitStore` some way off (a request reaches it after `latencyMs`, its
 * answer comes back `replyLatencyMs` later, the limiter gives up after `timeoutMs`); each call may
 * be unsubscribed at a random moment — while its reservation is in flight, while it waits, while
 * it runs — and reports its usage or not. Virtual time orders all of it. Once everything has
 * settled, the shared store holds one request per call whose source was subscribed and, per such
 * call, its reported tokens (or its estimate when it reported none); calls that never started hold
 * nothing, whenever they were cancelled. When the answers come back after the timeout, every call
 * is decided on the local share, and the shared store holds nothing: each late grant was given back.
 *
 * The store starts with a floor far ahead (30 s of a 60 s period), so no wait and no clamp to `now`
 * ever happens in the few hundred ms a scenario lasts: every reservation and refund moves the
 * theoretical arrival time by exactly its units, and a probe at the end reads them back.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { Observable, VirtualTimeScheduler, catchError, of } from 'rxjs';
import type { TurnEvent } from '../../src/core/events/events.js';
import { RateLimiter } from '../../src/core/rate-limit/rateLimit.js';
import { MemoryRateLimitStore, type RateLimitRequest } from '../../src/core/rate-limit/rateLimitStore.js';
import { rateLimit } from '../../src/operators/rateLimit.js';

/** One call: when it is made, what it reserves, how its source behaves, when (if) it is cancelled. */
export interface RefundCall {
  readonly at: number;
  /** Tokens reserved (the estimate). */
  readonly cost: number;
  /** How long its source runs once subscribed. */
  readonly runsMs: number;
  /** Tokens its `finish` reports (emitted when it ends), or undefined: no usage reported. */
  readonly used: number | undefined;
  readonly endsWith: 'complete' | 'error';
  /** Unsubscribed this long after `at` (odd: never the same moment as a store event), or never. */
  readonly cancelAfter: number | undefined;
}

export interface RefundScenario {
  readonly latencyMs: number;
  readonly replyLatencyMs: number;
  readonly timeoutMs: number;
  readonly calls: readonly RefundCall[];
}

/** Units per minute of both limits: one unit is 60 ms. */
const LIMIT = 1000;
const UNIT_MS = 60_000 / LIMIT;
/** The floor set first, in ms ahead: no call ever waits, no refund ever clamps. */
const FLOOR_MS = 30_000;

const callArb: fc.Arbitrary<RefundCall> = fc.record({
  at: fc.integer({ min: 1, max: 100 }).map((n) => 2 * n),
  cost: fc.integer({ min: 0, max: 5 }),
  runsMs: fc.integer({ min: 1, max: 40 }).map((n) => 2 * n),
  used: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
  endsWith: fc.constantFrom<RefundCall['endsWith']>('complete', 'error'),
  cancelAfter: fc.option(
    fc.integer({ min: 0, max: 60 }).map((n) => 2 * n + 1),
    { nil: undefined },
  ),
});

export const refundScenarioArb: fc.Arbitrary<RefundScenario> = fc
  .record({
    latencyMs: fc.integer({ min: 0, max: 20 }).map((n) => 2 * n),
    replyLatencyMs: fc.integer({ min: 0, max: 20 }).map((n) => 2 * n),
    timeoutMs: fc.integer({ min: 5, max: 40 }).map((n) => 2 * n),
    calls: fc.array(callArb, { minLength: 1, maxLength: 8 }),
  })
  // a request always reaches the store in time (the probe needs it); its answer may not
  .filter((s) => s.latencyMs < s.timeoutMs && s.latencyMs + s.replyLatencyMs !== s.timeoutMs);

export interface RefundRun {
  /** Per call: its source was subscribed (and how often), it ended (a value, an error, or the unsubscription). */
  readonly started: readonly number[];
  readonly ended: readonly boolean[];
  /** Units the shared store holds at the end, per limit. */
  readonly requests: number;
  readonly tokens: number;
}

export function runRefunds(s: RefundScenario): RefundRun {
  const scheduler = new VirtualTimeScheduler();
  const store = new MemoryRateLimitStore({ scheduler, latencyMs: s.latencyMs, replyLatencyMs: s.replyLatencyMs, timeoutMs: s.timeoutMs });
  const limiter = new RateLimiter({ name: 'k', requestsPerMinute: LIMIT, tokensPerMinute: LIMIT, store, node: 'n', scheduler });
  const limit = (id: string) => ({ id, limit: LIMIT, periodMs: 60_000 });
  // sent at 0, it runs at latencyMs: before any call's reservation (calls start at 2 or later)
  store
    .adjust({
      key: 'k',
      limits: [
        { ...limit('requests'), floorMs: FLOOR_MS },
        { ...limit('tokens'), floorMs: FLOOR_MS },
      ],
    })
    .subscribe();
  const started = s.calls.map(() => 0);
  const ended = s.calls.map(() => false);
  s.calls.forEach((c, i) => {
    const source = new Observable<TurnEvent>((subscriber) => {
      started[i]!++;
      const end = scheduler.schedule(() => {
        if (c.endsWith === 'error') return subscriber.error(new Error('the call failed'));
        if (c.used !== undefined) subscriber.next({ type: 'finish', reason: 'stop', usage: { inputTokens: c.used, outputTokens: 0 } });
        subscriber.complete();
      }, c.runsMs);
      return () => end.unsubscribe();
    });
    scheduler.schedule(() => {
      const call = source
        .pipe(
          rateLimit(limiter, { cost: c.cost }),
          catchError(() => of(undefined)),
        )
        .subscribe({ complete: () => (ended[i] = true) });
      if (c.cancelAfter !== undefined) {
        scheduler.schedule(() => {
          ended[i] = true;
          call.unsubscribe();
        }, c.cancelAfter);
      }
    }, c.at);
  });
  scheduler.flush();
  // a whole period's reservation on one limit waits exactly until its theoretical arrival time
  const held = (id: string): number => {
    const request: RateLimitRequest = { key: 'k', node: 'probe', maxWaitMs: Infinity, limits: [{ ...limit(id), cost: LIMIT }] };
    const sentAt = scheduler.now();
    let waitMs = NaN;
    store.reserve(request).subscribe((g) => (waitMs = g.waitMs));
    scheduler.flush();
    const tat = waitMs + sentAt + s.latencyMs;
    return (tat - (s.latencyMs + FLOOR_MS)) / UNIT_MS;
  };
  return { started, ended, requests: held('requests'), tokens: held('tokens') };
}

/** What the shared store must hold: the started calls' request and usage (estimate when unreported), or nothing when the local share decided. */
export function checkRefunds(s: RefundScenario, r: RefundRun): void {
  expect(r.ended, 'every call ended (no hang)').to.deep.equal(s.calls.map(() => true));
  for (const n of r.started) expect(n, 'a source is subscribed at most once').to.be.at.most(1);
  const shared = s.latencyMs + s.replyLatencyMs < s.timeoutMs;
  let requests = 0;
  let tokens = 0;
  s.calls.forEach((c, i) => {
    if (!shared || r.started[i] === 0) return;
    requests += 1;
    // the usage counts when the finish came out before the call ended or was cancelled
    const reported = c.used !== undefined && c.endsWith === 'complete' && (c.cancelAfter === undefined || startedBy(s, c) + c.runsMs < c.at + c.cancelAfter);
    tokens += reported ? c.used! : c.cost;
  });
  expect(
    { requests: r.requests, tokens: r.tokens },
    shared ? 'the started calls, exactly' : 'nothing: the local share decided, every late grant given back',
  ).to.deep.equal({ requests, tokens });
}

/** When a call whose reservation the shared store answered in time is started: on the answer (no call waits). */
function startedBy(s: RefundScenario, c: RefundCall): number {
  return c.at + s.latencyMs + s.replyLatencyMs;
}

export const refundsProperty = fc.property(refundScenarioArb, (s) => checkRefunds(s, runRefunds(s)));
