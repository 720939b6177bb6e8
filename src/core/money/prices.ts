/**
 * Money: what a model's tokens cost. A price list (`prices`, dollars per million tokens per model
 * id) is the user's — rxheal ships no prices of its own, since they change and differ per account —
 * and this module is the one place that turns a call's {@link Usage} into dollars, checks a price
 * list, and finds a model's price (a model without one is an error, never a silent $0).
 *
 * The rule, per call, with every count from its `usage` (see {@link UsageCodec}):
 *
 * - input read from the prompt cache: `cachedInputTokens × cachedInput` (default: `input`);
 * - input written to the prompt cache: `cacheWriteTokens × cacheWrite` (default: `input`);
 * - the rest of the input: `(inputTokens − cachedInputTokens − cacheWriteTokens) × input`;
 * - reasoning output: `reasoningTokens × reasoning` (default: `output`);
 * - the rest of the output: `(outputTokens − reasoningTokens) × output`;
 *
 * each divided by 1 000 000. Counts a provider reports inconsistently (cached more than the input)
 * are clamped so that no part is negative and the total never falls below the uncached input's.
 *
 * @module
 */
import type { Usage } from '../events/events.js';
import { InvalidOptionError } from '../errors/errors.js';

/**
 * One model's prices in dollars per million tokens. `input` and `output` are required; the others
 * default to them (`cachedInput` and `cacheWrite` to `input`, `reasoning` to `output`) — set them
 * where the provider bills them differently (Anthropic: cache reads 0.1×, 5-minute writes 1.25×;
 * OpenAI: cached input 0.1×–0.5×).
 *
 * @example
 * ```ts
 * const sonnet: ModelPrice = { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 };
 * ```
 */
export interface ModelPrice {
  /** Input tokens not read from or written to the prompt cache, $ per million. */
  readonly input: number;
  /** Output tokens (reasoning included unless `reasoning` is set), $ per million. */
  readonly output: number;
  /** Input tokens read from the prompt cache, $ per million. Default: `input`. */
  readonly cachedInput?: number;
  /** Input tokens written to the prompt cache, $ per million. Default: `input`. */
  readonly cacheWrite?: number;
  /** Reasoning output tokens, $ per million. Default: `output`. */
  readonly reasoning?: number;
}

/**
 * A price list: each model id (as the model reports it: `model.id`, the `model` a provider was
 * built with) to its {@link ModelPrice}.
 *
 * @example
 * ```ts
 * const prices: Prices = {
 *   'gpt-5-mini': { input: 0.25, cachedInput: 0.025, output: 2 },
 *   'claude-sonnet-4-5': { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 },
 * };
 * ```
 */
export type Prices = Readonly<Record<string, ModelPrice>>;

const PRICE_FIELDS: readonly (keyof ModelPrice)[] = ['input', 'output', 'cachedInput', 'cacheWrite', 'reasoning'];
const isPrice = (u: unknown): boolean => typeof u === 'number' && Number.isFinite(u) && u >= 0;

/**
 * Checks a price list and returns it: every entry an object with `input` and `output` (and, if
 * given, `cachedInput`, `cacheWrite`, `reasoning`), each a finite number ≥ 0, and no other field.
 * Throws {@link InvalidOptionError} naming the entry and field (`prices.gpt-5.output`).
 *
 * @example
 * ```ts
 * checkPrices('runAgent', { 'gpt-5-mini': { input: 0.25, output: 2 } }); // ok
 * checkPrices('runAgent', { 'gpt-5-mini': { input: 0.25 } }); // InvalidOptionError: option "prices.gpt-5-mini.output" …
 * ```
 */
export function checkPrices(target: string, prices: unknown, option = 'prices'): Prices {
  if (typeof prices !== 'object' || prices === null || Array.isArray(prices)) {
    throw new InvalidOptionError(
      target,
      option,
      prices,
      'an object of model id → { input, output, cachedInput?, cacheWrite?, reasoning? } ($ per million tokens)',
    );
  }
  for (const [id, price] of Object.entries(prices)) {
    const at = `${option}.${id}`;
    if (typeof price !== 'object' || price === null || Array.isArray(price)) {
      throw new InvalidOptionError(target, at, price, 'an object { input, output, cachedInput?, cacheWrite?, reasoning? } ($ per million tokens)');
    }
    for (const key of Object.keys(price)) {
      if (!(PRICE_FIELDS as readonly string[]).includes(key))
        throw new InvalidOptionError(target, `${at}.${key}`, (price as Record<string, unknown>)[key], `absent (a price has ${PRICE_FIELDS.join(', ')})`);
    }
    for (const key of PRICE_FIELDS) {
      const value = (price as Record<string, unknown>)[key];
      const required = key === 'input' || key === 'output';
      if ((required || value !== undefined) && !isPrice(value))
        throw new InvalidOptionError(target, `${at}.${key}`, value, 'a finite number >= 0 ($ per million tokens)');
    }
  }
  return prices as Prices;
}

/**
 * A model's price from a price list; a model the list does not name is an
 * {@link InvalidOptionError} (`option` names where the list came from), never a silent $0.
 *
 * @example
 * ```ts
 * const price = priceOf('runAgent', prices, 'gpt-5-mini'); // { input: 0.25, … }
 * priceOf('runAgent', prices, 'gpt-9'); // InvalidOptionError: option "prices" must be … a price for "gpt-9"
 * ```
 */
export function priceOf(target: string, prices: Prices, modelId: string, option = 'prices'): ModelPrice {
  const price = Object.prototype.hasOwnProperty.call(prices, modelId) ? prices[modelId] : undefined;
  if (price === undefined) {
    const named = Object.keys(prices);
    throw new InvalidOptionError(
      target,
      option,
      named,
      `a price list with a price for model "${modelId}" (it names ${named.length === 0 ? 'none' : named.map((n) => `"${n}"`).join(', ')})`,
    );
  }
  return price;
}

/**
 * What one call cost in dollars, by the rule in this module's header.
 *
 * @example
 * ```ts
 * const price: ModelPrice = { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 };
 * costUsd(price, { inputTokens: 10_000, cachedInputTokens: 8_000, outputTokens: 500 });
 * // 2 000 × 3 + 8 000 × 0.3 + 500 × 15 = 15 900 / 1e6 = $0.0159
 * ```
 */
export function costUsd(price: ModelPrice, usage: Usage): number {
  const input = Math.max(0, usage.inputTokens);
  const cached = Math.min(input, Math.max(0, usage.cachedInputTokens ?? 0));
  const written = Math.min(input - cached, Math.max(0, usage.cacheWriteTokens ?? 0));
  const output = Math.max(0, usage.outputTokens);
  const reasoning = Math.min(output, Math.max(0, usage.reasoningTokens ?? 0));
  const micro =
    (input - cached - written) * price.input +
    cached * (price.cachedInput ?? price.input) +
    written * (price.cacheWrite ?? price.input) +
    (output - reasoning) * price.output +
    reasoning * (price.reasoning ?? price.output);
  return micro / 1_000_000;
}
