/**
 * (u) What `stepJournal` adds to an engine's own step, next to the journal's rows (p, q): one model
 * turn of 100 text deltas (an in-memory model: no network) as one step, the engine's own step
 * around the turn collected by hand (`run('turn', () => lastValueFrom(turn$.pipe(toArray())))`,
 * what a user writes without rxheal's journal) against `runAgent` on `stepJournal` (the turn
 * through the loop; its record — deltas joined, what it spent — made, and on replay checked with
 * the event codecs and emitted `replayed`), interleaved, paired ratios per repetition:
 *
 * - in this process, on spec/support/stepEngine.ts's engine in memory (the floor: the step itself
 *   costs a JSON copy), each way live and replayed;
 * - on DBOS (5.3, on a PostgreSQL of its own) and on Restate (1.17, under the Restate server 1.7),
 *   live, timed inside the workflow from before the step to its answer, in a process on Node 24
 *   (bench/figures/stepJournalChild.ts: the engines' SDKs are spec/support/majors's, Restate's
 *   needs Node ≥ 22) — skipped, with a row saying why, without `.ci/node`'s Node 24 (`npm ci
 *   --prefix .ci/node`), spec/support/majors installed (a Node 24 spec run installs it), or PostgreSQL.
 *
 * No target: the figure reports the overhead beside the journal's rows (p, q). Alone:
 * `npx tsx bench/figures/stepJournal.ts` (`BENCH_QUICK=1`: fewer repetitions).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { from, lastValueFrom, toArray } from 'rxjs';
import { streamModel, type Model } from '../../src/core/model/model.js';
import { stepJournal, type StepRunner } from '../../src/durable/index.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { finish, textDeltas } from '../../src/testing/index.js';
import { majorsBundle } from '../../spec/support/engineKills.js';
import { majorsInstalled } from '../../spec/support/nextMajors.js';
import { postgresProgram, startPostgres } from '../../spec/support/postgresServer.js';
import { freePort } from '../../spec/support/redisServer.js';
import { startRestate } from '../../spec/support/restateServer.js';
import { StepEngine } from '../../spec/support/stepEngine.js';
import { findProgram } from '../../spec/support/systemPackage.js';
import { interleave, printFigure, rowsOf, type Row, type Samples, type Verdict } from '../lib/harness.js';
import type { StepBenchArgs } from './stepJournalChild.js';

export const FIGURE = 'u. step journal per step';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NODE_24 = join(ROOT, '.ci', 'node', 'node_modules', 'node-24', 'bin', 'node');
const CHILD = fileURLToPath(new URL('./stepJournalChild.ts', import.meta.url));
const DELTAS = 100;

const text = Array.from({ length: DELTAS }, (_, i) => (i === 0 ? 'w0' : ` w${i}`)).join('');
const model: Model = { id: 'bench', stream: () => from([...textDeltas(text), finish('stop', { inputTokens: 10, outputTokens: DELTAS })]) };
const messages = [{ role: 'user' as const, content: 'Say the words.' }];
let runs = 0;

const bare = (run: StepRunner) => run('turn', () => lastValueFrom(streamModel(model, { messages, tools: [] }).pipe(toArray())));
const journaled = (run: StepRunner, runId: string) => lastValueFrom(runAgent({ model, messages, runId, journal: stepJournal(run) }));

/** The in-process rows: `n` steps a sample, live (a fresh engine each) and replayed (an engine that journaled it). */
async function inProcess(reps: number): Promise<Row[]> {
  const n = 200;
  const done = { bare: new StepEngine(), journaled: new StepEngine() };
  await bare(done.bare.life().run);
  await journaled(done.journaled.life().run, 'bench-replayed');
  const live: Samples = await interleave(
    [
      { name: 'engine step', run: async (k) => void (await Promise.all(Array.from({ length: k }, () => bare(new StepEngine().life().run)))) },
      {
        name: 'stepJournal',
        run: async (k) => void (await Promise.all(Array.from({ length: k }, () => journaled(new StepEngine().life().run, `bench-${++runs}`)))),
      },
    ],
    { n, reps, warmup: 2 },
  );
  const replayed: Samples = await interleave(
    [
      { name: 'engine step', run: async (k) => void (await Promise.all(Array.from({ length: k }, () => bare(done.bare.life().run)))) },
      {
        name: 'stepJournal',
        run: async (k) => void (await Promise.all(Array.from({ length: k }, () => journaled(done.journaled.life().run, 'bench-replayed')))),
      },
    ],
    { n, reps, warmup: 2 },
  );
  const us = (s: Samples): Samples => new Map([...s].map(([k, xs]) => [k, xs.map((x) => x / 1000)]));
  const name =
    (way: string) =>
    (row: Row): Row => ({ ...row, name: `in memory, ${way}: ${row.name}` });
  return [
    ...rowsOf(FIGURE, 'µs/step', us(live), 'engine step', {
      'engine step': 'the in-memory engine: a JSON copy journaled',
      stepJournal: 'runAgent on stepJournal',
    }).map(name('live')),
    ...rowsOf(FIGURE, 'µs/step', us(replayed), 'engine step', {
      'engine step': 'answered from the journal: a JSON copy',
      stepJournal: 'its record checked and replayed',
    }).map(name('replayed')),
  ];
}

