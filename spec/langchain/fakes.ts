/**
 * What the rxheal/langchain specs (from.spec.ts, to.spec.ts) share: a scripted LangChain chat
 * model that records its calls, chunks, a scripted rxheal model, the concatenation of a LangChain
 * stream, and the real `ChatOpenAI` pointed at rxheal/server.
 */
import { AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk } from '@langchain/core/outputs';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { ChatOpenAI } from '@langchain/openai';
import { Observable } from 'rxjs';
import type { TurnEvent } from '../../src/core/events/events.js';
import type { Model } from '../../src/core/model/model.js';
import type { LocalProvider } from '../../src/server/index.js';

/** A LangChain test double: streams the given chunks (then throws `error`, if any); records its calls. */
export class ScriptedChatModel extends FakeStreamingChatModel {
  readonly seen: { messages: BaseMessage[]; tools: unknown; maxTokens?: unknown }[] = [];
  constructor(
    private readonly script: AIMessageChunk[],
    private readonly error?: Error,
  ) {
    super({});
  }
  override bindTools(tools: Parameters<FakeStreamingChatModel['bindTools']>[0]) {
    return this.withConfig({ tools } as never) as ReturnType<FakeStreamingChatModel['bindTools']>;
  }
  override async *_streamResponseChunks(messages: BaseMessage[], options: this['ParsedCallOptions']): AsyncGenerator<ChatGenerationChunk> {
    const { tools, maxTokens } = options as { tools?: unknown; maxTokens?: unknown };
    this.seen.push({ messages, tools, ...(maxTokens === undefined ? {} : { maxTokens }) });
    for (const message of this.script) {
      await Promise.resolve();
      yield new ChatGenerationChunk({ text: typeof message.content === 'string' ? message.content : '', message });
    }
    if (this.error) throw this.error;
  }
}

export const chunk = (fields: ConstructorParameters<typeof AIMessageChunk>[0]): AIMessageChunk => new AIMessageChunk(fields);

export const scripted = (id: string, events: () => Observable<TurnEvent> | TurnEvent[]): Model => ({ id, stream: () => events() });

/** The concatenation of a LangChain stream's chunks. */
export async function collect(stream: AsyncIterable<AIMessageChunk>): Promise<AIMessageChunk> {
  let all: AIMessageChunk | undefined;
  for await (const c of stream) all = all === undefined ? c : all.concat(c);
  return all!;
}

/** The real ChatOpenAI, pointed at a local provider (no retries of its own, usage streamed). */
export const chatOpenAI = (s: LocalProvider, model = 'local') =>
  new ChatOpenAI({ model, apiKey: 'test', configuration: { baseURL: s.openAIBaseURL }, maxRetries: 0, streamUsage: true });
