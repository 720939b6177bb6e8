/**
 * One retry loop under the OpenAI Agents SDK: {@link withRxhealRetryAdvice} gives an Agents SDK
 * model over {@link toAiSdk} (`aisdk(toAiSdk(…))` from `@openai/agents-extensions`) the retry
 * advice that keeps the runner from re-running a chain rxheal already retried. By shape: rxheal
 * imports nothing of the Agents SDK.
 *
 * @module
 */
import { InvalidOptionError } from '../core/errors/errors.js';
import { errorText } from '../core/errors/sanitize.js';
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the toAiSdk the module's doc links to
import type { toAiSdk } from './to.js';

/**
 * What {@link withRxhealRetryAdvice} needs of an OpenAI Agents SDK `Model` (the SDK's own type
 * fits): its two request methods. Typed by shape, so rxheal depends on no Agents SDK package.
 *
 * @example
 * ```ts
 * const model: AgentsModelLike = { getResponse: async () => ({}), getStreamedResponse: async function* () {} };
 * ```
 */
export interface AgentsModelLike {
  getResponse(request: never): Promise<unknown>;
  getStreamedResponse(request: never): AsyncIterable<unknown>;
}

/**
 * The Agents SDK's `ModelRetryAdvice` as {@link withRxhealRetryAdvice} gives it for every failed
 * model call: no retry suggested, and a replay marked unsafe — which the runner enforces even over
 * a retry `policy` that says yes (`() => true`), unless the policy's decision sets
 * `approveUnsafeReplay`; on a streamed run it vetoes the retry before any policy runs.
 *
 * @example
 * ```ts
 * const advice: RxhealRetryAdvice = { suggested: false, replaySafety: 'unsafe', reason: 'rxheal already retried …' };
 * ```
 */
export interface RxhealRetryAdvice {
  readonly suggested: false;
  readonly replaySafety: 'unsafe';
  readonly reason: string;
}

/**
 * An Agents SDK model with rxheal's retry advice (what {@link withRxhealRetryAdvice} returns).
 *
 * @example
 * ```ts
 * const advised: WithRxhealRetryAdvice<AgentsModelLike> = withRxhealRetryAdvice(model);
 * advised.getRetryAdvice({ error: new Error('all failed') }).replaySafety; // 'unsafe'
 * ```
 */
export type WithRxhealRetryAdvice<M> = M & { getRetryAdvice(args: { readonly error: unknown }): RxhealRetryAdvice };

/** The advice for one failed call of a model over an rxheal chain. */
function adviceFor(error: unknown): RxhealRetryAdvice {
  return {
    suggested: false,
    replaySafety: 'unsafe',
    reason: `rxheal already retried and fell back inside this model; a replay would run that whole chain again (${errorText(error, 300)})`,
  };
}

/**
 * The OpenAI Agents SDK model `model` — `aisdk(toAiSdk(…))` — with rxheal's retry advice: its
 * `getRetryAdvice` answers every failed call with {@link RxhealRetryAdvice} (no retry suggested, a
 * replay unsafe), so the runner's retry (`modelSettings.retry`: off by default; with a `policy`
 * it re-runs a failed call) never re-runs the chain inside — per-model retries, breakers,
 * fallback — that already gave up: one retry loop, rxheal's. Without it, `retry: { maxRetries: 2,
 * policy: () => true }` runs the whole healed chain three times (the specs count it at the
 * server). `retryPolicies.providerSuggested()` reads the same advice as a veto.
 *
 * Every other member is the model's own (its methods called on it: the SDK's models keep private
 * state); the model itself is not changed.
 *
 * @example
 * ```ts
 * import { Agent, run } from '@openai/agents';
 * import { aisdk } from '@openai/agents-extensions/ai-sdk';
 * import { fallbackModel, openAICompatibleModel } from 'rxheal';
 * import { toAiSdk, withRxhealRetryAdvice } from 'rxheal/ai-sdk';
 *
 * const model = withRxhealRetryAdvice(aisdk(toAiSdk(fallbackModel([
 *   openAICompatibleModel({ baseURL: 'https://api.openai.com/v1', model: 'gpt-4o', apiKey: process.env.OPENAI_API_KEY }),
 *   openAICompatibleModel({ baseURL: 'https://api.groq.com/openai/v1', model: 'llama-3.3-70b-versatile', apiKey: process.env.GROQ_API_KEY }),
 * ], { midStream: 'continue' }))));
 * const result = await run(new Agent({ name: 'Assistant', model }), 'Hello');
 * ```
 * @throws {InvalidOptionError} for something that is not an Agents SDK model (no `getResponse` and `getStreamedResponse`).
 */
export function withRxhealRetryAdvice<M extends AgentsModelLike>(model: M): WithRxhealRetryAdvice<M> {
  const m = model as Partial<Record<'getResponse' | 'getStreamedResponse', unknown>> | null | undefined;
  if (typeof m !== 'object' || m === null || typeof m.getResponse !== 'function' || typeof m.getStreamedResponse !== 'function') {
    throw new InvalidOptionError(
      'withRxhealRetryAdvice',
      'model',
      model,
      'an OpenAI Agents SDK model ({ getResponse, getStreamedResponse }: aisdk(toAiSdk(…)))',
    );
  }
  const getRetryAdvice = (args: { readonly error: unknown }): RxhealRetryAdvice => adviceFor(args?.error);
  return new Proxy(model, {
    get(target, key) {
      if (key === 'getRetryAdvice') return getRetryAdvice;
      const value: unknown = Reflect.get(target, key, target);
      // bound to the model: its methods read private fields, which a proxy as `this` lacks
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
    has: (target, key) => key === 'getRetryAdvice' || Reflect.has(target, key),
  }) as WithRxhealRetryAdvice<M>;
}