/** One engine's rows, from its Node 24 process; or a row saying why not. */
async function onEngine(engine: 'dbos' | 'restate', reps: number): Promise<Row[]> {
  const skipped = (why: string): Row[] => [{ figure: FIGURE, name: `${engine === 'dbos' ? 'DBOS' : 'Restate'}: skipped`, unit: '', value: 0, note: why }];
  if (!existsSync(NODE_24)) return skipped('no Node 24 in .ci/node (npm ci --prefix .ci/node)');
  const majors = majorsInstalled();
  if (majors === undefined) return skipped('spec/support/majors is not installed from its lockfile (any Node 24 spec run installs it: .ci/run does)');
  const project = { dir: majors };
  const worker = await majorsBundle(CHILD, project.dir);
  const stops: (() => Promise<void>)[] = [];
  try {
    let args: StepBenchArgs;
    if (engine === 'dbos') {
      const postgres = findProgram(postgresProgram());
      if (postgres === undefined) return skipped('PostgreSQL not installed (apt-get install postgresql)');
      const server = await startPostgres(postgres, { fsync: true });
      stops.push(() => server.stop());
      args = { engine, reps, deltas: DELTAS, dbos: { url: server.connectionString.replace(/\/postgres$/, '/rxheal_bench') } };
    } else {
      const server = await startRestate(join(project.dir, 'node_modules', '@restatedev', 'restate-server-linux-x64', 'bin', 'restate-server'));
      stops.push(() => server.stop());
      args = { engine, reps, deltas: DELTAS, restate: { port: await freePort(), admin: server.admin, ingress: server.ingress } };
    }
    const out = await new Promise<string>((done, fail) =>
      execFile(NODE_24, [worker, JSON.stringify(args)], { cwd: ROOT, timeout: 300_000, maxBuffer: 1 << 24 }, (error, stdout, stderr) =>
        error ? fail(new Error(`${error.message}: ${stderr.slice(-2000)}`)) : done(stdout),
      ),
    );
    const line = out.split('\n').find((l) => l.startsWith('{"engine step"'));
    if (line === undefined) throw new Error(`figure u: no samples from the ${engine} process: ${out.slice(-2000)}`);
    const samples: Samples = new Map(Object.entries(JSON.parse(line) as Record<string, number[]>));
    const label = engine === 'dbos' ? 'DBOS 5 on PostgreSQL (fsync on)' : 'Restate under its server';
    const notes = {
      'engine step': `${label}: the engine's step around the turn, by hand`,
      stepJournal: `${label}: runAgent on ${engine === 'dbos' ? 'dbosJournal' : 'restateJournal'}'s steps`,
    };
    return rowsOf(FIGURE, 'ms/step', samples, 'engine step', notes).map((row) => ({
      ...row,
      name: `${engine === 'dbos' ? 'DBOS' : 'Restate'}, live: ${row.name}`,
    }));
  } finally {
    for (const stop of stops) await stop();
  }
}

/** Figure u's rows: in memory, then DBOS, then Restate. */
export async function stepJournalFigure(options: { reps: number; engineReps: number }): Promise<{ rows: Row[]; verdicts: Verdict[] }> {
  const rows = [...(await inProcess(options.reps)), ...(await onEngine('dbos', options.engineReps)), ...(await onEngine('restate', options.engineReps))];
  return { rows, verdicts: [] };
}

if (resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) {
  const quick = process.env['BENCH_QUICK'] === '1';
  const { rows, verdicts } = await stepJournalFigure(quick ? { reps: 5, engineReps: 20 } : { reps: 11, engineReps: 60 });
  console.log(`\n${FIGURE}`);
  printFigure(rows, verdicts, 3);
}
