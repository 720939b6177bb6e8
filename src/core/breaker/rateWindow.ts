/**
 * A failure-rate window: calls and failures over a sliding time window, in a fixed number of
 * buckets; no timers. The breaker's `window` option uses it, and its snapshots record it.
 *
 * @module
 */

/** Buckets per window (each `windowMs / BUCKETS` wide). */
export const BUCKETS = 10;

/** Calls and failures over a sliding time window, in fixed buckets; no timers. */
export class RateWindow {
  private readonly width: number;
  latest = -Infinity;
  calls = new Array<number>(BUCKETS).fill(0);
  failures = new Array<number>(BUCKETS).fill(0);

  constructor(windowMs: number) {
    this.width = windowMs / BUCKETS;
  }

  /** Records one outcome and returns the totals over the window. */
  record(now: number, failed: boolean): { calls: number; failures: number } {
    const id = Math.floor(now / this.width);
    if (id > this.latest) {
      // clear the buckets that slid out; at most BUCKETS of them
      const from = Math.max(this.latest + 1, id - BUCKETS + 1);
      for (let b = from; b <= id; b++) {
        const slot = ((b % BUCKETS) + BUCKETS) % BUCKETS;
        this.calls[slot] = 0;
        this.failures[slot] = 0;
      }
      this.latest = id;
    }
    const slot = ((this.latest % BUCKETS) + BUCKETS) % BUCKETS;
    this.calls[slot] = (this.calls[slot] ?? 0) + 1;
    if (failed) this.failures[slot] = (this.failures[slot] ?? 0) + 1;
    let calls = 0;
    let failures = 0;
    for (let i = 0; i < BUCKETS; i++) {
      calls += this.calls[i] ?? 0;
      failures += this.failures[i] ?? 0;
    }
    return { calls, failures };
  }

  clear(): void {
    this.latest = -Infinity;
    this.calls.fill(0);
    this.failures.fill(0);
  }
}
