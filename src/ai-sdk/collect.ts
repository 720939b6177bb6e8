/**
 * A `doStream`'s parts collected into what `doGenerate` returns, for {@link toAiSdkAgent}.
 *
 * @module
 */
import { IncompleteStreamError } from '../core/errors/errors.js';
import type { LanguageModelV3Content, LanguageModelV3GenerateResult, LanguageModelV3StreamPart, SharedV3Warning } from '@ai-sdk/provider';

/**
 * The parts of a stream as one result: text and reasoning blocks as `text` / `reasoning` content
 * (with their end's metadata), tool calls, results and approval requests as they are, the
 * finish's reason, usage and metadata, the `stream-start`'s warnings. Rejects with an `error`
 * part's error, or the stream's.
 */
export async function collectParts(
  stream: ReadableStream<LanguageModelV3StreamPart>,
  modelId: string,
): Promise<Omit<LanguageModelV3GenerateResult, 'request'>> {
  const content: LanguageModelV3Content[] = [];
  const open = new Map<string, Extract<LanguageModelV3Content, { type: 'text' | 'reasoning' }>>();
  let warnings: SharedV3Warning[] = [];
  const reader = stream.getReader();
  for (let parts = 0; ; parts++) {
    const { done, value: part } = await reader.read();
    if (done) throw new IncompleteStreamError(modelId, 'no finish part', parts);
    switch (part.type) {
      case 'stream-start':
        warnings = part.warnings;
        break;
      case 'text-start':
      case 'reasoning-start': {
        const block = { type: part.type === 'text-start' ? ('text' as const) : ('reasoning' as const), text: '' };
        open.set(part.id, block);
        content.push(block);
        break;
      }
      case 'text-delta':
      case 'reasoning-delta': {
        const block = open.get(part.id);
        if (block !== undefined) block.text += part.delta;
        break;
      }
      case 'text-end':
      case 'reasoning-end': {
        const block = open.get(part.id);
        if (block !== undefined && part.providerMetadata !== undefined) block.providerMetadata = part.providerMetadata;
        open.delete(part.id);
        break;
      }
      case 'tool-call':
      case 'tool-result':
      case 'tool-approval-request':
        content.push(part);
        break;
      case 'error':
        await reader.cancel().catch(() => undefined);
        throw part.error;
      case 'finish':
        await reader.cancel().catch(() => undefined);
        return {
          content,
          finishReason: part.finishReason,
          usage: part.usage,
          warnings,
          ...(part.providerMetadata === undefined ? {} : { providerMetadata: part.providerMetadata }),
        };
      default:
        break;
    }
  }
}
