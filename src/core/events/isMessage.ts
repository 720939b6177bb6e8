/**
 * The shape of a conversation {@link Message}, as a plain predicate: what `runAgent` checks its
 * `messages` option with. `MessageCodec` (core/events/events.ts) describes the same shape for decoding
 * data that crosses a boundary; this one exists so that an application that only configures an
 * agent does not bundle io-ts (≈ 4 kB min+gz) for an option check. The two must agree:
 * spec/core/events/isMessage.spec.ts checks them against each other on arbitrary input.
 *
 * @module
 */
import type { Message } from './events.js';

/** io-ts's `UnknownRecord`: a plain object (not an array, not null). */
const isRecord = (u: unknown): u is Record<string, unknown> => {
  const tag = Object.prototype.toString.call(u);
  return tag === '[object Object]' || tag === '[object Window]';
};
const isString = (u: unknown): u is string => typeof u === 'string';
/** io-ts's `UnknownRecord` (what `providerMetadata` is). */
const isUnknownRecord = (u: unknown): boolean => isRecord(u);
const isBoolean = (u: unknown): u is boolean => typeof u === 'boolean';
const optional = (u: unknown, is: (v: unknown) => boolean): boolean => u === undefined || is(u);
const isToolCall = (u: unknown): boolean => isRecord(u) && isString(u['id']) && isString(u['name']) && optional(u['providerMetadata'], isUnknownRecord);
const isReasoningPart = (u: unknown): boolean =>
  isRecord(u) &&
  isString(u['text']) &&
  optional(u['signature'], isString) &&
  optional(u['redactedData'], isString) &&
  optional(u['providerMetadata'], isUnknownRecord);

/**
 * Whether `u` is a conversation message (`system`, `user`, `assistant` or `tool`, with the
 * fields each needs; extra fields are allowed, as `MessageCodec.is` allows them).
 *
 * @example
 * ```ts
 * isMessage({ role: 'user', content: 'hi' }); // true
 * isMessage({ role: 'tool', content: '42' }); // false: toolCallId and toolName are missing
 * ```
 */
export function isMessage(u: unknown): u is Message {
  if (!isRecord(u) || !isString(u['content'])) return false;
  switch (u['role']) {
    case 'system':
    case 'user':
      return true;
    case 'assistant':
      return (
        optional(u['toolCalls'], (v) => Array.isArray(v) && v.every(isToolCall)) &&
        optional(u['model'], isString) &&
        optional(u['validated'], isBoolean) &&
        optional(u['reasoning'], (v) => Array.isArray(v) && v.every(isReasoningPart))
      );
    case 'tool':
      return isString(u['toolCallId']) && isString(u['toolName']) && optional(u['isError'], isBoolean);
    default:
      return false;
  }
}
