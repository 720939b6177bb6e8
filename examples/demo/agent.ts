/**
 * The demo's agent, shared by the chat page (browser) and `npm run demo:cli` (terminal): two
 * providers behind fallbackModel with a breaker each, retries per provider, stream deadlines,
 * tools from a local MCP server (rxheal/mcp: the server's breaker, reconnection, arguments checked
 * against the tools' schemas) with retries, breakers, reflection, and a degradable knowledge search.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { defer, from, switchMap, timeout, type Observable } from 'rxjs';
import {
  CapabilityRegistry,
  CircuitBreakerRegistry,
  HealHub,
  HedgeBudget,
  LatencyRegistry,
  circuitBreak,
  degradeAfter,
  fallbackModel,
  hedge,
  reflectOnError,
  retryWithBackoff,
  runAgent,
  type AgentEvent,
  type FallbackModelOptions,
  type Message,
  type AnyTool,
  type Model,
} from '../../src/index.js';
import { fromMcp } from '../../src/mcp/index.js';
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

/** Where the demo's MCP server is (from /config.json): its endpoint, and where its faults are set. */
export interface McpConfig {
  /** The Streamable HTTP endpoint (`…/mcp`). */
  readonly url: string;
  /** Its fault switches (`…/mcp/admin`: POST `{ down?, slowSearch?, restart? }`, GET reads them). */
  readonly admin: string;
}

/** The MCP server's breaker (`fromMcp`'s `mcp:<id>`): open, its tools are unavailable. */
export const MCP_BREAKER = 'mcp:tools';

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
  mcpTimeoutMs: 10_000,
  /** A hedge after the observed p95 time to first token, never sooner than this… */
  hedgeFloorMs: 1_000,
  /** …nor later… */
  hedgeCeilingMs: 3_000,
  /** …and after this long while fewer than 20 first tokens were seen. */
  hedgeDefaultMs: 1_500,
  /** At most this many hedges per call made (a token bucket: a provider slow for everyone gets 20 % more calls, not double). */
  hedgeRatio: 0.2,
  /**
   * A question's money: every model priced as a mid-range hosted model ($ per million tokens —
   * demo prices, not a provider's), each attempt reserving 256 output tokens, a cent per question.
   * An ordinary answer costs about a tenth of a cent; the "long answers" fault runs into the cent.
   */
  price: { input: 1.25, cachedInput: 0.125, output: 10 },
  maxUsd: 0.01,
  reserveOutputTokens: 256,
} as const;

/** The state a page or a terminal shows: breakers, capabilities, the hub. */
export interface DemoAgent {
  readonly hub: HealHub;
  readonly breakers: CircuitBreakerRegistry;
  readonly capabilities: CapabilityRegistry;
  /** Slow knowledge search on/off (a toggle: set on the MCP server before the next question). */
  slowSearch: boolean;
  /** The MCP server's faults: down (503 to everything), or restarted (the requests in flight cut; no session to forget). */
  mcpFault(fault: { readonly down?: boolean; readonly restart?: true }): Promise<void>;
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
      return openAIResponsesModel({
        id: config.id,
        baseURL: config.baseURL,
        model: config.model,
        ...headers,
        ...(config.resume ? { resume: { maxResumes: 2, idleMs: DEMO.resumeIdleMs } } : {}),
      });
    case 'anthropic':
      return anthropicModel({ id: config.id, baseURL: config.baseURL, model: config.model, maxTokens: 1024, ...headers });
  }
}

/**
 * Each provider's own healing, before the chain moves on: a hedge when the first token is late
 * (after the observed p95, 1–3 s; the first to answer wins, the other request is aborted), stream
 * deadlines (first chunk, then idle between chunks), then retries.
 */
function perModelHealing(latency: LatencyRegistry): NonNullable<FallbackModelOptions['perModel']> {
  const budgets = new Map<string, HedgeBudget>();
  return (id, stream$, { hub }) => {
    const tracker = latency.get(`model:${id}`);
    const budget = budgets.get(id) ?? new HedgeBudget({ ratio: DEMO.hedgeRatio });
    budgets.set(id, budget);
    return stream$.pipe(
      tracker.track(), // every attempt's time to first token: the p95 the hedge waits for
      hedge({
        after: tracker.deadline({ quantile: 0.95, floorMs: DEMO.hedgeFloorMs, ceilingMs: DEMO.hedgeCeilingMs, defaultMs: DEMO.hedgeDefaultMs, minSamples: 20 }),
        budget,
        target: `model:${id}`,
        hub,
      }),
      timeout({ first: DEMO.firstChunkMs, each: DEMO.idleMs }),
      retryWithBackoff({ hub, target: `model:${id}`, maxRetries: DEMO.retries, initialBackoffMs: DEMO.initialBackoffMs, jitter: 'none' }),
    );
  };
}

/**
 * The MCP server's tools, listed once (again after a failed listing), every call through rxheal/mcp.
 * The client is the 2.x SDK's, on MCP 2026-07-28 with the demo's server (`server/discover`, no
 * session); `reconnect` is for a server on the old revision, whose session can expire.
 */
