/**
 * What the seeded soaks share (the loopback soak, spec/soak/loopbackSoak.ts, and the hardening
 * soak, spec/soak/hardeningSoak.ts): a seeded PRNG, and the report they print and check.
 */
// ---------------------------------------------------------------------------------------------
// seeded randomness
// ---------------------------------------------------------------------------------------------

/** mulberry32: a small, fast, seeded PRNG (numbers in [0, 1)). */
export class Rng {
  private a: number;

  constructor(seed: number) {
    this.a = seed >>> 0;
  }

  /** Derives an independent seed for item `i` of stream `seed` (a run, a batch). */
  static derive(seed: number, ...path: number[]): number {
    // murmur3's finaliser after each step: nearby seeds and indices give unrelated streams
    const mix = (x: number): number => {
      x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
      x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
      return (x ^ (x >>> 16)) >>> 0;
    };
    let h = mix(seed >>> 0);
    for (const p of path) h = mix((h + Math.imul(p + 1, 0x9e3779b9)) >>> 0);
    return h;
  }

  next = (): number => {
    this.a = (this.a + 0x6d2b79f5) >>> 0;
    let x = this.a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** One key, with probability proportional to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    let r = this.next() * entries.reduce((n, [, w]) => n + w, 0);
    for (const [key, w] of entries) {
      r -= w;
      if (r < 0) return key;
    }
    return entries[entries.length - 1]![0];
  }
}

// ---------------------------------------------------------------------------------------------
// what a soak reports
// ---------------------------------------------------------------------------------------------

/** Counts by label. */
export type Histogram = Record<string, number>;

export const bump = (h: Histogram, key: string, n = 1): void => {
  h[key] = (h[key] ?? 0) + n;
};

/** What a soak found. `problems` is empty when every check passed. */
export interface SoakReport {
  readonly name: string;
  readonly seed: number;
  readonly runs: number;
  readonly elapsedMs: number;
  /** How each run ended: `answer`, or the terminal error's class (and resource / reason). */
  readonly outcomes: Histogram;
  /** Faults injected (model calls and tool executions), by kind. */
  readonly faults: Histogram;
  /** Runs in which each healing action happened at least once. */
  readonly healing: Histogram;
  /** Every failed check, with what reproduces it. */
  readonly problems: string[];
  /**
   * Leak figures measured after all runs (only what is not already a problem): the largest
   * number of observers left on one shared breaker's transition subject (0 expected: a registry
   * follows its breakers only while its own `events$` is observed).
   */
  readonly leaks: { readonly breakerObserversMax: number; readonly breakerObserversTotal: number };
  /** Extra figures (virtual time simulated, requests seen…). */
  readonly figures: Record<string, number | string>;
}

/** A few lines for a terminal. */
export function formatReport(report: SoakReport): string {
  const rate = report.runs / (report.elapsedMs / 1000);
  const hist = (h: Histogram): string =>
    Object.entries(h)
      .sort(([, a], [, b]) => b - a)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  const lines = [
    `${report.problems.length === 0 && report.leaks.breakerObserversMax === 0 ? 'ok  ' : 'FAIL'}  ${report.name}: ${report.runs} runs in ${(report.elapsedMs / 1000).toFixed(2)} s (${rate.toFixed(0)} runs/s, seed ${report.seed})`,
    `      outcomes: ${hist(report.outcomes)}`,
    `      healing (runs): ${hist(report.healing)}`,
    `      faults injected: ${hist(report.faults)}`,
    `      leaks: breaker observers max ${report.leaks.breakerObserversMax} (0 expected), total ${report.leaks.breakerObserversTotal}`,
    `      ${Object.entries(report.figures)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  ];
  for (const p of report.problems.slice(0, 20)) lines.push(`      problem: ${p}`);
  if (report.problems.length > 20) lines.push(`      … and ${report.problems.length - 20} more problems`);
  return lines.join('\n');
}
