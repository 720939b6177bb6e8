/**
 * The event model's first half: conversation messages, usage and what a model stream emits, each
 * with its io-ts codec. `events.ts` re-exports all of it beside the agent's events.
 *
 * @module
 */
import * as t from 'io-ts';

// ---------------------------------------------------------------------------------------------
// messages
// ---------------------------------------------------------------------------------------------

/**
 * A tool call requested by the model. `args` is whatever the model produced, not yet decoded.
 * `providerMetadata`: what the provider attached to the call and needs back with it, by provider
 * (Gemini's `{ google: { thoughtSignature } }` through the AI SDK), carried as it came.
 */
export const ToolCallCodec = t.intersection(
  [t.type({ id: t.string, name: t.string, args: t.unknown }), t.partial({ providerMetadata: t.UnknownRecord })],
  'ToolCall',
);
/** @see ToolCallCodec */
export type ToolCall = t.TypeOf<typeof ToolCallCodec>;

export const SystemMessageCodec = t.type({ role: t.literal('system'), content: t.string }, 'SystemMessage');
export const UserMessageCodec = t.type({ role: t.literal('user'), content: t.string }, 'UserMessage');
/**
 * One block of a model's reasoning ("thinking") in an assistant message: its `text`, and what the
 * provider needs to accept it back — Anthropic's `signature`, or the opaque `redactedData` of a
 * redacted block (whose `text` is `''`). A provider that requires reasoning to be sent back (Anthropic
 * with extended thinking, on a turn with tool calls) gets the blocks that carry one of the two;
 * unsigned reasoning (OpenAI-compatible `reasoning_content`) is kept for the record, never sent.
 * `providerMetadata`: what else a provider attached to the block and needs back (OpenAI's reasoning
 * item id and encrypted content, Gemini's thought signature, through the AI SDK), by provider.
 */
export const ReasoningPartCodec = t.intersection(
  [t.type({ text: t.string }), t.partial({ signature: t.string, redactedData: t.string, providerMetadata: t.UnknownRecord })],
  'ReasoningPart',
);
/** @see ReasoningPartCodec */
export type ReasoningPart = t.TypeOf<typeof ReasoningPartCodec>;

export const AssistantMessageCodec = t.intersection(
  [
    t.type({ role: t.literal('assistant'), content: t.string }),
    t.partial({ toolCalls: t.array(ToolCallCodec), model: t.string, validated: t.boolean, reasoning: t.array(ReasoningPartCodec), cut: t.boolean }),
  ],
  'AssistantMessage',
);
export const ToolMessageCodec = t.intersection(
  [t.type({ role: t.literal('tool'), toolCallId: t.string, toolName: t.string, content: t.string }), t.partial({ isError: t.boolean })],
  'ToolMessage',
);
/** Any conversation message. */
export const MessageCodec = t.union([SystemMessageCodec, UserMessageCodec, AssistantMessageCodec, ToolMessageCodec], 'Message');

/** `{ role: 'system', content }`. */
export type SystemMessage = t.TypeOf<typeof SystemMessageCodec>;
/** `{ role: 'user', content }`. */
export type UserMessage = t.TypeOf<typeof UserMessageCodec>;
/** `{ role: 'assistant', content, toolCalls?, model?, validated?, reasoning? }`. */
export type AssistantMessage = t.TypeOf<typeof AssistantMessageCodec>;
/** `{ role: 'tool', toolCallId, toolName, content, isError? }`: a tool's result or error. */
export type ToolMessage = t.TypeOf<typeof ToolMessageCodec>;
/**
 * A conversation message.
 *
 * @example
 * ```ts
 * const messages: Message[] = [{ role: 'user', content: "What's the weather in NYC?" }];
 * ```
 */
export type Message = t.TypeOf<typeof MessageCodec>;

// ---------------------------------------------------------------------------------------------
// model events
// ---------------------------------------------------------------------------------------------

/**
 * Token counts of one model call. `inputTokens`: every input token billed, cache reads and writes
 * included; `outputTokens`: every output token, reasoning included (budgets count their sum: a
 * cached token counts as one). Where the API reports them: `cachedInputTokens` — of the input,
 * those read from the prompt cache (Anthropic `cache_read_input_tokens`, OpenAI `cached_tokens`);
 * `cacheWriteTokens` — those written to it (Anthropic `cache_creation_input_tokens`);
 * `reasoningTokens` — of the output, the reasoning; `iterations` — the samplings the provider ran
 * on its side (Anthropic `usage.iterations`: a server-side fallback), when more than one (budgets
 * count each as a model call).
 */
