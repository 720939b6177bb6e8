/**
 * Counts `AbortController` constructions while `body` runs (the global is swapped for a counting
 * subclass, then restored): `abortable` must make one only when the work reads `signal`.
 */
export function countControllers<T>(body: () => T): { result: T; constructed: number } {
  const Original = globalThis.AbortController;
  let constructed = 0;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      constructed++;
    }
  };
  try {
    return { result: body(), constructed };
  } finally {
    globalThis.AbortController = Original;
  }
}
