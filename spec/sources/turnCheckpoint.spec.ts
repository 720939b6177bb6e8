/**
 * Model-turn checkpoints in virtual time (memoryJournal on the TestScheduler): a scripted provider
 * keeps each response it generates, one event a ms, whoever reads it (as a background response
 * is kept); its model reports a checkpoint after each event and resumes a stored response from
 * its first event. A run cut in the middle of its answer and resumed by a fresh agent gets the
 * same answer with one generation; the checkpoints are journaled throttled; a response gone or a
 * model that cannot resume: the turn runs again, saying so.
 */
import { expect } from 'chai';
import { asyncScheduler, Observable, Subscription } from 'rxjs';
import { HttpError, IncompleteStreamError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { AgentEvent, TurnEvent } from '../../src/core/events/events.js';
import type { JournalStore } from '../../src/core/journal/journal.js';
import { memoryJournal } from '../../src/durable/index.js';
import type { Model, ModelCheckpoint } from '../../src/core/model/model.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import type { AgentConfig } from '../../src/sources/agentConfig.js';
import { resumeAgent } from '../../src/sources/resumeAgent.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { record, type Recording } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';

const WORDS = ['The ', 'flight ', 'LH 400 ', 'leaves ', 'at ', '9:40 ', 'from ', 'gate ', 'B12.'];
const ANSWER = WORDS.join('');
const USAGE = { inputTokens: 7, outputTokens: WORDS.length };

/** A provider that outlives the run's process: its stored responses, what it generated, what it was asked to resume. */
class Provider {
  /** Each response's events, each with the ms it is produced at. */
  readonly responses = new Map<string, { at: number; event: TurnEvent }[]>();
  generations = 0;
  readonly resumed: ModelCheckpoint[] = [];
  /** Responses it no longer has (expired). */
  readonly forgotten = new Set<string>();
  /** Generations whose stream breaks after this many events (then the response goes on being generated). */
  dropAfter: number | undefined;

  /** A model over it: `stream` generates, `resume` (unless `resumable: false`) reads a stored response from its start. */
  model(resumable = true): Model {
    const model: Model = {
      id: 'scripted-responses',
      stream: (_request, context) => {
        const id = `resp_${++this.generations}`;
        const now = asyncScheduler.now();
        this.responses.set(id, [
          ...WORDS.map((text, i) => ({ at: now + i + 1, event: { type: 'text-delta', text } as TurnEvent })),
          { at: now + WORDS.length + 1, event: { type: 'finish', reason: 'stop', usage: USAGE } },
        ]);
        const drop = this.dropAfter;
        this.dropAfter = undefined;
        return this.follow(id, (sequence) => context.checkpoint?.({ model: model.id, responseId: id, sequence }), drop);
      },
    };
    if (!resumable) return model;
    return {
      ...model,
      resume: (checkpoint, _request, context) => {
        this.resumed.push(checkpoint);
        if (this.forgotten.has(checkpoint.responseId)) return new Observable<TurnEvent>((s) => s.error(new HttpError(404)));
        return this.follow(checkpoint.responseId, (sequence) => context.checkpoint?.({ model: model.id, responseId: checkpoint.responseId, sequence }));
      },
    };
  }

  /** A stored response's events from its first: those produced already at once, the others when produced; `checkpoint` after each but the last. */
  private follow(id: string, checkpoint: (sequence: number) => void, dropAfter?: number): Observable<TurnEvent> {
    return new Observable<TurnEvent>((subscriber) => {
      const events = this.responses.get(id)!;
      const now = asyncScheduler.now();
      const each = (i: number): void => {
        if (subscriber.closed) return;
        if (dropAfter !== undefined && i === dropAfter) return subscriber.error(new IncompleteStreamError('scripted-responses', 'dropped', i));
        subscriber.next(events[i]!.event);
        if (i < events.length - 1) checkpoint(i);
        else subscriber.complete();
      };
      // those produced already at once, in order; each of the others when it is produced
      const timers = new Subscription();
      events.forEach((e, i) => (e.at <= now ? each(i) : timers.add(asyncScheduler.schedule(() => each(i), e.at - now))));
      return timers;
    });
  }
}

function config(model: Model, journal: JournalStore, o: Partial<Omit<AgentConfig, 'journal'>> = {}): AgentConfig & { runId: string; journal: JournalStore } {
  return { model, messages: [{ role: 'user', content: 'When does LH 400 leave?' }], runId: 'trip-1', journal, ...o };
}

const answerOf = (r: Recording<AgentEvent>): string | undefined =>
  r.events
    .map(([, e]) => e)
    .filter((e): e is Extract<AgentEvent, { type: 'message' }> => e.type === 'message' && e.message.role === 'assistant')
    .at(-1)?.message.content;
const live = (r: Recording<AgentEvent>, type: AgentEvent['type']) => r.events.map(([, e]) => e).filter((e) => e.type === type && e.replayed !== true);
const liveText = (r: Recording<AgentEvent>): string =>
  live(r, 'text-delta')
    .map((e) => (e as Extract<AgentEvent, { type: 'text-delta' }>).text)
    .join('');

/** Runs `body` in virtual time, to the end. */
function virtual(body: () => void): void {
  testScheduler().run(({ flush }) => {
    body();
    flush();
  });
}

/** The journal's checkpoint records of run `trip-1`, read at the end. */
function checkpointsOf(journal: JournalStore): { step: number; checkpoint: ModelCheckpoint | null }[] {
  let out: { step: number; checkpoint: ModelCheckpoint | null }[] = [];
  virtual(() =>
    journal.read('trip-1').subscribe((entries) => {
      out = entries
        .filter((e) => e.data['type'] === 'checkpoint')
        .map(({ data }) => ({ step: data['step'] as number, checkpoint: data['checkpoint'] as ModelCheckpoint | null }));
    }),
  );
  return out;
}

/**
 * A run of `provider`'s model dropped at `cut` ms (its process gone), then resumed at `resumeAt` by a fresh agent
 * (`again`: its model, and what happens to the provider first); the resumed run's recording.
 */
function cutAndResume(provider: Provider, cut: number, resumeAt: number, again: () => { model: Model; options?: Partial<AgentConfig> }) {
  const journal = memoryJournal();
  let resumed!: Recording<AgentEvent>;
  virtual(() => {
    const first = runAgent(config(provider.model(), journal)).subscribe();
    asyncScheduler.schedule(() => first.unsubscribe(), cut);
    asyncScheduler.schedule(() => {
      const { model, options } = again();
      resumed = record(resumeAgent(config(model, journal, options)));
    }, resumeAt);
  });
  return resumed;
}

describe('model-turn checkpoints: a journaled turn resumed from the provider', () => {
  it('cut at every ms of the answer and resumed by a fresh agent: the same answer, one generation, each delta once, the usage once', () => {
    for (let cut = 2; cut <= WORDS.length; cut++) {
      const provider = new Provider();
      const resumed = cutAndResume(provider, cut, cut + 5, () => ({ model: provider.model() }));
      const at = `cut at ${cut} ms`;
      expect(resumed.completed(), at).to.equal(true);
      expect(answerOf(resumed), at).to.equal(ANSWER);
      expect(provider.generations, at).to.equal(1);
      expect(
        provider.resumed.map((c) => c.responseId),
        at,
      ).to.deep.equal(['resp_1']);
      expect(liveText(resumed), at).to.equal(ANSWER);
      expect(live(resumed, 'finish'), at).to.have.length(1);
      expect(live(resumed, 'turn-resume'), at).to.deep.equal([
        { type: 'turn-resume', target: 'model:scripted-responses', responseId: 'resp_1', sequence: provider.resumed[0]!.sequence, outcome: 'resumed' },
      ]);
    }
  });

  it('the budget counts the resumed turn once: one model call, its tokens once', () => {
    const provider = new Provider();
    const budget = { maxModelCalls: 1, maxTokens: USAGE.inputTokens + USAGE.outputTokens };
    const resumed = cutAndResume(provider, 4, 6, () => ({ model: provider.model(), options: { budget } }));
    expect(resumed.completed()).to.equal(true);
    expect(answerOf(resumed)).to.equal(ANSWER);
  });

  it('journaled throttled: the first checkpoint at once, then at most one per checkpointMs (the latest); none after the turn’s message', () => {
    const journal = memoryJournal();
    const every = memoryJournal();
    virtual(() => {
      runAgent(config(new Provider().model(), journal, { checkpointMs: 3 })).subscribe();
      runAgent(config(new Provider().model(), every, { checkpointMs: 0 })).subscribe();
    });
    // events at 1..10 ms, a checkpoint after each of 0..8: journaled at 1 ms (seq 0), at 4 and 7 ms the latest (3, 6); at 10 ms the
    // finish came first: the turn's message supersedes seq 8, which is never written
    expect(checkpointsOf(journal)).to.deep.equal(
      [0, 3, 6].map((sequence) => ({ step: 1, checkpoint: { model: 'scripted-responses', responseId: 'resp_1', sequence } })),
    );
    expect(checkpointsOf(every).map((c) => c.checkpoint?.sequence)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('a turn that starts over (a retry’s reset) journals null, then the new response’s first checkpoint at once: a resume picks up the new one', () => {
    const provider = new Provider();
    provider.dropAfter = 3;
    const journal = memoryJournal();
    const retried = (model: Model): Partial<AgentConfig> => ({
      modelPipeline: (_req, turn$, { hub }) =>
        turn$.pipe(
          retryWithBackoff<TurnEvent>({
            hub,
            target: `model:${model.id}`,
            initialBackoffMs: 1,
            jitter: 'none',
            afterEmit: 'restart',
            onRestart: () => ({ type: 'reset', reason: 'retry', target: `model:${model.id}` }),
          }),
        ),
    });
    let resumed!: Recording<AgentEvent>;
    virtual(() => {
      const model = provider.model();
      const first = runAgent(config(model, journal, { ...retried(model), checkpointMs: 100 })).subscribe();
      asyncScheduler.schedule(() => first.unsubscribe(), 8);
      const again = provider.model();
      asyncScheduler.schedule(() => (resumed = record(resumeAgent(config(again, journal, retried(again))))), 10);
    });
    const written = checkpointsOf(journal).map((c) => c.checkpoint && `${c.checkpoint.responseId}@${c.checkpoint.sequence}`);
    // the first process: resp_1's first, null at the reset, resp_2's first (checkpointMs: 100); the resuming one journals resp_2's progress
    expect(written.slice(0, 3)).to.deep.equal(['resp_1@0', null, 'resp_2@0']);
    expect(written.slice(3).every((w) => w?.startsWith('resp_2@') && w !== 'resp_2@0')).to.equal(true);
    expect(provider.resumed.map((c) => c.responseId)).to.deep.equal(['resp_2']);
    expect(provider.generations).to.equal(2);
    expect(answerOf(resumed)).to.equal(ANSWER);
  });

  for (const why of ['gone', 'not-resumable'] as const) {
    it(`${why === 'gone' ? 'the provider no longer has the response (404)' : 'no model of the run can resume (resume off)'}: turn-resume '${why}', the turn runs again`, () => {
      const provider = new Provider();
      const resumed = cutAndResume(provider, 5, 6, () => {
        provider.forgotten.add('resp_1');
        return { model: provider.model(why === 'gone') };
      });
      expect(answerOf(resumed)).to.equal(ANSWER);
      expect(provider.generations).to.equal(2);
      const [event] = live(resumed, 'turn-resume');
      expect(event).to.include({ type: 'turn-resume', responseId: 'resp_1', outcome: why });
      if (why === 'gone') expect(event).to.have.property('error').that.includes('404');
      expect(liveText(resumed)).to.equal(ANSWER);
      expect(live(resumed, 'reset')).to.have.length(0);
    });
  }

  it('a run without a journal hands its model no checkpoint; checkpointMs is checked', () => {
    let seen: unknown = 'not called';
    const model: Model = {
      id: 'm',
      stream: (_r, context) => {
        seen = context.checkpoint;
        return [{ type: 'finish', reason: 'stop' }];
      },
    };
    virtual(() => void runAgent({ model, messages: [{ role: 'user', content: 'hi' }] }).subscribe());
    expect(seen).to.equal(undefined);
    for (const bad of [-1, 1.5, 2 ** 31, '1000'])
      expect(() => runAgent(config(model, memoryJournal(), { checkpointMs: bad as number })))
        .to.throw(InvalidOptionError)
        .with.property('message')
        .that.includes('checkpointMs');
  });
});
