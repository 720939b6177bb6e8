/**
 * The agent frameworks the agent specs drive — the OpenAI Agents SDK (`@openai/agents`, with
 * `aisdk` from `@openai/agents-extensions`) and Mastra (`@mastra/core` 1.x) — and what those specs
 * share: an rxheal chain over two local providers, the weather tool, the fault cases.
 *
 * The frameworks need Node ≥ 22 (`@openai/agents` depends on `openai` 7; `@mastra/core` 1.x says
 * `>=22.13`), so they live with the 7.x lines in spec/support/majors (installed by
 * {@link nextMajors}) and load through majors/agents.mjs; on Node 20 {@link agentFrameworks} gives
 * the reason and the specs report their cases as skipped — `.ci/run` runs them on Node 22 and 24.
 *
 * The root project has none of their types: what the specs call is typed here, by hand.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { anthropicModel } from '../../src/providers/anthropic.js';
import type { Model } from '../../src/core/model/model.js';
import type { Fault, LocalProvider, RecordedRequest } from '../../src/server/index.js';
import { nextMajors } from './nextMajors.js';
import { tsBlocks } from './tsBlocks.js';

const DIR = fileURLToPath(new URL('./majors/', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The part of a zod schema builder the specs use. */
interface Zod {
  object(shape: Record<string, unknown>): unknown;
  string(): unknown;
  enum(values: readonly string[]): unknown;
}

/** An Agents SDK run's result (plain or streamed), as far as the specs read it. */
export interface AgentsRunResult {
  readonly finalOutput?: unknown;
}
export interface AgentsStreamedRunResult extends AgentsRunResult {
  toTextStream(): AsyncIterable<string>;
  readonly completed: Promise<void>;
  readonly error?: unknown;
}

/** Mastra's `generate()` result and `stream()` output, as far as the specs read them. */
export interface MastraGenerated {
  readonly text: string;
  readonly finishReason?: string;
  readonly error?: unknown;
}
export interface MastraStreamed {
  readonly text: Promise<string>;
  readonly textStream: AsyncIterable<string>;
  readonly finishReason: Promise<string | undefined>;
  readonly error?: unknown;
  consumeStream(): Promise<void>;
}
export interface MastraAgentLike {
  generate(prompt: string, options?: { abortSignal?: AbortSignal }): Promise<MastraGenerated>;
  stream(prompt: string, options?: { abortSignal?: AbortSignal }): Promise<MastraStreamed>;
  __setLogger(logger: unknown): void;
}

/** The frameworks, loaded. */
export interface AgentFrameworks {
  /** `new OpenAIAgent({ name, instructions, model, tools, modelSettings })`. */
  readonly OpenAIAgent: new (config: Record<string, unknown>) => object;
  readonly run: {
    (agent: object, input: string, options?: { signal?: AbortSignal; stream?: false }): Promise<AgentsRunResult>;
    (agent: object, input: string, options: { signal?: AbortSignal; stream: true }): Promise<AgentsStreamedRunResult>;
  };
  readonly tool: (config: Record<string, unknown>) => object;
  readonly aisdk: (model: unknown) => { getResponse(request: never): Promise<unknown>; getStreamedResponse(request: never): AsyncIterable<unknown> };
  readonly MastraAgent: new (config: Record<string, unknown>) => MastraAgentLike;
  readonly createTool: (config: Record<string, unknown>) => object;
  readonly noopLogger: unknown;
  readonly z: Zod;
  /** The installed versions, by package name, for the specs' titles and the README. */
  readonly versions: Readonly<Record<string, string>>;
}

export type AgentFrameworksResult = { readonly ok: true; readonly frameworks: AgentFrameworks } | { readonly ok: false; readonly reason: string };

/** The agent frameworks' packages (only spec/support/majors has them). */
export const FRAMEWORK_PACKAGES = ['@openai/agents', '@openai/agents-extensions', '@mastra/core'];

/** Whether code imports an agent framework (a package or subpath of {@link FRAMEWORK_PACKAGES}). */
export const importsFramework = (code: string): boolean => FRAMEWORK_PACKAGES.some((p) => new RegExp(`from '${p}(/[^']*)?'`).test(code));

