/**
 * The randomness rxheal draws itself, in one place: the default jitter of `retryWithBackoff`
 * and of rxheal/mcp's reconnection backoff. Every default draws through {@link libraryRandom},
 * read at each draw (not when an operator is made), so that rxheal/chaos can seed a whole replay
 * — the agent it replays builds its operators inside the replay, or before it — and a schedule
 * replays the same every time. A `random` option given to an operator is the user's own and is
 * never replaced.
 *
 * @module
 */

let source: () => number = Math.random;

/**
 * A number in `[0, 1)` from the library's source: `Math.random` unless a replay seeded it (see
 * {@link seedLibraryRandom}). What every `random` option of rxheal defaults to.
 *
 * @example
 * ```ts
 * const jitter = libraryRandom() * 100; // 0–100 ms
 * ```
 */
export function libraryRandom(): number {
  return source();
}

/**
 * Makes `random` the library's source until the returned function is called (which restores the
 * one before). rxheal/chaos calls it around each replay with a seeded generator.
 *
 * @example
 * ```ts
 * const restore = seedLibraryRandom(() => 0.5);
 * try { libraryRandom(); } finally { restore(); } // 0.5
 * ```
 */
export function seedLibraryRandom(random: () => number): () => void {
  const previous = source;
  source = random;
  return () => {
    source = previous;
  };
}
