/**
 * (s) A shared dollar budget on Redis, side by side in the same run: rxheal's reservations
 * (`SpendLimiter` on a `RedisSpendStore` in each process: reserve a worst case, settle at the
 * actual cost) against a post-hoc check
 * (read `used`, call while it is within the limit, add the actual cost on completion — as LLM
 * gateways enforce budgets). 16 OS processes (spec/support/spendWorker.ts, forked with `--import
 * tsx`) × 4 concurrent callers share $1 per minute on one redis-server of its own (skipped without
 * one); every caller spends until refused 3 times in a row. The same costs both ways: a call's
 * worst case a random $0.005–$0.03, its actual cost below it (10 % of calls: nothing, a refund;
 * 10 %: up to 10 % above the hold), a few ms per call. Both go through the same store and script
 * (the post-hoc check calls the store directly: its read is a reservation of $0, its charge an
 * adjustment), so only the protocol differs.
 *
 * - overshoot: what the window was spent past $1 (its `used` in Redis, plus what rxheal's calls held
 *   on a local share cost — a reservation the store did not answer within 100 ms is decided on the
 *   process's share of the limit), as a share of $1, per repetition (median, range);
 * - added latency per call: the reserve round trip, p50 and p99, under the fleet's load (every call
 *   of every repetition: 64 callers, queueing included) and for one caller alone (sequential).
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { firstValueFrom } from 'rxjs';
import { RedisSpendStore } from '../../src/redis/index.js';
import { SpendLimiter } from '../../src/core/money/spendLimiter.js';
import { NANOS_PER_USD } from '../../src/core/money/spendStore.js';
import { findProgram } from '../../spec/support/systemPackage.js';
import { startRedis } from '../../spec/support/redisServer.js';
import { spendFleet, type SpendFleetRun } from '../../spec/support/spendFleet.js';
import { percentile, stats, type Row, type Verdict } from '../lib/harness.js';

export const FIGURE = 's. shared $ budget (Redis): reservations vs post-hoc check';

const WINDOW_MS = 60_000;
const LIMIT = NANOS_PER_USD;
const MODES = { rxheal: 'limiter', 'post-hoc check': 'posthoc' } as const;

export async function spend(options: { processes: number; callers: number; reps: number; aloneCalls: number }): Promise<{ rows: Row[]; verdicts: Verdict[] }> {
  const program = findProgram({ name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server' });
  if (program === undefined) {
    return { rows: [{ figure: FIGURE, name: 'skipped: redis-server not found (apt-get install redis-server)', unit: '', value: 0 }], verdicts: [] };
  }
  const server = await startRedis(program);
  const fleet = spendFleet(options.processes);
  const admin = createClient({ url: server.url, disableOfflineQueue: true });
  admin.on('error', () => undefined);
  const rows: Row[] = [];
  const verdicts: Verdict[] = [];
  try {
    await admin.connect();
    // the store's default bound per call (250 ms), as a deployment would run it
    await fleet.connect('redis', { kind: 'redis', url: server.url }, 'bench-spend', new RedisSpendStore({ client: admin }).timeoutMs);
    const overshoots: Record<keyof typeof MODES, number[]> = { rxheal: [], 'post-hoc check': [] };
    const used: Record<keyof typeof MODES, number[]> = { rxheal: [], 'post-hoc check': [] };
    const latencies: Record<keyof typeof MODES, number[]> = { rxheal: [], 'post-hoc check': [] };
    const excess: number[] = [];
    let errors = 0;
    let local = 0;
    let calls = 0;
    for (let rep = 0; rep < options.reps; rep++) {
      // both in every repetition, the order alternated
      const order = (rep % 2 ? ['post-hoc check', 'rxheal'] : ['rxheal', 'post-hoc check']) as (keyof typeof MODES)[];
      for (const system of order) {
        // a run takes well under a second: not across a minute's boundary on Redis's clock
        const [seconds] = (await admin.sendCommand(['TIME'])) as [string];
        const left = WINDOW_MS - ((Number(seconds) * 1000) % WINDOW_MS);
        if (left < 3_000) await sleep(left + 50);
        const key = `bench:${rep}:${system}:${Date.now()}`;
        const run: SpendFleetRun = await fleet.run({
          store: 'redis',
          key,
          windowMs: WINDOW_MS,
          limitNanos: LIMIT,
          callers: options.callers,
          mode: MODES[system],
        });
        errors += run.errors.length;
        local += run.local;
        latencies[system].push(...run.latenciesMs);
        let worst = 0;
        let spent = 0;
        for (const w of run.windows) {
          // what the calls cost, whoever decided them (the store, or a process alone on its local share): the money spent
          const u = w.actualNanos;
          worst = Math.max(worst, Math.max(0, u - LIMIT) / LIMIT);
          spent = Math.max(spent, u / LIMIT);
          if (system === 'rxheal') excess.push(w.excessNanos / LIMIT);
          if (system === 'rxheal') calls += w.calls;
        }
        overshoots[system].push(worst);
        used[system].push(spent);
      }
    }
    const pct = (x: number): number => x * 100;
    const setup = `$1/min, ${options.processes} processes × ${options.callers} callers, ${options.reps} repetitions, one redis-server (loopback)`;
    for (const system of Object.keys(MODES) as (keyof typeof MODES)[]) {
      const o = stats(overshoots[system].map(pct));
      const u = stats(used[system].map(pct));
      rows.push({
        figure: FIGURE,
        name: `${system}: overshoot of the limit`,
        unit: '%',
        value: o.median,
        min: o.min,
        max: o.max,
        note: `${setup}; spent ${u.median.toFixed(1)} % of $1 (${u.min.toFixed(1)}–${u.max.toFixed(1)})`,
      });
    }
    const ex = stats(excess.map(pct));
    rows.push({
      figure: FIGURE,
      name: 'rxheal: charged above the holds (the only way past the limit)',
      unit: '%',
      value: ex.median,
      min: ex.min,
      max: ex.max,
      note: 'of $1, per repetition: calls that cost up to 10 % more than they reserved',
    });
    for (const system of Object.keys(MODES) as (keyof typeof MODES)[]) {
      const xs = latencies[system];
      const what = system === 'rxheal' ? 'reserve round trip' : 'check (read of used) round trip';
      rows.push({ figure: FIGURE, name: `${system}: ${what}, p50`, unit: 'ms', value: percentile(xs, 50), note: `${xs.length} calls; ${setup}` });
      rows.push({
        figure: FIGURE,
        name: `${system}: ${what}, p99`,
        unit: 'ms',
        value: percentile(xs, 99),
        note: `store errors, both ways (past the 250 ms bound): ${errors}; rxheal holds decided on a local share: ${local}`,
      });
    }
    // unsaturated: one caller in this process, reservations one at a time (each settled), nothing else on Redis
    const limiter = new SpendLimiter({
      name: 'bench:alone',
      usd: 1e6,
      per: WINDOW_MS,
      store: new RedisSpendStore({ client: admin, namespace: 'bench-spend' }),
    });
    const context = { runId: 'alone', model: 'gpt-5-mini' };
    const alone: number[] = [];
    for (let i = 0; i < options.aloneCalls + 50; i++) {
      const started = performance.now();
      const hold = await firstValueFrom(limiter.reserve(0.03, context));
      if (i >= 50) alone.push(performance.now() - started); // after a warm-up
      hold.settle(0.01);
      await sleep(1); // its settlement sent
    }
    for (const p of [50, 99])
      rows.push({
        figure: FIGURE,
        name: `rxheal: reserve round trip, one caller alone, p${p}`,
        unit: 'ms',
        value: percentile(alone, p),
        note: `${alone.length} sequential SpendLimiter reservations (each settled), node-redis, loopback: the latency a reservation adds to a call`,
      });
    const worst = Math.max(...overshoots.rxheal);
    verdicts.push({
      figure: 's',
      target: 'rxheal overshoot of a shared $1/min limit ≤ 1 % (16 processes × 4 callers, worst repetition)',
      measured:
        `worst ${pct(worst).toFixed(3)} %, median ${stats(overshoots.rxheal.map(pct)).median.toFixed(3)} % (${calls} calls); ` +
        `post-hoc check median ${stats(overshoots['post-hoc check'].map(pct)).median.toFixed(1)} %`,
      met: worst <= 0.01,
    });
  } finally {
    await fleet.stop();
    await admin.quit().catch(() => undefined);
    await server.stop();
  }
  return { rows, verdicts };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const quick = process.env['BENCH_QUICK'] === '1';
  const { rows, verdicts } = await spend(
    quick ? { processes: 16, callers: 4, reps: 3, aloneCalls: 200 } : { processes: 16, callers: 4, reps: 9, aloneCalls: 1_000 },
  );
  for (const r of rows)
    console.log(`${r.name}: ${r.value.toFixed(3)} ${r.unit}${r.min === undefined ? '' : ` (${r.min.toFixed(3)}–${r.max!.toFixed(3)})`} — ${r.note ?? ''}`);
  for (const v of verdicts) console.log(`${v.met ? 'met' : 'NOT met'}: ${v.target}: ${v.measured}`);
  process.exit(0);
}
