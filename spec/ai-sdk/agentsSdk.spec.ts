/**
 * toAiSdk (src/ai-sdk/to.ts) and withRxhealRetryAdvice (src/ai-sdk/retryAdvice.ts) under the real
 * OpenAI Agents SDK: an `Agent` with a tool on `aisdk(toAiSdk(fallbackModel([…])))` from
 * `@openai/agents-extensions`, `run()` plain and streamed, against two local providers
 * (rxheal/server) with faults; the answer compared with the fault-free one, the requests counted
 * at the servers. Needs Node ≥ 22 (spec/support/agentFrameworks.ts): on Node 20 the cases are
 * reported as skipped.
 */
import { expect } from 'chai';
import { toAiSdk, withRxhealRetryAdvice } from '../../src/ai-sdk/index.js';
import { AllFallbacksFailedError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { LocalProvider } from '../../src/server/index.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import {
  abortMidAnswer,
  agentFrameworks,
  armFaults,
  counted as countedAt,
  FAULT_CASES,
  healingChain,
  WEATHER,
  WEATHER_ANSWER,
  WeatherTool,
  type AgentsStreamedRunResult,
} from '../support/agentFrameworks.js';
import { localProviders, RIVERS } from '../support/interop.js';

const loaded = await agentFrameworks();
const title = loaded.ok
  ? `@openai/agents ${loaded.frameworks.versions['@openai/agents']}, @openai/agents-extensions ${loaded.frameworks.versions['@openai/agents-extensions']}`
  : '@openai/agents';

