/**
 * The request's `promptCacheKey`, checked where a provider path builds what it sends.
 *
 * @module
 */
import { InvalidOptionError } from '../errors/errors.js';
import type { ModelRequest } from './model.js';

/**
 * A request's `promptCacheKey` (undefined when absent), checked: anything but a non-empty string
 * is an {@link InvalidOptionError} naming `request.promptCacheKey` and the value — never sent,
 * never dropped silently. `target` names the provider path (`'openAICompatibleModel'`…).
 *
 * @example
 * ```ts
 * requestPromptCacheKey('openAICompatibleModel', { messages, tools: [], promptCacheKey: 'conversation-42' }); // 'conversation-42'
 * requestPromptCacheKey('openAICompatibleModel', { messages, tools: [], promptCacheKey: '' }); // throws InvalidOptionError
 * ```
 * @throws {InvalidOptionError} for a `promptCacheKey` that is present and not a non-empty string.
 * @internal
 */
export function requestPromptCacheKey(target: string, request: ModelRequest): string | undefined {
  const key: unknown = request.promptCacheKey;
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key === '') {
    throw new InvalidOptionError(target, 'request.promptCacheKey', key, 'a non-empty string (the key the prompt cache routes by) or absent');
  }
  return key;
}
