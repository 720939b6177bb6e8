/**
 * Measurement helpers for the benchmarks: interleaved repetitions after a warm-up, medians with
 * min–max, and ratios paired within one repetition (this machine is shared and noisy, so a ratio
 * of two numbers measured seconds apart means little; two measured back to back mean more).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** One benchmarked case: `run(n)` does the work `n` times. */
export interface Case {
  readonly name: string;
  readonly run: (n: number) => unknown;
}

/** Median, min and max of a sample. */
export interface Stats {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly samples: readonly number[];
}

export function stats(xs: readonly number[]): Stats {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { median, min: s[0]!, max: s[s.length - 1]!, samples: xs };
}

/** The p-th percentile (0–100) of `xs`, nearest rank (an exact sample's: the figures that count every call). */
export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** `gc()` even without `--expose-gc` (turned on at run time; fine for a benchmark process). */
export const gc: () => void = (() => {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (existing) return existing;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Retained heap per item for `n` items alive at once: `start()` makes one (returning what disposes
 * of it), after `warm` untimed ones (so compiled code is not counted); pending work is let settle
 * (an item may start asynchronously), `beforeMeasure` drops what is not part of an item (a mock's
 * call log), then two full GCs. Every item is disposed of before returning.
 */
export async function retainedPerItem(n: number, start: () => () => void, beforeMeasure?: () => void, warm = 50): Promise<number> {
  const disposers: (() => void)[] = [];
  for (let i = 0; i < warm; i++) disposers.push(start());
  await settle();
  disposers.splice(0).forEach((d) => d());
  await settle();
  beforeMeasure?.();
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < n; i++) {
    disposers.push(start());
    // let asynchronous starts proceed now and then, so their promises do not pile up
    if (i % 10_000 === 9_999) await settle();
  }
  await settle();
  await settle();
  beforeMeasure?.();
  gc();
  gc();
  const after = process.memoryUsage().heapUsed;
  disposers.splice(0).forEach((d) => d());
  await settle();
  return (after - before) / n;
}

/** Nanoseconds per operation of each case, one sample per repetition. */
export type Samples = Map<string, number[]>;

/**
 * Runs every case `reps` times, interleaved (each repetition runs every case once, starting
 * from a different case each time), after `warmup` untimed repetitions. Returns ns per
 * operation for each case and repetition.
 */
export async function interleave(cases: readonly Case[], options: { n: number; reps: number; warmup: number }): Promise<Samples> {
  const out: Samples = new Map(cases.map((c) => [c.name, []]));
  for (let rep = -options.warmup; rep < options.reps; rep++) {
    for (let k = 0; k < cases.length; k++) {
      const c = cases[(k + Math.max(rep, 0)) % cases.length]!;
      const t0 = process.hrtime.bigint();
      await c.run(options.n);
      const ns = Number(process.hrtime.bigint() - t0) / options.n;
      if (rep >= 0) out.get(c.name)!.push(ns);
    }
  }
  return out;
}

/** The ratio `a / b` in each repetition, summarised. */
export function pairedRatio(samples: Samples, a: string, b: string): Stats {
  const xs = samples.get(a)!;
  const ys = samples.get(b)!;
  return stats(xs.map((x, i) => x / ys[i]!));
}

/** A row of the results table. */
export interface Row {
  readonly figure: string;
  readonly name: string;
  readonly unit: string;
  readonly value: number;
  readonly min?: number;
  readonly max?: number;
  /** What the value is compared with, e.g. `'× cockatiel'`, and the paired ratio. */
  readonly ratio?: { readonly to: string; readonly median: number; readonly min: number; readonly max: number };
  readonly note?: string;
}

/** Rows for each case of an interleaved run, with ratios to `baseline` (paired per repetition). */
export function rowsOf(figure: string, unit: string, samples: Samples, baseline?: string, notes: Record<string, string> = {}): Row[] {
  const rows: Row[] = [];
  for (const [name, xs] of samples) {
    const s = stats(xs);
    const r = baseline && name !== baseline ? pairedRatio(samples, name, baseline) : undefined;
    rows.push({
      figure,
      name,
      unit,
      value: s.median,
      min: s.min,
      max: s.max,
      ...(r ? { ratio: { to: baseline!, median: r.median, min: r.min, max: r.max } } : {}),
      ...(notes[name] ? { note: notes[name] } : {}),
    });
  }
  return rows;
}

/** A target's verdict, for the summary. */
export interface Verdict {
  readonly figure: string;
  readonly target: string;
  readonly measured: string;
  readonly met: boolean;
}

/** A figure run alone: each row (value, min–max, paired ratio, note) and each verdict on stdout, `digits` decimals. */
export function printFigure(rows: readonly Row[], verdicts: readonly Verdict[], digits: number): void {
  const n = (x: number): string => x.toFixed(digits);
  for (const r of rows) {
    const range = r.min === undefined ? '' : ` (${n(r.min)}–${n(r.max!)})`;
    const ratio = r.ratio ? `, ${r.ratio.median.toFixed(3)}× ${r.ratio.to} (${r.ratio.min.toFixed(2)}–${r.ratio.max.toFixed(2)})` : '';
    console.log(`${r.name}: ${n(r.value)} ${r.unit}${range}${ratio} — ${r.note ?? ''}`);
  }
  for (const v of verdicts) console.log(`${v.met ? 'met' : 'NOT met'}: ${v.target}: ${v.measured}`);
}
