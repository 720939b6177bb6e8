/**
 * fast-check, the optional peer dependency `rxheal/chaos` runs on, loaded once for the whole
 * entry — so that an entry imported without it says what to install, where a static `import`
 * would fail with Node's bare `ERR_MODULE_NOT_FOUND` before any of rxheal's code could speak.
 *
 * How: `import.meta.resolve('fast-check')` finds the same file a user's own
 * `import fc from 'fast-check'` loads, and `require` of that ES module (Node ≥ 20.19) returns
 * that very module instance — one fast-check, whose arbitraries mix with the user's own. Not a
 * top-level `await import()`: a module graph with top-level await cannot be `require`d, and
 * every entry of rxheal loads by `require` too.
 *
 * @module
 */
import type FastCheck from 'fast-check';

/** The error an import of `rxheal/chaos` fails with when fast-check is not installed. */
export const MISSING_FAST_CHECK =
  'rxheal/chaos needs fast-check (4.x), an optional peer dependency of rxheal that is not installed: npm install --save-dev fast-check';

/** Loads fast-check, or throws {@link MISSING_FAST_CHECK} (the resolution error as its cause). */
function load(): typeof FastCheck {
  let url: string;
  try {
    url = import.meta.resolve('fast-check');
  } catch (error) {
    throw new Error(MISSING_FAST_CHECK, { cause: error });
  }
  const node = typeof process === 'object' ? process.getBuiltinModule : undefined;
  if (typeof node !== 'function') throw new Error('rxheal/chaos runs on Node.js ≥ 20.19 (it loads fast-check with require of an ES module)');
  const { createRequire } = node('node:module');
  const { fileURLToPath } = node('node:url');
  const loaded = createRequire(import.meta.url)(fileURLToPath(url)) as { readonly default?: typeof FastCheck };
  if (loaded.default === undefined) throw new Error(`rxheal/chaos: ${url} is not fast-check 4 (no default export)`);
  return loaded.default;
}

/**
 * The fast-check every module of `rxheal/chaos` uses (the user's own instance).
 *
 * @example
 * ```ts
 * const schedules = fc.array(fc.nat(), { maxLength: 3 });
 * ```
 */
export const fc: typeof FastCheck = load();

export type { Arbitrary } from 'fast-check';
