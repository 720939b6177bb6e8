/**
 * N breakers sharing one MemoryBreakerStore, in virtual time: quorum, facts, the one prober and
 * its lease, deadlines, generations, the poll backstop, and a slow or dead store.
 */
import { expect } from 'chai';
import { catchError, map, merge, mergeMap, type Observable, of, Subject, type Subscription, takeUntil, timeout } from 'rxjs';
import { CircuitBreaker, type CircuitBreakerOptions, type CircuitPermit } from '../../../src/core/breaker/CircuitBreaker.js';
import { CircuitBreakerRegistry } from '../../../src/core/breaker/registry.js';
import { restoreBreaker } from '../../../src/core/breaker/persist.js';
import { CircuitOpenError, HttpError, InvalidOptionError } from '../../../src/core/errors/errors.js';
import { MemoryBreakerStore } from '../../../src/core/fleet/fleetStore.js';
import { type BreakerStore, type FleetVerdict, type FleetOptions, FLEET_NODE } from '../../../src/core/breaker/fleetSeam.js';
import { circuitBreak } from '../../../src/operators/circuitBreak.js';
import { HealHub } from '../../../src/core/hub/hub.js';
import { testScheduler, virtual, type VirtualRun } from '../../support/marbles.js';
import { ownStore } from '../../support/ownStore.js';

type Run = VirtualRun;

const label = (e: unknown): string => (e instanceof CircuitOpenError ? `open:${e.retryAfterMs}` : e instanceof HttpError ? `http ${e.status}` : String(e));

/** Breakers named `model` on nodes `nodes`, sharing `store`. */
function fleetOf(
  nodes: readonly string[],
  store: BreakerStore,
  options: Omit<CircuitBreakerOptions, 'fleet'> = {},
  fleet: Omit<FleetOptions, 'store' | 'node'> = {},
): CircuitBreaker[] {
  return nodes.map((node) => new CircuitBreaker({ name: 'model', failureThreshold: 2, resetTimeoutMs: 100, ...options, fleet: { store, node, ...fleet } }));
}

/** `to:reason` of each transition, as a marble-comparable stream. */
const moves = (b: CircuitBreaker): Observable<string> => b.events$.pipe(map((e) => `${e.to}:${e.reason}`));

/**
 * Calls through `breaker` at the letters of `calls`: `f` a call failing with 503 after 1 ms, `s`
 * one succeeding after 1 ms (value `s`), `r` a 429 with retry-after 5 s. Rejections become `open:<ms>`.
 */
function calls(run: Run, breaker: CircuitBreaker, marbles: string): Observable<string> {
  const sources: Record<string, Observable<string>> = {
    f: run.cold('-#', undefined, new HttpError(503)),
    s: run.cold('-(s|)'),
    r: run.cold('-#', undefined, new HttpError(429, { 'retry-after': '5' })),
  };
  return run.hot(marbles, sources).pipe(
    mergeMap((source) =>
      source.pipe(
        circuitBreak(breaker),
        catchError((e: unknown) => of(label(e))),
      ),
    ),
  );
}

/** The values of a marble-comparable stream, for `toBe(…, V)`. */
const V = {
  x: 'http 503',
  s: 's',
  O: 'open:fleet',
  o: 'open:local',
};

