/**
 * Token estimates for money budgets: what a request's input will probably be billed as before the
 * provider says, and what a turn's output has cost so far while it streams. Both err on the high
 * side, since a reservation that is too small is what lets a budget overshoot; the provider's
 * `usage` replaces them as soon as it arrives.
 *
 * The rule: **one token per 3 bytes of UTF-8**, rounded up, plus 4 tokens per message. English
 * prose runs at about 4–5 bytes per token with OpenAI's and Anthropic's tokenizers, code at 3–4,
 * CJK at about 3 (one character, one token): the rule over-reserves English by about a third and
 * is about right for CJK. The input counts every message's text, its tool calls' names and
 * arguments (as JSON), its reasoning's text, and every tool's name, description and parameters
 * (as JSON); the output counts text and reasoning deltas and tool calls' arguments. Linear in the
 * text, no tokenizer shipped.
 *
 * @module
 */
import type { Message, TurnEvent } from '../events/events.js';

/** Bytes of UTF-8 per estimated token. */
const BYTES_PER_TOKEN = 3;
/** Tokens a message costs beyond its text (role, separators). */
const PER_MESSAGE = 4;

/**
 * The UTF-8 length of `text`, counted without encoding it.
 *
 * @example
 * ```ts
 * utf8Length('héllo'); // 6
 * ```
 */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      // a surrogate pair: one code point of four bytes
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Estimated tokens of `text` by the module's rule (bytes ÷ 3, rounded up).
 *
 * @example
 * ```ts
 * estimateTokens('Hello, world!'); // 5
 * ```
 */
export function estimateTokens(text: string): number {
  return Math.ceil(utf8Length(text) / BYTES_PER_TOKEN);
}

const json = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return String(value);
  }
};

/**
 * Estimated input tokens of a request (its messages and tools) by the module's rule.
 *
 * @example
 * ```ts
 * estimateInputTokens({ messages: [{ role: 'user', content: 'Hi' }], tools: [] }); // 5
 * ```
 */
export function estimateInputTokens(request: {
  readonly messages: readonly Message[];
  readonly tools: readonly { readonly name: string; readonly description?: string; readonly parameters?: unknown }[];
}): number {
  let bytes = 0;
  for (const message of request.messages) {
    bytes += utf8Length(message.content);
    if (message.role === 'assistant') {
      for (const call of message.toolCalls ?? []) bytes += utf8Length(call.name) + utf8Length(json(call.args));
      for (const part of message.reasoning ?? []) bytes += utf8Length(part.text);
    }
  }
  for (const tool of request.tools) bytes += utf8Length(tool.name) + utf8Length(tool.description ?? '') + utf8Length(json(tool.parameters ?? {}));
  return Math.ceil(bytes / BYTES_PER_TOKEN) + PER_MESSAGE * request.messages.length;
}

/**
 * The output an event adds to a turn, in estimated tokens (`reasoning`: of them, reasoning), by
 * the module's rule; 0 for events that carry no generated text.
 *
 * @example
 * ```ts
 * outputBytes({ type: 'text-delta', text: 'Hello' }); // { bytes: 5, reasoning: false }
 * ```
 */
export function outputBytes(event: TurnEvent): { readonly bytes: number; readonly reasoning: boolean } | undefined {
  switch (event.type) {
    case 'text-delta':
      return { bytes: utf8Length(event.text), reasoning: false };
    case 'reasoning-delta':
      return { bytes: utf8Length(event.text), reasoning: true };
    case 'tool-call':
      return { bytes: utf8Length(event.name) + utf8Length(json(event.args)), reasoning: false };
    default:
      return undefined;
  }
}

/**
 * Bytes of output as estimated tokens (÷ 3, rounded up).
 *
 * @example
 * ```ts
 * tokensOfBytes(10); // 4
 * ```
 */
export function tokensOfBytes(bytes: number): number {
  return Math.ceil(bytes / BYTES_PER_TOKEN);
}
