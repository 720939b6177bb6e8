/**
 * (k) Tail latency, in virtual time (a `VirtualTimeScheduler`: nothing here is timed on the
 * machine's clock, so the figures are the same on any machine and any load). A simulated
 * provider answers each request with its first token after a time drawn from a seeded
 * distribution, then 5 more deltas 20 ms apart:
 *
 * - **heavy tail**: a log-normal body (median 800 ms, σ = 0.5 of the log: p95 ≈ 1.8 s, p99 ≈
 *   2.6 s) and, with probability 1 % per request, a stall: that request's time × 10;
 * - **slow for everyone**: a log-normal body of median 8 s, σ = 0.25, no stalls (hedging cannot
 *   help: every attempt is as slow).
 *
 * 10 000 calls, one every 50 ms, each request drawing anew (seed 26, `fast-check`'s unbiased
 * integers, Box–Muller for the normal). Three clients side by side: no hedging; a fixed 2 s hedge
 * (Polly's default: one hedge, no budget); rxheal's hedge after the p95 of observed time to first
 * token (a `LatencyTracker` fed by each call, `deadline({ quantile: 0.95, defaultMs: 2000,
 * minSamples: 100 })`) with a `HedgeBudget` of 5 % (bursts of 10). For each: p50, p99 and p99.9
 * of the calls' time to first token, and the extra requests the hedges made.
 */
import fc from 'fast-check';
import { concat, defer, interval, map, take, timer, VirtualTimeScheduler, type Observable } from 'rxjs';
import { hedge, HedgeBudget, LatencyTracker } from '../../src/index.js';
import type { Row, Verdict } from '../lib/harness.js';

export const FIGURE = 'k. tail latency, virtual time';

/** A provider's time to first token: a log-normal body, and a share of stalls `stallFactor` × as long. */
export interface Distribution {
  readonly name: string;
  readonly medianMs: number;
  readonly sigma: number;
  readonly stallShare: number;
  readonly stallFactor: number;
}

export const HEAVY_TAIL: Distribution = {
  name: 'heavy tail (log-normal median 800 ms, σ 0.5; 1 % stalls at 10×)',
  medianMs: 800,
  sigma: 0.5,
  stallShare: 0.01,
  stallFactor: 10,
};
export const SLOW_FOR_EVERYONE: Distribution = {
  name: 'slow for everyone (log-normal median 8 s, σ 0.25, no stalls)',
  medianMs: 8000,
  sigma: 0.25,
  stallShare: 0,
  stallFactor: 1,
};

const CALLS = 10_000;
const ARRIVAL_MS = 50;
const DELTAS = 5;
const GAP_MS = 20;
const SEED = 26;

/** Seeded uniform numbers in [0, 1). */
function uniforms(seed: number, n: number): () => number {
  const xs = fc.sample(fc.noBias(fc.integer({ min: 0, max: 2 ** 30 - 1 })), { seed, numRuns: n });
  let i = 0;
  return () => {
    if (i >= xs.length) throw new Error('out of random numbers');
    return xs[i++]! / 2 ** 30;
  };
}

/** One request's time to first token from `d`, drawing on `u`. */
function draw(d: Distribution, u: () => number): number {
  // Box–Muller: one standard normal from two uniforms (1 − u: never log(0))
  const z = Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());
  const body = d.medianMs * Math.exp(d.sigma * z);
  const stalled = u() < d.stallShare;
  return Math.round(stalled ? body * d.stallFactor : body);
}

export type Client = 'no hedging' | 'fixed 2 s hedge (Polly default)' | 'rxheal p95 hedge, 5 % budget';
export const CLIENTS: readonly Client[] = ['no hedging', 'fixed 2 s hedge (Polly default)', 'rxheal p95 hedge, 5 % budget'];

export interface TailResult {
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  /** Requests made beyond one per call. */
  readonly extra: number;
  readonly calls: number;
}

/** The `q` quantile of sorted `xs` (nearest rank). */
function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