describe('fleet (N breakers sharing one MemoryBreakerStore, virtual time)', () => {
  describe('quorum for inference', () => {
    it('one node opening alone stays alone; the second opens every node in the same frame', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store);
        run.expectObservable(moves(a!)).toBe('----x', { x: 'open:failure_threshold' });
        run.expectObservable(moves(b!)).toBe('--------x', { x: 'open:failure_threshold' });
        run.expectObservable(moves(c!)).toBe('--------x', { x: 'open:fleet_open' });
        run.expectObservable(calls(run, a!, '-f-f')).toBe('--x-x', V);
        run.expectObservable(calls(run, b!, '-----f-f')).toBe('------x-x', V);
        // c never failed: from frame 8 on it is rejected at once, with the fleet's deadline (8 + 100)
        run.expectObservable(calls(run, c!, '-----s---s')).toBe('------s--y', { s: 's', y: 'open:99' });
      });
    });

    it('a bad node (its own calls fail, the others are fine) never trips the others', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [bad, b, c] = fleetOf(['bad', 'b', 'c'], store);
        run.expectObservable(calls(run, bad!, '-f-f-f 200ms f-f')).toBe('--x-xo 200ms -xy', { ...V, o: 'open:99', y: 'open:99' });
        run.expectObservable(moves(b!)).toBe('');
        run.expectObservable(moves(c!)).toBe('');
        run.expectObservable(calls(run, b!, '-s 300ms s')).toBe('--s 300ms s', V);
      });
    });

    it('minFraction: with 4 live nodes and minFraction 0.75, two votes are not enough, three are', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, c, d] = fleetOf(['a', 'b', 'c', 'd'], store, {}, { quorum: { minNodes: 2, minFraction: 0.75 } });
        run.expectObservable(moves(d!)).toBe('------------x', { x: 'open:fleet_open' });
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        calls(run, c!, '---------f-f').subscribe();
      });
    });

    it('quorum: 3 (a number) is { minNodes: 3 }', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, c, d] = fleetOf(['a', 'b', 'c', 'd'], store, {}, { quorum: 3 });
        run.expectObservable(moves(d!)).toBe('------------x', { x: 'open:fleet_open' });
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        calls(run, c!, '---------f-f').subscribe();
      });
    });

    it('a node joining while the fleet is open is held at once (its first sync)', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b] = fleetOf(['a', 'b'], store);
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        let rejection: unknown;
        run.at(50, () => {
          const late = fleetOf(['late'], store)[0]!;
          rejection = late.acquire();
        });
        run.flush();
        expect(rejection).to.be.instanceOf(CircuitOpenError);
        expect((rejection as CircuitOpenError).retryAfterMs, 'the fleet deadline (108) minus now (50)').to.equal(58);
      });
    });

    it('votes older than the window do not count', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store, { resetTimeoutMs: 10 }, { quorum: { windowMs: 50 } });
        run.expectObservable(moves(c!)).toBe('');
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-- 60ms f-f').subscribe();
      });
    });
  });

  describe('the one prober', () => {
    it('after the open period exactly one node probes; its success closes every node', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store);
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        // the fleet opened at 8 until 108. c calls first (110) and probes under the lease; a and b,
        // calling while the probe runs (111), are held; the probe's success (111) closes them all
        run.expectObservable(calls(run, c!, '110ms s')).toBe('110ms -s', V);
        run.expectObservable(calls(run, a!, '111ms s')).toBe('111ms y', { y: 'open:0' });
        run.expectObservable(calls(run, b!, '111ms s-s')).toBe('111ms y--s', { s: 's', y: 'open:0' });
        run.expectObservable(moves(c!)).toBe('--------x 101ms hc', { x: 'open:fleet_open', h: 'half-open:probe_lease', c: 'closed:probe_success' });
        run.expectObservable(moves(a!)).toBe('----x 106ms c', { x: 'open:failure_threshold', c: 'closed:fleet_probe_success' });
      });
    });

    it("the prober's failure re-opens every node for a fresh period", () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store);
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        run.expectObservable(calls(run, c!, '110ms f')).toBe('110ms -x', V);
        // a: held through the new period (fleet_probe_failure), then its own probe under the lease
        run
          .expectObservable(moves(a!))
          .toBe('----x 106ms f 99ms hc', { x: 'open:failure_threshold', f: 'open:fleet_probe_failure', h: 'half-open:probe_lease', c: 'closed:probe_success' });
        run
          .expectObservable(moves(c!))
          .toBe('--------x 101ms hp 100ms c', { x: 'open:fleet_open', h: 'half-open:probe_lease', p: 'open:probe_failure', c: 'closed:fleet_probe_success' });
        // a stays open through the new period (111 + 100), then probes itself
        run.expectObservable(calls(run, a!, '200ms s 10ms s')).toBe('200ms y 10ms -s', { y: 'open:11', s: 's' });
      });
    });

    it('the nodes waiting on a probe that fails report the fresh period: open → open, fleet_probe_failure, with its retryAfterMs', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store);
        const detail = (x: CircuitBreaker): Observable<string> => x.events$.pipe(map((e) => `${e.from}>${e.to}:${e.reason}:${e.retryAfterMs}`));
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        // the fleet opened at 8 until 108; c probes at 110 and fails at 111: open again until 211
        calls(run, c!, '110ms f').subscribe();
        const reopened = 'open>open:fleet_probe_failure:100';
        run.expectObservable(detail(a!)).toBe('----x 106ms f', { x: 'closed>open:failure_threshold:100', f: reopened });
        run.expectObservable(detail(b!)).toBe('--------x 102ms f', { x: 'closed>open:failure_threshold:100', f: reopened });
        // state$ shows states: a re-open is no new state
        run.expectObservable(a!.state$).toBe('x---o', { x: 'closed', o: 'open' });
      });
    });

    it('a prober that never reports holds the others only until its lease ends', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b] = fleetOf(['a', 'b'], store, {}, { probeLeaseMs: 50 });
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        // a ghost node takes the lease when the period ends (108) and dies
        run.at(108, () => store.acquireProbe('ghost', 'model', 50).subscribe());
        // b is held (open:0) until the ghost's lease runs out at 158; then b takes the lease and probes
        run.expectObservable(calls(run, b!, '120ms s 36ms ss')).toBe('120ms y 36ms y-s', { y: 'open:0', s: 's' });
        run.expectObservable(moves(b!)).toBe('--------x 149ms hc', { x: 'open:failure_threshold', h: 'half-open:probe_lease', c: 'closed:probe_success' });
      });
    });

    /** How a probe may end before any value without an outcome: each one gives its permit back. */
    const cancellations: Record<string, (run: Run, breaker: CircuitBreaker) => Observable<unknown>> = {
      "the user's unsubscribe": (run, breaker) => run.cold('-').pipe(circuitBreak(breaker), takeUntil(run.cold('5ms x'))),
      'an idle deadline (timeout after the breaker)': (run, breaker) =>
        run.cold('-').pipe(
          circuitBreak(breaker),
          timeout({ each: 5 }),
          catchError(() => of('idle')),
        ),
    };
    for (const [how, cancelled] of Object.entries(cancellations)) {
      it(`a probe cancelled before any value (${how}) leaves no second prober: once its lease ran out and another node took it, the first admits no probe`, () => {
        virtual((run) => {
          const store = new MemoryBreakerStore();
          const [a, b] = fleetOf(['a', 'b'], store, {}, { probeLeaseMs: 50 });
          calls(run, a!, '-f-f').subscribe();
          calls(run, b!, '-----f-f').subscribe();
          // the fleet opened at 8 until 108; a probes under the lease at 110 (until 160), and its
          // probe is cancelled at 115 before any value: its permit goes back, a stays half-open
          run
            .hot('110ms p')
            .pipe(mergeMap(() => cancelled(run, a!)))
            .subscribe();
          // a's lease ran out at 160: b takes it at 170 and probes (its success at 180)
          run.expectObservable(run.hot('170ms p').pipe(mergeMap(() => run.cold('10ms (s|)').pipe(circuitBreak(b!))))).toBe('180ms s');
          // a, called at 175 while b probes, holds no lease: rejected (b's probe runs), not a second probe;
          // b's success closes it, and its next call passes
          run.expectObservable(calls(run, a!, '175ms s 9ms s')).toBe('175ms y 9ms -s', { y: 'open:0', s: 's' });
          run.expectObservable(moves(a!)).toBe('----x 105ms h 64ms o 4ms c', {
            x: 'open:failure_threshold',
            h: 'half-open:probe_lease',
            o: 'open:fleet_open',
            c: 'closed:fleet_probe_success',
          });
          run
            .expectObservable(moves(b!))
            .toBe('--------x 161ms h 9ms c', { x: 'open:failure_threshold', h: 'half-open:probe_lease', c: 'closed:probe_success' });
        });
      });
    }

    it("a probe cancelled before any value, the node idle since: the fleet prober's success closes it (half-open without the lease, it waits on the prober like an open node)", () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b] = fleetOf(['a', 'b'], store, {}, { probeLeaseMs: 50 });
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        run
          .hot('110ms p')
          .pipe(mergeMap(() => run.cold('-').pipe(circuitBreak(a!), takeUntil(run.cold('5ms x')))))
          .subscribe();
        // b takes the lapsed lease at 170 and succeeds at 180: a, half-open and idle, closes with it
        calls(run, b!, '170ms s').subscribe();
        run
          .expectObservable(moves(a!))
          .toBe('----x 105ms h 60ms c', { x: 'open:failure_threshold', h: 'half-open:probe_lease', c: 'closed:fleet_probe_success' });
      });
    });

    it('a probe cancelled before any value, its lease run out and no one taking it: the next call takes the lease again and probes, with no transition', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b] = fleetOf(['a', 'b'], store, {}, { probeLeaseMs: 50 });
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        run
          .hot('110ms p')
          .pipe(mergeMap(() => run.cold('-').pipe(circuitBreak(a!), takeUntil(run.cold('5ms x')))))
          .subscribe();
        // a's lease ran out at 160; a calls at 170: the lease is free, a takes it again and probes; its success closes the fleet
        run.expectObservable(calls(run, a!, '170ms s')).toBe('170ms -s', V);
        run.expectObservable(moves(a!)).toBe('----x 105ms h 60ms c', { x: 'open:failure_threshold', h: 'half-open:probe_lease', c: 'closed:probe_success' });
        run.expectObservable(moves(b!)).toBe('--------x 162ms c', { x: 'open:failure_threshold', c: 'closed:fleet_probe_success' });
      });
    });

    it('a 429 with retry-after on one node opens every node for that long, no quorum', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store);
        // c probes when the 5 s are over (5002); its success closes a and b
        run.expectObservable(moves(a!)).toBe('--x 5000ms c', { x: 'open:rate_limit', c: 'closed:fleet_probe_success' });
        run.expectObservable(moves(b!)).toBe('--x 5000ms c', { x: 'open:fleet_rate_limit', c: 'closed:fleet_probe_success' });
        run.expectObservable(calls(run, a!, '-r')).toBe('--y', { y: 'http 429' });
        run.expectObservable(calls(run, c!, '---s 4998ms s')).toBe('---y 4998ms -s', { y: 'open:4999', s: 's' });
      });
    });

    it('a 429 whose retry-after is beyond 60 s (an HTTP date read on a clock a day behind) opens every node for 60 s at most', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store);
        const skewed = run.cold('-#', undefined, new HttpError(429, { 'retry-after': 'Fri, 02 Jan 1970 00:00:00 GMT' }));
        run
          .hot('-r')
          .pipe(
            mergeMap(() =>
              skewed.pipe(
                circuitBreak(a!),
                catchError(() => of('r')),
              ),
            ),
          )
          .subscribe();
        // c probes when the 60 s are over (60 002); its success closes a and b
        run.expectObservable(moves(a!)).toBe('--x 60000ms c', { x: 'open:rate_limit', c: 'closed:fleet_probe_success' });
        run.expectObservable(moves(b!)).toBe('--x 60000ms c', { x: 'open:fleet_rate_limit', c: 'closed:fleet_probe_success' });
        run.expectObservable(calls(run, c!, '60002ms s')).toBe('60003ms s', { s: 's' });
      });
    });

    it('isolate() and reset() by hand are fleet-wide', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b] = fleetOf(['a', 'b'], store);
        run.at(5, () => a!.isolate());
        run.at(9, () => a!.reset());
        run.expectObservable(moves(b!)).toBe('-----i---r', { i: 'open:fleet_isolated', r: 'closed:fleet_reset' });
        run.expectObservable(calls(run, b!, '------s---s')).toBe('------y----s', { y: 'open:Infinity', s: 's' });
      });
    });
  });

  describe('deadlines', () => {
    it('a fleet verdict never shortens a later local deadline, and a remote "closed" never closes a breaker open on its own evidence', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store, { resetTimeoutMs: 100 });
        // a and c open on their own at 4: a quorum, the fleet is open until 104 and b is held…
        calls(run, a!, '-f-f').subscribe();
        calls(run, c!, '-f-f').subscribe();
        // …b, closed again by hand at 55 (a local restore), opens on its own evidence at 59 (until 159)
        run.at(55, () =>
          restoreBreaker(b!, { version: 1, name: 'model', state: 'closed', isolated: false, openUntil: null, consecutiveFailures: 0, window: null }),
        );
        calls(run, b!, '56ms f-f').subscribe();
        // the fleet's probe at 110 succeeds: c (held) closes, b (its own deadline 159) stays open
        run.expectObservable(calls(run, a!, '110ms s')).toBe('110ms -s', V);
        run.expectObservable(calls(run, b!, '120ms s')).toBe('120ms y', { y: 'open:39' });
        run.expectObservable(calls(run, c!, '120ms s')).toBe('120ms -s', V);
      });
    });
  });

  describe('propagation', () => {
    /** A store whose pub/sub can be cut, and whose changes can be replayed (stale messages). */
    class LossyStore implements BreakerStore {
      readonly pollMs: number;
      cut = false;
      readonly injected = new Subject<FleetVerdict>();
      readonly changes$: Observable<FleetVerdict>;
      constructor(
        readonly inner: MemoryBreakerStore,
        pollMs: number,
      ) {
        this.pollMs = pollMs;
        this.changes$ = merge(inner.changes$.pipe(mergeMap((v) => (this.cut ? [] : [v]))), this.injected);
      }
      close(): void {
        this.injected.complete();
        this.inner.close();
      }
      sync = (node: string, names: readonly string[]): Observable<readonly FleetVerdict[]> => this.inner.sync(node, names);
      vote: BreakerStore['vote'] = (...a) => this.inner.vote(...a);
      fact: BreakerStore['fact'] = (...a) => this.inner.fact(...a);
      acquireProbe: BreakerStore['acquireProbe'] = (...a) => this.inner.acquireProbe(...a);
      probeResult: BreakerStore['probeResult'] = (...a) => this.inner.probeResult(...a);
      isolate: BreakerStore['isolate'] = (...a) => this.inner.isolate(...a);
      reset: BreakerStore['reset'] = (...a) => this.inner.reset(...a);
    }

    it('with pub/sub cut, the poll brings the verdict within one poll interval', () => {
      virtual((run) => {
        const inner = new MemoryBreakerStore();
        const store = new LossyStore(inner, 1000);
        store.cut = true;
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store, { resetTimeoutMs: 60_000 });
        // (the store is closed at 5000: at the end of the open period c decides alone)
        run.expectObservable(moves(c!)).toBe('1000ms x 59007ms h', { x: 'open:fleet_open', h: 'half-open:reset_timeout' });
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        run.at(5000, () => store.close());
      });
    });

    it('a stale verdict (an older generation) is dropped', () => {
      virtual((run) => {
        const inner = new MemoryBreakerStore();
        const store = new LossyStore(inner, 1000);
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store, { resetTimeoutMs: 100 });
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        run.at(20, () => c!.reset());
        // a delayed copy of the open verdict (generation 8) arrives after the reset (generation 20)
        run.at(30, () => store.injected.next({ name: 'model', generation: 8, state: 'open', reason: 'quorum', remainingMs: 77 }));
        run.expectObservable(moves(b!)).toBe('--------x 11ms r', { x: 'open:failure_threshold', r: 'closed:fleet_reset' });
        run.at(2500, () => store.close());
      });
    });
  });

  describe('a slow or dead store', () => {
    it('slow (latency above the timeout): each node decides alone, no store error reaches a call, nothing hangs', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore({ latencyMs: 500, timeoutMs: 100 });
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store, { resetTimeoutMs: 300 });
        run.expectObservable(calls(run, a!, '-f-f-s')).toBe('--x-xy', { ...V, y: 'open:299' });
        calls(run, b!, '-----f-f').subscribe();
        // c is not told (the store is too slow): it keeps calling; after the period a probes on its own
        run.expectObservable(calls(run, c!, '---------s')).toBe('----------s', V);
        run.expectObservable(calls(run, a!, '310ms s')).toBe('310ms -s', V);
        // and nothing reaches the store late: no fleet verdict ever
        run.expectObservable(moves(c!)).toBe('');
      });
    });

    it('dead, then back: local breakers protect meanwhile, and the nodes re-sync on recovery', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore({ pollMs: 500 });
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store, { resetTimeoutMs: 60_000 });
        run.at(0, () => (store.down = true));
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        run.at(1200, () => (store.down = false));
        // after recovery (a poll answers at 1500, then the re-sync re-votes), c is held open
        run.expectObservable(moves(c!)).toBe('1500ms x 59999ms h', { x: 'open:fleet_open', h: 'half-open:reset_timeout' });
        run.at(5000, () => store.close());
      });
    });

    it('a fact that could not reach the store (down) is sent again on recovery as a fact, for what is left of it — not as a vote', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore({ pollMs: 500 });
        const [a, b] = fleetOf(['a', 'b'], store, { resetTimeoutMs: 60_000 });
        run.at(0, () => (store.down = true));
        // a's 429 (retry-after 5 s) at 2 never reaches the store; the poll at 500 fails too, and the store's breaker opens
        const limited = run.cold('-#', undefined, new HttpError(429, { 'retry-after': '5' }));
        run
          .hot('-r')
          .pipe(
            mergeMap(() =>
              limited.pipe(
                circuitBreak(a!),
                catchError(() => of('r')),
              ),
            ),
          )
          .subscribe();
        run.at(1200, () => (store.down = false));
        // the poll at 1500 answers: a sends its fact again for the 3 502 ms left, and b is held until 5 002 (one vote would hold nobody);
        // b's call at 5 100 takes the probe lease, and its success closes the fleet
        run.expectObservable(moves(b!)).toBe('1500ms x 3599ms p c', { x: 'open:fleet_rate_limit', p: 'half-open:probe_lease', c: 'closed:probe_success' });
        run.expectObservable(calls(run, b!, '1600ms s 3499ms s')).toBe('1600ms y 3500ms s', { y: 'open:3402', s: 's' });
        run.at(10_000, () => store.close());
      });
    });

    it('a fact lost to a store down for an instant: the next poll that answers sends it again', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore({ pollMs: 50 });
        const [a, b] = fleetOf(['a', 'b'], store);
        run.at(1, () => (store.down = true));
        run.at(3, () => (store.down = false));
        const limited = run.cold('-#', undefined, new HttpError(429, { 'retry-after': '5' }));
        run
          .hot('-r')
          .pipe(
            mergeMap(() =>
              limited.pipe(
                circuitBreak(a!),
                catchError(() => of('r')),
              ),
            ),
          )
          .subscribe();
        // the poll at 50 answers, a's fact goes again: b is held until 5 002
        run.expectObservable(moves(b!)).toBe('50ms x', { x: 'open:fleet_rate_limit' });
        run.expectObservable(calls(run, b!, '60ms s')).toBe('60ms y', { y: 'open:4942' });
        run.at(10_000, () => store.close());
      });
    });

    it("fleet.hub hears the store's health: fleet-store closed → open when it stops answering (each node alone), half-open → closed when it answers again", () => {
      virtual((run) => {
        const store = new MemoryBreakerStore({ pollMs: 500 });
        const hub = new HealHub();
        const [a] = fleetOf(['a'], store, { resetTimeoutMs: 60_000 }, { hub });
        const health = hub.events$.pipe(map((e) => (e.type === 'circuit' && e.kind === 'transition' ? `${e.breaker}:${e.from}>${e.to}:${e.reason}` : e.type)));
        run.at(0, () => (store.down = true));
        // a opens on its own at 4 and votes: the store refuses (1st failure); the poll at 500 fails too
        // (2nd): the store's breaker opens. Back at 1200; after the breaker's 1 s, the poll at 1500
        // is its half-open probe, and the store answers
        calls(run, a!, '-f-f').subscribe();
        run.at(1200, () => (store.down = false));
        run.expectObservable(health).toBe('500ms o 999ms (hc)', {
          o: 'fleet-store:closed>open:failure_threshold',
          h: 'fleet-store:open>half-open:reset_timeout',
          c: 'fleet-store:half-open>closed:probe_success',
        });
        run.at(5000, () => store.close());
      });
    });

    it("a hub given as fleet.hub is validated; one without listeners follows nothing (the store's breaker keeps no observer)", () => {
      expect(() => new CircuitBreaker({ name: 'x', fleet: { store: new MemoryBreakerStore(), hub: {} as HealHub } })).to.throw(InvalidOptionError, 'fleet.hub');
    });

    it("the prober's result lost and every node closed alone: a bad node opening later never probes for the fleet (the stale open verdict no longer binds the nodes that left it)", () => {
      // seen on the real fleet under load: the store kept the verdict open (the prober's success
      // never reached it), every node had closed on its own, then one bad node opened, took the
      // still-open verdict's lease, and its failed probe re-opened every node
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, bad] = fleetOf(['a', 'b', 'bad'], store, {}, { probeLeaseMs: 50 });
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        // the fleet opened at 8 until 108; a probes under the lease (2 ms), the store dies meanwhile
        run
          .hot('108ms p')
          .pipe(mergeMap(() => run.cold('--(s|)').pipe(circuitBreak(a!))))
          .subscribe();
        run.at(109, () => (store.down = true));
        // b and bad, told nothing (their lease request fails), probe on their own and close
        calls(run, b!, '112ms s').subscribe();
        calls(run, bad!, '112ms s').subscribe();
        run.at(115, () => (store.down = false));
        // a's lease ran out at 158: a ghost node takes it (its request reached the store, its answer
        // was lost) and dies, so a's success, sent again when the store answers, no longer counts
        run.at(160, () => store.acquireProbe('ghost', 'model', 50).subscribe());
        // much later, bad's own network path breaks: it opens on its own, then probes on its own
        run.expectObservable(calls(run, bad!, '1200ms f-f 100ms f')).toBe('1200ms -x-x 100ms x', V);
        run.expectObservable(moves(a!)).toBe('----x 103ms h-c', { x: 'open:failure_threshold', h: 'half-open:probe_lease', c: 'closed:probe_success' });
        run.expectObservable(moves(b!)).toBe('--------x 103ms hc', { x: 'open:failure_threshold', h: 'half-open:reset_timeout', c: 'closed:probe_success' });
        run.expectObservable(moves(bad!)).toBe('--------x 103ms hc 1089ms t 99ms hp 99ms h', {
          x: 'open:fleet_open',
          h: 'half-open:reset_timeout',
          c: 'closed:probe_success',
          t: 'open:failure_threshold',
          p: 'open:probe_failure',
        });
      });
    });

    it("the prober's result lost and every node closed alone: when the provider fails again, a new quorum opens every node anew (the stale open verdict does not block it)", () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store, {}, { probeLeaseMs: 50 });
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        // the fleet opened at 8 until 108; a probes under the lease, its success (110) lost (store down)
        run
          .hot('108ms p')
          .pipe(mergeMap(() => run.cold('--(s|)').pipe(circuitBreak(a!))))
          .subscribe();
        run.at(109, () => (store.down = true));
        calls(run, b!, '112ms s').subscribe();
        run.at(115, () => (store.down = false));
        // a ghost takes the lapsed lease (160) and dies: the store keeps its open verdict, past its period
        run.at(160, () => store.acquireProbe('ghost', 'model', 50).subscribe());
        // the provider fails again at 1200: a and b open on their own (1203) and vote; c, which
        // never failed, is held by the new verdict (until 1303)
        calls(run, a!, '1200ms f-f').subscribe();
        calls(run, b!, '1200ms f-f').subscribe();
        run.expectObservable(calls(run, c!, '112ms s 1097ms s')).toBe('112ms -s 1096ms y', { s: 's', y: 'open:93' });
        run.expectObservable(moves(c!)).toBe('--------x 103ms hc 1089ms x', { x: 'open:fleet_open', h: 'half-open:reset_timeout', c: 'closed:probe_success' });
      });
    });

    it("the prober's success lost (the store down for an instant): sent again when the store answers, and the fleet closes then", () => {
      virtual((run) => {
        const store = new MemoryBreakerStore({ pollMs: 50 });
        const [a, b] = fleetOf(['a', 'b'], store);
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        // the fleet opened at 8 until 108; a probes under the lease (2 ms) and succeeds at 110, while the store is down
        run
          .hot('108ms p')
          .pipe(mergeMap(() => run.cold('--(s|)').pipe(circuitBreak(a!))))
          .subscribe();
        run.at(109, () => (store.down = true));
        run.at(111, () => (store.down = false));
        // b, held, is not left waiting for a's lease (30 s) and another probe: the next poll (150)
        // answers, a's result goes again, and b closes on it
        run.expectObservable(moves(b!)).toBe('--------x 141ms c', { x: 'open:failure_threshold', c: 'closed:fleet_probe_success' });
        run.expectObservable(calls(run, b!, '120ms s 30ms s')).toBe('120ms y 30ms -s', { y: 'open:0', s: 's' });
        run.at(5000, () => store.close());
      });
    });

    it('a store whose methods throw never breaks a call', () => {
      virtual((run) => {
        const broken = new MemoryBreakerStore();
        const thrower = Object.assign(Object.create(broken) as MemoryBreakerStore, {
          vote: () => {
            throw new Error('boom');
          },
        });
        const [a] = fleetOf(['a'], thrower);
        run.expectObservable(calls(run, a!, '-f-f-s')).toBe('--x-xy', { ...V, y: 'open:99' });
      });
    });
  });

  describe('the registry and the hub', () => {
    it('new CircuitBreakerRegistry({ fleet }) gives every breaker a fleet membership; fleet moves reach the hub', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const hub = new HealHub();
        const one = new CircuitBreakerRegistry({ failureThreshold: 1, fleet: { store, node: 'one' } });
        const two = new CircuitBreakerRegistry({ failureThreshold: 1, fleet: { store, node: 'two' } });
        const three = new CircuitBreakerRegistry({ failureThreshold: 1, fleet: { store, node: 'three' } });
        const breaker = three.get('model:x');
        breaker.state; // created now (joined the fleet)
        run
          .expectObservable(hub.events$.pipe(map((e) => (e.type === 'circuit' && e.kind === 'transition' ? e.reason : e.type))))
          .toBe('--x', { x: 'fleet_open' });
        hub.watch(breaker);
        calls(run, one.get('model:x'), '-f').subscribe();
        calls(run, two.get('model:x'), '-f').subscribe();
      });
    });

    it('without node ids, a process is one node: two registries and a lone fleet breaker on one store are one voter, never a quorum', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [one, two] = [1, 2].map(() => new CircuitBreakerRegistry({ failureThreshold: 1, fleet: { store } }));
        const alone = new CircuitBreaker({ name: 'model:x', failureThreshold: 1, fleet: { store } });
        // another process (its own node id) watching the same breaker
        const [watcher] = fleetOf(['elsewhere'], store, { name: 'model:x' });
        run.expectObservable(moves(watcher!)).toBe('');
        calls(run, one!.get('model:x'), '-f').subscribe();
        calls(run, two!.get('model:x'), '-f').subscribe();
        calls(run, alone, '-f').subscribe();
      });
    });

    it("without node ids, a process is one node: with a second process's vote, the quorum is reached; its breakers of one name probe once", () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [one, two] = [1, 2].map(() => new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 100, fleet: { store } }));
        const [other] = fleetOf(['other'], store, { name: 'model:x', failureThreshold: 1 });
        calls(run, one!.get('model:x'), '-f').subscribe();
        calls(run, other!, '---f').subscribe();
        run
          .expectObservable(moves(two!.get('model:x')))
          .toBe('----o 100ms hc', { o: 'open:fleet_open', h: 'half-open:probe_lease', c: 'closed:probe_success' });
        // the fleet opened at 4 until 104; the process's two breakers of model:x call after it: one
        // probes (under the process's lease), the other waits on it, as another process's would
        run.expectObservable(calls(run, two!.get('model:x'), '105ms s')).toBe('105ms -s', V);
        run.expectObservable(calls(run, one!.get('model:x'), '105ms s-s')).toBe('105ms y--s', { y: 'open:0', s: 's' });
      });
    });

    it('validates the fleet option, naming the bad key', () => {
      const store = new MemoryBreakerStore();
      const bad = (fleet: unknown, option: string): void => {
        const error = (() => {
          try {
            new CircuitBreaker({ fleet } as CircuitBreakerOptions);
          } catch (e) {
            return e;
          }
          return undefined;
        })();
        expect(error, JSON.stringify(option)).to.be.instanceOf(InvalidOptionError);
        expect((error as InvalidOptionError).option).to.equal(option);
      };
      bad({}, 'fleet.store');
      bad({ store: {} }, 'fleet.store');
      bad({ store, quorum: { minNodes: 0 } }, 'fleet.quorum');
      bad({ store, quorum: { minFraction: 1.5 } }, 'fleet.quorum');
      bad({ store, quorum: { quorom: 2 } }, 'fleet.quorum');
      // whole ms: a Redis store expires the votes after the window (PEXPIRE takes no fraction)
      bad({ store, quorum: { windowMs: 1.5 } }, 'fleet.quorum');
      bad({ store, quorum: 0 }, 'fleet.quorum');
      bad({ store, probeLeaseMs: -1 }, 'fleet.probeLeaseMs');
      bad({ store, node: '' }, 'fleet.node');
      bad({ store, stor: 1 }, 'fleet.stor');
      expect(() => new CircuitBreakerRegistry({ fleet: { store, quorum: { windowMs: 0 } } })).to.throw(InvalidOptionError, /fleet\.quorum.*windowMs/);
    });
  });

  describe('the fleet comes with its store (breakers without one bundle none of it)', () => {
    it('a store of your own carrying [FLEET_NODE] = fleetNode makes a fleet like the memory store', () => {
      virtual((run) => {
        const inner = new MemoryBreakerStore();
        // a store of one's own (here delegating to a memory store), carrying the node logic itself
        const store = ownStore(inner);
        expect(store[FLEET_NODE]).to.equal(inner[FLEET_NODE]);
        const [a, b, c] = fleetOf(['a', 'b', 'c'], store);
        run.expectObservable(moves(c!)).toBe('--------x', { x: 'open:fleet_open' });
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
      });
    });

    it('a fleet member is not an events$ observer: an open breaker in a fleet nobody observes holds no timer', () => {
      virtual((run) => {
        const store = new MemoryBreakerStore();
        const [a, b] = fleetOf(['a', 'b'], store, { resetTimeoutMs: 60_000 });
        calls(run, a!, '-f-f').subscribe();
        calls(run, b!, '-----f-f').subscribe();
        run.at(10, () => {
          expect([a!.state, b!.state]).to.deep.equal(['open', 'open']);
          expect(run.ts.actions.length, 'pending actions').to.equal(0);
          // still held until the fleet's deadline (the quorum vote at 8, + 60 000), computed on read
          run.at(60_007, () => expect(b!.state).to.equal('open'));
          run.at(60_008, () => expect(b!.acquire()).not.to.be.instanceOf(CircuitOpenError));
        });
      });
    });
  });

  it('a breaker attached to a store already closed starts no poll (nothing scheduled) and decides alone', () => {
    // a TestScheduler outside run(): a poll that never stops would make flush() loop for ever
    const ts = testScheduler();
    const store = new MemoryBreakerStore({ scheduler: ts, pollMs: 100 });
    store.close();
    const breaker = new CircuitBreaker({ name: 'model', failureThreshold: 1, resetTimeoutMs: 100, scheduler: ts, fleet: { store, node: 'a' } });
    const registry = new CircuitBreakerRegistry({ scheduler: ts, fleet: { store } });
    registry.get('model').state;
    expect(ts.actions.length, 'scheduled actions').to.equal(0);
    (breaker.acquire() as CircuitPermit).failure(new HttpError(503));
    ts.flush();
    expect(breaker.state).to.equal('open');
    expect(ts.actions.length, 'scheduled actions').to.equal(0);
  });

  it('a breaker without a fleet schedules nothing while closed (unchanged)', () => {
    virtual((run) => {
      const breaker = new CircuitBreaker({ failureThreshold: 2 });
      const subs: Subscription[] = [];
      subs.push(calls(run, breaker, '-s').subscribe());
      run.flush();
      expect(run.ts.actions.length).to.equal(0);
    });
  });
});
