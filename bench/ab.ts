/**
 * Before/after comparison of a src change. Each build runs in its own processes (a class new to
 * RxJS's shared code changes the speed of every RxJS pipeline measured after it, so two builds
 * must not share a process); processes alternate before, after, before, after…, and each reports
 * its figures as ratios to yardsticks measured in that same process (cockatiel for the guarded
 * call, the RxJS pipeline for 1e6 values), so drifting machine load cancels out.
 *
 *   git archive HEAD src | tar -x -C /tmp/before     # any other checkout's src/
 *   npx tsx bench/ab.ts /tmp/before [/tmp/after]     # after defaults to this checkout
 *   AB_ROUNDS=4 npx tsx bench/ab.ts /tmp/before
 *   AB_FIGURES=a,g,h npx tsx bench/ab.ts /tmp/before   # which figures (a and b by default): g per delta
 *                                                     # and idle heap as ratios to streamText, h's growth
 *                                                     # (and its ratios and ns per delta at each length)
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stats } from './lib/harness.js';

interface ChildResult {
  /** ns/call of the guarded call, and of cockatiel, medians in that process. */
  readonly a?: { readonly rxheal: number; readonly cockatiel: number; readonly ratio: number };
  /** ns/value of the five operators, and of the RxJS pipeline. */
  readonly b?: { readonly rxheal: number; readonly rxjs: number; readonly ratio: number };
  /** Figure g and h values by name (ratios to streamText, bytes, growth). */
  readonly g?: Record<string, number>;
  readonly h?: Record<string, number>;
}

const figures = (process.env['AB_FIGURES'] ?? 'a,b').split(',');

const self = fileURLToPath(import.meta.url);

