/**
 * Tool checkpoints in durable runs (`ToolContext.checkpoint` / `resumed`), in virtual time over a
 * memory journal: a long tool journals its state before it goes on; a run cut while it works and
 * resumed hands that state back to the same call, which carries on — run again whatever its
 * idempotency, under an effect ledger too — instead of starting its work over (a call cut before
 * any checkpoint behaves as before: spec/sources/durable.spec.ts); a retry in the same
 * process sees the newest checkpoint; outside a durable run there is none.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { asyncScheduler, concat, defer, lastValueFrom, map, Observable, of, timer } from 'rxjs';
import type { AgentEvent } from '../../src/core/events/events.js';
import type { JournalData } from '../../src/core/journal/journal.js';
import { effectLedger, memoryJournal } from '../../src/durable/index.js';
import { retryWithBackoff } from '../../src/index.js';
import { resumeAgent } from '../../src/sources/resumeAgent.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { callTool, defineTool, type ToolContext } from '../../src/sources/tool.js';
import { finish, record, scriptedModel, textDeltas, toolCall, type Recording, type ScriptedTurn } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';

function virtual(body: () => void): void {
  testScheduler().run(({ flush }) => {
    body();
    flush();
  });
}

const turn: ScriptedTurn = (request) => {
  const last = request.messages[request.messages.length - 1];
  return last?.role === 'tool' ? [...textDeltas(`Done: ${last.content}`), finish()] : [toolCall('c1', 'render', { pages: 3 }), finish('tool-calls')];
};

/** A long job: started once (a job id), checkpointed, then 10 ms of work; resumed, it waits for the job it started. */
class Jobs {
  started = 0;
  seen: (JournalData | undefined)[] = [];
  tool(idempotent = false, fail = 0) {
    return defineTool({
      name: 'render',
      description: 'Renders pages (a long job)',
      args: t.type({ pages: t.number }),
      idempotent,
      execute: ({ pages }, context: ToolContext) => {
        this.seen.push(context.resumed);
        const job = context.resumed?.['job'] as string | undefined;
        const start$: Observable<string> = job !== undefined ? of(job) : defer(() => of(`job-${++this.started}`));
        return start$.pipe(
          (job$) =>
            new Observable<string>((subscriber) =>
              job$.subscribe((id) =>
                concat(context.checkpoint && job === undefined ? context.checkpoint({ job: id }) : of(undefined), timer(10, asyncScheduler))
                  .pipe(map(() => id))
                  .subscribe({
                    complete: () => {
                      if (fail-- > 0) return subscriber.error(Object.assign(new Error('render node lost'), { status: 503 }));
                      subscriber.next(`${pages} pages by ${id}`);
                      subscriber.complete();
                    },
                  }),
              ),
            ),
        );
      },
    });
  }
}

const config = (jobs: Jobs, journal = memoryJournal(), extra: Record<string, unknown> = {}, idempotent = false) => ({
  model: scriptedModel('m', [turn, turn, turn]),
  tools: [jobs.tool(idempotent)],
  messages: [{ role: 'user' as const, content: 'Render.' }],
  runId: 'r1',
  journal,
  ...extra,
});

const answer = (r: Recording<AgentEvent>): string | undefined =>
  r.events
    .map(([, e]) => e)
    .filter((e): e is Extract<AgentEvent, { type: 'message' }> => e.type === 'message' && e.message.role === 'assistant')
    .pop()?.message.content;

describe('tool checkpoints in durable runs (ToolContext.checkpoint and resumed)', () => {
  it('a non-idempotent tool cut after its checkpoint is resumed from it: its job not started again, no unknown outcome', () => {
    const jobs = new Jobs();
    let resumed!: Recording<AgentEvent>;
    virtual(() => {
      const journal = memoryJournal();
      const first = runAgent(config(jobs, journal)).subscribe();
      asyncScheduler.schedule(() => first.unsubscribe(), 5);
      asyncScheduler.schedule(() => (resumed = record(resumeAgent(config(jobs, journal)))), 20);
    });
    expect(jobs.started).to.equal(1);
    expect(jobs.seen).to.deep.equal([undefined, { job: 'job-1' }]);
    expect(resumed.events.some(([, e]) => e.type === 'tool-outcome-unknown')).to.equal(false);
    expect(answer(resumed)).to.equal('Done: 3 pages by job-1');
  });

  it('the same under an effect ledger: the started key runs again (the tool carries on), once', () => {
    const jobs = new Jobs();
    let resumed!: Recording<AgentEvent>;
    virtual(() => {
      const journal = memoryJournal();
      const effects = effectLedger(memoryJournal(), { scheduler: asyncScheduler });
      const first = runAgent(config(jobs, journal, { effects })).subscribe();
      asyncScheduler.schedule(() => first.unsubscribe(), 5);
      asyncScheduler.schedule(() => (resumed = record(resumeAgent(config(jobs, journal, { effects })))), 20);
    });
    expect(jobs.started).to.equal(1);
    expect(answer(resumed)).to.equal('Done: 3 pages by job-1');
  });

  it('a retry in the same process sees the newest checkpoint: the job it started, not a new one', () => {
    const jobs = new Jobs();
    let run!: Recording<AgentEvent>;
    virtual(() => {
      const tool = jobs.tool(true, 1);
      run = record(
        runAgent({
          ...config(jobs),
          tools: [tool],
          toolPipeline: (_call, call$) => call$.pipe(retryWithBackoff({ maxRetries: 2, initialBackoffMs: 1, jitter: 'none', scheduler: asyncScheduler })),
        }),
      );
    });
    expect(jobs.started).to.equal(1);
    expect(jobs.seen).to.deep.equal([undefined, { job: 'job-1' }]);
    expect(answer(run)).to.equal('Done: 3 pages by job-1');
  });

  it('outside a durable run there is neither checkpoint nor resumed', async () => {
    let context!: ToolContext;
    const tool = defineTool({ name: 'probe', description: '', args: t.unknown, execute: (_a, c) => ((context = c), 'ok') });
    expect(await lastValueFrom(callTool(tool, { id: 'c1', name: 'probe', args: {} }))).to.equal('ok');
    expect(context.checkpoint).to.equal(undefined);
    expect(context.resumed).to.equal(undefined);
  });
});
