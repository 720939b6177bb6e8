/**
 * Resume over real HTTP on 127.0.0.1: rxheal/server keeps background responses
 * (`background: true`, stored), serves `GET /v1/responses/{id}` (the object, or its stream again
 * after `starting_after`), cancels them and expires them; openAIResponsesModel({ resume }) picks a
 * stream cut mid-answer (the `reset` fault) or stalled (the `stall` fault, `idleMs`) up where it
 * stopped: the final text equals the uncut one, the output tokens are one answer's, a bounded
 * number of resumes, then the error goes on to retries.
 */
import { expect } from 'chai';
import { lastValueFrom, Subject, toArray } from 'rxjs';
import { IncompleteStreamError } from '../../src/core/errors/errors.js';
import type { HealEvent, TurnEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { streamModel } from '../../src/core/model/model.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { openAIResponsesModel } from '../../src/providers/responses.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import * as t from 'io-ts';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { ask, RIVERS, RIVERS_ANSWER, textOf } from '../support/interop.js';
import { OPENAI_KITS } from '../support/kits.js';

describe('resume: a cut Responses stream picked up where it stopped (rxheal/server + openAIResponsesModel over HTTP)', function () {
  this.timeout(20_000);
  let server: LocalProvider;
  before(async () => {
    server = await startLocalProvider({ name: 'resume', tokenDelayMs: 2 });
  });
  after(() => server.close());
  afterEach(() => server.faults.clear());

  const post = (body: unknown) =>
    fetch(`${server.openAIBaseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const events = (text: string) =>
    text
      .split('\n\n')
      .filter((f) => f.trim() !== '')
      .map(
        (f) =>
          JSON.parse(
            f
              .split('\n')
              .find((l) => l.startsWith('data: '))!
              .slice(6),
          ) as Record<string, unknown>,
      );
  const resumable = (resume: Parameters<typeof openAIResponsesModel>[0]['resume'] = true) =>
    openAIResponsesModel({ baseURL: server.openAIBaseURL, model: 'local', resume });
  /** One call's events, and the hub's. */
  async function call(model = resumable()): Promise<{ events: TurnEvent[]; heal: HealEvent[] }> {
    const hub = new HealHub();
    const heal: HealEvent[] = [];
    hub.events$.subscribe((e) => heal.push(e));
    const out = await lastValueFrom(streamModel(model, ask(RIVERS), { hub }).pipe(toArray()));
    return { events: out, heal };
  }
  const usage = (events: readonly TurnEvent[]) => events.flatMap((e) => (e.type === 'finish' ? [e.usage] : []));

  describe('the server: background responses', () => {
    it('POST background: true streams as usual; GET /v1/responses/{id}?stream=true&starting_after=N serves the events after N again; plain GET the response object', async () => {
      const all = events(await (await post({ model: 'local', stream: true, background: true, input: RIVERS })).text());
      const id = (all[0]!['response'] as { id: string }).id;
      expect(all.at(-1)).to.include({ type: 'response.completed' });
      expect((all[0]!['response'] as Record<string, unknown>)['background']).to.equal(true);
      const again = events(await (await fetch(`${server.openAIBaseURL}/responses/${id}?stream=true&starting_after=6`)).text());
      expect(again).to.deep.equal(all.slice(7));
      const object = (await (await fetch(`${server.openAIBaseURL}/responses/${id}`)).json()) as Record<string, unknown>;
      expect(object).to.include({ id, status: 'completed', background: true });
      expect(object['usage']).to.deep.equal((all.at(-1)!['response'] as Record<string, unknown>)['usage']);
    });

    it('a background response goes on being generated when its connection is cut, and is read whole afterwards; background with store: false is a 400', async () => {
      server.faults.add({ kind: 'reset', afterChunks: 3, times: 1 });
      const cut = await post({ model: 'local', stream: true, background: true, input: RIVERS })
        .then((r) => r.text())
        .then(
          () => 'ended',
          () => 'cut',
        );
      expect(cut).to.equal('cut');
      const id = `resp_${server.requests.at(-1)!.id}`;
      for (;;) {
        const object = (await (await fetch(`${server.openAIBaseURL}/responses/${id}`)).json()) as {
          status: string;
          output: { content?: { text: string }[] }[];
        };
        if (object.status === 'completed') {
          expect(object.output[0]!.content![0]!.text).to.equal(RIVERS_ANSWER);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const refused = await post({ model: 'local', stream: true, background: true, store: false, input: RIVERS });
      expect(refused.status).to.equal(400);
      expect(((await refused.json()) as { error: { message: string; type: string } }).error).to.include({ type: 'invalid_request_error' });
    });

    it('unknown id → 404 in the API’s error shape; POST …/cancel stops a running response (status cancelled), refuses a completed one; Host and Origin are checked as on every route', async () => {
      const unknown = await fetch(`${server.openAIBaseURL}/responses/resp_nope?stream=true`);
      expect(unknown.status).to.equal(404);
      expect(await unknown.json()).to.deep.equal({
        error: { message: "Response with id 'resp_nope' not found.", type: 'invalid_request_error', param: null, code: null },
      });
      const slow = await startLocalProvider({ name: 'slow', tokenDelayMs: 200 });
      try {
        const started = (await (
          await fetch(`${slow.openAIBaseURL}/responses`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'local', background: true, input: RIVERS }),
          })
        ).json()) as { id: string; status: string };
        expect(started.status).to.equal('in_progress');
        const cancelled = (await (await fetch(`${slow.openAIBaseURL}/responses/${started.id}/cancel`, { method: 'POST' })).json()) as { status: string };
        expect(cancelled.status).to.equal('cancelled');
        // its stream ends after what was produced, without a terminal event
        const rest = events(await (await fetch(`${slow.openAIBaseURL}/responses/${started.id}?stream=true`)).text());
        expect(rest.map((e) => e['type'])).to.not.include('response.completed');
      } finally {
        await slow.close();
      }
      const done = events(await (await post({ model: 'local', stream: true, background: true, input: RIVERS })).text());
      const id = (done[0]!['response'] as { id: string }).id;
      expect((await fetch(`${server.openAIBaseURL}/responses/${id}/cancel`, { method: 'POST' })).status).to.equal(400);
      expect((await fetch(`${server.openAIBaseURL}/responses/${id}`, { headers: { origin: 'https://evil.example' } })).status).to.equal(403);
      const { request } = await import('node:http');
      const status = await new Promise<number>((resolve, reject) => {
        const r = request({ host: '127.0.0.1', port: server.port, path: `/v1/responses/${id}`, headers: { host: 'evil.example:80' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        r.on('error', reject);
        r.end();
      });
      expect(status).to.equal(403);
    });

    for (const kit of OPENAI_KITS) {
      it(`the real ${kit.label} SDK: responses.create({ background: true, stream: true }), then responses.retrieve(id, { stream: true, starting_after }) and responses.cancel`, async () => {
        const client = new kit.OpenAI({ baseURL: server.openAIBaseURL, apiKey: 'local', maxRetries: 0, logLevel: 'off' });
        const seen: { type: string; sequence_number: number; response?: { id: string } }[] = [];
        for await (const event of await client.responses.create({ model: 'local', input: RIVERS, stream: true, background: true })) seen.push(event as never);
        const id = seen[0]!.response!.id;
        const again: number[] = [];
        let text = '';
        for await (const event of await client.responses.retrieve(id, { stream: true, starting_after: 10 })) {
          again.push(event.sequence_number);
          if (event.type === 'response.output_text.delta') text += event.delta;
        }
        expect(again).to.deep.equal(seen.slice(11).map((e) => e.sequence_number));
        expect(RIVERS_ANSWER.endsWith(text)).to.equal(true);
        expect((await client.responses.retrieve(id)).status).to.equal('completed');
        const refused = await client.responses.cancel(id).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(refused).to.have.property('status', 400);
      });
    }

    it('expires a response backgroundTtlMs after it ended, on the server’s scheduler (then 404)', async () => {
      let now = 0;
      const clocked = await startLocalProvider({
        name: 'ttl',
        tokenDelayMs: 0,
        backgroundTtlMs: 1000,
        scheduler: {
          now: () => now,
          schedule: () => {
            throw new Error('not used');
          },
        } as never,
      });
      try {
        const all = events(
          await (
            await fetch(`${clocked.openAIBaseURL}/responses`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ model: 'local', stream: true, background: true, input: RIVERS }),
            })
          ).text(),
        );
        const id = (all[0]!['response'] as { id: string }).id;
        now = 999;
        expect((await fetch(`${clocked.openAIBaseURL}/responses/${id}`)).status).to.equal(200);
        now = 1000;
        expect((await fetch(`${clocked.openAIBaseURL}/responses/${id}`)).status).to.equal(404);
      } finally {
        await clocked.close();
      }
    });
  });

  describe('openAIResponsesModel({ resume })', () => {
    it('sends background: true and store: true (no encrypted reasoning asked for: the response is stored)', async () => {
      await call();
      expect(server.requests.at(-1)!.body).to.deep.include({ background: true, store: true, stream: true });
      expect(server.requests.at(-1)!.body).to.not.have.property('include');
    });

    it('a connection cut mid-answer (reset after 4 events): resumed once, the final text equals the uncut one, output tokens not doubled, one generation', async () => {
      const uncut = await call();
      expect(textOf(uncut.events)).to.equal(RIVERS_ANSWER);
      const posts = server.requests.length;
      server.faults.add({ kind: 'reset', afterChunks: 4, times: 1 });
      const cut = await call();
      expect(textOf(cut.events)).to.equal(textOf(uncut.events));
      expect(cut.events.filter((e) => e.type === 'reset')).to.deep.equal([]);
      expect(usage(cut.events)).to.deep.equal(usage(uncut.events));
      expect(server.requests.length - posts).to.equal(1); // one POST: nothing generated twice
      const resumes = cut.heal.filter((e) => e.type === 'resume');
      expect(resumes).to.have.length(1);
      expect(resumes[0]).to.deep.include({
        target: 'model:openai-responses:local',
        attempt: 1,
        max: 2,
        reason: 'dropped',
        responseId: `resp_${server.requests.at(-1)!.id}`,
      });
      // the last event before the cut: created, in_progress, item added, part added, 4 deltas
      expect(resumes[0]).to.have.property('startingAfter', 7);
    });

    it('cut on every connection (the POST and each GET): resumed maxResumes times, then IncompleteStreamError goes on — retryWithBackoff restarts the call, which completes', async () => {
      server.faults.add({ kind: 'reset', afterChunks: 2, times: 3 });
      const hub = new HealHub();
      const heal: HealEvent[] = [];
      hub.events$.subscribe((e) => heal.push(e));
      const model = resumable({ maxResumes: 2 });
      const failed = await lastValueFrom(streamModel(model, ask(RIVERS), { hub }).pipe(toArray())).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failed).to.be.instanceOf(IncompleteStreamError);
      expect(heal.filter((e) => e.type === 'resume').map((e) => (e.type === 'resume' ? e.attempt : 0))).to.deep.equal([1, 2]);
      // given up: the response was cancelled (nobody reads it)
      const id = `resp_${server.requests.at(-1)!.id}`;
      for (let i = 0; i < 50 && ((await (await fetch(`${server.openAIBaseURL}/responses/${id}`)).json()) as { status: string }).status !== 'cancelled'; i++)
        await new Promise((r) => setTimeout(r, 5));
      expect(((await (await fetch(`${server.openAIBaseURL}/responses/${id}`)).json()) as { status: string }).status).to.equal('cancelled');
      // the same, under retries: the fault is used up by then, the retry's stream completes
      server.faults.add({ kind: 'reset', afterChunks: 2, times: 3 });
      const retried = await lastValueFrom(
        streamModel(model, ask(RIVERS), { hub }).pipe(
          retryWithBackoff<TurnEvent>({
            hub,
            target: 'model:openai-responses:local',
            initialBackoffMs: 1,
            jitter: 'none',
            afterEmit: 'restart',
            onRestart: () => ({ type: 'reset', reason: 'retry', target: 'model:openai-responses:local' }),
          }),
          toArray(),
        ),
      );
      expect(heal.filter((e) => e.type === 'retry')).to.have.length(1);
      const afterReset = retried.slice(retried.findIndex((e) => e.type === 'reset') + 1);
      expect(textOf(afterReset)).to.equal(RIVERS_ANSWER);
    });

    it('a stall (no event for idleMs): the connection is dropped and the stream resumed; the text equals the uncut one', async () => {
      server.faults.add({ kind: 'stall', afterChunks: 5, times: 1 });
      const stalled = await call(resumable({ idleMs: 300 }));
      expect(textOf(stalled.events)).to.equal(RIVERS_ANSWER);
      const resumes = stalled.heal.filter((e) => e.type === 'resume');
      expect(resumes).to.have.length(1);
      expect(resumes[0]).to.deep.include({ reason: 'stalled', startingAfter: 8 });
      // the stalled connection was left: the server saw the client close it
      const record = await server.waitForRequest((r) => r.id === server.requests.at(-1)!.id);
      expect(record.end).to.equal('client-closed');
    });

    it('a reasoning model’s tool turn through runAgent, its first turn cut twice mid-reasoning (the POST, then the first GET): resumed each time, the reasoning whole and once, the stored reasoning goes back by id (no encrypted content asked for), the turn completes', async () => {
      const getWeather = defineTool({
        name: 'get_weather',
        description: 'Weather',
        args: t.type({ city: t.string, units: t.string }),
        execute: () => [{ temperature: 22, condition: 'sunny' }],
      });
      const thinking = openAIResponsesModel({
        baseURL: server.openAIBaseURL,
        model: 'local',
        resume: true,
        body: { reasoning: { effort: 'low', summary: 'auto' } },
      });
      server.faults.add({ kind: 'reset', afterChunks: 3, times: 2 });
      const before = server.requests.length;
      const events = await lastValueFrom(
        runAgent({ model: thinking, tools: [getWeather], messages: [{ role: 'user', content: "What's the weather in NYC?" }] }).pipe(toArray()),
      );
      expect(events.filter((e) => e.type === 'resume')).to.have.length(2);
      expect(events.filter((e) => e.type === 'tool-call').map((e) => (e.type === 'tool-call' ? e.args : undefined))).to.deep.equal([
        { city: 'NYC', units: 'celsius' },
      ]);
      const firstTurn = events.slice(
        0,
        events.findIndex((e) => e.type === 'tool-call'),
      );
      const reasoning = firstTurn
        .filter((e) => e.type === 'reasoning-delta')
        .map((e) => (e.type === 'reasoning-delta' ? e.text : ''))
        .join('');
      expect(reasoning).to.equal('The user asks: "What\'s the weather in NYC?". I\'ll call get_weather.'); // whole, each token once
      const last = events.at(-1);
      expect(last?.type === 'message' && last.message.content).to.equal('It is 22 °C and sunny in NYC.');
      const posts = server.requests.slice(before);
      expect(posts.map((r) => r.status)).to.deep.equal([200, 200]);
      const input = (posts[1]!.body as { input: Record<string, unknown>[]; include?: unknown }).input;
      expect(input.map((i) => i['type'] ?? i['role'])).to.deep.equal(['user', 'reasoning', 'function_call', 'function_call_output']);
      expect(input[1]).to.not.have.property('encrypted_content');
      expect(posts[1]!.body).to.not.have.property('include');
    });

    it('unsubscribing aborts the resumed GET and cancels the response', async () => {
      const slow = await startLocalProvider({ name: 'slow-resume', tokenDelayMs: 40 });
      try {
        slow.faults.add({ kind: 'reset', afterChunks: 1, times: 1 });
        const model = openAIResponsesModel({ baseURL: slow.openAIBaseURL, model: 'local', resume: true });
        const hub = new HealHub();
        const resumed = new Subject<void>();
        hub.events$.subscribe((e) => e.type === 'resume' && resumed.next());
        const seen: TurnEvent[] = [];
        const subscription = streamModel(model, ask(RIVERS), { hub }).subscribe((e) => seen.push(e));
        await new Promise<void>((resolve) => resumed.subscribe(() => resolve()));
        // wait for a delta through the resumed stream, then leave
        const count = seen.length;
        while (seen.length === count) await new Promise((r) => setTimeout(r, 10));
        subscription.unsubscribe();
        const id = `resp_${slow.requests.at(-1)!.id}`;
        let status = '';
        for (let i = 0; i < 100 && status !== 'cancelled'; i++) {
          status = ((await (await fetch(`${slow.openAIBaseURL}/responses/${id}`)).json()) as { status: string }).status;
          if (status !== 'cancelled') await new Promise((r) => setTimeout(r, 10));
        }
        expect(status).to.equal('cancelled');
      } finally {
        await slow.close();
      }
    });
  });
});
