/**
 * toAiSdk (src/ai-sdk/to.ts) as a real Mastra agent's model (`@mastra/core` 1.x): `generate()` and
 * `stream()` of an `Agent` with a tool, against two local providers (rxheal/server) with faults;
 * the answer compared with the fault-free one, the requests counted at the servers, what a final
 * failure looks like (`generate()` rejects; `stream()` resolves, the error on `res.error`, empty
 * text, `finishReason` 'error'). Needs Node ≥ 22 (spec/support/agentFrameworks.ts): on Node 20 the
 * cases are reported as skipped.
 */
import { expect } from 'chai';
import { toAiSdk } from '../../src/ai-sdk/index.js';
import { AllFallbacksFailedError } from '../../src/core/errors/errors.js';
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
  type MastraAgentLike,
} from '../support/agentFrameworks.js';
import { localProviders, RIVERS } from '../support/interop.js';

const loaded = await agentFrameworks();
const title = loaded.ok ? `@mastra/core ${loaded.frameworks.versions['@mastra/core']}` : '@mastra/core';

describe(`rxheal/ai-sdk under Mastra (${title}): an Agent whose model is toAiSdk(fallbackModel([…]))`, function () {
  this.timeout(30_000);
  const providers = localProviders();
  let server: LocalProvider;
  let backup: LocalProvider;
  let slow: LocalProvider;
  before(() => ({ server, backup, slow } = providers));

  if (!loaded.ok) {
    it('an Agent with a tool, generate() and stream(), healed through toAiSdk', function () {
      this.skip();
    });
    return;
  }
  const fw = loaded.frameworks;

  const weather = new WeatherTool(() => server);
  const tools = {
    get_weather: fw.createTool({
      id: 'get_weather',
      description: 'Current weather for a city',
      inputSchema: WeatherTool.schema(fw.z),
      execute: ({ city }: { city: string }) => Promise.resolve(weather.run(city)),
    }),
  };

  /** The agent, on a fresh chain (no breakers); Mastra's own log (it logs every failed stream to the console) silenced. */
  const agentOf = (config: Record<string, unknown> = {}, model: unknown = toAiSdk(healingChain(server, backup))): MastraAgentLike => {
    const agent = new fw.MastraAgent({ id: 'weather', name: 'Weather', instructions: 'Be brief.', model, tools, ...config });
    agent.__setLogger(fw.noopLogger);
    return agent;
  };

  interface Outcome {
    readonly text?: string;
    readonly finishReason?: string;
    readonly error?: unknown;
    readonly rejected?: unknown;
  }
  /** One call, generate() or stream() (consumed): its text, finish reason and error, or what it rejected with. */
  async function ask(agent: MastraAgentLike, stream: boolean, abortSignal?: AbortSignal): Promise<Outcome> {
    try {
      if (!stream) {
        const res = await agent.generate(WEATHER, { abortSignal });
        return { text: res.text, finishReason: res.finishReason, error: res.error };
      }
      const res = await agent.stream(WEATHER, { abortSignal });
      await res.consumeStream();
      return { text: await res.text, finishReason: await res.finishReason, error: res.error };
    } catch (rejected) {
      return { rejected };
    }
  }

  const counted = <T>(body: () => Promise<T>) => countedAt(server, backup, body);

  for (const stream of [false, true]) {
    const how = stream ? 'stream()' : 'generate()';
    describe(how, () => {
      const faultFree: Outcome = { text: WEATHER_ANSWER, finishReason: 'stop', error: undefined };

      it(`fault-free: the tool runs, the answer is the assistant's, finishReason 'stop' (2 requests: the tool turn, the answer)`, async () => {
        weather.runs = 0;
        const { result, primary, backup: b } = await counted(() => ask(agentOf(), stream));
        expect(result).to.deep.equal(faultFree);
        expect({ toolRuns: weather.runs, primary, backup: b }).to.deep.equal({ toolRuns: 1, primary: 2, backup: 0 });
      });

      for (const c of FAULT_CASES) {
        const fails = stream ? "resolves with the error on res.error, empty text, finishReason 'error'" : 'rejects with AllFallbacksFailedError';
        it(`${c.title}: ${c.heals ? 'the same answer as without faults' : fails} (${c.requests.primary} + ${c.requests.backup} requests)`, async () => {
          armFaults(c, server, backup);
          weather.arm(c.inAnswer);
          const { result, primary, backup: b } = await counted(() => ask(agentOf(), stream));
          if (c.heals) expect(result).to.deep.equal(faultFree);
          else if (stream) {
            expect(result.error).to.be.instanceOf(AllFallbacksFailedError);
            expect({ text: result.text, finishReason: result.finishReason }).to.deep.equal({ text: '', finishReason: 'error' });
          } else expect(result.rejected).to.be.instanceOf(AllFallbacksFailedError);
          expect({ primary, backup: b }).to.deep.equal(c.requests);
        });
      }

      describe('one retry loop: Mastra re-runs no chain rxheal already retried with maxRetries left off', () => {
        it('maxRetries left off (its default, 0), both down: the chain runs once (3 + 3 requests)', async () => {
          backup.faults.set({ kind: 'down' });
          server.faults.set({ kind: 'down' });
          const { primary, backup: b } = await counted(() => ask(agentOf(), stream));
          expect({ primary, backup: b }).to.deep.equal({ primary: 3, backup: 3 });
        });

        const runs = stream ? 1 : 3;
        it(`maxRetries: 2, both down: ${runs === 1 ? 'the chain runs once anyway (doStream never rejects: its error is in the stream)' : 'the whole chain runs 3 times (9 + 9 requests) — why the README says to leave it off'}`, async () => {
          backup.faults.set({ kind: 'down' });
          server.faults.set({ kind: 'down' });
          const { primary, backup: b } = await counted(() => ask(agentOf({ maxRetries: 2 }), stream));
          expect({ primary, backup: b }).to.deep.equal({ primary: 3 * runs, backup: 3 * runs });
        });
      });

      it('aborting the abortSignal closes the provider request (the server sees the client close it)', async () => {
        const agent = agentOf({ tools: {} }, toAiSdk(openAICompatibleModel({ baseURL: slow.openAIBaseURL, model: 'local' })));
        const record = await abortMidAnswer(slow, async (abortSignal) => {
          if (!stream) return agent.generate(RIVERS, { abortSignal });
          return (await agent.stream(RIVERS, { abortSignal })).consumeStream();
        });
        expect({ end: record.end, cut: record.chunks < 10 }).to.deep.equal({ end: 'client-closed', cut: true });
      });
    });
  }
});
