/**
 * One OS process of a spending fleet (spec/support/spendFleet.ts forks it with `--import tsx`):
 * it connects to the Redis its parent names (one server through node-redis, a cluster through
 * ioredis) and, on `run`, starts `callers` concurrent callers at the instant `at`, each spending
 * on one shared limit until refused 3 times in a row, and answers with what they spent, per window.
 *
 * Three ways to spend (`mode`):
 * - `limiter`: through `new SpendLimiter({ name: key, usd, per: windowMs, store })`, one per
 *   process and run, shared by its callers — `reserve(worstCase)`, then `hold.settle(actual)`;
 * - `reserve` (the store's protocol itself): reserve a worst case (a random $0.005–$0.03), make the "call"
 *   (a few ms), then adjust to its actual cost — most below the hold, sometimes nothing (a
 *   refund), sometimes more (up to 10 % above the hold: an attempt that cost more than it held).
 * - `posthoc` (a gateway's check): read `used`, call when it is within the limit, add the actual
 *   cost on completion (the same costs, the same calls).
 *
 * Messages (IPC): `{ type: 'connect', name, at, namespace, timeoutMs }` → `{ type: 'connected' }` (a store by that name);
 * `{ type: 'run', … }` → `{ type: 'done', report }`; `{ type: 'close' }` → exit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { firstValueFrom } from 'rxjs';
import { createClient } from 'redis';
import { Cluster } from 'ioredis';
import { defer, finalize, type Observable } from 'rxjs';
import { RedisSpendStore } from '../../src/redis/index.js';
import { SpendLimiter } from '../../src/core/money/spendLimiter.js';
import { BudgetExceededError } from '../../src/core/errors/errors.js';
import { NANOS_PER_USD, toNanos, windowStart, type SpendStore } from '../../src/core/money/spendStore.js';

/** Where the fleet's Redis is. */
export type SpendRedisAt = { readonly kind: 'redis'; readonly url: string } | { readonly kind: 'cluster'; readonly ports: readonly number[] };

/** One run: the limit, how many callers, when they start, how they spend. */
export interface SpendRun {
  /** The connection to spend through (its `connect` message's `name`). */
  readonly store: string;
  readonly key: string;
  readonly windowMs: number;
  readonly limitNanos: number;
  readonly callers: number;
  /** `Date.now()` ms at which every process starts its callers. */
  readonly at: number;
  readonly mode: 'limiter' | 'reserve' | 'posthoc';
  /** The fleet's size (its processes): a limiter's `expectedNodes`, its local share's divisor before the store reported one. */
  readonly nodes: number;
}

/** What one window saw of this process's callers. */
export interface SpendWindowReport {
  readonly window: number;
  /** Calls made (granted reservations, or checks that passed). */
  calls: number;
  refused: number;
  /** What the calls actually cost, in nanodollars. */
  actualNanos: number;
  /** What they cost above their holds (reserve mode), summed. */
  excessNanos: number;
  /** Limiter mode: what the calls held on a local share cost (kept on this process's local store, not in Redis). */
  localNanos: number;
}

/** A process's answer to a run. */
export interface SpendReport {
  readonly pid: number;
  readonly windows: SpendWindowReport[];
  readonly errors: string[];
  /** Round trips of each reservation (or check), ms: granted or refused. */
  readonly latenciesMs: number[];
  /** Limiter mode: holds decided on the local share (the store did not answer in time). */
  local: number;
}

export type SpendWorkerMessage =
  | { readonly type: 'connect'; readonly name: string; readonly at: SpendRedisAt; readonly namespace: string; readonly timeoutMs: number }
  | ({ readonly type: 'run' } & SpendRun)
  | { readonly type: 'close' };

const between = (lo: number, hi: number): number => lo + Math.floor(Math.random() * (hi - lo + 1));

