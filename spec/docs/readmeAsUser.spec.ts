/**
 * The README's agent ("An agent that heals itself") run as a new user would run it, against two
 * local providers (rxheal/server) instead of real API keys: the same config — tools with
 * `idempotent`, `fallbackModel` with `breakers`, `midStream: 'restart'` and `perModel` retries,
 * the README's `toolPipeline` — only the base URLs and the tools' fetches replaced. Each test checks
 * what the README's prose says happens.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { defer, lastValueFrom, toArray } from 'rxjs';
import {
  CapabilityRegistry,
  CircuitBreakerRegistry,
  CircuitOpenError,
  HttpError,
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

describe("the README's first example (a weather API through retryWithBackoff and circuitBreak), against a local HTTP server", function () {
  this.timeout(30_000);
  let server: Server;
  let base = '';
  /** Statuses the server answers with, in order (the last repeats); 200 sends the weather. */
  let script: number[] = [];
  let requests = 0;

  before(async () => {
    server = createServer((_req, res) => {
      const status = script[Math.min(requests++, script.length - 1)]!;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 200 ? JSON.stringify({ city: 'Paris', temperature: 22 }) : JSON.stringify({ error: `status ${status}` }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    requests = 0;
  });

  /** The README's example, its URL pointed at the local server. */
  const readmeExample = (breakers: CircuitBreakerRegistry) => {
    const getWeather = (city: string) =>
      defer(async () => {
        const res = await fetch(`${base}/weather?city=${city}`);
        if (!res.ok) throw new HttpError(res.status, res.headers, await res.text());
        return res.json();
      });
    return lastValueFrom(getWeather('Paris').pipe(retryWithBackoff({ maxRetries: 3, initialBackoffMs: 500 }), circuitBreak(breakers.get('tool:get_weather'))));
  };

  it('two 503s, then the weather: "429/5xx/network: wait, retry"', async () => {
    script = [503, 503, 200];
    const breakers = new CircuitBreakerRegistry({ failureThreshold: 5, resetTimeoutMs: 60_000 });
    expect(await readmeExample(breakers)).to.deep.equal({ city: 'Paris', temperature: 22 });
    expect(requests).to.equal(3);
  });

  it('a 404 comes out as it is, at once (no retry); a 5xx call that exhausts its retries counts once for the breaker (failureThreshold 1 here): the next call fails fast without a request', async () => {
    script = [404];
    const breakers = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 60_000 });
    const notFound = await readmeExample(breakers).catch((e: unknown) => e);
    expect(notFound).to.be.instanceOf(HttpError);
    expect((notFound as HttpError).status).to.equal(404);
    expect(requests).to.equal(1);
    script = [503];
    requests = 0;
    const exhausted = await readmeExample(breakers).catch((e: unknown) => e);
    expect((exhausted as Error).name).to.equal('RetriesExhaustedError');
    expect(requests).to.equal(4);
    const rejected = await readmeExample(breakers).catch((e: unknown) => e);
    expect(rejected).to.be.instanceOf(CircuitOpenError);
    expect(requests).to.equal(4);
    breakers.get('tool:get_weather').reset();
  });
});
