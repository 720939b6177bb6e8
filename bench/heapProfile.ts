/**
 * What one idle stream holds, object by object: `n` streams of one kind left waiting for their
 * first delta (the heap figure's setting), a V8 heap snapshot before and after, and the
 * difference per stream grouped by object kind (constructor, closure name, array kind), largest
 * first. The figure (`npm run bench`, g) gives the total; this says where it goes.
 *
 *   node --expose-gc --import tsx bench/heapProfile.ts runAgent 2000
 *   node --expose-gc --import tsx bench/heapProfile.ts pipeline
 *
 * Kinds: `source` (the mock's stream as an rxheal Model), `streamModel`, `pipeline` (the healing
 * pipeline), `runAgent`. Sizes are V8's shallow sizes in the snapshot (they add up to a little
 * more than the figure's `heapUsed` difference: the snapshot counts what a full GC keeps).
 */
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import type { Observable } from 'rxjs';
import { gc } from './lib/harness.js';
import { aiSdk, lib } from './lib/rxheal.js';
import { agentRun, healing, QUIET } from './figures/streaming.js';

const KINDS = ['source', 'streamModel', 'pipeline', 'runAgent'] as const;
const kind = (process.argv[2] ?? 'runAgent') as (typeof KINDS)[number];
const n = Number(process.argv[3] ?? 2_000);
if (!KINDS.includes(kind)) throw new Error(`kind: one of ${KINDS.join(', ')}`);

const REQUEST = { messages: [{ role: 'user' as const, content: 'hi' }], tools: [] };
const mock = aiSdk.mockModel('never');
const source = aiSdk.rxhealModel(mock, 'primary');
const { model, pipeline } = healing(source, aiSdk.rxhealModel(mock, 'secondary'));
const stream = (): Observable<unknown> =>
  kind === 'source'
    ? (source.stream(REQUEST, { signal: new AbortController().signal }) as Observable<unknown>)
    : kind === 'streamModel'
      ? lib.streamModel(source, REQUEST)
      : kind === 'pipeline'
        ? pipeline()
        : agentRun(model);
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

type Histogram = Map<string, { count: number; size: number }>;

/** Objects on the heap now, by kind: count and shallow size. */
function histogram(): Histogram {
  const file = writeHeapSnapshot(join(tmpdir(), `rxheal-heap-${process.pid}.heapsnapshot`));
  const snap = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  rmSync(file);
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const [iType, iName, iSize] = [fields.indexOf('type'), fields.indexOf('name'), fields.indexOf('self_size')];
  const h: Histogram = new Map();
  for (let i = 0; i < snap.nodes.length; i += fields.length) {
    const type = types[snap.nodes[i + iType]!]!;
    const name = type.includes('string') ? '(string)' : type === 'number' ? '(number)' : snap.strings[snap.nodes[i + iName]!]!.slice(0, 60);
    const key = `${type}: ${name}`;
    const e = h.get(key) ?? { count: 0, size: 0 };
    e.count++;
    e.size += snap.nodes[i + iSize]!;
    h.set(key, e);
  }
  return h;
}

// warm up, then measure n streams left waiting
const warm = Array.from({ length: 50 }, () => stream().subscribe(QUIET));
await settle();
warm.forEach((s) => s.unsubscribe());
await settle();
mock.doStreamCalls.length = 0;
gc();
gc();
const before = histogram();
const live = Array.from({ length: n }, () => stream().subscribe(QUIET));
await settle();
await settle();
mock.doStreamCalls.length = 0; // the mock records each call's options: not part of a stream
gc();
gc();
const after = histogram();
const rows: [string, number, number][] = [];
let total = 0;
for (const [key, a] of after) {
  const b = before.get(key) ?? { count: 0, size: 0 };
  const size = (a.size - b.size) / n;
  total += size;
  if (Math.abs(size) >= 8) rows.push([key, (a.count - b.count) / n, size]);
}
rows.sort((x, y) => y[2] - x[2]);
console.log(`${kind}: ${total.toFixed(0)} B per idle stream (heap snapshot shallow sizes, ${n} streams)`);
for (const [key, count, size] of rows.slice(0, 40)) console.log(`${size.toFixed(0).padStart(6)} B ${count.toFixed(2).padStart(6)} × ${key}`);
live.forEach((s) => s.unsubscribe());
