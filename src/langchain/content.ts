/**
 * What LangChain message content says, read the same way by both directions: the text of a
 * message or chunk (string or text blocks; media makes it unreadable as text), and its reasoning
 * as LangChain's integrations put it — content blocks (standard, Anthropic's, Bedrock's) or
 * `additional_kwargs`.
 *
 * @module
 */
import type { ReasoningPart } from '../core/events/events.js';
import { isObject } from '../adapters/common.js';

/** Content block types that carry no answer text (tool-use echoes, reasoning): skipped. */
export const NON_TEXT_BLOCKS = new Set([
  'tool_use',
  'tool_call',
  'input_json_delta',
  'thinking',
  'redacted_thinking',
  'reasoning',
  'reasoning_content',
  'server_tool_use',
]);

/** A non-empty string, or `undefined`. */
const nonEmpty = (u: unknown): string | undefined => (typeof u === 'string' && u !== '' ? u : undefined);

/**
 * Reasoning in a content block, as LangChain's integrations put it: the standard
 * `{ type: 'reasoning', reasoning, signature? }` (what the block translators give, and
 * `toLangChain` streams), Anthropic's `{ type: 'thinking', thinking, signature }` and
 * `{ type: 'redacted_thinking', data }` (ChatAnthropic; a stream's signature comes in a block of
 * its own), Bedrock Converse's `{ type: 'reasoning_content', reasoningText: { text, signature } }`,
 * a redacted block translated as `{ type: 'non_standard', value }`. `key`: the block's `index`
 * (which block of a stream it continues).
 */
export interface ReasoningPiece {
  readonly key: unknown;
  readonly text?: string | undefined;
  readonly signature?: string | undefined;
  readonly redactedData?: string | undefined;
}

export function reasoningPiece(block: unknown): ReasoningPiece | undefined {
  if (!isObject(block)) return undefined;
  const key = block['index'];
  switch (block['type']) {
    case 'reasoning':
      return { key, text: nonEmpty(block['reasoning']), signature: nonEmpty(block['signature']) };
    case 'thinking':
      return { key, text: nonEmpty(block['thinking']), signature: nonEmpty(block['signature']) };
    case 'redacted_thinking':
      return { key, redactedData: nonEmpty(block['data']) };
    case 'reasoning_content': {
      const reasoning = block['reasoningText'];
      return isObject(reasoning) ? { key, text: nonEmpty(reasoning['text']), signature: nonEmpty(reasoning['signature']) } : { key, text: nonEmpty(reasoning) };
    }
    case 'non_standard': {
      const value = block['value'];
      return isObject(value) && value['type'] === 'redacted_thinking' ? { key, redactedData: nonEmpty(value['data']) } : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * Reasoning a message carries outside its content: `additional_kwargs.reasoning_content`
 * (ChatOpenAI over DeepSeek and other OpenAI-compatible servers, ChatDeepSeek, OpenRouter),
 * `additional_kwargs.reasoning` as a string (Groq) or a summary (OpenAI's Responses API).
 */
export function kwargsReasoning(kwargs: unknown): string | undefined {
  if (!isObject(kwargs)) return undefined;
  const content = nonEmpty(kwargs['reasoning_content']);
  if (content !== undefined) return content;
  const reasoning = kwargs['reasoning'];
  if (typeof reasoning === 'string') return nonEmpty(reasoning);
  const summary = isObject(reasoning) ? reasoning['summary'] : undefined;
  if (!Array.isArray(summary)) return undefined;
  let text = '';
  for (const part of summary as unknown[]) if (isObject(part) && typeof part['text'] === 'string') text += part['text'];
  return nonEmpty(text);
}

/** A message's reasoning blocks: its content's reasoning blocks, or else what its `additional_kwargs` carry. */
export function reasoningOf(content: unknown, kwargs: unknown): ReasoningPart[] {
  const parts: ReasoningPart[] = [];
  if (Array.isArray(content)) {
    for (const block of content as unknown[]) {
      const piece = reasoningPiece(block);
      if (piece === undefined || (piece.text === undefined && piece.signature === undefined && piece.redactedData === undefined)) continue;
      const part: ReasoningPart = { text: piece.text ?? '' };
      if (piece.signature !== undefined) part.signature = piece.signature;
      if (piece.redactedData !== undefined) part.redactedData = piece.redactedData;
      parts.push(part);
    }
  }
  if (parts.length > 0) return parts;
  const text = kwargsReasoning(kwargs);
  return text === undefined ? [] : [{ text }];
}

/** The text of a content block: a string, a text block's text; `undefined` for any other block. */
export function blockText(block: unknown): string | undefined {
  if (typeof block === 'string') return block;
  if (isObject(block) && (block['type'] === 'text' || block['type'] === 'text_delta') && typeof block['text'] === 'string') return block['text'];
  return undefined;
}

/** The text of a message's content: a string, or its text blocks; `undefined` for media. */
export function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === undefined || content === null ? '' : undefined;
  let text = '';
  for (const block of content as unknown[]) {
    const piece = blockText(block);
    if (piece !== undefined) text += piece;
    else if (!(isObject(block) && NON_TEXT_BLOCKS.has(String(block['type'])))) return undefined;
  }
  return text;
}
