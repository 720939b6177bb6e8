/**
 * The demo's agent, shared by the chat page (browser) and `npm run demo:cli` (terminal): two
 * providers behind fallbackModel with a breaker each, retries per provider, stream deadlines,
 * tools with retries, breakers, reflection, and a degradable knowledge search.
 */
import * as t from 'io-ts';
import { map, timeout, timer, type Observable } from 'rxjs';
import {
  CapabilityRegistry,
  CircuitBreakerRegistry,
  HealHub,
  circuitBreak,
  defineTool,
  degradeAfter,
  fallbackModel,
  reflectOnError,
  retryWithBackoff,
  runAgent,
  type AgentEvent,
  type FallbackModelOptions,
  type Message,
  type Model,
} from '../../src/index.js';
import { anthropicModel } from '../../src/providers/anthropic.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { openAIResponsesModel } from '../../src/providers/responses.js';

/** Where a provider is and how to speak to it (from the demo server's /config.json). */
export interface ProviderConfig {
  /** `primary`, `secondary`… (the model id: breakers are `model:<id>`). */
  readonly id: string;
  readonly label: string;
  /** OpenAI's Chat Completions, OpenAI's Responses API, or Anthropic's Messages. */
  readonly protocol: 'openai' | 'responses' | 'anthropic';
  /** Responses API only: resume a cut stream where it stopped (the local providers keep background responses). */
  readonly resume?: boolean;
  /** Base URL for the adapter (`…/v1` for OpenAI, the origin for Anthropic). */
  readonly baseURL: string;
  readonly model: string;
  /** The local provider's origin, for fault toggles (absent for real providers). */
  readonly admin?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Timings of the demo (short, so healing is visible in seconds). */
export const DEMO = {
  retries: 2,
  initialBackoffMs: 400,
  failureThreshold: 1,
  resetTimeoutMs: 15_000,
  firstChunkMs: 8_000,
  idleMs: 4_000,
  /** A Responses stream silent this long is resumed (before the idle deadline above restarts it). */
  resumeIdleMs: 2_000,
  searchDeadlineMs: 3_000,
} as const;

/** The state a page or a terminal shows: breakers, capabilities, the hub. */
export interface DemoAgent {
  readonly hub: HealHub;
  readonly breakers: CircuitBreakerRegistry;
  readonly capabilities: CapabilityRegistry;
  /** Slow knowledge search on/off (a toggle). */
  slowSearch: boolean;
  /** What fallbackModel does when a provider dies mid-answer. */
  midStream: 'restart' | 'continue';
  /** One question, with the conversation so far: the run's events. */
  ask(history: readonly Message[]): Observable<AgentEvent>;
}

function provider(config: ProviderConfig): Model {
  const headers = config.headers ? { headers: config.headers } : {};
  switch (config.protocol) {
    case 'openai':
      return openAICompatibleModel({ id: config.id, baseURL: config.baseURL, model: config.model, ...headers });
    case 'responses':
      return openAIResponsesModel({ id: config.id, baseURL: config.baseURL, model: config.model, ...headers, ...(config.resume ? { resume: { maxResumes: 2, idleMs: DEMO.resumeIdleMs } } : {}) });
    case 'anthropic':
      return anthropicModel({ id: config.id, baseURL: config.baseURL, model: config.model, maxTokens: 1024, ...headers });
  }
}

/** Each provider's own healing, before the chain moves on: stream deadlines (first chunk, then idle between chunks), then retries. */
const perModel: NonNullable<FallbackModelOptions['perModel']> = (id, stream$, { hub }) =>
  stream$.pipe(
    timeout({ first: DEMO.firstChunkMs, each: DEMO.idleMs }),
    retryWithBackoff({ hub, target: `model:${id}`, maxRetries: DEMO.retries, initialBackoffMs: DEMO.initialBackoffMs, jitter: 'none' }),
  );

const weatherTool = defineTool({
  name: 'get_weather',
  description: 'Current weather for a city',
  args: t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) }),
  idempotent: true,
  execute: ({ city, units }) => [{ city, temperature: units === 'celsius' ? 22 : 72, units, condition: 'sunny' }],
});

/** Builds the demo agent over the given providers (in order of preference). */
export function createDemoAgent(providers: readonly ProviderConfig[]): DemoAgent {
  const hub = new HealHub();
  const breakers = new CircuitBreakerRegistry({ failureThreshold: DEMO.failureThreshold, resetTimeoutMs: DEMO.resetTimeoutMs });
  const capabilities = new CapabilityRegistry({ hub });
  const agent: DemoAgent = {
    hub,
    breakers,
    capabilities,
    slowSearch: false,
    midStream: 'restart',
    ask: (history) => {
      const models = providers.map(provider);
      const search = defineTool({
        name: 'knowledge_search',
        description: 'Searches the help-centre articles',
        args: t.type({ query: t.string }),
        idempotent: true,
        execute: ({ query }) =>
          timer(agent.slowSearch ? 6_000 : 300).pipe(map(() => `Article "${query}": refunds are accepted within 30 days with the receipt.`)),
      });
      return runAgent({
        model: fallbackModel(models, { breakers, hub, midStream: agent.midStream, perModel }),
        tools: [weatherTool, search],
        hub,
        capabilities,
        instruction: 'You are a helpful assistant with access to a weather service and a knowledge base.',
        messages: history,
        budget: { maxModelCalls: 20, maxToolCalls: 20 },
        toolPipeline: (call, call$, { hub: runHub }) => {
          const guarded = call$.pipe(
            retryWithBackoff({ hub: runHub, target: `tool:${call.name}`, maxRetries: 2, initialBackoffMs: 300 }),
            circuitBreak(breakers.get(`tool:${call.name}`), { hub: runHub }),
            reflectOnError(),
          );
          return call.name === 'knowledge_search'
            ? guarded.pipe(degradeAfter(DEMO.searchDeadlineMs, 'unavailable', { capability: call.name, capabilities })) // named as the tool (and its circuit) is
            : guarded;
        },
      });
    },
  };
  return agent;
}