/** The actual cost of a call that held `hold`: 10 % refunded, 10 % up to 10 % above, else anything up to the hold. */
function actualOf(hold: number): number {
  const r = Math.random();
  if (r < 0.1) return 0;
  if (r < 0.2) return hold + Math.ceil(hold * 0.1 * Math.random());
  return Math.floor(hold * Math.random());
}

/** A store whose adjustments in flight are counted (the limiter's settlements are sent, not awaited). */
function counted(store: SpendStore): { store: SpendStore; inFlight(): number } {
  let inFlight = 0;
  const track = <T>(o: () => Observable<T>): Observable<T> =>
    defer(() => {
      inFlight++;
      return o().pipe(finalize(() => inFlight--));
    });
  return {
    store: { timeoutMs: store.timeoutMs, reserve: (r) => store.reserve(r), adjust: (a) => track(() => store.adjust(a)) },
    inFlight: () => inFlight,
  };
}

/** Limiter mode: one caller's loop through `limiter`, until refused 3 times in a row. */
async function limiterCaller(limiter: SpendLimiter, run: SpendRun, report: SpendReport, windowOf: (window: number) => SpendWindowReport): Promise<void> {
  const context = { runId: `run-${process.pid}`, model: 'gpt-5-mini' };
  for (let refusals = 0; refusals < 3;) {
    const hold = between(5_000_000, 30_000_000); // $0.005–$0.03
    // the limiter says no window: the local clock's (the same machine's as Redis's; runs keep clear of a window's end)
    const w = windowOf(windowStart(Date.now(), run.windowMs));
    const started = performance.now();
    let granted;
    try {
      granted = await firstValueFrom(limiter.reserve(hold / NANOS_PER_USD, context));
    } catch (e) {
      if (!(e instanceof BudgetExceededError)) report.errors.push(String((e as Error).message ?? e));
      else report.latenciesMs.push(performance.now() - started);
      w.refused++;
      refusals++;
      await sleep(between(2, 8));
      continue;
    }
    report.latenciesMs.push(performance.now() - started);
    if (granted.local) report.local++;
    refusals = 0;
    await sleep(between(2, 8)); // the call
    const actual = actualOf(hold);
    w.calls++;
    w.actualNanos += toNanos(actual / NANOS_PER_USD);
    w.excessNanos += Math.max(0, toNanos(actual / NANOS_PER_USD) - toNanos(hold / NANOS_PER_USD));
    if (granted.local) w.localNanos += toNanos(actual / NANOS_PER_USD);
    granted.settle(actual / NANOS_PER_USD);
  }
}

/** The report's window `window`, made when new. */
function windowsOf(report: SpendReport): (window: number) => SpendWindowReport {
  const windows = new Map<number, SpendWindowReport>();
  return (window) => {
    let w = windows.get(window);
    if (w === undefined) {
      w = { window, calls: 0, refused: 0, actualNanos: 0, excessNanos: 0, localNanos: 0 };
      windows.set(window, w);
      report.windows.push(w);
    }
    return w;
  };
}

/** The store's protocol itself (reserve, posthoc): one caller's loop, until refused 3 times in a row. */
async function caller(store: SpendStore, run: SpendRun, node: string, report: SpendReport, windowOf: (window: number) => SpendWindowReport): Promise<void> {
  const request = { key: run.key, node, windowMs: run.windowMs, limitNanos: run.limitNanos };
  for (let refusals = 0; refusals < 3;) {
    const hold = between(5_000_000, 30_000_000); // $0.005–$0.03
    const started = performance.now();
    let grant;
    try {
      grant = await firstValueFrom(store.reserve({ ...request, nanos: run.mode === 'reserve' ? hold : 0 }));
    } catch (e) {
      report.errors.push(String((e as Error).message ?? e));
      refusals++;
      continue;
    }
    report.latenciesMs.push(performance.now() - started);
    const w = windowOf(grant.window);
    // post-hoc: a reservation of nothing is a read of used (granted while used ≤ limit)
    if (!grant.granted) {
      w.refused++;
      refusals++;
      await sleep(between(2, 8));
      continue;
    }
    refusals = 0;
    await sleep(between(2, 8)); // the call
    const actual = actualOf(hold);
    w.calls++;
    w.actualNanos += actual;
    if (run.mode === 'reserve') w.excessNanos += Math.max(0, actual - hold);
    try {
      await firstValueFrom(
        store.adjust({ key: run.key, window: grant.window, windowMs: run.windowMs, deltaNanos: run.mode === 'reserve' ? actual - hold : actual }),
      );
    } catch (e) {
      report.errors.push(`adjust: ${String((e as Error).message ?? e)}`);
    }
  }
}

