/**
 * Figure u's process on Node 24 (bench/figures/stepJournal.ts starts it): one engine — DBOS on a
 * Postgres, or Restate under a Restate server — and, inside its workflow, one model turn of
 * `deltas` text deltas (an in-memory model: no network) as one step, timed inside the workflow
 * from before the step to its answer, two ways interleaved (the order alternating per
 * repetition): the engine's own step around the turn collected by hand (`run('turn', () =>
 * lastValueFrom(turn$.pipe(toArray())))`), and `runAgent` on `stepJournal` (the turn through the
 * loop, its record made and checked). Prints one JSON line: the samples (ms) of each way.
 *
 * Bundled into spec/support/majors/node_modules/.cache, where the engines' SDKs resolve.
 */
import { performance } from 'node:perf_hooks';
import { from, lastValueFrom, toArray } from 'rxjs';
import { streamModel, type Model } from '../../src/core/model/model.js';
import { stepJournal, type StepRunner } from '../../src/durable/index.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { finish, textDeltas } from '../../src/testing/index.js';
import { DBOS_SDK, RESTATE_SDK, type Dbos, type RestateSdk } from '../../spec/support/engineSdks.js';

export interface StepBenchArgs {
  readonly engine: 'dbos' | 'restate';
  readonly reps: number;
  readonly deltas: number;
  readonly dbos?: { readonly url: string };
  readonly restate?: { readonly port: number; readonly admin: string; readonly ingress: string };
}

export type Way = 'engine step' | 'stepJournal';

const args = JSON.parse(process.argv[2]!) as StepBenchArgs;
const text = Array.from({ length: args.deltas }, (_, i) => (i === 0 ? 'w0' : ` w${i}`)).join('');
const model: Model = {
  id: 'bench',
  stream: () => from([...textDeltas(text).slice(0, args.deltas), finish('stop', { inputTokens: 10, outputTokens: args.deltas })]),
};
const messages = [{ role: 'user' as const, content: 'Say the words.' }];
let runs = 0;

/** One way's step inside a workflow, timed (ms). */
async function timed(way: Way, run: StepRunner): Promise<number> {
  const t0 = performance.now();
  if (way === 'engine step') await run('turn', () => lastValueFrom(streamModel(model, { messages, tools: [] }).pipe(toArray())));
  else await lastValueFrom(runAgent({ model, messages, runId: `bench-${process.pid}-${++runs}`, journal: stepJournal(run) }));
  return performance.now() - t0;
}

const samples: Record<Way, number[]> = { 'engine step': [], stepJournal: [] };
const order = (rep: number): Way[] => (rep % 2 === 0 ? ['engine step', 'stepJournal'] : ['stepJournal', 'engine step']);

if (args.engine === 'dbos') {
  const { DBOS } = (await import(DBOS_SDK)) as { DBOS: Dbos };
  DBOS.setConfig({ name: 'rxheal-bench', systemDatabaseUrl: args.dbos!.url, runAdminServer: false, logLevel: 'error' });
  const workflow = DBOS.registerWorkflow((way: Way) => timed(way, (name, fn) => DBOS.runStep(fn, { name })), { name: 'bench-turn' });
  await DBOS.launch();
  for (let rep = 0; rep < args.reps; rep++) for (const way of order(rep)) samples[way].push(await workflow(way));
  await DBOS.shutdown();
} else {
  const o = args.restate!;
  const sdk = (await import(RESTATE_SDK)) as RestateSdk;
  const service = sdk.service({ name: 'benchTurn', handlers: { run: (ctx, way: Way) => timed(way, (name, fn) => ctx.run(name, fn)) } });
  await sdk.serve({ services: [service], port: o.port });
  const registered = await fetch(`${o.admin}/deployments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ uri: `http://127.0.0.1:${o.port}`, force: true }),
  });
  if (!registered.ok) throw new Error(`registering: ${registered.status} ${await registered.text()}`);
  for (let rep = 0; rep < args.reps; rep++)
    for (const way of order(rep)) {
      const res = await fetch(`${o.ingress}/benchTurn/run`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(way) });
      if (!res.ok) throw new Error(`invoking: ${res.status} ${await res.text()}`);
      samples[way].push((await res.json()) as number);
    }
}
process.stdout.write(`${JSON.stringify(samples)}\n`);
process.exit(0);
