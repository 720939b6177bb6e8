/**
 * The request's `maxOutputTokens`, checked where a provider path builds what it sends.
 *
 * @module
 */
import { InvalidOptionError } from '../errors/errors.js';
import type { ModelRequest } from './model.js';

/**
 * A request's `maxOutputTokens` (undefined when absent), checked: anything but a positive integer
 * is an {@link InvalidOptionError} naming `request.maxOutputTokens` and the value — never sent,
 * never dropped silently. `target` names the provider path (`'openAICompatibleModel'`…).
 *
 * @example
 * ```ts
 * requestMaxOutputTokens('openAICompatibleModel', { messages, tools: [], maxOutputTokens: 512 }); // 512
 * requestMaxOutputTokens('openAICompatibleModel', { messages, tools: [], maxOutputTokens: 0 }); // throws InvalidOptionError
 * ```
 * @throws {InvalidOptionError} for a `maxOutputTokens` that is present and not a positive integer.
 * @internal
 */
export function requestMaxOutputTokens(target: string, request: ModelRequest): number | undefined {
  const n: unknown = request.maxOutputTokens;
  if (n === undefined) return undefined;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) {
    throw new InvalidOptionError(target, 'request.maxOutputTokens', n, 'a positive integer (the most output tokens of this request) or absent');
  }
  return n;
}