const stores = new Map<string, RedisSpendStore>();
const closers: (() => Promise<void>)[] = [];

process.on('message', (message: SpendWorkerMessage) => {
  void (async () => {
    if (message.type === 'connect') {
      if (message.at.kind === 'redis') {
        const client = createClient({ url: message.at.url, disableOfflineQueue: true });
        client.on('error', () => undefined);
        await client.connect();
        stores.set(message.name, new RedisSpendStore({ client, namespace: message.namespace, timeoutMs: message.timeoutMs }));
        closers.push(async () => void (await client.quit()));
      } else {
        const client = new Cluster(
          message.at.ports.map((port) => ({ host: '127.0.0.1', port })),
          { enableOfflineQueue: false, redisOptions: { maxRetriesPerRequest: 1 } },
        );
        client.on('error', () => undefined);
        await new Promise((resolve) => client.once('ready', resolve));
        stores.set(message.name, new RedisSpendStore({ client, namespace: message.namespace, timeoutMs: message.timeoutMs }));
        closers.push(async () => client.disconnect());
      }
      // Redis's clock learnt, the script cached: the run's first reservations go straight out (while
      // 16 processes start on a small machine, the first commands can come past a 100 ms bound: until one answers)
      const store = stores.get(message.name)!;
      for (let i = 0; ; i++) {
        const answered = await firstValueFrom(store.reserve({ key: 'warm-up', node: String(process.pid), windowMs: 60_000, limitNanos: 1, nanos: 0 })).then(
          () => true,
          (e: unknown) => {
            if (i >= 50) throw e;
            return false;
          },
        );
        if (answered) break;
        await sleep(20);
      }
      process.send!({ type: 'connected' });
    } else if (message.type === 'run') {
      const report: SpendReport = { pid: process.pid, windows: [], errors: [], latenciesMs: [], local: 0 };
      const windowOf = windowsOf(report);
      const store = stores.get(message.store)!;
      const wait = message.at - Date.now();
      if (message.mode === 'limiter') {
        const { store: tracked, inFlight } = counted(store);
        const limiter = new SpendLimiter({
          name: message.key,
          usd: message.limitNanos / NANOS_PER_USD,
          per: message.windowMs,
          store: tracked,
          node: String(process.pid),
          // as a fleet is configured: its size known, so a store that never answered yields limit ÷ nodes, not the whole limit, per node
          expectedNodes: message.nodes,
        });
        if (wait > 0) await sleep(wait);
        await Promise.all(Array.from({ length: message.callers }, () => limiterCaller(limiter, message, report, windowOf)));
        // the last settlements landed (sent, not awaited by settle)
        for (let i = 0; i < 500 && inFlight() > 0; i++) await sleep(10);
        if (inFlight() > 0) report.errors.push(`${inFlight()} settlements still in flight after 5 s`);
      } else {
        if (wait > 0) await sleep(wait);
        await Promise.all(Array.from({ length: message.callers }, () => caller(store, message, String(process.pid), report, windowOf)));
      }
      process.send!({ type: 'done', report });
    } else {
      for (const close of closers.splice(0)) await close();
      process.disconnect();
    }
  })();
});
