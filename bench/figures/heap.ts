/**
 * (c) Memory and timers. Retained heap per live guarded subscription (pending on a source that
 * never answers) and per idle breaker: create N, collect garbage, divide the heap growth by N.
 * Timers held by an idle breaker: live global timers (and, for rxheal, the actions pending on a
 * TestScheduler) after creating breakers and running calls through them while closed.
 */
import { defer, NEVER, retry, timeout, timer, type Observable, type Subscription } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ConsecutiveBreaker, circuitBreaker, handleAll } from 'cockatiel';
import Opossum from 'opossum';
import { gc, stats, type Row } from '../lib/harness.js';
import { lib } from '../lib/rxheal.js';

export const FIGURE = 'c. heap and timers';

/** Bytes retained per object made by `make`, median over `reps` (each of `n` objects). */
function retained(n: number, reps: number, make: () => unknown, dispose?: (x: unknown) => void): { median: number; min: number; max: number } {
  const samples: number[] = [];
  for (let r = 0; r < reps; r++) {
    const keep = new Array<unknown>(n).fill(null);
    gc();
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < n; i++) keep[i] = make();
    gc();
    gc();
    const after = process.memoryUsage().heapUsed;
    samples.push((after - before) / n);
    if (dispose) for (const x of keep) dispose(x);
    keep.fill(null);
  }
  const s = stats(samples);
  return { median: s.median, min: s.min, max: s.max };
}

/**
 * Live timers created through the global `setTimeout` / `setInterval` (what rxjs's
 * `asyncScheduler`, cockatiel and opossum all use), counted by wrapping them: created, not yet
 * fired (timeouts) and not cleared. Unlike `process.getActiveResourcesInfo()`, this sees
 * `unref()`ed timers too (opossum unrefs its intervals).
 */
export function trackTimers(): { live: () => number; restore: () => void } {
  const g = globalThis as unknown as Record<string, (...args: unknown[]) => unknown>;
  const saved = { setTimeout: g['setTimeout']!, clearTimeout: g['clearTimeout']!, setInterval: g['setInterval']!, clearInterval: g['clearInterval']! };
  const live = new Set<unknown>();
  g['setTimeout'] = (fn: unknown, ms: unknown, ...args: unknown[]) => {
    const handle = saved.setTimeout(
      (...a: unknown[]) => {
        live.delete(handle);
        (fn as (...x: unknown[]) => void)(...a);
      },
      ms,
      ...args,
    );
    live.add(handle);
    return handle;
  };
  g['setInterval'] = (...args: unknown[]) => {
    const handle = saved.setInterval(...args);
    live.add(handle);
    return handle;
  };
  g['clearTimeout'] = (handle: unknown) => {
    live.delete(handle);
    return saved.clearTimeout(handle);
  };
  g['clearInterval'] = (handle: unknown) => {
    live.delete(handle);
    return saved.clearInterval(handle);
  };
  return { live: () => live.size, restore: () => Object.assign(g, saved) };
}

/** Live timers per breaker made by `make`, after `calls` successful calls through each while closed. */
async function timersPerBreaker(make: () => { call: () => Promise<unknown>; dispose: () => void }, k = 10, calls = 20): Promise<number> {
  const tracker = trackTimers();
  try {
    const made = Array.from({ length: k }, make);
    for (const m of made) for (let i = 0; i < calls; i++) await m.call();
    await new Promise((resolve) => setImmediate(resolve));
    const live = tracker.live();
    for (const m of made) m.dispose();
    return live / k;
  } finally {
    tracker.restore();
  }
}

export async function heap(options: { n: number; reps: number }): Promise<Row[]> {
  const { n, reps } = options;
  const rows: Row[] = [];
  const subscribe = (o: Observable<unknown>): Subscription => o.subscribe({ error: () => undefined });
  const unsubscribe = (s: unknown): void => (s as Subscription).unsubscribe();

  // live subscriptions: every pipeline waits on NEVER (a call that has not answered yet)
  const breaker = new lib.CircuitBreaker();
  const guarded$ = NEVER.pipe(lib.retryWithBackoff(), lib.circuitBreak(breaker));
  const live: [string, Observable<unknown>][] = [
    ['rxheal retryWithBackoff+circuitBreak, pending', guarded$],
    ['RxJS timeout(30 s), pending', NEVER.pipe(timeout(30_000))],
    ['RxJS retry({count, delay}), pending', NEVER.pipe(retry({ count: 3, delay: () => timer(500) }))],
    ['NEVER alone (the subscriber itself)', NEVER],
  ];
  const liveRows = live.map(([name, o]) => ({ name, r: retained(n, reps, () => subscribe(o), unsubscribe) }));
  for (const { name, r } of liveRows) {
    rows.push({ figure: FIGURE, name: `per live subscription: ${name}`, unit: 'B', value: r.median, min: r.min, max: r.max });
  }

  // idle breakers
  const fn = async (): Promise<number> => 42;
  const idle: [string, () => unknown, ((x: unknown) => void)?][] = [
    ['rxheal new CircuitBreaker()', () => new lib.CircuitBreaker()],
    [
      'cockatiel circuitBreaker(handleAll, ConsecutiveBreaker(5))',
      () => circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
    ],
    ['opossum new CircuitBreaker(fn)', () => new Opossum(fn), (b) => (b as Opossum).shutdown()],
  ];
  for (const [name, make, dispose] of idle) {
    // opossum starts intervals per breaker: fewer of them, and shut down after
    const r = retained(name.startsWith('opossum') ? Math.min(n, 2_000) : n, reps, make, dispose);
    rows.push({ figure: FIGURE, name: `per idle breaker: ${name}`, unit: 'B', value: r.median, min: r.min, max: r.max });
  }

  // timers held by an idle breaker (after 20 successful calls each while closed)
  const rxTimers = await timersPerBreaker(() => {
    const b = new lib.CircuitBreaker();
    const call$ = defer(fn).pipe(lib.circuitBreak(b));
    return { call: () => new Promise((resolve) => call$.subscribe({ complete: () => resolve(undefined) })), dispose: () => undefined };
  });
  let scheduled = -1;
  new TestScheduler(() => undefined).run(({ cold }) => {
    const ts = new TestScheduler(() => undefined);
    const b = new lib.CircuitBreaker({ scheduler: ts });
    for (let i = 0; i < 20; i++) cold('-a|').pipe(lib.circuitBreak(b)).subscribe();
    scheduled = ts.actions.length;
  });
  const cockatielTimers = await timersPerBreaker(() => {
    const p = circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) });
    return { call: () => p.execute(fn), dispose: () => undefined };
  });
  const opossumTimers = await timersPerBreaker(() => {
    const b = new Opossum(fn);
    return { call: () => b.fire(), dispose: () => b.shutdown() };
  });
  rows.push(
    {
      figure: FIGURE,
      name: 'timers per idle breaker: rxheal',
      unit: 'timers',
      value: rxTimers,
      note: `${scheduled} actions pending on its TestScheduler after 20 calls`,
    },
    { figure: FIGURE, name: 'timers per idle breaker: cockatiel', unit: 'timers', value: cockatielTimers },
    { figure: FIGURE, name: 'timers per idle breaker: opossum (defaults)', unit: 'timers', value: opossumTimers, note: 'intervals run until shutdown()' },
  );
  return rows;
}
