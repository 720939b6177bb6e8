/**
 * rxheal model events written as AI SDK v3 stream parts, for {@link toAiSdk}: the
 * {@link PartWriter} subscriber (text and reasoning blocks, tool calls, the finish, a `reset` it
 * can't express), and the v3 shapes of a tool call, a usage and a finish reason that `doGenerate`
 * uses too.
 *
 * @module
 */
import type { LanguageModelV3FinishReason, LanguageModelV3StreamPart, LanguageModelV3Usage, SharedV3ProviderMetadata, SharedV3Warning } from '@ai-sdk/provider';
import { Subscription, type Observer } from 'rxjs';
import { abortReason, onAbort } from '../adapters/common.js';
import type { FinishReason, TurnEvent, Usage } from '../core/events/events.js';
import { argumentsText } from '../providers/openai.js';
import { StreamRestartError } from '../adapters/common.js';
import { sealMetadata } from './seal.js';

/** Our tool call as a v3 `tool-call` part, with the provider's metadata for it when it has some. */
export function v3ToolCall(event: Extract<TurnEvent, { type: 'tool-call' }>): Extract<LanguageModelV3StreamPart, { type: 'tool-call' }> {
  const part = { type: 'tool-call' as const, toolCallId: event.id, toolName: event.name, input: argumentsText(event.args) };
  return event.providerMetadata === undefined ? part : { ...part, providerMetadata: event.providerMetadata as SharedV3ProviderMetadata };
}

/** A usage in the AI SDK's words: the cache's reads and writes, and the reasoning share, when rxheal's has them (the rest of the input is `noCache`). */
export const v3Usage = (usage: Usage | undefined): LanguageModelV3Usage => {
  const cached = usage?.cachedInputTokens !== undefined || usage?.cacheWriteTokens !== undefined;
  return {
    inputTokens: {
      total: usage?.inputTokens,
      noCache: usage && cached ? usage.inputTokens - (usage.cachedInputTokens ?? 0) - (usage.cacheWriteTokens ?? 0) : undefined,
      cacheRead: usage?.cachedInputTokens,
      cacheWrite: usage?.cacheWriteTokens,
    },
    outputTokens: {
      total: usage?.outputTokens,
      text: usage?.reasoningTokens === undefined ? undefined : usage.outputTokens - usage.reasoningTokens,
      reasoning: usage?.reasoningTokens,
    },
  };
};

/** The AI SDK's finish reason for ours: a turn cut for money (`'budget'`) stopped short of its end, as at a length limit. */
export const v3Reason = (reason: FinishReason, raw: string = reason): LanguageModelV3FinishReason => ({
  unified: reason === 'budget' ? 'length' : reason,
  raw,
});

/**
 * A `doStream`'s stream: its `stream-start` (with the call's warnings), then what `start` writes
 * in it, subscribed within the stream's lifetime. Aborting the call's signal errors the stream
 * with the abort's reason, cancelling it unsubscribes: either way `lifetime` ends.
 */
export function partStream(
  signal: AbortSignal | undefined,
  warnings: SharedV3Warning[],
  start: (controller: ReadableStreamDefaultController<LanguageModelV3StreamPart>, lifetime: Subscription) => void,
): ReadableStream<LanguageModelV3StreamPart> {
  const lifetime = new Subscription();
  return new ReadableStream<LanguageModelV3StreamPart>(
    {
      start(controller) {
        lifetime.add(
          onAbort(signal, () => {
            if (lifetime.closed) return;
            lifetime.unsubscribe();
            controller.error(abortReason(signal));
          }),
        );
        if (lifetime.closed) return;
        controller.enqueue({ type: 'stream-start', warnings });
        start(controller, lifetime);
      },
      cancel() {
        lifetime.unsubscribe();
      },
    },
    // the parts are pushed as they come (no pull): a high-water mark of 0 spares the stream a
    // call to pull, and its promise, after every part
    { highWaterMark: 0 },
  );
}

/**
 * Writes a model's events into an AI SDK stream as parts: text deltas in `text-start/-delta/-end`
 * blocks, tool calls as `tool-call` parts, the finish with its reason and usage; an error, or a
 * `reset` after something was delivered ({@link StreamRestartError}), as an `error` part and an
 * error finish. The stream's observer of the model's events. `lifetime` is the stream's: the
 * model's subscription is linked to it before the model is subscribed (`subscribeWithin`), so
 * ending the stream cancels the model, also one still emitting synchronously; once it is closed
 * later events are ignored.
 */
