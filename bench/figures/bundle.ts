/**
 * (d) Bundle size: what rxheal adds to an application, minified and gzipped, with rxjs and the
 * optional peers external (the app has them anyway). rxheal is bundled from `src/` as an app
 * would import it (the package is `sideEffects: false`), with its own dependencies (io-ts, fp-ts)
 * included; the peers are bundled the same way. The three sets, every entry point of
 * package.json's `exports` whole, then every public export of the root entry alone (what
 * importing just it costs).
 *
 * The verdicts are ceilings (what a set weighs is worth its code, so fixed targets gave way to a
 * bound on growth): each set and each entry point may weigh what it weighed when its ceiling was
 * set + 3 %, kept in one table, `bench/bundleCeilings.json`; growth past one is a
 * decision (re-measure, raise the ceiling in a reviewed commit: bench/README.md), not an accident.
 * And the agent set stays ≤ 0.35× AI SDK `streamText`'s bundle, measured in the same run.
 */
import { build, type Metafile } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Row, Verdict } from '../lib/harness.js';

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

/** The three sets with a ceiling (keyed as in bench/bundleCeilings.json `sets`). */
export const SETS = [
  {
    key: 'retry+breaker',
    name: 'retryWithBackoff + circuitBreak, default classifier (the set cockatiel retry+breaker covers)',
    exports: 'retryWithBackoff, circuitBreak',
  },
  { key: 'five+classifier', name: 'the five operators + classifier', exports: `${FIVE}, classifyError` },
  { key: 'agent', name: 'runAgent + fallbackModel + the five operators', exports: `runAgent, fallbackModel, ${FIVE}` },
] as const;

/** The agent set's bound against AI SDK `streamText`'s bundle. */
export const AGENT_TO_STREAM_TEXT = 0.35;

/** Ceilings are what was measured + this share, rounded up. */
export const HEADROOM = 0.03;

interface PackageJson {
  readonly exports: Record<string, string | { readonly import?: string }>;
  readonly peerDependencies?: Record<string, string>;
}
const packageJson = (root: string): PackageJson => JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson;

/** An entry point of the package: its `exports` key, the specifier users write, its source. */
export interface EntryPoint {
  readonly subpath: string;
  readonly specifier: string;
  readonly source: string;
}

/** Every entry point of package.json's `exports` (its `dist/X.js` is `src/X.ts`), in its order. */
export function entryPoints(root = ROOT): EntryPoint[] {
  return Object.entries(packageJson(root).exports).flatMap(([subpath, target]) => {
    const built = typeof target === 'string' ? target : target.import;
    const match = built === undefined ? null : /^\.\/dist\/(.+)\.js$/.exec(built);
    if (!match) return []; // ./package.json
    return [{ subpath, specifier: subpath === '.' ? 'rxheal' : `rxheal/${subpath.slice(2)}`, source: `./src/${match[1]}.ts` }];
  });
}

/** What a real import leaves to the app: every peer dependency (rxjs and the optional ones) and their subpaths, and Node's built-ins. */
export function externals(root = ROOT): string[] {
  return [...Object.keys(packageJson(root).peerDependencies ?? {}).flatMap((peer) => [peer, `${peer}/*`]), 'node:*'];
}

/** One set's or one entry's ceiling: what was measured when it was set, and the bound. */
export interface Ceiling {
  readonly measured: number;
  readonly ceiling: number;
}

/** bench/bundleCeilings.json. */
export interface Ceilings {
  readonly about: string;
  /** By {@link SETS} key. */
  readonly sets: Record<string, Ceiling>;
  /** By package.json `exports` key (`.`, `./testing`, …). */
  readonly entries: Record<string, Ceiling>;
}

export const CEILINGS = join(ROOT, 'bench', 'bundleCeilings.json');

export function readCeilings(path = CEILINGS): Ceilings {
  return JSON.parse(readFileSync(path, 'utf8')) as Ceilings;
}

/** The ceiling for a size measured now: + {@link HEADROOM}, rounded up to the byte. */
export function ceilingOf(measured: number): number {
  return Math.ceil(measured * (1 + HEADROOM));
}

/** A set or an entry measured, with its ceiling (undefined: the table has none). */
export interface Checked {
  readonly kind: 'sets' | 'entries';
  readonly key: string;
  readonly name: string;
  readonly gz: number;
  readonly ceiling: number | undefined;
}

