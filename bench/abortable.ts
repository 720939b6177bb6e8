/**
 * Micro-benchmark of `abortable` (src/core/model/abortable.ts), the wrapper around every tool call and
 * model stream: the happy path (work that never reads `signal`, and work that reads it), and a
 * call cancelled before it finished. Compares this checkout with another one (`--before <root>`,
 * e.g. `git archive main src | tar -x -C /tmp/before`), both built with esbuild like
 * `lib/rxheal.ts` does, run interleaved in one process, with `RxJS from(promise)` as the yardstick.
 *
 *   npx tsx bench/abortable.ts --before /tmp/before
 *   npx tsx bench/abortable.ts            # this checkout only
 */
import { build } from 'esbuild';
import { mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { from, lastValueFrom, NEVER } from 'rxjs';
import type { abortable as Abortable } from '../src/core/model/abortable.js';
import { interleave, pairedRatio, rowsOf, type Case } from './lib/harness.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

async function load(root: string, tag: string): Promise<typeof Abortable> {
  const dir = fileURLToPath(new URL('../node_modules/.cache/rxheal-bench/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const out = `${dir}abortable-${tag}-${process.pid}.mjs`;
  await build({
    entryPoints: [`${root}/src/core/model/abortable.ts`],
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'es2022',
    outfile: out,
    logLevel: 'error',
  });
  try {
    return ((await import(pathToFileURL(out).href)) as { abortable: typeof Abortable }).abortable;
  } finally {
    rmSync(out, { force: true });
  }
}

const i = process.argv.indexOf('--before');
const beforeRoot = i >= 0 ? process.argv[i + 1] : undefined;
const builds: [string, typeof Abortable][] = [['after', await load(ROOT, 'after')]];
if (beforeRoot) builds.unshift(['before', await load(beforeRoot, 'before')]);

const value = Promise.resolve(42);
const cases: Case[] = [
  {
    name: 'RxJS from(promise)',
    run: async (n) => {
      for (let k = 0; k < n; k++) await lastValueFrom(from(value));
    },
  },
];
for (const [tag, abortable] of builds) {
  const quiet$ = abortable(() => value);
  const reads$ = abortable(({ signal }) => (signal.aborted ? value : value));
  const hangs$ = abortable(() => NEVER);
  const syncQuiet$ = abortable(() => [42]);
  const syncReads$ = abortable(({ signal }) => (signal.aborted ? [0] : [42]));
  cases.push(
    {
      name: `${tag}: sync work, signal never read`,
      run: (n) => {
        for (let k = 0; k < n; k++) syncQuiet$.subscribe();
      },
    },
    {
      name: `${tag}: sync work, signal read`,
      run: (n) => {
        for (let k = 0; k < n; k++) syncReads$.subscribe();
      },
    },
    {
      name: `${tag}: signal never read`,
      run: async (n) => {
        for (let k = 0; k < n; k++) await lastValueFrom(quiet$);
      },
    },
    {
      name: `${tag}: signal read`,
      run: async (n) => {
        for (let k = 0; k < n; k++) await lastValueFrom(reads$);
      },
    },
    {
      name: `${tag}: cancelled before finishing (sync)`,
      run: (n) => {
        for (let k = 0; k < n; k++) hangs$.subscribe().unsubscribe();
      },
    },
  );
}
const samples = await interleave(cases, { n: Number(process.env['N'] ?? 50_000), reps: Number(process.env['REPS'] ?? 15), warmup: 3 });
for (const row of rowsOf('abortable', 'ns/call', samples, 'RxJS from(promise)')) {
  const ratio = row.ratio ? ` ${row.ratio.median.toFixed(2)}× (${row.ratio.min.toFixed(2)}–${row.ratio.max.toFixed(2)})` : '';
  console.log(`${row.name.padEnd(44)} ${row.value.toFixed(0).padStart(6)} ns/call (${row.min!.toFixed(0)}–${row.max!.toFixed(0)})${ratio}`);
}
if (beforeRoot) {
  // after / before, paired within each repetition: the figure that says whether the change costs anything
  for (const c of ['signal never read', 'signal read', 'sync work, signal never read', 'sync work, signal read', 'cancelled before finishing (sync)']) {
    const r = pairedRatio(samples, `after: ${c}`, `before: ${c}`);
    console.log(`after/before, ${c}: ${r.median.toFixed(2)} (${r.min.toFixed(2)}–${r.max.toFixed(2)})`);
  }
}