/** The durable-execution engines' SDKs (spec/support/majors: Restate's needs Node ≥ 22), which spec/docs/durableEngines.spec.ts compiles guide blocks against. */
export const ENGINE_PACKAGES = ['@dbos-inc/dbos-sdk', '@restatedev/restate-sdk'];

/** Whether code imports an engine's SDK ({@link ENGINE_PACKAGES}). */
export const importsEngine = (code: string): boolean => ENGINE_PACKAGES.some((p) => code.includes(` from '${p}'`));

/** An agent framework of the README, by its snippet: the OpenAI Agents SDK or Mastra. */
export type FrameworkName = 'agents' | 'mastra';

/** Which framework a README snippet or install line is for (Mastra's names `@mastra/core`). */
export const frameworkOf = (text: string): FrameworkName => (text.includes('@mastra/core') ? 'mastra' : 'agents');

/** The frameworks guide's blocks that import an agent framework ("With the OpenAI Agents SDK and Mastra"), by framework. */
export function frameworkSnippets(): { framework: FrameworkName; line: number; code: string }[] {
  return tsBlocks('docs/guides/frameworks.md', readFileSync(join(ROOT, 'docs', 'guides', 'frameworks.md'), 'utf8'))
    .filter((s) => importsFramework(s.code))
    .map((s) => ({ framework: frameworkOf(s.code), line: s.line, code: s.code }));
}

const PACKAGES = [...FRAMEWORK_PACKAGES, 'ai-7'];

let loading: Promise<AgentFrameworksResult> | undefined;

/** The agent frameworks (installed with the 7.x lines on first use), or why they can't run here (printed once, by nextMajors). */
export function agentFrameworks(): Promise<AgentFrameworksResult> {
  loading ??= (async (): Promise<AgentFrameworksResult> => {
    const next = await nextMajors();
    if (!next.ok) return { ok: false, reason: next.reason };
    const loaded = (await import(pathToFileURL(join(DIR, 'agents.mjs')).href)) as Omit<AgentFrameworks, 'versions'>;
    const versions: Record<string, string> = {};
    for (const name of PACKAGES) {
      const pkg = JSON.parse(readFileSync(join(DIR, 'node_modules', name, 'package.json'), 'utf8')) as { name: string; version: string };
      versions[pkg.name] = pkg.version;
    }
    return { ok: true, frameworks: { ...loaded, versions } };
  })();
  return loading;
}

/** The weather question the scripted assistant answers with a `get_weather` call, then {@link WEATHER_ANSWER}. */
export const WEATHER = "What's the weather in Paris?";
export const WEATHER_ANSWER = 'It is 22 °C and sunny in Paris.';

/** What the weather tool returns (the scripted assistant reads it back). */
export const weatherOf = (city: string): { city: string; temperature: number; condition: string } => ({ city, temperature: 22, condition: 'sunny' });

/**
 * The body of a framework's weather tool: counts its runs, and switches on the fault armed for
 * the answer turn (a case's `inAnswer`) at the primary — the tool runs between the two turns.
 */
export class WeatherTool {
  runs = 0;
  private inAnswer: Fault | undefined;
  constructor(private readonly primary: () => LocalProvider) {
    afterEach(() => (this.inAnswer = undefined));
  }
  /** The tool's input schema, in the framework's zod. */
  static schema = (z: Zod): unknown => z.object({ city: z.string(), units: z.enum(['celsius', 'fahrenheit']) });
  arm(fault: Fault | undefined): void {
    this.inAnswer = fault;
  }
  run(city: string): ReturnType<typeof weatherOf> {
    this.runs += 1;
    if (this.inAnswer) this.primary().faults.set(this.inAnswer);
    this.inAnswer = undefined;
    return weatherOf(city);
  }
}

/**
 * The chain the specs heal with: the primary (OpenAI-compatible) and the backup (Anthropic), each
 * retried twice (10 ms apart) before the chain moves on, an answer cut mid-stream continued by the
 * next model. No breakers: every case starts from the primary.
 */
