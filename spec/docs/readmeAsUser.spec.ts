/**
 * The README's agent ("An agent that heals itself") run as a new user would run it, against two
 * local providers (rxheal/server) instead of real API keys: the same config — tools with
 * `idempotent`, `fallbackModel` with `breakers`, `midStream: 'restart'` and `perModel` retries,
 * the README's `toolPipeline` — only the base URLs and the tools' fetches replaced. Each test checks
 * what the README's prose says happens.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { lastValueFrom, toArray } from 'rxjs';
import {
  CapabilityRegistry,
  CircuitBreakerRegistry,
  anthropicModel,
  circuitBreak,
  defineTool,
  degradeAfter,
  fallbackModel,
  openAICompatibleModel,
  reflectOnError,
  retryWithBackoff,
  runAgent,
  type AgentEvent,
} from '../../src/index.js';
import { describeEvent } from '../../src/testing/index.js';
import { startLocalProvider } from '../../src/server/index.js';

type LocalProvider = Awaited<ReturnType<typeof startLocalProvider>>;

describe("the README's agent, run against two local providers", function () {
  this.timeout(30_000);
  let primary: LocalProvider;
  let secondary: LocalProvider;

  before(async () => {
    primary = await startLocalProvider({ name: 'primary', tokenDelayMs: 1 });
    secondary = await startLocalProvider({ name: 'secondary', tokenDelayMs: 1 });
  });
  after(async () => {
    await Promise.all([primary.close(), secondary.close()]);
  });
  /** Every registry made, so each test leaves no breaker open (an open one holds its half-open notice). */
  const registries: CircuitBreakerRegistry[] = [];
  afterEach(() => {
    primary.faults.clear();
    secondary.faults.clear();
    for (const registry of registries.splice(0)) for (const name of registry.names()) registry.get(name).reset();
  });

  /** The README's agent, with `gpt` and `claude` on the local providers. */
  function readmeAgent(question: string, failureThreshold = 5) {
    const gpt = openAICompatibleModel({ id: 'gpt', baseURL: primary.openAIBaseURL, apiKey: 'local', model: 'gpt-4o' });
    const claude = anthropicModel({ id: 'claude', baseURL: secondary.anthropicBaseURL, apiKey: 'local', model: 'claude-sonnet-4-20250514', maxTokens: 1024 });
    const getWeather = defineTool({
      name: 'get_weather',
      description: 'Current weather for a city',
      args: t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) }),
      idempotent: true,
      execute: async ({ city, units }) => ({ city, temperature: units === 'celsius' ? 22 : 72, condition: 'sunny' }),
    });
    const knowledgeSearch = defineTool({
      name: 'knowledge_search',
      description: 'Search the help-centre articles',
      args: t.type({ query: t.string }),
      idempotent: true,
      execute: async () => [{ title: 'Refunds', text: 'Refunds within 30 days.' }],
    });
    const breakers = new CircuitBreakerRegistry({ failureThreshold, resetTimeoutMs: 60_000 });
    registries.push(breakers);
    const capabilities = new CapabilityRegistry();
    return runAgent({
      model: fallbackModel([gpt, claude], {
        breakers,
        midStream: 'restart',
        perModel: (id, stream$, { hub }) => stream$.pipe(retryWithBackoff({ hub, target: `model:${id}`, maxRetries: 2, initialBackoffMs: 50 })),
      }),
      tools: [getWeather, knowledgeSearch],
      capabilities,
      instruction: 'You are a helpful assistant.',
      messages: [{ role: 'user', content: question }],
      budget: { maxModelCalls: 10, maxTokens: 20_000 },
      toolPipeline: (call, call$, { hub }) =>
        call$.pipe(
          retryWithBackoff({ hub, target: `tool:${call.name}` }),
          circuitBreak(breakers.get(`tool:${call.name}`), { hub }),
          reflectOnError(),
          degradeAfter(3000, 'unavailable', { capability: call.name, capabilities }),
        ),
    });
  }

  const run = (events$: ReturnType<typeof readmeAgent>): Promise<AgentEvent[]> => lastValueFrom(events$.pipe(toArray()));
  const story = (events: AgentEvent[]): string[] => events.filter((e) => e.type !== 'call-start' && e.type !== 'call-end').map(describeEvent);
  /** The text a chat UI shows at the end: deltas since the last reset. */
  const shown = (events: AgentEvent[]): string => {
    let text = '';
    for (const e of events) {
      if (e.type === 'reset') text = '';
      else if (e.type === 'text-delta') text += e.text;
    }
    return text;
  };

  it('"One run, one story": the primary dies mid-answer (failureThreshold 1) — text, circuit, fallback, reset, the whole answer, finish, message', async () => {
    primary.faults.set({ kind: 'reset', afterChunks: 3, times: 1 });
    const events = await run(readmeAgent('Tell me a story about a river', 1));
    const labels = story(events);
    const reset = labels.indexOf('reset:fallback');
    expect(reset).to.be.greaterThan(0);
    expect(labels.slice(0, reset).filter((l) => !l.startsWith('text:'))).to.deep.equal(['circuit:model:gpt:closed>open', 'fallback:model:gpt>model:claude']);
    expect(labels.slice(0, reset).filter((l) => l.startsWith('text:')).length).to.be.greaterThan(0);
    expect(labels.slice(-2)).to.deep.equal(['finish:stop', 'message:assistant']);
    const message = events.at(-1) as Extract<AgentEvent, { type: 'message' }>;
    expect(shown(events)).to.equal(message.message.content);
    expect(message.message.content.length).to.be.greaterThan(100);
    // nothing retried: the attempt had emitted (afterEmit 'error'), so the chain moved on at once
    expect(labels.filter((l) => l.startsWith('retry'))).to.deep.equal([]);
  });

  it('the primary refuses connections: each model retried (perModel) before the fallback; the secondary answers the weather with get_weather', async () => {
    primary.faults.set({ kind: 'down' });
    const events = await run(readmeAgent("What's the weather in NYC?"));
    const labels = story(events);
    // two turns (the tool call, the answer), each starting from the primary: its breaker (5) is not open yet
    expect(labels.filter((l) => l.startsWith('retry:') || l.startsWith('fallback:'))).to.deep.equal([
      'retry:model:gpt#1',
      'retry:model:gpt#2',
      'fallback:model:gpt>model:claude',
      'retry:model:gpt#1',
      'retry:model:gpt#2',
      'fallback:model:gpt>model:claude',
    ]);
    expect(labels).to.include('tool-result:get_weather');
    const answer = events.at(-1) as Extract<AgentEvent, { type: 'message' }>;
    expect(answer.message.content).to.match(/22 °C and sunny in NYC/);
  });

  it('bad tool arguments (kelvin): the codec rejects them before the tool runs, a reflection goes back, the model corrects itself', async () => {
    primary.faults.set({ kind: 'bad-tool-args', times: 1 });
    const events = await run(readmeAgent("What's the weather in NYC?"));
    const labels = story(events);
    expect(labels).to.include('reflection:get_weather#1/3');
    expect(labels.filter((l) => l === 'tool-result:get_weather')).to.have.length(1);
    const answer = events.at(-1) as Extract<AgentEvent, { type: 'message' }>;
    expect(answer.message.content).to.match(/22 °C and sunny in NYC/);
  });
});