describe(`rxheal/ai-sdk under the OpenAI Agents SDK (${title}): an Agent on aisdk(toAiSdk(fallbackModel([…])))`, function () {
  this.timeout(30_000);
  const providers = localProviders();
  let server: LocalProvider;
  let backup: LocalProvider;
  let slow: LocalProvider;
  before(() => ({ server, backup, slow } = providers));

  it('withRxhealRetryAdvice refuses what is not an Agents SDK model, naming it', () => {
    expect(() => withRxhealRetryAdvice({} as never)).to.throw(InvalidOptionError, 'withRxhealRetryAdvice: option "model" must be an OpenAI Agents SDK model');
    expect(() => withRxhealRetryAdvice(null as never)).to.throw(InvalidOptionError);
  });

  if (!loaded.ok) {
    it('an Agent with a tool, run() plain and streamed, healed through toAiSdk', function () {
      this.skip();
    });
    return;
  }
  const fw = loaded.frameworks;

  const weather = new WeatherTool(() => server);
  const weatherTool = fw.tool({
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: WeatherTool.schema(fw.z),
    execute: ({ city }: { city: string }) => Promise.resolve(JSON.stringify(weather.run(city))),
  });

  type Settings = Record<string, unknown> | undefined;
  /** The agent, on a fresh chain (no breakers), the model with rxheal's retry advice unless `advice` is false. */
  const agentOf = (modelSettings?: Settings, advice = true): object => {
    const model = fw.aisdk(toAiSdk(healingChain(server, backup)));
    return new fw.OpenAIAgent({
      name: 'Weather',
      instructions: 'Be brief.',
      model: advice ? withRxhealRetryAdvice(model) : model,
      tools: [weatherTool],
      modelSettings,
    });
  };

  /** One run, plain or streamed: the answer (the streamed text too), or the error it ended with. */
  async function ask(agent: object, stream: boolean, signal?: AbortSignal): Promise<{ answer?: unknown; streamed?: string; error?: unknown }> {
    try {
      if (!stream) return { answer: (await fw.run(agent, WEATHER, { signal })).finalOutput };
      const result: AgentsStreamedRunResult = await fw.run(agent, WEATHER, { stream: true, signal });
      let streamed = '';
      for await (const text of result.toTextStream()) streamed += text;
      await result.completed;
      if (result.error !== undefined && result.error !== null) return { error: result.error, streamed };
      return { answer: result.finalOutput, streamed };
    } catch (error) {
      return { error };
    }
  }

  const counted = <T>(body: () => Promise<T>) => countedAt(server, backup, body);

  for (const stream of [false, true]) {
    const how = stream ? 'run({ stream: true })' : 'run()';
    describe(how, () => {
      let faultFree: { answer?: unknown; streamed?: string };

      before(async () => {
        faultFree = await ask(agentOf(), stream);
      });

      it(`fault-free: the tool runs, the answer is the assistant's (2 requests: the tool turn, the answer)`, async () => {
        weather.runs = 0;
        const { result, primary, backup: b } = await counted(() => ask(agentOf(), stream));
        expect(result).to.deep.equal(stream ? { answer: WEATHER_ANSWER, streamed: WEATHER_ANSWER } : { answer: WEATHER_ANSWER });
        expect(faultFree).to.deep.equal(result);
        expect({ toolRuns: weather.runs, primary, backup: b }).to.deep.equal({ toolRuns: 1, primary: 2, backup: 0 });
      });

      for (const c of FAULT_CASES) {
        it(`${c.title}: ${c.heals ? 'the same answer as without faults' : `the run fails with AllFallbacksFailedError`} (${c.requests.primary} + ${c.requests.backup} requests)`, async () => {
          armFaults(c, server, backup);
          weather.arm(c.inAnswer);
          const { result, primary, backup: b } = await counted(() => ask(agentOf(), stream));
          if (c.heals) expect(result).to.deep.equal(faultFree);
          else {
            expect(result.error).to.be.instanceOf(AllFallbacksFailedError);
            expect(result.answer).to.equal(undefined);
          }
          expect({ primary, backup: b }).to.deep.equal(c.requests);
        });
      }

      describe('one retry loop: the runner never re-runs the chain rxheal already retried', () => {
        for (const [label, settings] of [
          ['retry left off (the default)', undefined],
          ['retry: { maxRetries: 2, policy: () => true }', { retry: { maxRetries: 2, policy: () => true, backoff: { initialDelayMs: 1, jitter: false } } }],
        ] as const) {
          it(`${label}, both down: the chain runs once (3 + 3 requests)`, async () => {
            backup.faults.set({ kind: 'down' });
            server.faults.set({ kind: 'down' });
            const { result, primary, backup: b } = await counted(() => ask(agentOf(settings), stream));
            expect(result.error).to.be.instanceOf(AllFallbacksFailedError);
            expect({ primary, backup: b }).to.deep.equal({ primary: 3, backup: 3 });
          });
        }
      });

      it(`aborting the run's signal closes the provider request (the server sees the client close it)`, async () => {
        const agent = new fw.OpenAIAgent({
          name: 'Rivers',
          model: withRxhealRetryAdvice(fw.aisdk(toAiSdk(openAICompatibleModel({ baseURL: slow.openAIBaseURL, model: 'local' })))),
        });
        const record = await abortMidAnswer(slow, async (signal) => {
          if (!stream) return fw.run(agent, RIVERS, { signal });
          const result = await fw.run(agent, RIVERS, { stream: true, signal });
          for await (const text of result.toTextStream()) void text;
          return result.completed;
        });
        expect({ end: record.end, cut: record.chunks < 10 }).to.deep.equal({ end: 'client-closed', cut: true });
      });
    });
  }

  for (const stream of [false, true]) {
    // streamed, the runner replays no stream that emitted an event (toAiSdk's stream-start comes first), advice or not
    const runs = stream ? 1 : 3;
    it(`without withRxhealRetryAdvice, ${stream ? 'run({ stream: true })' : 'run()'} with a retry policy that says yes, both down: the chain runs ${runs === 1 ? 'once anyway (the runner replays no stream that emitted an event)' : '3 times (9 + 9 requests): what the advice prevents'}`, async () => {
      backup.faults.set({ kind: 'down' });
      server.faults.set({ kind: 'down' });
      const settings = { retry: { maxRetries: 2, policy: () => true, backoff: { initialDelayMs: 1, jitter: false } } };
      const { result, primary, backup: b } = await counted(() => ask(agentOf(settings, false), stream));
      expect(result.error).to.be.instanceOf(AllFallbacksFailedError);
      expect({ primary, backup: b }).to.deep.equal({ primary: 3 * runs, backup: 3 * runs });
    });
  }
});
