/**
 * What an Anthropic Messages stream says a call cost: the usage fields of `message_start` and
 * `message_delta` (each field from the last event that carried it), read into rxheal's
 * {@link Usage} — input with the prompt cache's reads and writes, their shares, reasoning tokens,
 * and the samplings of `usage.iterations` (a server-side fallback, a compaction).
 *
 * @module
 */
import type { Usage } from '../core/events/events.js';
import { isObject } from './sse.js';

const count = (holder: Record<string, unknown>, key: string): number | undefined => {
  const value = holder[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
};

/** One sampling of `usage.iterations`: its tokens. */
interface Iteration {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
}

/**
 * The usage of one Messages stream, field by field. Without `iterations`: input =
 * `input_tokens` + `cache_creation_input_tokens` + `cache_read_input_tokens`, output =
 * `output_tokens`. With `iterations` (each sampling the API ran for the call — the blocked
 * attempt and the fallback that served it, a compaction and the answer): every field is the sum
 * over them, so a budget counts each token billed, and `iterations` is their number.
 *
 * @example
 * ```ts
 * const usage = new AnthropicUsage();
 * usage.read({ input_tokens: 10, cache_read_input_tokens: 90, output_tokens: 1 });
 * usage.read({ output_tokens: 20 });
 * usage.total(); // { inputTokens: 100, outputTokens: 20, cachedInputTokens: 90 }
 * ```
 */
export class AnthropicUsage {
  private input: number | undefined;
  private cacheWrite: number | undefined;
  private cacheRead: number | undefined;
  private output: number | undefined;
  private reasoning: number | undefined;
  private iterations: readonly Iteration[] | undefined;

  /** A `usage` object of `message_start` or `message_delta`: each field it carries replaces the one before. */
  read(usage: unknown): void {
    if (!isObject(usage)) return;
    this.input = count(usage, 'input_tokens') ?? this.input;
    this.cacheWrite = count(usage, 'cache_creation_input_tokens') ?? this.cacheWrite;
    this.cacheRead = count(usage, 'cache_read_input_tokens') ?? this.cacheRead;
    this.output = count(usage, 'output_tokens') ?? this.output;
    const details = usage['output_tokens_details'];
    if (isObject(details)) this.reasoning = count(details, 'thinking_tokens') ?? this.reasoning;
    const iterations = usage['iterations'];
    if (Array.isArray(iterations) && iterations.length > 0) {
      this.iterations = iterations.filter(isObject).map((i) => ({
        input: count(i, 'input_tokens') ?? 0,
        output: count(i, 'output_tokens') ?? 0,
        cacheRead: count(i, 'cache_read_input_tokens') ?? 0,
        cacheWrite: count(i, 'cache_creation_input_tokens') ?? 0,
      }));
    }
  }

  /** The call's usage; `undefined` when no event carried input tokens. Cache and reasoning counts of zero are left out. */
  total(): Usage | undefined {
    const iterations = this.iterations;
    if (iterations !== undefined && iterations.length > 0) {
      const sum = (key: keyof Iteration): number => iterations.reduce((n, i) => n + i[key], 0);
      const cacheRead = sum('cacheRead');
      const cacheWrite = sum('cacheWrite');
      return this.withDetails({ inputTokens: sum('input') + cacheRead + cacheWrite, outputTokens: sum('output') }, cacheRead, cacheWrite, iterations.length);
    }
    const { input, cacheWrite, cacheRead, output } = this;
    if (input === undefined && cacheWrite === undefined && cacheRead === undefined) return undefined;
    return this.withDetails({ inputTokens: (input ?? 0) + (cacheWrite ?? 0) + (cacheRead ?? 0), outputTokens: output ?? 0 }, cacheRead, cacheWrite, 1);
  }

  private withDetails(base: Usage, cacheRead: number | undefined, cacheWrite: number | undefined, iterations: number): Usage {
    // assigned one by one: only what the API reported and says something (a zero is left out)
    const usage: { -readonly [K in keyof Usage]: Usage[K] } = base;
    if (cacheRead) usage.cachedInputTokens = cacheRead;
    if (cacheWrite) usage.cacheWriteTokens = cacheWrite;
    if (this.reasoning) usage.reasoningTokens = this.reasoning;
    if (iterations > 1) usage.iterations = iterations;
    return usage;
  }
}
