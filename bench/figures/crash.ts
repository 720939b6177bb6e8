/**
 * (r) Crash mode: `checkHealing(agent, { crash: true })` on the five-step durable agent of
 * spec/chaos/clerk.ts (lookup → hold → book → notify, then the answer; two models behind
 * fallbackModel, the run journaled) under 1 000 fault schedules (the primary model and the lookup
 * tool, seed 25: the secondary stays up, so every uncrashed run answers), each schedule's run, then
 * that run crashed at every one of its crash points (about 24 a schedule) and resumed from the
 * journal by a fresh agent, each checked. The agent and rxheal
 * are built by esbuild as `tsc` would emit them (bench/lib/rxheal.ts: no `tsx` `__name()` per
 * closure). Wall time of the whole check, and the process's CPU time beside it (less sensitive to
 * a shared machine's load); the verdict: under 30 s for 1 000 schedules.
 *
 *   npx tsx bench/figures/crash.ts [schedules] [reps]   # this figure alone (default 1 000 schedules, 1 rep)
 */
import { cpuUsage } from 'node:process';
import { fileURLToPath } from 'node:url';
import { loadLib, ROOT } from '../lib/rxheal.js';
import { stats, type Row, type Verdict } from '../lib/harness.js';

export const FIGURE = 'r. checkHealing crash mode, 1 000 schedules';

type Lib = typeof import('../../src/chaos/index.js') & typeof import('../../spec/chaos/clerk.js');

const entry = `export { checkHealing, faults } from './src/chaos/index.ts';\nexport { agentFor } from './spec/chaos/clerk.ts';\n`;

export async function crashCheck(options: { schedules: number; reps: number }): Promise<{ rows: Row[]; verdicts: Verdict[] }> {
  const { checkHealing, faults, agentFor } = await loadLib<Lib>(process.env['BENCH_LIB_ROOT'] ?? ROOT, 'crash', entry);
  const walls: number[] = [];
  const cpus: number[] = [];
  let crashRuns = 0;
  for (let i = 0; i < options.reps; i++) {
    let crashes = 0;
    const c0 = cpuUsage();
    const t0 = performance.now();
    const report = await checkHealing(agentFor(), {
      faults: faults.schedule({ models: ['primary'], tools: ['lookup'] }),
      runs: options.schedules,
      seed: 25,
      crash: true,
      // counts the crashed runs checked (a custom invariant that finds nothing)
      invariants: [
        {
          name: 'count',
          check: (run) => {
            if (run.crash !== undefined) crashes++;
            return undefined;
          },
        },
      ],
    });
    walls.push(performance.now() - t0);
    const c = cpuUsage(c0);
    cpus.push((c.user + c.system) / 1000);
    if (!report.ok) throw new Error(`the durable agent failed checkHealing's crash mode:\n${report.message}`);
    crashRuns = crashes;
  }
  const wall = stats(walls);
  const cpu = stats(cpus);
  const n = options.schedules.toLocaleString('en');
  const scaled = (ms: number): number => (ms * 1000) / options.schedules / 1000;
  return {
    rows: [
      {
        figure: FIGURE,
        name: `the five-step durable agent, ${n} schedules, every crash point (${crashRuns.toLocaleString('en')} crashed runs)`,
        unit: 'ms',
        value: wall.median,
        min: wall.min,
        max: wall.max,
        note: `${(wall.median / options.schedules).toFixed(1)} ms per schedule; CPU ${(cpu.median / 1000).toFixed(1)} s (${(cpu.min / 1000).toFixed(1)}–${(cpu.max / 1000).toFixed(1)})`,
      },
    ],
    verdicts: [
      {
        figure: 'r',
        target: 'checkHealing crash mode: 1 000 schedules × every crash point of a five-step durable agent in < 30 s',
        measured: `${scaled(wall.median).toFixed(1)} s per 1 000 schedules, wall median (${scaled(wall.min).toFixed(1)}–${scaled(wall.max).toFixed(1)}); CPU ${scaled(cpu.median).toFixed(1)} s`,
        met: scaled(wall.median) < 30,
      },
    ],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [schedules = 1_000, reps = 1] = process.argv.slice(2).map(Number);
  const { rows, verdicts } = await crashCheck({ schedules, reps });
  for (const r of rows) console.log(`${r.name}: ${(r.value / 1000).toFixed(2)} s (${r.note})`);
  for (const v of verdicts) console.log(`${v.target}: ${v.measured} — ${v.met ? 'met' : 'NOT met'}`);
}