/** Runs `CALLS` calls of `client` against a provider drawing from `d`, in virtual time. */
export function simulate(d: Distribution, client: Client, calls = CALLS): TailResult {
  const scheduler = new VirtualTimeScheduler();
  const u = uniforms(SEED, calls * 3 * 4);
  let requests = 0;
  const provider: Observable<number> = defer(() => {
    requests++;
    const ttft = draw(d, u);
    return concat(
      timer(ttft, scheduler).pipe(map(() => 0)),
      interval(GAP_MS, scheduler).pipe(
        take(DELTAS),
        map((i) => i + 1),
      ),
    );
  });
  let call: Observable<number>;
  if (client === 'no hedging') call = provider;
  else if (client === 'fixed 2 s hedge (Polly default)') {
    call = provider.pipe(hedge({ after: 2000, maxHedges: 1, budget: new HedgeBudget({ ratio: 1, maxTokens: 1e12 }), scheduler }));
  } else {
    const tracker = new LatencyTracker('model:simulated', { scheduler });
    const after = tracker.deadline({ quantile: 0.95, defaultMs: 2000, minSamples: 100 });
    call = provider.pipe(hedge({ after, maxHedges: 1, budget: new HedgeBudget({ ratio: 0.05, maxTokens: 10 }), scheduler }), tracker.track());
  }
  const firsts: number[] = [];
  for (let i = 0; i < calls; i++) {
    scheduler.schedule(() => {
      const start = scheduler.now();
      let seen = false;
      call.subscribe(() => {
        if (seen) return;
        seen = true;
        firsts.push(scheduler.now() - start);
      });
    }, i * ARRIVAL_MS);
  }
  scheduler.flush();
  if (firsts.length !== calls) throw new Error(`${firsts.length} of ${calls} calls delivered`);
  const sorted = [...firsts].sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), p999: quantile(sorted, 0.999), extra: requests - calls, calls };
}

/** Figure k's rows and verdicts: both distributions, the three clients each. */
export function tailLatency(calls = CALLS): { rows: Row[]; verdicts: Verdict[]; results: Record<string, Record<Client, TailResult>> } {
  const rows: Row[] = [];
  const verdicts: Verdict[] = [];
  const results: Record<string, Record<Client, TailResult>> = {};
  for (const d of [HEAVY_TAIL, SLOW_FOR_EVERYONE]) {
    const by = {} as Record<Client, TailResult>;
    for (const client of CLIENTS) by[client] = simulate(d, client, calls);
    results[d.name] = by;
    const base = by['no hedging'];
    for (const client of CLIENTS) {
      const r = by[client];
      const share = r.extra / r.calls;
      const vs = client === 'no hedging' ? '' : `; × unhedged: p99 ${(r.p99 / base.p99).toFixed(2)}×, p99.9 ${(r.p999 / base.p999).toFixed(2)}×`;
      rows.push({
        figure: FIGURE,
        name: `${d.name}: ${client}, p99 time to first token`,
        unit: 'ms',
        value: r.p99,
        note: `p50 ${r.p50} ms, p99.9 ${r.p999} ms; extra requests ${r.extra} of ${r.calls} (${(share * 100).toFixed(1)} %)${vs}`,
      });
    }
    const ours = by['rxheal p95 hedge, 5 % budget'];
    if (d === HEAVY_TAIL) {
      const ratio = ours.p99 / base.p99;
      const share = ours.extra / ours.calls;
      verdicts.push({
        figure: 'k',
        target: `${d.name}: rxheal p95 hedge p99 ≤ 0.35× the unhedged p99 for ≤ 5 % extra requests`,
        measured: `${ratio.toFixed(2)}× (${ours.p99} vs ${base.p99} ms), ${(share * 100).toFixed(1)} % extra; p99.9 ${(ours.p999 / base.p999).toFixed(2)}× (${ours.p999} vs ${base.p999} ms)`,
        met: ratio <= 0.35 && share <= 0.05,
      });
    } else {
      // the budget's bound: initial tokens (10) + ratio (5 %) × calls
      const bound = 10 + 0.05 * ours.calls;
      verdicts.push({
        figure: 'k',
        target: `${d.name}: the budget keeps rxheal's extra requests ≤ 10 + 5 % of calls (${bound}); Polly's fixed 2 s hedge doubles the load`,
        measured: `rxheal ${ours.extra} extra (${((ours.extra / ours.calls) * 100).toFixed(1)} %); fixed 2 s ${by['fixed 2 s hedge (Polly default)'].extra} extra`,
        met: ours.extra <= bound,
      });
    }
  }
  return { rows, verdicts, results };
}
