/**
 * Model-turn checkpoints over real HTTP on 127.0.0.1, with a file journal: a run of
 * openAIResponsesModel({ resume }) against rxheal/server killed mid-answer (its subscription
 * dropped) is resumed by a new agent from the journal on disk: the same text, one POST (one
 * generation) and one resuming GET; an expired response is generated again, saying so.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { fileJournal } from '../../src/durable/fileJournal.js';
import type { AgentEvent } from '../../src/core/events/events.js';
import { openAIResponsesModel } from '../../src/providers/responses.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import { resumeAgent } from '../../src/sources/resumeAgent.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { RIVERS, RIVERS_ANSWER } from '../support/interop.js';

describe('model-turn checkpoints over HTTP: a journaled Responses turn resumed from rxheal/server by a new agent', function () {
  this.timeout(20_000);
  let server: LocalProvider;
  let dir: string;
  before(async () => {
    server = await startLocalProvider({ name: 'checkpoints', tokenDelayMs: 20 });
  });
  after(() => server.close());
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'rxheal-checkpoint-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A fresh agent's model (a new process would build one), its requests as the client sent them. */
  const agent = (sent: string[]) => {
    const model = openAIResponsesModel({
      baseURL: server.openAIBaseURL,
      model: 'local',
      resume: true,
      fetch: (input, init) => {
        sent.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}${new URL(String(input)).search}`);
        return fetch(input, init);
      },
    });
    return { model, messages: [{ role: 'user' as const, content: RIVERS }], runId: 'rivers-1', journal: fileJournal({ dir }), checkpointMs: 50, leaseMs: 300 };
  };
  const answerOf = (events: readonly AgentEvent[]) =>
    events.filter((e): e is Extract<AgentEvent, { type: 'message' }> => e.type === 'message' && e.message.role === 'assistant').at(-1)?.message.content;

  /** Runs the first agent until `words` deltas came, then drops it (the process is gone); resolves once its lease ran out (300 ms). */
  async function killedMidAnswer(sent: string[], words: number): Promise<string> {
    let text = '';
    await new Promise<void>((resolve, reject) => {
      let deltas = 0;
      const first = runAgent(agent(sent)).subscribe({
        next: (e) => {
          if (e.type !== 'text-delta') return;
          text += e.text;
          if (++deltas === words) {
            first.unsubscribe();
            setTimeout(resolve, 350);
          }
        },
        error: reject,
        complete: () => reject(new Error('the answer ended before the kill')),
      });
    });
    return text;
  }

  it('killed mid-answer, resumed from the file journal: the same text, one POST, one resuming GET, no second generation, usage once', async () => {
    const sent: string[] = [];
    const posts = server.requests.length;
    const shown = await killedMidAnswer(sent, 6);
    expect(RIVERS_ANSWER.startsWith(shown)).to.equal(true);
    const resumedSent: string[] = [];
    const events = await lastValueFrom(resumeAgent(agent(resumedSent)).pipe(toArray()));
    expect(answerOf(events)).to.equal(RIVERS_ANSWER);
    const live = events.filter((e) => e.replayed !== true);
    expect(
      live
        .filter((e) => e.type === 'text-delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).to.equal(RIVERS_ANSWER);
    expect(live.filter((e) => e.type === 'finish')).to.have.length(1);
    expect(live.find((e) => e.type === 'turn-resume')).to.include({ outcome: 'resumed' });
    expect(server.requests.length - posts).to.equal(1); // one model call on the server: one generation
    expect(sent).to.deep.equal(['POST /v1/responses']); // the first agent: not cancelled when dropped
    const id = (live.find((e) => e.type === 'turn-resume') as { responseId: string }).responseId;
    expect(resumedSent).to.deep.equal([`GET /v1/responses/${id}?stream=true`]);
  });

  it('the response expired on the server (404): turn-resume gone, the turn is generated again, the same text', async () => {
    const sent: string[] = [];
    await killedMidAnswer(sent, 3);
    const posts = server.requests.length;
    // what an expired response looks like: the server no longer has it
    const resumedSent: string[] = [];
    const config = agent(resumedSent);
    const events = await lastValueFrom(
      resumeAgent({
        ...config,
        model: {
          ...config.model,
          resume: (checkpoint, request, context) => config.model.resume!({ ...checkpoint, responseId: `${checkpoint.responseId}-expired` }, request, context),
        },
      }).pipe(toArray()),
    );
    expect(answerOf(events)).to.equal(RIVERS_ANSWER);
    expect(events.find((e) => e.type === 'turn-resume')).to.include({ outcome: 'gone' });
    expect(server.requests.length - posts).to.equal(1);
    expect(resumedSent.map((s) => s.split(' ')[0])).to.deep.equal(['GET', 'POST']);
  });
});