export const UsageCodec = t.intersection(
  [
    t.type({ inputTokens: t.number, outputTokens: t.number }),
    t.partial({ cachedInputTokens: t.number, cacheWriteTokens: t.number, reasoningTokens: t.number, iterations: t.number }),
  ],
  'Usage',
);
/** Token counts of one model call (see {@link UsageCodec}). */
export type Usage = t.TypeOf<typeof UsageCodec>;

export const FinishReasonCodec = t.keyof(
  { stop: null, 'tool-calls': null, length: null, 'content-filter': null, error: null, other: null, budget: null },
  'FinishReason',
);
/**
 * Why a model turn ended. `'budget'`: rxheal cut it, mid-stream, where its money budget ran out
 * (the provider's request aborted; its `usage` is the estimate charged).
 */
export type FinishReason = t.TypeOf<typeof FinishReasonCodec>;

export const TextDeltaCodec = t.type({ type: t.literal('text-delta'), text: t.string }, 'TextDelta');
export const ToolCallEventCodec = t.intersection(
  [t.type({ type: t.literal('tool-call'), id: t.string, name: t.string, args: t.unknown }), t.partial({ providerMetadata: t.UnknownRecord })],
  'ToolCallEvent',
);
/**
 * A piece of the model's reasoning ("thinking"): shown to whoever wants it, never part of the
 * answer's text. The deltas since the turn's start (or the last `reasoning-end`) make one block.
 */
export const ReasoningDeltaCodec = t.type({ type: t.literal('reasoning-delta'), text: t.string }, 'ReasoningDelta');
/**
 * Ends the reasoning block the `reasoning-delta`s since the last one made, with what the provider
 * needs to accept it back: `signature` (Anthropic), or `redactedData` for a redacted block (no
 * deltas before it), and any other `providerMetadata` (by provider). Reasoning never ended by one
 * is closed at `finish`, unsigned.
 */
export const ReasoningEndCodec = t.intersection(
  [t.type({ type: t.literal('reasoning-end') }), t.partial({ signature: t.string, redactedData: t.string, providerMetadata: t.UnknownRecord })],
  'ReasoningEnd',
);
/**
 * A fallback the provider made on its side in one call (Anthropic's server-side fallback): the
 * blocked model, the one that took over, `midStream` (a `reset` took back what came before).
 */
export const ProviderFallbackCodec = t.intersection([t.type({ from: t.string, to: t.string }), t.partial({ midStream: t.boolean })], 'ProviderFallback');
/**
 * Ends a model turn. `providerFallbacks`: the provider's own fallbacks during the turn, in order
 * (the answer is the last `to`'s); `recommendedModel`: the model the provider recommends for a
 * turn it stopped (Anthropic's `stop_details.recommended_model` on a refusal).
 */
export const FinishCodec = t.intersection(
  [
    t.type({ type: t.literal('finish'), reason: FinishReasonCodec }),
    t.partial({ usage: UsageCodec, providerFallbacks: t.array(ProviderFallbackCodec), recommendedModel: t.string }),
  ],
  'Finish',
);
/** What a model stream emits. */
export const ModelEventCodec = t.union([TextDeltaCodec, ReasoningDeltaCodec, ReasoningEndCodec, ToolCallEventCodec, FinishCodec], 'ModelEvent');

/** A piece of assistant text. */
export type TextDelta = t.TypeOf<typeof TextDeltaCodec>;
/** A piece of the model's reasoning (see {@link ReasoningDeltaCodec}). */
export type ReasoningDelta = t.TypeOf<typeof ReasoningDeltaCodec>;
/** The end of a reasoning block, with its signature or redacted data (see {@link ReasoningEndCodec}). */
export type ReasoningEnd = t.TypeOf<typeof ReasoningEndCodec>;
/** A complete tool call (arguments assembled), with the provider's metadata for it when it sent some (see {@link ToolCallCodec}). */
export type ToolCallEvent = t.TypeOf<typeof ToolCallEventCodec>;
/** The end of a model turn (see {@link FinishCodec}). */
export type Finish = t.TypeOf<typeof FinishCodec>;
/** A fallback the provider made on its side (see {@link ProviderFallbackCodec}). */
export type ProviderFallback = t.TypeOf<typeof ProviderFallbackCodec>;
/**
 * What a model stream emits: `text-delta`, `tool-call`, then one `finish`; a reasoning model also
 * `reasoning-delta`s, each block closed by a `reasoning-end` (with its signature, if any).
 *
 * @example
 * ```ts
 * const turn: ModelEvent[] = [
 *   { type: 'text-delta', text: 'Hello' },
 *   { type: 'finish', reason: 'stop', usage: { inputTokens: 12, outputTokens: 1 } },
 * ];
 * ```
 */
export type ModelEvent = t.TypeOf<typeof ModelEventCodec>;
