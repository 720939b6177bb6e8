/**
 * `npm run bench:tail`: figure k alone (tail latency in virtual time: a seeded simulated provider,
 * no hedging vs a fixed 2 s hedge vs rxheal's p95 hedge with its budget; ~30 s, nothing timed on
 * the machine's clock), its rows and verdicts on stdout. `npm run bench` runs it too. Exit 1 when
 * a verdict is not met.
 *
 *   npx tsx bench/tail.ts            # npm run bench:tail
 *   npx tsx bench/tail.ts 2000       # fewer calls
 */
import { tailLatency } from './figures/tail.js';

const calls = Number(process.argv[2] ?? 10_000);
const k = tailLatency(calls);
const lines = ['| case | p99 | note |', '|---|---:|---|', ...k.rows.map((r) => `| ${r.name} | ${r.value} ms | ${r.note ?? ''} |`), ''];
lines.push(
  '| figure | target | measured | met |',
  '|---|---|---|---|',
  ...k.verdicts.map((v) => `| ${v.figure} | ${v.target} | ${v.measured} | ${v.met ? 'yes' : '**no**'} |`),
);
console.log(lines.join('\n'));
if (k.verdicts.some((v) => !v.met)) process.exitCode = 1;
