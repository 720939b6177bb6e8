/**
 * The options of `instrument()`, their checks, and which GenAI conventions it speaks: the names
 * of before the opt-in (the default), or the current ones when the user opts in, through
 * `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` or the `semconv` option.
 *
 * @module
 */
import type { HrTime, Meter, Tracer } from '@opentelemetry/api';
import type { SchedulerLike } from 'rxjs';
import { check, NonEmptyString, oneOf, Scheduler } from '../core/errors/options.js';

/**
 * Which GenAI semantic conventions `instrument()` speaks: `'legacy'` — what rxheal/otel emitted
 * before the opt-in (spans per call, `gen_ai.system`, no standard metrics) — or `'latest'`: the
 * current conventions (`gen_ai.provider.name`, an `invoke_agent` span for the run, a logical
 * `chat` span with one child span per provider attempt, `gen_ai.client.operation.duration` and
 * `gen_ai.client.token.usage`, MCP attributes on MCP tools).
 *
 * @example
 * ```ts
 * const semconv: Semconv = 'latest';
 * instrument(run$, { semconv });
 * ```
 */
export type Semconv = 'legacy' | 'latest';

/**
 * The MCP server some tools come from, for the MCP attributes on their `execute_tool` spans
 * (`mcp.method.name: 'tools/call'`, `mcp.protocol.version`, `mcp.session.id`; `'latest'` only). A
 * tool is the server's when its name is in `tools` or starts with `prefix` (the `prefix` given to
 * `fromMcp`).
 *
 * @example
 * ```ts
 * const weather: McpServerTelemetry = { prefix: 'wx_', protocolVersion: '2025-06-18' };
 * instrument(run$, { semconv: 'latest', mcp: [weather] });
 * ```
 */
export interface McpServerTelemetry {
  /** The server's tools: every tool whose name starts with it. */
  readonly prefix?: string;
  /** The server's tools, by name. */
  readonly tools?: readonly string[];
  /** `mcp.protocol.version`: the protocol revision the session speaks (`2025-06-18`, …). */
  readonly protocolVersion?: string;
  /** `mcp.session.id`: the `Mcp-Session-Id` of a session that has one (a protocol before 2026-07-28). */
  readonly sessionId?: string;
}

/**
 * Options of `instrument()`.
 *
 * @example
 * ```ts
 * const options: InstrumentOptions = { tracer: provider.getTracer('my-agent'), meter: meterProvider.getMeter('my-agent') };
 * instrument(hub.events$, options);
 * ```
 */
export interface InstrumentOptions {
  /** Where spans go. Defaults to `trace.getTracer('rxheal')` (the global tracer provider). */
  readonly tracer?: Tracer;
  /** Where metrics go. Defaults to `metrics.getMeter('rxheal')` (the global meter provider). */
  readonly meter?: Meter;
  /**
   * The clock of events without an `at` (retries, fallbacks, …), and of the end-of-instant
   * action that ends spans. Use the scheduler given to `runAgent`. Defaults to `asyncScheduler`.
   */
  readonly scheduler?: SchedulerLike;
  /**
   * The GenAI conventions spoken (see {@link Semconv}). Defaults to `'latest'` when the
   * environment variable `OTEL_SEMCONV_STABILITY_OPT_IN` (a comma-separated list, read when
   * `instrument()` is called) holds `gen_ai_latest_experimental`, else `'legacy'`.
   */
  readonly semconv?: Semconv;
  /**
   * The provider of each model, by model id (`{ gpt: 'openai', claude: 'anthropic' }`): its
   * spans' and metrics' `gen_ai.provider.name` (`gen_ai.system` under `'legacy'`). A model not
   * named here has none.
   */
  readonly providers?: Readonly<Record<string, string>>;
  /** `gen_ai.agent.name` of the run's `invoke_agent` span, and its name's end (`'latest'`). */
  readonly agentName?: string;
  /** The MCP servers tools come from (see {@link McpServerTelemetry}; `'latest'`). */
  readonly mcp?: readonly McpServerTelemetry[];
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u);
const isStringList = (u: unknown): boolean => Array.isArray(u) && u.every((s) => typeof s === 'string');
const optionalString = (u: unknown): boolean => u === undefined || typeof u === 'string';

/**
 * The checks of {@link InstrumentOptions}.
 *
 * @example
 * ```ts
 * const o = validateOptions('instrument', props, { semconv: 'latest' });
 * ```
 */
export const props = {
  tracer: check(
    'an OpenTelemetry Tracer (startSpan())',
    (u): u is Tracer => typeof u === 'object' && u !== null && typeof (u as Tracer).startSpan === 'function',
  ),
  meter: check(
    'an OpenTelemetry Meter (createCounter(), createHistogram())',
    (u): u is Meter =>
      typeof u === 'object' && u !== null && typeof (u as Meter).createCounter === 'function' && typeof (u as Meter).createHistogram === 'function',
  ),
  scheduler: Scheduler,
  semconv: oneOf('legacy', 'latest'),
  providers: check('an object of model id → provider name (strings)', (u): u is Readonly<Record<string, string>> =>
    isObject(u) ? Object.values(u).every((v) => typeof v === 'string' && v !== '') : false,
  ),
  agentName: NonEmptyString,
  mcp: check(
    'a list of MCP servers ({ prefix?, tools?, protocolVersion?, sessionId? }, each with prefix or tools)',
    (u): u is readonly McpServerTelemetry[] =>
      Array.isArray(u) &&
      u.every(
        (s) =>
          isObject(s) &&
          (typeof s.prefix === 'string' || isStringList(s.tools)) &&
          (s.tools === undefined || isStringList(s.tools)) &&
          optionalString(s.prefix) &&
          optionalString(s.protocolVersion) &&
          optionalString(s.sessionId) &&
          Object.keys(s).every((k) => ['prefix', 'tools', 'protocolVersion', 'sessionId'].includes(k)),
      ),
  ),
};

/**
 * The value of `OTEL_SEMCONV_STABILITY_OPT_IN` (a comma-separated list) that opts in to the current
 * GenAI conventions.
 *
 * @example
 * ```ts
 * process.env.OTEL_SEMCONV_STABILITY_OPT_IN = GEN_AI_OPT_IN; // before instrument() is called
 * ```
 */
export const GEN_AI_OPT_IN = 'gen_ai_latest_experimental';

/**
 * The conventions spoken: the option, else the environment's opt-in, read now.
 *
 * @example
 * ```ts
 * semconvOf(undefined); // 'latest' with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental, else 'legacy'
 * ```
 */
export function semconvOf(option: Semconv | undefined): Semconv {
  if (option !== undefined) return option;
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.OTEL_SEMCONV_STABILITY_OPT_IN;
  return env !== undefined && env.split(',').some((v) => v.trim() === GEN_AI_OPT_IN) ? 'latest' : 'legacy';
}

/**
 * Scheduler milliseconds as HrTime, so the SDK never reads a small (virtual) time as performance-relative.
 *
 * @example
 * ```ts
 * hrTime(1500); // [1, 500_000_000]
 * ```
 */
export function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}
