/**
 * The benchmark table of bench/README.md, generated from `bench/results.json` (the committed results of
 * `npm run bench -- --save`): the run's date, machine and load, then every target with what was
 * measured. It sits between two markers in bench/README.md; nothing else of that page is touched.
 *
 *   npx tsx bench/readmeTable.ts           # rewrite the table from bench/results.json
 *   npx tsx bench/readmeTable.ts --check   # exit 1 if bench/README.md's table is not what the results say
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Verdict } from './lib/harness.js';

export const BEGIN = '<!-- bench-table: generated from bench/results.json by bench/readmeTable.ts (npm run bench -- --save); do not edit by hand -->';
export const END = '<!-- bench-table: end -->';

/** What `bench/index.ts` writes. */
export interface Results {
  readonly machine: {
    readonly cpu: string;
    readonly cores: number;
    readonly node: string;
    readonly date: string;
    readonly loadAverageAtStart: readonly number[];
    readonly loadAverageAtEnd: readonly number[];
    readonly seconds: number;
    readonly quick: boolean;
  };
  readonly verdicts: readonly Verdict[];
  /** A figure measured again after the run, on its own (`npm run bench:bundles -- --save`: figure d). */
  readonly remeasured?: { readonly figure: string; readonly date: string; readonly by: string };
}

export const RESULTS = fileURLToPath(new URL('./results.json', import.meta.url));
/** Where a run without `--save` writes (gitignored). */
export const LOCAL_RESULTS = fileURLToPath(new URL('./results.local.json', import.meta.url));

/** Where `npm run bench` writes its results: the committed file only with `--save`. */
export function resultsPath(argv: readonly string[]): string {
  return argv.includes('--save') ? RESULTS : LOCAL_RESULTS;
}
/** The page the table lives on: bench/README.md (the repository's README links to it). */
export const README = fileURLToPath(new URL('./README.md', import.meta.url));

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The generated block, markers included. */
export function renderTable(results: Results): string {
  const m = results.machine;
  const utc = (iso: string): string => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  const date = utc(m.date);
  const load = (xs: readonly number[]): string => xs[0]!.toFixed(1);
  const met = results.verdicts.filter((v) => v.met).length;
  const again = results.remeasured;
  const remeasured = again ? ` Figure ${again.figure} measured again on ${utc(again.date)} (\`${again.by}\`; bundle sizes do not depend on the machine).` : '';
  const lines = [
    BEGIN,
    `Latest run: ${date}, ${m.cpu}, ${m.cores} cores, Node ${m.node}, ${m.seconds.toFixed(0)} s${m.quick ? ' (quick mode)' : ''}; load average ${load(m.loadAverageAtStart)} at the start, ${load(m.loadAverageAtEnd)} at the end (a shared machine: absolute times are noisy, ratios are paired within a repetition).${remeasured} ${met} of ${results.verdicts.length} targets met.`,
    '',
    '| figure | target | measured | met |',
    '|---|---|---|---|',
    ...results.verdicts.map((v) => `| ${v.figure} | ${cell(v.target)} | ${cell(v.measured)} | ${v.met ? 'yes' : '**no**'} |`),
    END,
  ];
  return lines.join('\n');
}

/** `readme` with its table replaced by `table` (the markers must be there once each). */
export function replaceTable(readme: string, table: string): string {
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (start < 0 || end < start || readme.indexOf(BEGIN, start + 1) >= 0)
    throw new Error(`bench/README.md: the bench table markers are missing or repeated (${BEGIN} … ${END})`);
  return readme.slice(0, start) + table + readme.slice(end + END.length);
}

/** bench/README.md as it should be for the committed results. */
export function expectedReadme(): { current: string; expected: string } {
  const results = JSON.parse(readFileSync(RESULTS, 'utf8')) as Results;
  const current = readFileSync(README, 'utf8');
  return { current, expected: replaceTable(current, renderTable(results)) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { current, expected } = expectedReadme();
  if (process.argv.includes('--check')) {
    if (current !== expected) {
      console.error('bench/README.md: the benchmark table differs from bench/results.json; run npx tsx bench/readmeTable.ts');
      process.exit(1);
    }
  } else if (current !== expected) {
    writeFileSync(README, expected);
    console.error('bench/README.md: benchmark table updated from bench/results.json');
  }
}
