/**
 * `npm run soak`: the property and model-based tests at full size (the spec suite runs them at a
 * few hundred runs). Exits non-zero, printing the seed and the shrunk counterexample, on the first
 * failure.
 *
 *   npx tsx bench/soak.ts                  # 10 000 runs each
 *   npx tsx bench/soak.ts --runs 50000 --seed 42
 */
import fc from 'fast-check';
import { breakerMatchesModel } from '../spec/property/breakerModel.js';
import { retryProperty } from '../spec/property/retryProperty.js';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const numRuns = Number(arg('runs') ?? 10_000);
const seed = arg('seed') === undefined ? Date.now() ^ (process.pid << 8) : Number(arg('seed'));

const properties: [string, fc.IProperty<never>][] = [
  ['CircuitBreaker (through circuitBreak) vs the reference model', breakerMatchesModel as unknown as fc.IProperty<never>],
  ['retryWithBackoff: subscriptions, terminal errors, virtual time', retryProperty as unknown as fc.IProperty<never>],
];

let failed = false;
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
process.exit(failed ? 1 : 0);