if (process.argv[2] === '--child') {
  // one build, its yardsticks, in this process
  process.env['BENCH_LIB_ROOT'] = process.argv[3]!;
  const { guardedCall, HEADLINE, BASELINE } = await import('./figures/guardedCall.js');
  const { throughput } = await import('./figures/throughput.js');
  const reps = Number(process.env['AB_REPS'] ?? 9);
  const row = (rows: readonly { name: string; value: number; ratio?: { median: number } }[], name: string) => rows.find((r) => r.name === name)!;
  const out: { -readonly [K in keyof ChildResult]: ChildResult[K] } = {};
  if (figures.includes('a')) {
    const a = await guardedCall({ n: Number(process.env['AB_N'] ?? 20_000), reps, warmup: 2, mainOnly: true });
    const ar = row(a.rows, HEADLINE);
    out.a = { rxheal: ar.value, cockatiel: row(a.rows, BASELINE).value, ratio: ar.ratio!.median };
  }
  if (figures.includes('b')) {
    const b = await throughput({ n: 1_000_000, reps: Math.max(5, reps >> 1), warmup: 2 });
    const br = row(b.rows, 'rxheal five operators');
    out.b = { rxheal: br.value, rxjs: row(b.rows, 'RxJS retry+catchError+timeout+map').value, ratio: br.ratio!.median };
  }
  if (figures.includes('g')) {
    // the parameters of npm run bench
    const { streaming } = await import('./figures/streaming.js');
    const g = await streaming({ deltas: 10_000, answers: 1, reps: Math.max(9, reps), warmup: 2, firsts: 20, idle: 10_000 });
    out.g = {
      'pipeline per delta × streamText (AI SDK stream)': g.toStreamText.pipeline,
      'runAgent per delta × streamText (AI SDK stream)': g.toStreamText.runAgent,
      'pipeline per delta × streamText (async generator)': g.toStreamText.generatorPipeline,
      'runAgent per delta × streamText (async generator)': g.toStreamText.generatorRunAgent,
      'pipeline idle heap × streamText': g.idleHeap.pipeline / g.idleHeap.streamText,
      'runAgent idle heap × streamText': g.idleHeap.runAgent / g.idleHeap.streamText,
      'pipeline idle heap, B': g.idleHeap.pipeline,
      'runAgent idle heap, B': g.idleHeap.runAgent,
    };
  }
  if (figures.includes('h')) {
    const { scaling } = await import('./figures/scaling.js');
    const h = await scaling({ runs: [1_000, 10_000], answers: [100, 10_000], breakers: [10], reps: 5 });
    const idle = Object.values(h.idle);
    out.h = { 'idle run, B (10 000 runs)': h.idle[10_000]!, 'idle growth (largest / smallest)': Math.max(...idle) / Math.min(...idle) };
    for (const [name, bySize] of Object.entries(h.overSource)) {
      const xs = Object.values(bySize);
      out.h[`${name}: × source, largest answer / smallest`] = xs[xs.length - 1]! / xs[0]!;
      out.h[`${name}: × source, 100 deltas`] = bySize[100]!;
      out.h[`${name}: × source, 10 000 deltas`] = bySize[10_000]!;
    }
    // ns per delta as measured (each build's own source too: the ratios above are to it), by answer length
    const ns = (deltas: number, name: string): number => h.rows.find((r) => r.name === `${deltas.toLocaleString('en')}-delta answer: ${name}`)!.value;
    for (const name of ['rxheal source alone', ...Object.keys(h.overSource)]) {
      out.h[`${name}: ns per delta, 100 deltas`] = ns(100, name);
      out.h[`${name}: ns per delta, 10 000 deltas`] = ns(10_000, name);
    }
  }
  console.log(JSON.stringify(out));
} else {
  const [beforeRoot, afterRoot = fileURLToPath(new URL('../', import.meta.url))] = process.argv.slice(2);
  if (!beforeRoot) {
    console.error('usage: tsx bench/ab.ts <before-root> [after-root]');
    process.exit(2);
  }
  const rounds = Number(process.env['AB_ROUNDS'] ?? 3);
  const results: Record<'before' | 'after', ChildResult[]> = { before: [], after: [] };
  for (let r = 0; r < rounds; r++) {
    for (const [label, root] of [
      ['before', beforeRoot],
      ['after', afterRoot],
    ] as const) {
      const out = execFileSync(process.execPath, ['--import', 'tsx', self, '--child', root], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      results[label].push(JSON.parse(out.trim().split('\n').pop()!) as ChildResult);
      process.stderr.write(`${label} ${r + 1}/${rounds}\n`);
    }
  }
  const digits = (x: number): string => (x < 0.1 ? x.toFixed(4) : x < 10 ? x.toFixed(2) : x.toFixed(1));
  const med = (xs: number[]): string => {
    const s = stats(xs);
    return `${digits(s.median)} (${digits(s.min)}–${digits(s.max)})`;
  };
  for (const [fig, unit, peer] of [
    ['a', 'ns/call', 'cockatiel'],
    ['b', 'ns/value', 'rxjs'],
  ] as const) {
    if (!figures.includes(fig)) continue;
    console.log(`${fig === 'a' ? 'a. guarded call' : 'b. 1e6 values through the five operators'} (${rounds} processes each)`);
    for (const label of ['before', 'after'] as const) {
      const xs = results[label].map((x) => x[fig]!);
      const peerValues = xs.map((x) => (x as unknown as Record<string, number>)[peer]!);
      console.log(`  ${label.padEnd(6)} rxheal ${med(xs.map((x) => x.rxheal))} ${unit}; ${peer} ${med(peerValues)}; ratio ${med(xs.map((x) => x.ratio))}×`);
    }
    const rb = stats(results.before.map((x) => x[fig]!.ratio)).median;
    const ra = stats(results.after.map((x) => x[fig]!.ratio)).median;
    console.log(`  after/before (ratio of ratios) ${(ra / rb).toFixed(2)}`);
  }
  for (const fig of ['g', 'h'] as const) {
    if (!figures.includes(fig)) continue;
    console.log(`${fig === 'g' ? 'g. streaming' : 'h. how cost grows'} (${rounds} processes each): before, after, after/before`);
    for (const name of Object.keys(results.before[0]![fig]!)) {
      const [b, a] = (['before', 'after'] as const).map((label) => results[label].map((x) => x[fig]![name]!));
      console.log(`  ${name}: ${med(b!)}; ${med(a!)}; ${(stats(a!).median / stats(b!).median).toFixed(2)}`);
    }
  }
}