export interface BundleResult {
  readonly rows: Row[];
  /** The three sets, then every entry point, against their ceilings. */
  readonly checked: Checked[];
  /** min+gz of AI SDK `streamText` (zod external) and of the agent set, for the ratio. */
  readonly streamText: number;
  readonly agent: number;
}

export async function bundles(options: { exports: boolean } = { exports: true }, ceilings: Ceilings = readCeilings()): Promise<BundleResult> {
  const top = (s: Size, k: number): string =>
    s.top
      .slice(0, k)
      .map(([f, b]) => `${f.replace(/^src\//, '')} ${b}`)
      .join(', ');
  const rows: Row[] = [];
  const row = (name: string, s: Size, note?: string): Row => ({ figure: FIGURE, name, unit: 'B', value: s.gz, ...(note ? { note } : {}) });
  const checked: Checked[] = [];
  const bound = (c: number | undefined): string => (c === undefined ? 'no ceiling' : `ceiling ${c} B`);
  const external = externals();
  let agent = 0;
  for (const set of SETS) {
    const s = await bundleSize(`export { ${set.exports} } from './src/index.ts';`, external);
    const ceiling = ceilings.sets[set.key]?.ceiling;
    checked.push({ kind: 'sets', key: set.key, name: set.name, gz: s.gz, ceiling });
    if (set.key === 'agent') agent = s.gz;
    rows.push(row(`rxheal ${set.name}`, s, `${bound(ceiling)}; ${s.min} B minified; largest (min B): ${top(s, 5)}`));
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
  // every entry point whole, its peers external (as an app that imports it has them)
  for (const entry of entryPoints()) {
    const s = await bundleSize(`export * from '${entry.source}';`, external);
    const ceiling = ceilings.entries[entry.subpath]?.ceiling;
    const name = entry.subpath === '.' ? 'rxheal root entry, everything' : `entry ${entry.specifier}, everything`;
    checked.push({ kind: 'entries', key: entry.subpath, name, gz: s.gz, ceiling });
    rows.push(row(name, s, `${bound(ceiling)}; ${s.exports.length} runtime exports; ${s.min} B minified; peers and node builtins external`));
  }
  if (options.exports) {
    // every runtime export of the root entry, alone
    const all = await bundleSize("export * from './src/index.ts';", external);
    for (const name of [...all.exports].sort()) {
      const s = await bundleSize(`export { ${name} } from './src/index.ts';`, external);
      rows.push(row(`export ${name}`, s, `alone; largest (min B): ${top(s, 3)}`));
    }
  }
  return { rows, checked, streamText: aiSdk.gz, agent };
}

/** Figure d's verdicts: each set and entry under its ceiling, the agent set against `streamText`. */
export function bundleVerdicts(d: BundleResult): Verdict[] {
  const verdicts: Verdict[] = d.checked.map((c) => ({
    figure: 'd',
    target:
      c.ceiling === undefined
        ? `${c.name}: a ceiling in bench/bundleCeilings.json (${c.kind} ${JSON.stringify(c.key)} has none)`
        : `${c.name} ≤ ${c.ceiling} B min+gz (ceiling: measured when set + 3 %)`,
    measured: `${c.gz} B`,
    met: c.ceiling !== undefined && c.gz <= c.ceiling,
  }));
  const ratio = d.agent / d.streamText;
  verdicts.push({
    figure: 'd',
    target: `runAgent + fallbackModel + the five operators ≤ ${AGENT_TO_STREAM_TEXT}× AI SDK 6 streamText's bundle (zod external), min+gz`,
    measured: `${ratio.toFixed(3)}× (${d.agent} vs ${d.streamText} B)`,
    met: ratio <= AGENT_TO_STREAM_TEXT,
  });
  return verdicts;
}

/** A ceilings table at what `d` measured + {@link HEADROOM} (`npm run bench:bundles -- --ceilings`). */
export function ceilingsOf(d: BundleResult, about: string): Ceilings {
  const of = (kind: Checked['kind']): Record<string, Ceiling> =>
    Object.fromEntries(d.checked.filter((c) => c.kind === kind).map((c) => [c.key, { measured: c.gz, ceiling: ceilingOf(c.gz) }]));
  return { about, sets: of('sets'), entries: of('entries') };
}
