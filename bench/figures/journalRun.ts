/**
 * (q) What the run journal costs a run: `runAgent` on figure h's pipeline (the healing pipeline,
 * its deadline around the turn) with the file journal (fsync'd, under the OS's temp folder)
 * against the same run without one, a 10⁴-delta answer, interleaved (the order alternating per
 * repetition), paired ratios per repetition. Per delta while the answer streams (first delta to
 * `finish`: deltas are never journaled, so this is the verdict's ratio, ≤ 1.05×) and end to end
 * (subscription to completion, divided by the deltas: the claim, the start record, the turn's
 * record and the end, each fsync'd once per step, spread over the answer). Then resuming a
 * 100-step run from the file journal end to end — `resumeAgent` from its subscription to its
 * first live event: the claim, the read and check of the 100 steps' records, the plan, the replay
 * of their 500 events (verdict: ≤ 20 ms median), beside figure p's claim alone. Alone:
 * `npx tsx bench/figures/journalRun.ts` (`BENCH_QUICK=1`: fewer repetitions).
 */
import { performance } from 'node:perf_hooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as t from 'io-ts';
import { lastValueFrom, of, takeWhile, type Observable } from 'rxjs';
import { fileJournal } from '../../src/durable/index.js';
import { defineTool } from '../../src/sources/tool.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { resumeAgent } from '../../src/sources/resumeAgent.js';
import type { AgentConfig } from '../../src/sources/agentConfig.js';
import type { AgentEvent, TurnEvent } from '../../src/core/events/events.js';
import { printFigure, stats, type Row, type Verdict } from '../lib/harness.js';
import { aiSdk } from '../lib/rxheal.js';
import { agentRun, healing, journaledAgentRun } from './streaming.js';

const { answerParts, mockModel, rxhealModel } = aiSdk;

export const FIGURE = 'q. journal cost per run';

/** One run: ns per delta while streaming (first delta to `finish`) and end to end (subscribe to complete). */
function timed(o: Observable<unknown>, deltas: number): Promise<{ streaming: number; whole: number }> {
  const start = process.hrtime.bigint();
  let first: bigint | undefined;
  let finish: bigint | undefined;
  return new Promise((done, fail) =>
    o.subscribe({
      next: (e) => {
        const type = (e as TurnEvent).type;
        if (type === 'text-delta' && first === undefined) first = process.hrtime.bigint();
        if (type === 'finish' && finish === undefined) finish = process.hrtime.bigint();
      },
      error: fail,
      complete: () => {
        const end = process.hrtime.bigint();
        done({ streaming: Number(finish! - first!) / (deltas - 1), whole: Number(end - start) / deltas });
      },
    }),
  );
}

/** A 100-step run in `journal`, not finished: each step a turn calling `lookup` and its result (left at once after the 100th). */
async function hundredSteps(config: AgentConfig): Promise<void> {
  let results = 0;
  // a message event of a journaled run means its record is durable
  const hundred = (e: AgentEvent): boolean => !(e.type === 'message' && e.message.role === 'tool' && ++results === 100);
  await lastValueFrom(runAgent(config).pipe(takeWhile(hundred, true)));
}

/** `resumeAgent` from its subscription to its first live event (ms), left then (synchronously: the live step writes nothing). */
async function resumed(config: AgentConfig & { runId: string; journal: NonNullable<AgentConfig['journal']> }): Promise<{ ms: number; replayed: number }> {
  const t0 = performance.now();
  let replayed = 0;
  await lastValueFrom(resumeAgent(config).pipe(takeWhile((e) => e.replayed === true && ++replayed > 0, true)));
  return { ms: performance.now() - t0, replayed };
}