export function healingChain(primary: LocalProvider, backup: LocalProvider): Model {
  return fallbackModel(
    [
      openAICompatibleModel({ baseURL: primary.openAIBaseURL, model: 'local', id: 'primary' }),
      anthropicModel({ baseURL: backup.anthropicBaseURL, model: 'local', apiKey: 'local', id: 'backup' }),
    ],
    {
      midStream: 'continue',
      perModel: (_id, stream$, { hub, target }) => stream$.pipe(retryWithBackoff({ hub, target, maxRetries: 2, initialBackoffMs: 10 })),
    },
  );
}

/**
 * One fault case of the weather question (a tool turn, then the answer turn): the faults switched
 * on at each provider before the run, and `inAnswer`, switched on at the primary when the tool
 * runs — between the two turns, so it acts on the answer turn.
 */
export interface FaultCase {
  readonly title: string;
  readonly primary?: Fault;
  readonly backup?: Fault;
  readonly inAnswer?: Fault;
  /** Whether the run still answers (both down: it fails). */
  readonly heals: boolean;
  /** The requests each provider sees in the run (the weather question's two turns). */
  readonly requests: { readonly primary: number; readonly backup: number };
}

/**
 * The fault cases every framework spec runs, with the requests each provider sees: a 503 once
 * (retried: 1 + 2), a reset mid-answer (the backup continues it), a reset in the tool turn (after
 * 2 pieces of the tool call: retried), the primary down (3 tries a turn, then the backup), both
 * down (3 + 3, then the run fails).
 */
export const FAULT_CASES: readonly FaultCase[] = [
  { title: 'a 503 once', primary: { kind: 'status', status: 503, times: 1 }, heals: true, requests: { primary: 3, backup: 0 } },
  { title: 'a reset mid-answer', inAnswer: { kind: 'reset', afterChunks: 4, times: 1 }, heals: true, requests: { primary: 2, backup: 1 } },
  { title: 'a reset in the tool turn', primary: { kind: 'reset', afterChunks: 2, times: 1 }, heals: true, requests: { primary: 3, backup: 0 } },
  { title: 'the primary down', primary: { kind: 'down' }, heals: true, requests: { primary: 6, backup: 2 } },
  { title: 'both down', primary: { kind: 'down' }, backup: { kind: 'down' }, heals: false, requests: { primary: 3, backup: 3 } },
];

/** Switches on a case's faults before its run. */
export function armFaults(c: FaultCase, primary: LocalProvider, backup: LocalProvider): void {
  if (c.primary) primary.faults.set(c.primary);
  if (c.backup) backup.faults.set(c.backup);
}

/** What `body` resolved with, and the requests each provider saw while it ran. */
export async function counted<T>(
  primary: LocalProvider,
  backup: LocalProvider,
  body: () => Promise<T>,
): Promise<{ result: T; primary: number; backup: number }> {
  const [p, b] = [primary.requests.length, backup.requests.length];
  const result = await body();
  return { result, primary: primary.requests.length - p, backup: backup.requests.length - b };
}

/**
 * Starts a call on the slow provider (`start`, given the signal to pass), aborts it once the
 * provider has streamed a chunk, and resolves with the provider's record of that request once it
 * ended (`end: 'client-closed'` when the abort really closed it). Whatever the call ends with is
 * swallowed: the abort is the point.
 */
export async function abortMidAnswer(slow: LocalProvider, start: (signal: AbortSignal) => Promise<unknown>): Promise<RecordedRequest> {
  const controller = new AbortController();
  const before = slow.requests.length;
  const running = start(controller.signal).catch(() => undefined);
  await until(() => slow.requests.length > before && slow.requests.at(-1)!.chunks > 0, 'the slow provider to stream');
  controller.abort();
  const record = await slow.waitForRequest((r) => Number(r.id.slice(4)) > before);
  await running;
  return record;
}

/** Resolves once `check` holds, looking every 5 ms (a spec's wait for the server to see a request start). */
export async function until(check: () => boolean, what: string, ms = 5_000): Promise<void> {
  for (let waited = 0; !check(); waited += 5) {
    if (waited > ms) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