function mcpTools(
  config: McpConfig,
  setup: { breakers: CircuitBreakerRegistry; capabilities: CapabilityRegistry; hub: HealHub },
): () => Promise<readonly AnyTool[]> {
  const transport = (): StreamableHTTPClientTransport => new StreamableHTTPClientTransport(new URL(config.url));
  let listed: Promise<readonly AnyTool[]> | undefined;
  return () =>
    (listed ??= (async () => {
      const client = new Client({ name: 'rxheal-demo', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(transport());
      return fromMcp(client, { id: 'tools', reconnect: transport, timeoutMs: DEMO.mcpTimeoutMs, reconnectBackoff: { initialMs: 500, maxMs: 5_000 }, ...setup });
    })().catch((error: unknown) => {
      listed = undefined;
      throw error;
    }));
}

/** Posts one change to the MCP server's fault switches. */
async function postMcpAdmin(config: McpConfig, change: Readonly<Record<string, unknown>>): Promise<void> {
  const response = await fetch(config.admin, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(change) });
  if (!response.ok) throw new Error(`MCP server admin: HTTP ${response.status}`);
}

/**
 * What one demo agent keeps between questions: its hub, breakers, capabilities and each
 * provider's healing (latency, hedge budget).
 *
 * @example
 * ```ts
 * const world: DemoWorld = demoWorld();
 * world.breakers.get('model:primary').state; // 'closed'
 * ```
 */
export interface DemoWorld {
  readonly hub: HealHub;
  readonly breakers: CircuitBreakerRegistry;
  readonly capabilities: CapabilityRegistry;
  readonly perModel: NonNullable<FallbackModelOptions['perModel']>;
}

/**
 * A fresh world with the demo's timings: breakers that open after one failure and probe after
 * 15 s, the capabilities on the hub, a latency tracker per provider.
 *
 * @example
 * ```ts
 * const { hub } = demoWorld();
 * hub.events$.subscribe((e) => console.log(e.type));
 * ```
 */
export function demoWorld(): DemoWorld {
  const hub = new HealHub();
  return {
    hub,
    breakers: new CircuitBreakerRegistry({ failureThreshold: DEMO.failureThreshold, resetTimeoutMs: DEMO.resetTimeoutMs }),
    capabilities: new CapabilityRegistry({ hub }),
    perModel: perModelHealing(new LatencyRegistry()),
  };
}

/**
 * One question of the demo: its pipeline, whatever the models and tools are — the page's and the
 * terminal's HTTP providers and MCP tools, or the stand-ins under chaos of a run replayed as a
 * test (examples/demo/replay.ts). The one place the demo's healing is composed.
 *
 * @example
 * ```ts
 * demoRun(demoWorld(), [primary, secondary], tools, [{ role: 'user', content: 'Weather in Paris?' }], 'restart').subscribe(console.log);
 * ```
 */
export function demoRun(
  world: DemoWorld,
  models: readonly Model[],
  tools: readonly AnyTool[],
  history: readonly Message[],
  midStream: 'restart' | 'continue',
): Observable<AgentEvent> {
  const { hub, breakers, capabilities, perModel } = world;
  return runAgent({
    model: fallbackModel(models, { breakers, hub, midStream, perModel }),
    tools,
    hub,
    capabilities,
    instruction: 'You are a helpful assistant with access to a weather service and a knowledge base.',
    messages: history,
    // dollars too: reserved before each attempt, counted live, a too-long answer cut and kept (finish reason 'budget')
    prices: Object.fromEntries(models.map((m) => [m.id, DEMO.price])),
    budget: { maxModelCalls: 20, maxToolCalls: 20, maxUsd: DEMO.maxUsd, reserveOutputTokens: DEMO.reserveOutputTokens, onExhausted: 'finish' },
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
}

/** Builds the demo agent over the given providers (in order of preference) and the MCP server of its tools. */
export function createDemoAgent(providers: readonly ProviderConfig[], mcp: McpConfig): DemoAgent {
  const world = demoWorld();
  const { hub, breakers, capabilities } = world;
  const tools = mcpTools(mcp, { breakers, capabilities, hub });
  /** Fault switches posted and not yet answered: the next question waits for them. */
  let pending: Promise<void> = Promise.resolve();
  const admin = (change: Readonly<Record<string, unknown>>): Promise<void> => (pending = pending.catch(() => undefined).then(() => postMcpAdmin(mcp, change)));
  let slowSearch = false;
  /**
   * The tools, or none while the MCP server can't even list them (down before the first question):
   * then the tools capability is degraded, the model told, and the next question lists again.
   */
  const listTools = (): Promise<readonly AnyTool[]> =>
    tools().then(
      (list) => {
        capabilities.enable(MCP_BREAKER);
        return list;
      },
      (error: unknown) => {
        capabilities.disable(MCP_BREAKER, `the MCP server's tools could not be listed (${error instanceof Error ? error.message : String(error)})`);
        return [];
      },
    );
  const agent: DemoAgent = {
    hub,
    breakers,
    capabilities,
    get slowSearch() {
      return slowSearch;
    },
    set slowSearch(on: boolean) {
      slowSearch = on;
      void admin({ slowSearch: on }).catch(() => undefined); // the question after it says so, if it failed
    },
    mcpFault: (fault) => admin(fault),
    midStream: 'restart',
    ask: (history) =>
      defer(() => from(pending.then(listTools))).pipe(switchMap((mcpTools) => demoRun(world, providers.map(provider), mcpTools, history, agent.midStream))),
  };
  return agent;
}
