/**
 * `npm run bench:bundles`: figure d alone (bundle sizes; a few seconds, no timing), its rows and
 * its verdicts — every set and entry point under its ceiling in `bench/bundleCeilings.json`, the
 * agent set against AI SDK `streamText` — on stdout. Exit 1 when a verdict is not met.
 *
 *   npx tsx bench/bundles.ts              # npm run bench:bundles
 *   npx tsx bench/bundles.ts --save       # also figure d in bench/results.json, and bench/README.md's table
 *   npx tsx bench/bundles.ts --ceilings   # write bench/bundleCeilings.json anew: measured + 3 %
 *
 * Bundle sizes do not depend on the machine or its load, so `--save` replaces figure d's rows and
 * verdicts in the committed results of the last full run (the other figures stay as they were
 * measured) and says so in bench/README.md's table. `--ceilings` moves every ceiling, down as well as
 * up: review the diff and commit it with the reason (bench/README.md, "Bundle ceilings").
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { Row, Verdict } from './lib/harness.js';
import { bundles, bundleVerdicts, CEILINGS, ceilingsOf, FIGURE, HEADROOM, readCeilings } from './figures/bundle.js';
import { expectedReadme, README, RESULTS, type Results } from './readmeTable.js';

const save = process.argv.includes('--save');
const rewrite = process.argv.includes('--ceilings');

const t0 = process.hrtime.bigint();
const d = await bundles({ exports: true });
const verdicts = bundleVerdicts(d);
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;

const lines = ['| case | min+gz | note |', '|---|---:|---|', ...d.rows.map((r) => `| ${r.name} | ${r.value} B | ${r.note ?? ''} |`), ''];
lines.push(
  '| figure | target | measured | met |',
  '|---|---|---|---|',
  ...verdicts.map((v) => `| ${v.figure} | ${v.target} | ${v.measured} | ${v.met ? 'yes' : '**no**'} |`),
);
lines.push('', `${verdicts.filter((v) => v.met).length} of ${verdicts.length} met; ${seconds.toFixed(1)} s`);
console.log(lines.join('\n'));

if (rewrite) {
  const about = readCeilings().about;
  writeFileSync(CEILINGS, `${JSON.stringify(ceilingsOf(d, about), null, 2)}\n`);
  console.error(
    `wrote ${relative(process.cwd(), CEILINGS)}: every ceiling at what was measured + ${HEADROOM * 100} % (review the diff; commit it with the reason)`,
  );
}

if (save) {
  const results = JSON.parse(readFileSync(RESULTS, 'utf8')) as Results & { rows: Row[]; verdicts: Verdict[] };
  /** `list` with the items `old` selects replaced by `fresh`, where the first of them stood. */
  const replace = <T>(list: readonly T[], old: (x: T) => boolean, fresh: readonly T[]): T[] => {
    const at = list.findIndex(old);
    const kept = list.filter((x) => !old(x));
    const where = at < 0 ? kept.length : list.slice(0, at).filter((x) => !old(x)).length;
    return [...kept.slice(0, where), ...fresh, ...kept.slice(where)];
  };
  const next = {
    ...results,
    remeasured: { figure: 'd', date: new Date().toISOString(), by: 'npm run bench:bundles -- --save' },
    rows: replace(results.rows, (r) => r.figure === FIGURE, d.rows),
    verdicts: replace(results.verdicts, (v) => v.figure === 'd', verdicts),
  };
  writeFileSync(RESULTS, `${JSON.stringify(next, null, 2)}\n`);
  const { current, expected } = expectedReadme();
  if (current !== expected) writeFileSync(README, expected);
  console.error(`wrote ${relative(process.cwd(), RESULTS)} (figure d) and bench/README.md's table`);
}

if (!rewrite && verdicts.some((v) => !v.met)) process.exitCode = 1;
