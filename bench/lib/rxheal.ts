/**
 * The library under test, built from `src/` with esbuild (no minification, no `keepNames`):
 * what `tsc` emits for users, without the per-closure `__name()` calls that `tsx` adds when it
 * runs TypeScript directly (a `defineProperty` per closure created, which would bias every
 * per-subscription figure). Always fresh, whatever state `dist/` is in; packages (rxjs, io-ts,
 * fp-ts) stay external, so there is one copy of rxjs and `TestScheduler` virtualises it.
 */
import { build } from 'esbuild';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as Lib from '../../src/index.js';
import type * as Providers from '../../src/providers/index.js';

/** What the benchmarks use (and the pass-through floor operator, compiled the same way). */
export type Api = { passThrough: typeof import('./floor.js').passThrough } & Pick<
  typeof Lib,
  | 'retryWithBackoff'
  | 'circuitBreak'
  | 'reflectOnError'
  | 'fallbackTo'
  | 'degradeAfter'
  | 'CircuitBreaker'
  | 'classifyError'
  | 'HttpError'
  | 'RetriesExhaustedError'
  | 'CircuitOpenError'
  | 'CircuitBreakerRegistry'
  | 'streamModel'
  | 'fallbackModel'
  | 'runAgent'
> &
  Pick<typeof Providers, 'fromAsyncIterable'> &
  Partial<Pick<typeof Lib, 'callPolicy'>>;

/** Only what the benchmarks use, from the modules that define it (not the whole index). */
const entry = `
export { retryWithBackoff } from './src/operators/retryWithBackoff.ts';
export { circuitBreak } from './src/operators/circuitBreak.ts';
export { reflectOnError } from './src/operators/reflectOnError.ts';
export { fallbackTo } from './src/operators/fallbackTo.ts';
export { degradeAfter } from './src/operators/degradeAfter.ts';
export { CircuitBreaker } from './src/core/breaker/CircuitBreaker.ts';
export { CircuitBreakerRegistry } from './src/core/breaker/registry.ts';
export { streamModel, fromAsyncIterable } from './src/core/model/model.ts';
export { fallbackModel } from './src/sources/fallbackModel.ts';
export { runAgent } from './src/sources/runAgent.ts';
export { classifyError } from './src/core/errors/classify.ts';
export { HttpError, RetriesExhaustedError, CircuitOpenError } from './src/core/errors/errors.ts';
export { passThrough } from ${JSON.stringify(fileURLToPath(new URL('./floor.ts', import.meta.url)))};
`;

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Builds the library from `root`'s `src/` (the benchmarks' entry, or `contents`) and imports it. */
export async function loadLib<T = Api>(root: string, tag: string, contents?: string): Promise<T> {
  // a checkout from before callPolicy (bench/ab.ts) has none: its figure (a) skips that row
  const hasPolicy = existsSync(join(root, 'src/operators/callPolicy.ts'));
  // under node_modules/.cache: rxjs resolves from there, and linters and git ignore it
  const dir = fileURLToPath(new URL('../../node_modules/.cache/rxheal-bench/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const out = `${dir}rxheal-${tag}-${process.pid}.mjs`;
  await build({
    stdin: {
      contents: contents ?? (hasPolicy ? `${entry}export { callPolicy } from './src/operators/callPolicy.ts';\n` : entry),
      resolveDir: root,
      loader: 'ts',
      sourcefile: 'bench-entry.ts',
    },
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'es2022',
    outfile: out,
    logLevel: 'error',
  });
  try {
    return (await import(pathToFileURL(out).href)) as T;
  } finally {
    rmSync(out, { force: true });
  }
}

/** The library as it is in this checkout (`BENCH_LIB_ROOT` points at another checkout instead). */
export const lib = await loadLib(process.env['BENCH_LIB_ROOT'] ?? ROOT, 'current');

/**
 * The sources of the streaming figures (`aiSdk.ts`: the mock, the raw reader, the rxheal `Model`
 * over the mock; `asyncSource.ts`: a model over an async generator), compiled like the library: run through `tsx`, each of the adapter's
 * named closures (made per stream) would carry a `__name()` property — about 250 B of heap per
 * stream that neither a user's compiled adapter nor the AI SDK (untransformed in node_modules)
 * has.
 */
export const aiSdk = await loadLib<typeof import('./aiSdk.js') & typeof import('./asyncSource.js')>(
  ROOT,
  'aisdk',
  ['./aiSdk.ts', './asyncSource.ts'].map((f) => `export * from ${JSON.stringify(fileURLToPath(new URL(f, import.meta.url)))};\n`).join(''),
);
