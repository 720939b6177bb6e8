/**
 * `npm run soak`: the property and model-based tests and the agent fault soaks at full size (the
 * spec suite runs them at a few hundred runs, a few dozen on loopback). Exits non-zero, printing
 * the seed and the shrunk counterexample (properties) or each problem with the batch and run that
 * reproduce it (soaks), on failure.
 *
 *   npx tsx bench/soak.ts                  # 10 000 runs each; 10 000 agent runs; 300 loopback runs
 *   npx tsx bench/soak.ts --runs 50000 --seed 42
 *   npx tsx bench/soak.ts --only agent --agent-runs 100000
 *   npx tsx bench/soak.ts --only loopback --loopback-runs 500   # starts no run after 50 s
 *
 * The agent soak (virtual time, spec/soak/chaosSoak.ts): rxheal/chaos's checkHealing on the soak's
 * agent — fallbackModel, per-model deadlines and retries, tools with retries, breakers, reflection
 * and a degradable search — in six shapes, under fault schedules fast-check draws (and shrinks);
 * every run checked against checkHealing's invariants (it ends, answers or fails typed, text
 * intact, side effects once, budget held, healing announced, nothing left) and the soak's own
 * (reasoning intact; no observer left on a shared registry). The loopback soak
 * (spec/soak/loopbackSoak.ts): the soak's agent against two local HTTP providers with random
 * faults, plus no socket or handle left behind.
 */
import fc from 'fast-check';
import { breakerMatchesModel } from '../spec/property/breakerModel.js';
import { retryProperty } from '../spec/property/retryProperty.js';
import { callPolicyProperty } from '../spec/property/callPolicyProperty.js';
import { hardeningProperties } from '../spec/property/hardening.js';
import { runChaosSoak } from '../spec/soak/chaosSoak.js';
import { runLoopbackSoak } from '../spec/soak/loopbackSoak.js';
import { formatReport, type SoakReport } from '../spec/soak/seeded.js';
import { formatStreamReport, runStreamSoak } from '../spec/soak/streamSoak.js';
import { runHardeningSoak } from '../spec/soak/hardeningSoak.js';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const numRuns = Number(arg('runs') ?? 10_000);
const agentRuns = Number(arg('agent-runs') ?? 10_000);
const loopbackRuns = Number(arg('loopback-runs') ?? 300);
const only = arg('only');
const seed = arg('seed') === undefined ? Date.now() ^ (process.pid << 8) : Number(arg('seed'));
const wanted = (part: 'properties' | 'agent' | 'loopback'): boolean => only === undefined || only === part;

const properties: [string, fc.IProperty<never>][] = [
  ['CircuitBreaker (through circuitBreak) vs the reference model', breakerMatchesModel as unknown as fc.IProperty<never>],
  ['retryWithBackoff: subscriptions, terminal errors, virtual time', retryProperty as unknown as fc.IProperty<never>],
  ...hardeningProperties,
  ['callPolicy(…).call(work) = defer(work) through the two operators piped', callPolicyProperty as unknown as fc.IProperty<never>],
];

let failed = false;
if (wanted('properties')) {
  for (const [name, property] of properties) {
    const t0 = process.hrtime.bigint();
    const details = fc.check(property, { numRuns, seed });
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    if (details.failed) {
      failed = true;
      console.log(`FAIL  ${name} after ${details.numRuns} runs (${seconds.toFixed(1)} s), seed ${seed}`);
      console.log(fc.defaultReportMessage(details));
    } else {
      console.log(`ok    ${name}: ${details.numRuns} runs in ${seconds.toFixed(1)} s (seed ${seed})`);
    }
  }
}

/** Prints a soak's report; a breaker observer left by finished runs is a failure too (a leak). */
function judge(report: SoakReport): void {
  console.log(formatReport(report));
  if (report.problems.length > 0 || report.leaks.breakerObserversMax > 0) failed = true;
}

// the agent soak on rxheal/chaos's checkHealing (spec/soak/chaosSoak.ts): fast-check's seed is a 32-bit integer
if (wanted('agent')) judge(await runChaosSoak({ runs: agentRuns, seed: seed | 0 }));
// the hardening classes (throwing callbacks, huge delays, late signals, odd snapshots): spec/soak/hardeningSoak.ts
if (wanted('agent')) judge(runHardeningSoak({ runs: agentRuns, seed }));
if (wanted('loopback')) judge(await runLoopbackSoak({ runs: loopbackRuns, seed, budgetMs: 50_000 }));
// the stream soak: recorded streams split at random bytes, long lines (--only streams, --stream-runs N)
if (only === undefined || only === 'streams') {
  const streams = runStreamSoak({ runs: Number(arg('stream-runs') ?? 10_000), seed });
  console.log(formatStreamReport(streams, seed));
  if (streams.problems.length > 0) failed = true;
}
process.exit(failed ? 1 : 0);
