/**
 * A full garbage collection for specs that check what a library releases (a WeakRef cleared):
 * `gc()` even without `--expose-gc` (turned on at run time, as bench/lib/harness.ts does), after
 * the current job, so that objects touched in it are no longer kept alive for it.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const collect: () => void = (() => {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (existing) return existing;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Waits for the current job to end, collects garbage, and waits once more. */
export async function fullGc(): Promise<void> {
  await settle();
  collect();
  await settle();
}