export class PartWriter implements Observer<TurnEvent> {
  private delivered = false;
  private textId: string | undefined = undefined;
  private reasoningId: string | undefined = undefined;
  private blocks = 0;

  constructor(
    private readonly controller: ReadableStreamDefaultController<LanguageModelV3StreamPart>,
    private readonly modelId: string,
    private readonly lifetime: Subscription,
  ) {}

  next(event: TurnEvent): void {
    if (this.lifetime.closed) return;
    try {
      switch (event.type) {
        case 'text-delta':
          if (event.text === '') return;
          if (this.textId === undefined) {
            this.textId = `text-${this.blocks++}`;
            this.controller.enqueue({ type: 'text-start', id: this.textId });
          }
          this.controller.enqueue({ type: 'text-delta', id: this.textId, delta: event.text });
          this.delivered = true;
          return;
        case 'reasoning-delta':
          if (event.text === '') return;
          this.openReasoning();
          this.controller.enqueue({ type: 'reasoning-delta', id: this.reasoningId!, delta: event.text });
          this.delivered = true;
          return;
        case 'reasoning-end': {
          const providerMetadata = sealMetadata(event);
          // an unsigned end of no text: nothing to show
          if (this.reasoningId === undefined && providerMetadata === undefined) return;
          // a block of no text (redacted, or a signature alone) opens with its metadata, as @ai-sdk/anthropic's redacted blocks do
          this.openReasoning(providerMetadata);
          this.controller.enqueue(
            providerMetadata ? { type: 'reasoning-end', id: this.reasoningId!, providerMetadata } : { type: 'reasoning-end', id: this.reasoningId! },
          );
          this.reasoningId = undefined;
          this.delivered = true;
          return;
        }
        case 'tool-call':
          return this.write(v3ToolCall(event));
        case 'finish':
          return this.end({ type: 'finish', finishReason: v3Reason(event.reason), usage: v3Usage(event.usage) });
        case 'reset':
          // nothing delivered yet: the next attempt's answer is the whole answer
          if (!this.delivered) return;
          return this.fail(new StreamRestartError(this.modelId, event, 'the AI SDK'));
      }
    } catch (error) {
      // a malformed event (a hand-written model's): an error part, never a throw into the model
      this.fail(error);
    }
  }

  error(error: unknown): void {
    this.fail(error);
  }

  // streamModel errors a stream that completes without a finish: never reached first
  complete(): void {
    this.end();
  }

  /** Delivers a part of its own (a tool call, a result, an approval request): the text before it ends its block. */
  write(part: LanguageModelV3StreamPart): void {
    if (this.lifetime.closed) return;
    this.closeText();
    this.controller.enqueue(part);
    this.delivered = true;
  }

  private closeText(): void {
    if (this.textId !== undefined) this.controller.enqueue({ type: 'text-end', id: this.textId });
    this.textId = undefined;
  }

  /** Starts a reasoning block unless one is open (text before it ends its text block). */
  private openReasoning(providerMetadata?: SharedV3ProviderMetadata): void {
    if (this.reasoningId !== undefined) return;
    this.closeText();
    this.reasoningId = `reasoning-${this.blocks++}`;
    this.controller.enqueue(
      providerMetadata ? { type: 'reasoning-start', id: this.reasoningId, providerMetadata } : { type: 'reasoning-start', id: this.reasoningId },
    );
  }

  /** Ends the stream with an `error` part and an error finish. */
  fail(error: unknown): void {
    this.end({ type: 'error', error }, { type: 'finish', finishReason: v3Reason('error'), usage: v3Usage(undefined) });
  }

  /** Ends the stream with its last parts (finish, or error + error finish) and cancels the model. */
  end(...parts: LanguageModelV3StreamPart[]): void {
    if (this.lifetime.closed) return;
    this.closeText();
    // reasoning the model never ended ends here, unsigned
    if (this.reasoningId !== undefined) this.controller.enqueue({ type: 'reasoning-end', id: this.reasoningId });
    this.reasoningId = undefined;
    for (const part of parts) this.controller.enqueue(part);
    this.controller.close();
    this.lifetime.unsubscribe();
  }
}
