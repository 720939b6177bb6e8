/**
 * (h) How cost grows. Three questions, each at three sizes:
 *
 * - Concurrent idle runs (1 000, 10 000, 100 000 `runAgent` runs on the healing pipeline, each
 *   waiting for its model's first delta): retained heap per run must stay flat.
 * - Answer length (10², 10⁴, 10⁶ deltas through the healing pipeline, `midStream: 'continue'`,
 *   and through `runAgent`): ns per delta must stay flat, and the memory held while the answer
 *   streams must be bounded by the answer's own text (a `'continue'` fallback must keep the
 *   partial text to send it on, flat; nothing per delta beyond it). Measured at the `finish`
 *   event: heap held then (after a full GC) minus before the answer.
 * - Breakers in a registry (10, 10⁴, 10⁶ names): `registry.get(name)` time must stay flat, and
 *   breakers that only saw successes must hold no timer.
 */
import { defer, type Observable } from 'rxjs';
import { gc, retainedPerItem, stats, type Row } from '../lib/harness.js';
import { aiSdk, lib } from '../lib/rxheal.js';
import { trackTimers } from './heap.js';
import { agentRun, healing, QUIET } from './streaming.js';
import type { Model, TurnEvent } from '../../src/index.js';

const { CircuitBreakerRegistry, circuitBreak, fallbackModel, streamModel } = lib;
const { answerParts, mockModel, rxhealModel } = aiSdk;

export const FIGURE = 'h. how cost grows';

const ratioOf = (xs: readonly number[], ys: readonly number[]): { median: number; min: number; max: number } => {
  const r = stats(xs.map((x, i) => x / ys[i]!));
  return { median: r.median, min: r.min, max: r.max };
};

/** Retained heap per idle run, for `n` runs at once. */
function idleRuns(n: number): Promise<number> {
  const mock = mockModel('never');
  const { model } = healing(rxhealModel(mock, 'primary'), rxhealModel(mock, 'secondary'));
  return retainedPerItem(
    n,
    () => {
      const sub = agentRun(model).subscribe(QUIET);
      return () => sub.unsubscribe();
    },
    () => (mock.doStreamCalls.length = 0),
    100,
  );
}

/**
 * One answer of `deltas` deltas: ns per delta while it streams (first delta to `finish`, so the
 * answer's fixed start cost is not spread over it) and, with `measureHeld`, the bytes held at
 * `finish` (after a full GC, minus before the answer).
 */
async function longAnswer(
  make: (model: Model) => Observable<unknown>,
  deltas: number,
  parts: ReturnType<typeof answerParts>,
  measureHeld: boolean,
): Promise<{ ns: number; held: number }> {
  const mock = mockModel(parts);
  const source = rxhealModel(mock, 'primary');
  const o = make(source);
  if (measureHeld) {
    gc();
    gc();
  }
  const before = process.memoryUsage().heapUsed;
  let held: number | undefined;
  let first: bigint | undefined;
  let last: bigint | undefined;
  await new Promise<void>((resolve, reject) =>
    o.subscribe({
      next: (e) => {
        const type = (e as TurnEvent).type;
        if (type === 'text-delta' && first === undefined) first = process.hrtime.bigint();
        if (type === 'finish' && held === undefined) {
          // everything the answer streamed has passed; what is held now is what the pipeline keeps
          last = process.hrtime.bigint();
          if (measureHeld) gc();
          held = process.memoryUsage().heapUsed - before;
        }
      },
      error: reject,
      complete: resolve,
    }),
  );
  return { ns: Number(last! - first!) / Math.max(1, deltas - 1), held: held! };
}

export interface ScalingResult {
  readonly rows: Row[];
  /** Heap per idle run, by number of runs. */
  readonly idle: Record<number, number>;
  /** ns per delta × its source (paired median), by pipeline and answer length. */
  readonly overSource: Record<string, Record<number, number>>;
  /** Bytes held per delta while streaming, by pipeline (slope between the answer lengths). */
  readonly heldPerDelta: Record<string, number>;
  /** ns per lookup, and × a plain Map.get, by registry size; live timers by registry size. */
  readonly lookup: Record<number, number>;
  readonly lookupRatio: Record<number, number>;
  readonly timers: Record<number, number>;
}

