/**
 * (d) Bundle size: what rxheal adds to an application, minified and gzipped, with rxjs external
 * (the app has it anyway). rxheal is bundled from `src/index.ts` as an app would import it from
 * `rxheal` (the package is `sideEffects: false`), with its own dependencies (io-ts, fp-ts)
 * included; the peers are bundled the same way. Then every public export of the root entry
 * alone (what importing just it costs), and each subpath entry whole.
 */
import { build, type Metafile } from 'esbuild';
import { gzipSync } from 'node:zlib';
import type { Row } from '../lib/harness.js';
import { fileURLToPath } from 'node:url';

/** This checkout (not `lib/rxheal.ts`'s, which builds the library when imported). */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const FIGURE = 'd. bundle min+gz';

interface Size {
  readonly min: number;
  readonly gz: number;
  /** Largest inputs, bytes in the minified output. */
  readonly top: [string, number][];
  /** The entry's export names. */
  readonly exports: readonly string[];
}

export async function bundleSize(contents: string, external: string[], root = ROOT): Promise<Size> {
  const result = await build({
    stdin: { contents, resolveDir: root, loader: 'ts', sourcefile: 'entry.ts' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'node',
    mainFields: ['module', 'main'],
    target: 'es2022',
    external,
    write: false,
    outfile: 'bundle.js',
    metafile: true,
    logLevel: 'error',
  });
  const code = result.outputFiles[0]!.contents;
  const meta = result.metafile as Metafile;
  const output = Object.values(meta.outputs)[0]!;
  const top = Object.entries(output.inputs)
    .map(([file, v]) => [file.replace(/^node_modules\//, ''), v.bytesInOutput] as [string, number])
    .sort((a, b) => b[1] - a[1]);
  return { min: code.length, gz: gzipSync(code, { level: 9 }).length, top, exports: output.exports };
}

export const RXJS = ['rxjs', 'rxjs/*'];
const FIVE = 'retryWithBackoff, circuitBreak, reflectOnError, fallbackTo, degradeAfter';

/** The sets the targets are about, with their targets (min+gz bytes). */
export const TARGETS = [
  { name: 'retryWithBackoff + circuitBreak, default classifier (the set cockatiel retry+breaker covers)', exports: 'retryWithBackoff, circuitBreak', target: 4_000 },
  { name: 'the five operators + classifier', exports: `${FIVE}, classifyError`, target: 8_000 },
  { name: 'runAgent + fallbackModel + the five operators', exports: `runAgent, fallbackModel, ${FIVE}`, target: 15_000 },
] as const;

/** Subpath entries, bundled whole (their optional peers external). */
const SUBPATHS: [string, string][] = [
  ['rxheal/testing', './src/testing/index.ts'],
  ['rxheal/providers', './src/providers/index.ts'],
  ['rxheal/events', './src/events/index.ts'],
  ['rxheal/otel', './src/otel/index.ts'],
  ['rxheal/server', './src/server/index.ts'],
];

export interface BundleResult {
  readonly rows: Row[];
  /** min+gz of each target set, by name. */
  readonly targets: { readonly name: string; readonly gz: number; readonly target: number }[];
}

export async function bundles(options: { exports: boolean } = { exports: true }): Promise<BundleResult> {
  const top = (s: Size, k: number): string => s.top.slice(0, k).map(([f, b]) => `${f.replace(/^src\//, '')} ${b}`).join(', ');
  const rows: Row[] = [];
  const row = (name: string, s: Size, note?: string): Row => ({ figure: FIGURE, name, unit: 'B', value: s.gz, ...(note ? { note } : {}) });
  const targets: { name: string; gz: number; target: number }[] = [];
  for (const t of TARGETS) {
    const s = await bundleSize(`export { ${t.exports} } from './src/index.ts';`, RXJS);
    targets.push({ name: t.name, gz: s.gz, target: t.target });
    rows.push(row(`rxheal ${t.name}`, s, `target ≤ ${t.target} B; ${s.min} B minified; largest (min B): ${top(s, 5)}`));
  }
  const cockatiel = await bundleSize("export { retry, circuitBreaker, wrap, handleAll, ExponentialBackoff, ConsecutiveBreaker } from 'cockatiel';", RXJS);
  const opossum = await bundleSize("export { default } from 'opossum';", RXJS);
  const backoff = await bundleSize("export { retryBackoff } from 'backoff-rxjs';", RXJS);
  const aiSdk = await bundleSize("export { streamText } from 'ai';", [...RXJS, 'zod', 'zod/*']);
  rows.push(
    row('cockatiel retry + circuitBreaker + wrap', cockatiel, `${cockatiel.min} B minified`),
    row('opossum', opossum, `${opossum.min} B minified (node builtins external)`),
    row('backoff-rxjs retryBackoff', backoff, `${backoff.min} B minified`),
    row('AI SDK 6 streamText (zod external)', aiSdk, `${aiSdk.min} B minified`),
  );
  if (!options.exports) return { rows, targets };
  // every runtime export of the root entry, alone
  const all = await bundleSize("export * from './src/index.ts';", RXJS);
  rows.push(row('rxheal root entry, everything', all, `${all.exports.length} runtime exports; ${all.min} B minified`));
  for (const name of [...all.exports].sort()) {
    const s = await bundleSize(`export { ${name} } from './src/index.ts';`, RXJS);
    rows.push(row(`export ${name}`, s, `alone; largest (min B): ${top(s, 3)}`));
  }
  for (const [name, path] of SUBPATHS) {
    const s = await bundleSize(`export * from '${path}';`, [...RXJS, '@opentelemetry/*', 'node:*']);
    rows.push(row(`entry ${name}, everything`, s, `${s.exports.length} exports; optional peers and node builtins external`));
  }
  return { rows, targets };
}