export async function journalRun(options: { reps: number; resumes: number }): Promise<{ rows: Row[]; verdicts: Verdict[] }> {
  const rows: Row[] = [];
  const verdicts: Verdict[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'rxheal-bench-journal-run-'));
  try {
    const journal = fileJournal({ dir });
    const deltas = 10_000;
    const parts = answerParts(deltas);
    const model = (): ReturnType<typeof healing>['model'] =>
      healing(rxhealModel(mockModel(parts), 'primary'), rxhealModel(mockModel('never'), 'secondary')).model;
    let n = 0;
    const cases: Record<string, () => Observable<unknown>> = {
      'runAgent, no journal': () => agentRun(model()),
      'runAgent, file journal': () => journaledAgentRun(model(), journal, `bench-q-${process.pid}-${n++}`),
    };
    const names = Object.keys(cases);
    for (let w = 0; w < 5; w++) for (const name of names) await timed(cases[name]!(), deltas);
    const streaming = new Map<string, number[]>(names.map((x) => [x, []]));
    const whole = new Map<string, number[]>(names.map((x) => [x, []]));
    for (let r = 0; r < options.reps; r++)
      for (let j = 0; j < names.length; j++) {
        const name = names[(j + r) % names.length]!;
        const m = await timed(cases[name]!(), deltas);
        streaming.get(name)!.push(m.streaming);
        whole.get(name)!.push(m.whole);
      }
    const paired = (samples: Map<string, number[]>) => {
      const a = samples.get(names[1]!)!;
      const b = samples.get(names[0]!)!;
      return stats(a.map((x, i) => x / b[i]!));
    };
    const ratioStreaming = paired(streaming);
    const ratioWhole = paired(whole);
    const perStepMs = (stats(whole.get(names[1]!)!).median - stats(whole.get(names[0]!)!).median) * deltas * 1e-6;
    for (const [label, samples, ratio] of [
      ['per delta while streaming', streaming, ratioStreaming],
      ['per delta end to end', whole, ratioWhole],
    ] as const)
      for (const name of names) {
        const s = stats(samples.get(name)!);
        rows.push({
          figure: FIGURE,
          name: `${name}: ns ${label}`,
          unit: 'ns',
          value: s.median,
          min: s.min,
          max: s.max,
          ...(name === names[1] ? { ratio: { to: names[0]!, median: ratio.median, min: ratio.min, max: ratio.max } } : {}),
          note: `${deltas}-delta answer, figure h's pipeline, ${options.reps} repetitions interleaved`,
        });
      }
    verdicts.push({
      figure: 'q',
      target: 'runAgent with the file journal ≤ 1.05× runAgent without one per streamed delta (figure h’s pipeline; one fsync per step, not per delta)',
      measured: `${ratioStreaming.median.toFixed(3)}× (${ratioStreaming.min.toFixed(2)}–${ratioStreaming.max.toFixed(2)}) while streaming; end to end ${ratioWhole.median.toFixed(2)}× (${ratioWhole.min.toFixed(2)}–${ratioWhole.max.toFixed(2)}), the journal's claim and three fsync'd records ≈ ${perStepMs.toFixed(2)} ms per run spread over ${deltas} deltas`,
      met: ratioStreaming.median <= 1.05,
    });

    // resuming a 100-step run
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks a step up',
      args: t.type({ step: t.number }),
      idempotent: true,
      execute: ({ step }) => `step ${step} ok`,
    });
    let call = 0;
    const stepper = {
      id: 'stepper',
      stream: (): Observable<TurnEvent> =>
        of<TurnEvent[]>({ type: 'tool-call', id: `c${++call}`, name: 'lookup', args: { step: call } }, { type: 'finish', reason: 'tool-calls' }),
    };
    const runId = `bench-q-resume-${process.pid}`;
    const config = { model: stepper, tools: [lookup], messages: [{ role: 'user' as const, content: 'go' }], maxSteps: 1_000, runId, journal, holder: 'bench' };
    await hundredSteps(config);
    for (let w = 0; w < 3; w++) await resumed(config);
    const ms: number[] = [];
    let replayed = 0;
    for (let i = 0; i < options.resumes; i++) {
      const m = await resumed(config);
      ms.push(m.ms);
      replayed = m.replayed;
    }
    const s = stats(ms);
    rows.push({
      figure: FIGURE,
      name: 'resumeAgent of a 100-step run, file journal: subscribe to first live event',
      unit: 'ms',
      value: s.median,
      min: s.min,
      max: s.max,
      note: `${ms.length} resumes: claim (lease, claim record fsync'd), read and check of the records, plan, ${replayed} events replayed`,
    });
    verdicts.push({
      figure: 'q',
      target: 'resuming a 100-step run from the file journal, resumeAgent from subscribe to the first live event ≤ 20 ms median',
      measured: `${s.median.toFixed(2)} ms (${s.min.toFixed(2)}–${s.max.toFixed(2)}), ${replayed} events replayed`,
      met: s.median <= 20,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { rows, verdicts };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const quick = process.env['BENCH_QUICK'] === '1';
  const { rows, verdicts } = await journalRun(quick ? { reps: 5, resumes: 10 } : { reps: 21, resumes: 40 });
  printFigure(rows, verdicts, 2);
  process.exit(0);
}