export async function scaling(options: {
  runs: readonly number[];
  answers: readonly number[];
  breakers: readonly number[];
  reps: number;
}): Promise<ScalingResult> {
  const rows: Row[] = [];

  // concurrent idle runs
  const idle: Record<number, number> = {};
  for (const n of options.runs) {
    idle[n] = await idleRuns(n);
    rows.push({
      figure: FIGURE,
      name: `heap per idle run: ${n.toLocaleString('en')} runs at once`,
      unit: 'B',
      value: idle[n]!,
      note: 'runAgent on the healing pipeline, each waiting for a first delta',
    });
  }

  // answer length: the pipelines and their own source, interleaved, at each size
  const pipelines: Record<string, (model: Model) => Observable<unknown>> = {
    'rxheal source alone': (source) => source.stream({ messages: [], tools: [] }, { signal: new AbortController().signal }) as Observable<unknown>,
    'healing pipeline (continue)': (source) => healing(source, rxhealModel(mockModel('never'), 'secondary')).pipeline(),
    'fallbackModel (restart)': (source) => streamModel(fallbackModel([source, rxhealModel(mockModel('never'), 'secondary')]), { messages: [], tools: [] }),
    runAgent: (source) => agentRun(healing(source, rxhealModel(mockModel('never'), 'secondary')).model),
  };
  const names = Object.keys(pipelines);
  const perDelta: Record<string, Record<number, number>> = {};
  const overSource: Record<string, Record<number, number>> = {};
  const heldPerDelta: Record<string, number> = {};
  const heldBytes: Record<string, Record<number, number>> = {};
  for (const deltas of options.answers) {
    const parts = answerParts(deltas);
    const reps = Math.max(options.reps, Math.min(options.reps * 10, Math.round(1e5 / deltas)));
    const ns = new Map<string, number[]>(names.map((n) => [n, []]));
    const heldSamples = new Map<string, number[]>();
    for (const name of names) await longAnswer(pipelines[name]!, Math.min(deltas, 10_000), answerParts(Math.min(deltas, 10_000)), false);
    for (let r = 0; r < reps; r++) {
      for (let j = 0; j < names.length; j++) {
        const name = names[(j + r) % names.length]!;
        const m = await longAnswer(pipelines[name]!, deltas, parts, r < 3);
        ns.get(name)!.push(m.ns);
        if (r < 3) (heldSamples.get(name) ?? heldSamples.set(name, []).get(name)!).push(m.held);
      }
    }
    const held = new Map([...heldSamples].map(([name, xs]) => [name, stats(xs).median]));
    const base = ns.get('rxheal source alone')!;
    for (const name of names) {
      const xs = ns.get(name)!;
      const s = stats(xs);
      (perDelta[name] ??= {})[deltas] = s.median;
      if (name !== 'rxheal source alone') (overSource[name] ??= {})[deltas] = ratioOf(xs, base).median;
      (heldBytes[name] ??= {})[deltas] = held.get(name)!;
      rows.push({
        figure: FIGURE,
        name: `${deltas.toLocaleString('en')}-delta answer: ${name}`,
        unit: 'ns/delta',
        value: s.median,
        min: s.min,
        max: s.max,
        ...(name === 'rxheal source alone' ? {} : { ratio: { to: 'its source', ...ratioOf(xs, base) } }),
        note: `streaming (first delta to finish), ${reps} answer${reps === 1 ? '' : 's'}; held at finish ${(held.get(name)! / 1024).toFixed(1)} KB`,
      });
    }
  }
  // what an answer holds per delta, beyond the fixed cost of a run: the slope between sizes
  const sizes = [...options.answers].sort((a, b) => a - b);
  if (sizes.length >= 2) {
    const [small, large] = [sizes[0]!, sizes[sizes.length - 1]!];
    for (const name of names) {
      const slope = (heldBytes[name]![large]! - heldBytes[name]![small]!) / (large - small);
      heldPerDelta[name] = slope;
      rows.push({
        figure: FIGURE,
        name: `held per delta while streaming: ${name}`,
        unit: 'B/delta',
        value: slope,
        note: `(held at finish with ${large.toLocaleString('en')} deltas − with ${small.toLocaleString('en')}) / difference; each delta is 3 characters`,
      });
    }
  }

  // breakers in a registry
  const lookup: Record<number, number> = {};
  const lookupRatio: Record<number, number> = {};
  const timers: Record<number, number> = {};
  for (const n of options.breakers) {
    const registry = new CircuitBreakerRegistry();
    const names = Array.from({ length: n }, (_, i) => `tool:${i}`);
    for (const name of names) registry.get(name);
    // each breaker sees one successful call (a closed breaker that worked), counting timers made
    const tracker = trackTimers();
    try {
      for (const name of names)
        defer(() => [1])
          .pipe(circuitBreak(registry.get(name)))
          .subscribe();
      timers[n] = tracker.live();
    } finally {
      tracker.restore();
    }
    // lookups of existing names in a scattered order, timed in batches; a plain Map of the same
    // names is the floor (what memory latency alone costs at this size)
    const order = Array.from({ length: 100_000 }, (_, i) => names[(i * 7_919) % n]!);
    const plain = new Map(names.map((name) => [name, registry.get(name)]));
    const samples: number[] = [];
    const floor: number[] = [];
    for (let r = 0; r < options.reps + 2; r++) {
      for (const [into, get] of [
        [samples, (name: string) => registry.get(name)],
        [floor, (name: string) => plain.get(name)],
      ] as const) {
        const t0 = process.hrtime.bigint();
        let hits = 0;
        for (const name of order) if (get(name)) hits++;
        const ns = Number(process.hrtime.bigint() - t0) / order.length;
        if (hits !== order.length) throw new Error('lookup failed');
        if (r >= 2) into.push(ns);
      }
    }
    const s = stats(samples);
    const f = stats(floor);
    lookup[n] = s.median;
    lookupRatio[n] = ratioOf(samples, floor).median;
    rows.push({
      figure: FIGURE,
      name: `registry.get(name), ${n.toLocaleString('en')} breakers`,
      unit: 'ns/lookup',
      value: s.median,
      min: s.min,
      max: s.max,
      ratio: { to: 'Map.get', ...ratioOf(samples, floor) },
      note: `a plain Map.get of the same names ${f.median.toFixed(0)} ns; timers live after one successful call through each breaker: ${timers[n]}`,
    });
  }
  return { rows, idle, overSource, heldPerDelta, lookup, lookupRatio, timers };
}
