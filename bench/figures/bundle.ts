/**
 * (d) Bundle size: what the five operators and the classifier add to an application, minified
 * and gzipped, with rxjs external (the app has it anyway). rxheal is bundled from `src/index.ts`
 * as an app would import it from `rxheal` (the package is `sideEffects: false`), with its own
 * dependencies (io-ts, fp-ts) included; the peers are bundled the same way.
 */
import { build, type Metafile } from 'esbuild';
import { gzipSync } from 'node:zlib';
import type { Row } from '../lib/harness.js';
import { ROOT } from '../lib/rxheal.js';

export const FIGURE = 'd. bundle min+gz';

interface Size {
  readonly min: number;
  readonly gz: number;
  /** Largest inputs, bytes in the minified output. */
  readonly top: [string, number][];
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
  const inputs = Object.values(meta.outputs)[0]!.inputs;
  const top = Object.entries(inputs)
    .map(([file, v]) => [file.replace(/^node_modules\//, ''), v.bytesInOutput] as [string, number])
    .sort((a, b) => b[1] - a[1]);
  return { min: code.length, gz: gzipSync(code, { level: 9 }).length, top };
}

export const RXJS = ['rxjs', 'rxjs/*'];
export const OPS = "export { retryWithBackoff, circuitBreak, reflectOnError, fallbackTo, degradeAfter, classifyError } from './src/index.ts';";

export async function bundles(): Promise<{ rows: Row[]; rxheal: Size; own: Size }> {
  const top = (s: Size, k: number): string => s.top.slice(0, k).map(([f, b]) => `${f.replace(/^src\//, '')} ${b}`).join(', ');
  const rxheal = await bundleSize(OPS, RXJS);
  const own = await bundleSize(OPS, [...RXJS, 'io-ts', 'io-ts/*', 'fp-ts', 'fp-ts/*']);
  // what each piece weighs alone (an app that imports one operator pays for it and what it uses)
  const alone: Row[] = [];
  for (const names of [['retryWithBackoff', 'circuitBreak'], ['retryWithBackoff'], ['circuitBreak'], ['classifyError'], ['reflectOnError'], ['fallbackTo'], ['degradeAfter']]) {
    const entry = `export { ${names.join(', ')} } from './src/index.ts';`;
    const withIoTs = await bundleSize(entry, RXJS);
    const ownOnly = await bundleSize(entry, [...RXJS, 'io-ts', 'io-ts/*', 'fp-ts', 'fp-ts/*']);
    const what = names.length === 2 ? 'retryWithBackoff + circuitBreak (the set cockatiel retry+breaker covers)' : `${names[0]} alone`;
    alone.push({ figure: FIGURE, name: `rxheal ${what}`, unit: 'B', value: withIoTs.gz, note: `own code ${ownOnly.gz} B; largest (min B): ${top(ownOnly, 3)}` });
  }
  const cockatiel = await bundleSize("export { retry, circuitBreaker, wrap, handleAll, ExponentialBackoff, ConsecutiveBreaker } from 'cockatiel';", RXJS);
  const opossum = await bundleSize("export { default } from 'opossum';", RXJS);
  const backoff = await bundleSize("export { retryBackoff } from 'backoff-rxjs';", RXJS);
  const row = (name: string, s: Size, note?: string): Row => ({ figure: FIGURE, name, unit: 'B', value: s.gz, ...(note ? { note } : {}) });
  return {
    rxheal,
    own,
    rows: [
      row('rxheal five operators + classifier (io-ts, fp-ts bundled)', rxheal, `${rxheal.min} B minified; largest (min B): ${top(rxheal, 4)}`),
      row('rxheal, same, own code only (io-ts, fp-ts external)', own, `${own.min} B minified; largest: ${top(own, 4)}`),
      ...alone,
      row('cockatiel retry + circuitBreaker + wrap', cockatiel, `${cockatiel.min} B minified`),
      row('opossum', opossum, `${opossum.min} B minified (node builtins external)`),
      row('backoff-rxjs retryBackoff', backoff, `${backoff.min} B minified`),
    ],
  };
}
