/**
 * `npm run bench`: rxheal against its peers, in one process. Each timing figure runs its cases
 * interleaved (every repetition runs every case once, after a warm-up), reports medians with
 * min–max, and ratios paired within a repetition (this machine is shared and noisy). Prints a
 * table and writes the results, with the machine it ran on, to `bench/results.local.json`
 * (untracked). Only `--save` updates the committed `bench/results.json` and bench/README.md's table.
 *
 *   npx tsx bench/index.ts            # full run (npm run bench)
 *   npx tsx bench/index.ts --save     # npm run bench -- --save: also bench/results.json + bench/README.md's table
 *   BENCH_QUICK=1 npx tsx bench/index.ts
 *   npx tsx bench/bundles.ts          # npm run bench:bundles: figure d alone (no timing, seconds)
 *
 * The library is built from `src/` by esbuild for the run (see `lib/rxheal.ts`).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expectedReadme, README, resultsPath } from './readmeTable.js';
import type { Row, Verdict } from './lib/harness.js';
import { guardedCall, HEADLINE, POLICY } from './figures/guardedCall.js';
import { throughput } from './figures/throughput.js';
import { heap } from './figures/heap.js';
import { bundles, bundleVerdicts } from './figures/bundle.js';
import { outage, RXHEAL } from './figures/outage.js';
import { marbleWallTime } from './figures/marble.js';
import { aiSdkOverhead } from './figures/aiSdk.js';
import { NAMES as STREAM, streaming } from './figures/streaming.js';
import { scaling } from './figures/scaling.js';
import { tailLatency } from './figures/tail.js';

const quick = process.env['BENCH_QUICK'] === '1';
const save = process.argv.includes('--save');
const version = (pkg: string): string =>
  (JSON.parse(readFileSync(fileURLToPath(new URL(`../node_modules/${pkg}/package.json`, import.meta.url)), 'utf8')) as { version: string }).version;

const machine = {
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: cpus().length,
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  platform: `${platform()} ${release()}`,
  node: process.version,
  versions: { rxjs: version('rxjs'), cockatiel: version('cockatiel'), opossum: version('opossum'), 'backoff-rxjs': version('backoff-rxjs'), ai: version('ai') },
  loadAverageAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
  date: new Date().toISOString(),
};

const log = (s: string): void => void process.stderr.write(`${s}\n`);
const rows: Row[] = [];
const verdicts: Verdict[] = [];
const t0 = process.hrtime.bigint();

log('a. guarded call …');
// many short samples: on a shared machine their median is steadier than a few long ones
const a = await guardedCall(quick ? { n: 1_000, reps: 11, warmup: 2 } : { n: 2_000, reps: 61, warmup: 5 });
rows.push(...a.rows);
const ratioText = (r: Row): string => `${r.ratio!.median.toFixed(2)}× (${r.ratio!.min.toFixed(2)}–${r.ratio!.max.toFixed(2)})`;
const policyRow = a.rows.find((r) => r.name === POLICY);
const pipeRow = a.rows.find((r) => r.name === HEADLINE)!;
const builtOnce = a.rows.find((r) => r.name === 'rxheal retryWithBackoff+circuitBreak')!;
verdicts.push({
  figure: 'a',
  target: '≤ 1.0× cockatiel execute(() => fn(i)), the per-call shape (operators made once, a guarded observable per call)',
  measured: `callPolicy(…).call(() => fn(i)) ${policyRow ? ratioText(policyRow) : 'n/a'}; the same with defer(…).pipe(retryWithBackoff(o), circuitBreak(b)) per call ${ratioText(pipeRow)}; pipeline built once ${ratioText(builtOnce)}`,
  met: policyRow !== undefined && policyRow.ratio!.median <= 1,
});

log('b. 1e6 synchronous values …');
const b = await throughput(quick ? { n: 200_000, reps: 3, warmup: 1 } : { n: 1_000_000, reps: 11, warmup: 2 });
rows.push(...b.rows);
const bRow = b.rows.find((r) => r.name === 'rxheal five operators')!;
verdicts.push({
  figure: 'b',
  target: '≤ 1.0× RxJS retry+catchError+timeout+map',
  measured: `${bRow.ratio!.median.toFixed(2)}× (${bRow.ratio!.min.toFixed(2)}–${bRow.ratio!.max.toFixed(2)})`,
  met: bRow.ratio!.median <= 1,
});

log('c. heap and timers …');
const c = await heap(quick ? { n: 2_000, reps: 3 } : { n: 10_000, reps: 7 });
rows.push(...c);
const cv = (prefix: string): number => c.find((r) => r.name.startsWith(prefix))!.value;
const live = cv('per live subscription: rxheal');
const timeoutLive = cv('per live subscription: RxJS timeout');
verdicts.push({
  figure: 'c',
  target: 'live guarded subscription ≤ RxJS timeout pending',
  measured: `${live.toFixed(0)} B vs ${timeoutLive.toFixed(0)} B`,
  met: live <= timeoutLive,
});
const idle = cv('per idle breaker: rxheal');
const cockatielIdle = cv('per idle breaker: cockatiel');
verdicts.push({
  figure: 'c',
  target: 'idle breaker ≤ cockatiel breaker',
  measured: `${idle.toFixed(0)} B vs ${cockatielIdle.toFixed(0)} B`,
  met: idle <= cockatielIdle,
});
const timers = c.find((r) => r.name === 'timers per idle breaker: rxheal')!;
verdicts.push({
  figure: 'c',
  target: '0 timers per idle breaker',
  measured: `${timers.value} (${timers.note})`,
  met: timers.value === 0 && /^0 actions/.test(timers.note ?? ''),
});

log('d. bundle sizes …');
const d = await bundles({ exports: !quick });
rows.push(...d.rows);
verdicts.push(...bundleVerdicts(d));

log('e. dead provider …');
const e = await outage();
rows.push(...e.rows);
for (const r of RXHEAL) {
  const seq = e.counts[r.name]!['sequential'];
  verdicts.push({
    figure: 'e',
    target: `${r.name}, sequential: ≤ ${r.bound} (${r.note})`,
    measured: `${seq.reached} of ${seq.calls}`,
    met: seq.reached <= r.bound,
  });
  const bursts = e.counts[r.name]!['bursts every 10 s'];
  const burstBound = 100 + Math.ceil(600_000 / 60_000);
  verdicts.push({
    figure: 'e',
    target: `${r.name}, bursts every 10 s: after the first burst only probes pass (≤ 100 + 1 per 60 s = ${burstBound})`,
    measured: `${bursts.reached} of ${bursts.calls}`,
    met: bursts.reached <= burstBound,
  });
}
if (e.mismatches.length) verdicts.push({ figure: 'e', target: 'TestScheduler and fake clock agree', measured: e.mismatches.join('; '), met: false });

log('f. marble test …');
const f = marbleWallTime(quick ? 3 : 10);
rows.push(...f.rows);
let coldFresh: number | undefined;
try {
  const out = execFileSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./marble-cold.ts', import.meta.url))], { encoding: 'utf8' });
  coldFresh = Number(out.trim().split('\n').pop());
  rows.push({
    figure: 'f. 1 h outage marble test',
    name: 'first run in a fresh process',
    unit: 'ms',
    value: coldFresh,
    note: 'nothing JIT-compiled yet; a test suite runs it warmer',
  });
} catch (error) {
  log(`fresh-process run failed: ${String(error)}`);
}
verdicts.push({
  figure: 'f',
  target: '< 100 ms',
  measured: `${f.cold.toFixed(1)} ms first run in this process, ${f.warm.median.toFixed(1)} ms warm median${coldFresh === undefined ? '' : `, ${coldFresh.toFixed(0)} ms in a fresh process`}`,
  met: f.cold < 100 && f.warm.median < 100,
});

log('g. streaming …');
const g = await streaming(
  quick
    ? { deltas: 2_000, answers: 1, reps: 7, warmup: 1, firsts: 10, idle: 1_000 }
    : { deltas: 10_000, answers: 1, reps: 21, warmup: 2, firsts: 20, idle: 10_000 },
);
rows.push(...g.rows);
for (const [k, onGenerator] of [
  ['pipeline', 'generatorPipeline'],
  ['runAgent', 'generatorRunAgent'],
] as const) {
  // each on its own source: rxheal on an async source (an async generator), streamText on its mock
  verdicts.push({
    figure: 'g',
    target: `${STREAM[k]}, each on its own source — rxheal on an async generator source, streamText on its AI SDK mock, the same answer: ≤ 0.02× streamText per delta`,
    measured: `${g.toStreamText[onGenerator].toFixed(3)}× (${g.perDelta[onGenerator].toFixed(0)} vs ${g.perDelta.streamText.toFixed(0)} ns/delta)`,
    met: g.toStreamText[onGenerator] <= 0.02,
  });
  // both on the very stream streamText reads: that stream's own reading is part of rxheal's figure
  verdicts.push({
    figure: 'g',
    target: `${STREAM[k]}, on the same stream as streamText (the AI SDK mock's, read by both): ≤ 0.02× streamText per delta`,
    measured: `${g.toStreamText[k].toFixed(3)}× (${g.perDelta[k].toFixed(0)} vs ${g.perDelta.streamText.toFixed(0)} ns/delta); reading that stream alone, as an rxheal model, is already ${g.toStreamText.source.toFixed(3)}×`,
    met: g.toStreamText[k] <= 0.02,
  });
  const heapRatio = g.idleHeap[k] / g.idleHeap.streamText;
  verdicts.push({
    figure: 'g',
    target: `${STREAM[k]}: ≤ 0.1× streamText heap per idle stream`,
    measured: `${heapRatio.toFixed(3)}× (${(g.idleHeap[k] / 1024).toFixed(1)} vs ${(g.idleHeap.streamText / 1024).toFixed(1)} KB)`,
    met: heapRatio <= 0.1,
  });
}
verdicts.push({
  figure: 'g',
  target: 'healing pipeline ≤ 200 ns per delta over its own source',
  measured: `+${g.overSource.pipeline.toFixed(0)} ns over the AI SDK mock's stream as a model, +${g.overSource.generatorPipeline.toFixed(0)} ns over the async generator (paired medians)`,
  met: g.overSource.pipeline <= 200 && g.overSource.generatorPipeline <= 200,
});

log('h. how cost grows …');
const h = await scaling(
  quick
    ? { runs: [1_000, 10_000], answers: [100, 100_000], breakers: [10, 10_000], reps: 3 }
    : { runs: [1_000, 10_000, 100_000], answers: [100, 10_000, 1_000_000], breakers: [10, 10_000, 1_000_000], reps: 5 },
);
rows.push(...h.rows);
const idleValues = Object.values(h.idle);
const spread = Math.max(...idleValues) / Math.min(...idleValues);
verdicts.push({
  figure: 'h',
  target: 'heap per idle run flat (largest / smallest ≤ 1.1)',
  measured: Object.entries(h.idle)
    .map(([n, b]) => `${Number(n).toLocaleString('en')}: ${(b / 1024).toFixed(1)} KB`)
    .join(', '),
  met: spread <= 1.1,
});
for (const [name, bySize] of Object.entries(h.overSource)) {
  const xs = Object.entries(bySize);
  const first = xs[0]![1];
  const last = xs[xs.length - 1]![1];
  verdicts.push({
    figure: 'h',
    target: `${name}: ns per delta flat (× its source, largest answer within 1.3× of the smallest's)`,
    measured: xs.map(([n, r]) => `${Number(n).toLocaleString('en')}: ${r.toFixed(2)}×`).join(', '),
    met: last <= first * 1.3,
  });
}
for (const [name, b] of Object.entries(h.heldPerDelta)) {
  const bound = name === 'runAgent' ? 7 : name.includes('continue') ? 4 : 1;
  verdicts.push({
    figure: 'h',
    target: `${name}: held per delta while streaming ≤ ${bound} B (3-character deltas: ${name === 'runAgent' ? "the turn text and the fallback's partial text" : name.includes('continue') ? 'the partial text, flat' : 'nothing'})`,
    measured: `${b.toFixed(1)} B/delta`,
    met: b <= bound,
  });
}
const lookups = Object.entries(h.lookupRatio);
// flat: what the registry adds to a Map lookup does not grow with its size (a Map alone slows
// down with size: memory latency, the floor measured beside it)
const firstRatio = lookups[0]![1];
const lastRatio = lookups[lookups.length - 1]![1];
verdicts.push({
  figure: 'h',
  target: 'registry lookup flat (× a plain Map.get of the same names: the largest registry within 1.3× of the smallest) and no timers for idle breakers',
  measured: `${lookups.map(([n, r]) => `${Number(n).toLocaleString('en')}: ${h.lookup[Number(n)]!.toFixed(0)} ns, ${r.toFixed(2)}×`).join('; ')}; timers ${Object.values(h.timers).join('/')}`,
  met: lastRatio <= firstRatio * 1.3 && Object.values(h.timers).every((x) => x === 0),
});

log('i. AI SDK stream per text delta …');
const ai = await aiSdkOverhead(quick ? { n: 1_000, reps: 5, warmup: 1 } : { n: 5_000, reps: 21, warmup: 3 });
rows.push(...ai.rows);
const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
verdicts.push({
  figure: 'i',
  target: "rxheal's healing ≤ 3 % of streamText's own cost per text delta (~1.5 % when first measured)",
  measured: `${pct(ai.overhead.median)} (${pct(ai.overhead.min)}–${pct(ai.overhead.max)}), of which the second ReadableStream every adapter needs ${pct(ai.hop.median)} and rxheal beyond it ${pct(ai.beyondHop.median)}; end to end, paired: +${pct(ai.endToEnd.median)} (${pct(ai.endToEnd.min)}–${pct(ai.endToEnd.max)})`,
  met: ai.overhead.median <= 0.03,
});
log('l. MCP tool call …');
{
  const { mcpOverhead } = await import('./figures/mcp.js');
  const k = await mcpOverhead(quick ? { n: 500, reps: 5, warmup: 1 } : { n: 2_000, reps: 21, warmup: 3 });
  rows.push(...k.rows);
  verdicts.push({
    figure: 'l',
    target: 'a fromMcp tool call ≤ 3 % over client.callTool on the same in-process McpServer',
    measured: `+${pct(k.overhead.median)} (${pct(k.overhead.min)}–${pct(k.overhead.max)}) per call, +${Math.round(k.addedNs / 1000)} µs on ${Math.round(k.rawNs / 1000)} µs; over client.callTool given the same signal, progress callback and timeout: +${pct(k.overSameOptions.median)}; over stdio: +${pct(k.overStdio.median)}`,
    met: k.overhead.median <= 0.03,
  });
}
log('m. Responses stream, bytes to events …');
{
  const { responsesDecoding } = await import('./figures/responsesDecoder.js');
  const m = await responsesDecoding(quick ? { n: 50, reps: 5, warmup: 2 } : { n: 300, reps: 21, warmup: 5 });
  rows.push(...m.rows);
  verdicts.push({
    figure: 'm',
    target: "SseParser + ResponsesDecoder ≤ 0.5× the openai SDK's Stream.fromSSEResponse per event, same bytes (a recorded reasoning + tool-call stream)",
    measured: `${m.ratio.median.toFixed(2)}× (${m.ratio.min.toFixed(2)}–${m.ratio.max.toFixed(2)}), ${m.events} events`,
    met: m.ratio.median <= 0.5,
  });
}
log('j. fleet on Redis …');
{
  // self-contained: a redis-server of its own (skipped, with a row saying so, when not installed)
  const { fleet } = await import('./figures/fleet.js');
  const g = await fleet(quick ? { n: 2_000, reps: 3, warmup: 1, trials: 3, deadMs: 3_000 } : { n: 10_000, reps: 9, warmup: 2, trials: 10, deadMs: 6_000 });
  rows.push(...g.rows);
  verdicts.push(...g.verdicts);
}

log('o. shared rate limits on Redis vs bottleneck …');
{
  // self-contained too: its own redis-server (skipped, with a row saying so, when not installed)
  const { rateLimits } = await import('./figures/rateLimits.js');
  const m = await rateLimits(
    quick ? { limit: 1_200, ms: 2_000, callers: 4, latencyCalls: 100, reps: 3 } : { limit: 1_200, ms: 4_000, callers: 4, latencyCalls: 300, reps: 7 },
  );
  rows.push(...m.rows);
  verdicts.push(...m.verdicts);
}

log('p. journal commit per step …');
{
  // self-contained: the file journal in a temp folder, a redis-server and a PostgreSQL of its own (each skipped, with a row saying so, when not installed)
  const { journalCommit } = await import('./figures/journal.js');
  const p = await journalCommit(quick ? { n: 200, reps: 3 } : { n: 500, reps: 7 });
  rows.push(...p.rows);
  verdicts.push(...p.verdicts);
}

log('q. journal cost per run …');
{
  // runAgent with the file journal vs without one per delta (figure h's pipeline), and resumeAgent of a 100-step run: bench/figures/journalRun.ts
  const { journalRun } = await import('./figures/journalRun.js');
  const q = await journalRun(quick ? { reps: 5, resumes: 10 } : { reps: 21, resumes: 40 });
  rows.push(...q.rows);
  verdicts.push(...q.verdicts);
}

log('u. step journal per step …');
{
  // a turn as one step of an engine: the engine's own step by hand vs runAgent on stepJournal — in memory, on DBOS (PostgreSQL) and on Restate (its server), those two in a Node 24 process: bench/figures/stepJournal.ts
  const { stepJournalFigure } = await import('./figures/stepJournal.js');
  const u = await stepJournalFigure(quick ? { reps: 5, engineReps: 20 } : { reps: 11, engineReps: 60 });
  rows.push(...u.rows);
  verdicts.push(...u.verdicts);
}

log('k. tail latency (virtual time) …');
{
  // deterministic: a seeded simulated provider in virtual time (bench/figures/tail.ts says its parameters)
  const k = tailLatency(quick ? 2_000 : 10_000);
  rows.push(...k.rows);
  verdicts.push(...k.verdicts);
}

log('n. checkHealing (rxheal/chaos) …');
{
  // 1 000 schedules in virtual time, checked and (were one to fail) shrunk: bench/figures/chaos.ts
  const { chaosCheck } = await import('./figures/chaos.js');
  const m = await chaosCheck({ schedules: 1_000, reps: quick ? 1 : 5 });
  rows.push(...m.rows);
  verdicts.push(...m.verdicts);
}

log('r. checkHealing crash mode (rxheal/chaos) …');
{
  // 1 000 schedules × every crash point of the five-step durable agent: bench/figures/crash.ts
  const { crashCheck } = await import('./figures/crash.js');
  const q = await crashCheck({ schedules: quick ? 100 : 1_000, reps: 1 });
  rows.push(...q.rows);
  verdicts.push(...q.verdicts);
}

log('s. shared $ budget on Redis: reservations vs post-hoc check …');
{
  // self-contained: 16 forked processes on a redis-server of its own (skipped, with a row saying so, when not installed): bench/figures/spend.ts
  const { spend } = await import('./figures/spend.js');
  const sp = await spend(quick ? { processes: 16, callers: 4, reps: 3, aloneCalls: 200 } : { processes: 16, callers: 4, reps: 9, aloneCalls: 1_000 });
  rows.push(...sp.rows);
  verdicts.push(...sp.verdicts);
}

log('t. 3 deployments under a 429 storm: pool vs fixed chain vs shuffle (virtual time) …');
{
  // 1 000 conversations × 8 turns over 3 members, in virtual time: bench/figures/pool.ts
  const { poolFigure } = await import('./figures/pool.js');
  const t = poolFigure();
  rows.push(...t.rows);
  verdicts.push(...t.verdicts);
}

const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const endLoad = loadavg().map((x) => Math.round(x * 100) / 100);

// ---- the table
const num = (x: number): string => (Number.isInteger(x) ? String(x) : x < 10 ? x.toFixed(2) : x < 1000 ? x.toFixed(1) : x.toFixed(0));
const lines: string[] = [];
lines.push(
  `rxheal bench — ${machine.date} — ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, load ${machine.loadAverageAtStart.join('/')} → ${endLoad.join('/')}${quick ? ' — QUICK' : ''}`,
);
lines.push('');
lines.push('| figure | case | median | min–max | ratio (paired, median, min–max) | note |');
lines.push('|---|---|---:|---:|---|---|');
for (const r of rows) {
  const range = r.min !== undefined && r.max !== undefined ? `${num(r.min)}–${num(r.max)}` : '';
  const fx = (x: number): string => x.toFixed(Math.abs(x) < 0.1 ? 3 : 2);
  const ratio = r.ratio ? `${fx(r.ratio.median)}× ${r.ratio.to} (${fx(r.ratio.min)}–${fx(r.ratio.max)})` : '';
  lines.push(`| ${r.figure} | ${r.name} | ${num(r.value)} ${r.unit} | ${range} | ${ratio} | ${r.note ?? ''} |`);
}
lines.push('');
lines.push('| figure | target | measured | met |');
lines.push('|---|---|---|---|');
for (const v of verdicts) lines.push(`| ${v.figure} | ${v.target} | ${v.measured} | ${v.met ? 'yes' : '**no**'} |`);
lines.push('');
lines.push(`${seconds.toFixed(1)} s`);
console.log(lines.join('\n'));

const results = { machine: { ...machine, loadAverageAtEnd: endLoad, seconds: Math.round(seconds * 10) / 10, quick }, rows, verdicts };
// every run keeps its results in an untracked file; the committed ones (and bench/README.md's table,
// generated from them) change only when asked
const out = resultsPath(process.argv);
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
log(`wrote ${relative(process.cwd(), out)}${save ? '' : ' (npm run bench -- --save updates bench/results.json and the table in bench/README.md)'}`);
if (save) {
  const { current, expected } = expectedReadme();
  if (current !== expected) writeFileSync(README, expected);
  log('bench/README.md: benchmark table regenerated from bench/results.json');
}
