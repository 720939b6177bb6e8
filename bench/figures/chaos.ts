/**
 * (n) Proving an agent heals: `checkHealing` (rxheal/chaos) runs the agent that heals of
 * spec/chaos/agents.ts — two models behind fallbackModel with deadlines and retries, a
 * non-idempotent booking tool behind retryWithBackoff, a deadline and reflectOnError — under 1 000
 * fault schedules drawn by fast-check over both models and the tool (seed 25), each run in
 * `TestScheduler` virtual time and checked against the seven invariants. Wall time of the whole
 * check, on the machine's clock (the runs themselves are virtual); the verdict is quick enough
 * for a user's own spec: under 10 s. Repeated `reps` times (a fresh check each time, the same schedules).
 */
import { checkHealing, faults } from '../../src/chaos/index.js';
import { healing } from '../../spec/chaos/agents.js';
import { stats, type Row, type Verdict } from '../lib/harness.js';

export const FIGURE = 'n. checkHealing, 1 000 schedules';

export async function chaosCheck(options: { schedules: number; reps: number }): Promise<{ rows: Row[]; verdicts: Verdict[] }> {
  const times: number[] = [];
  let virtualMs = 0;
  for (let i = 0; i < options.reps; i++) {
    let runs = 0;
    const t0 = performance.now();
    const report = await checkHealing(healing, {
      faults: faults.schedule({ models: ['primary', 'secondary'], tools: ['book'] }),
      runs: options.schedules,
      seed: 25,
      budget: { maxModelCalls: 12 },
      // counts the runs and the virtual time they simulated (a custom invariant that finds nothing)
      invariants: [
        {
          name: 'count',
          check: (run) => {
            runs++;
            if (i === 0) virtualMs += run.end.at;
            return undefined;
          },
        },
      ],
    });
    times.push(performance.now() - t0);
    if (!report.ok) throw new Error(`the healing agent failed checkHealing:\n${report.message}`);
    if (runs < options.schedules) throw new Error(`checkHealing ran ${runs} of ${options.schedules} schedules`);
  }
  const s = stats(times);
  const per = (s.median * 1000) / options.schedules;
  return {
    rows: [
      {
        figure: FIGURE,
        name: `the healing agent, ${options.schedules.toLocaleString('en')} schedules (both models, the booking tool)`,
        unit: 'ms',
        value: s.median,
        min: s.min,
        max: s.max,
        note: `${per.toFixed(0)} µs per schedule; ${(virtualMs / 3_600_000).toFixed(1)} h of virtual time simulated`,
      },
    ],
    verdicts: [
      {
        figure: 'n',
        target: `checkHealing passes a correct agent for ${options.schedules.toLocaleString('en')} schedules in < 10 s (quick enough for a spec of one's own)`,
        measured: `${(s.median / 1000).toFixed(2)} s median (${(s.min / 1000).toFixed(2)}–${(s.max / 1000).toFixed(2)} s)`,
        met: s.max < 10_000,
      },
    ],
  };
}
