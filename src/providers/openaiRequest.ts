/**
 * The Chat Completions request: our messages and tools in its words, and the body of one
 * streaming request (what `openAICompatibleModel` and `fromOpenAI` send).
 *
 * @module
 */
import { InvalidOptionError } from '../core/errors/errors.js';
import type { Message } from '../core/events/events.js';
import { toolParameters, type ModelRequest, type ToolSpec } from '../core/model/model.js';
import { requestMaxOutputTokens } from '../core/model/outputTokens.js';
import { requestPromptCacheKey } from '../core/model/promptCacheKey.js';

/**
 * A tool call's arguments as the JSON string a protocol carries: raw text as it is, anything else
 * as JSON (`{}` when it can't be).
 *
 * @example
 * ```ts
 * argumentsText({ city: 'Paris' }); // '{"city":"Paris"}'
 * argumentsText('{"city":"Par'); // '{"city":"Par'
 * ```
 */
export function argumentsText(args: unknown): string {
  if (typeof args === 'string') return args; // raw text the model sent (not valid JSON): send it back as is
  try {
    return JSON.stringify(args ?? {});
  } catch {
    return '{}';
  }
}

function toOpenAIMessage(message: Message): Record<string, unknown> {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant': {
      const calls = message.toolCalls ?? [];
      const out: Record<string, unknown> = { role: 'assistant', content: calls.length > 0 && message.content === '' ? null : message.content };
      // the unsigned reasoning an OpenAI-compatible server streamed goes back as it came (DeepSeek's
      // thinking mode refuses a tool-call turn without it); signed or redacted blocks are Anthropic's
      const thought = (message.reasoning ?? []).reduce(
        (all, part) => (part.signature === undefined && part.redactedData === undefined ? all + part.text : all),
        '',
      );
      if (thought !== '') out['reasoning_content'] = thought;
      if (calls.length > 0) {
        out['tool_calls'] = calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: argumentsText(call.args) } }));
      }
      return out;
    }
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

/**
 * Tools as Chat Completions `function` definitions (a tool without parameters takes any object);
 * every LangChain chat model's `bindTools` takes them too.
 *
 * @example
 * ```ts
 * openAITools([{ name: 'now', description: 'The time' }]);
 * // [{ type: 'function', function: { name: 'now', description: 'The time', parameters: { type: 'object', properties: {} } } }]
 * ```
 */
export function openAITools(tools: readonly ToolSpec[]): Record<string, unknown>[] {
  return tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: toolParameters(tool) } }));
}

/**
 * Refuses request fields that ask for more than one answer (`n` other than 1): rxheal asks for
 * one, and reads every choice of the stream as that answer, whatever its `index`. `option` names
 * the fields in the error (`'body'`, `'params'`).
 *
 * @example
 * ```ts
 * checkOneAnswer('openAICompatibleModel', 'body', { temperature: 0 }); // fine
 * checkOneAnswer('fromOpenAI', 'params', { model: 'gpt-4o', n: 2 }); // throws InvalidOptionError (option "params.n")
 * ```
 * @throws {InvalidOptionError} for an `n` that is present and not 1.
 */
export function checkOneAnswer(target: string, option: string, extra: Readonly<Record<string, unknown>> | undefined): void {
  const n = extra?.['n'];
  if (n !== undefined && n !== null && n !== 1) {
    throw new InvalidOptionError(target, `${option}.n`, n, '1 or absent (rxheal reads one answer: every choice of the stream is that answer)');
  }
}

/**
 * The Chat Completions request body for a model request (streaming, with usage). The request's
 * `maxOutputTokens` → `max_completion_tokens`, over `extra`'s (and `extra.max_tokens` left out:
 * the request's own limit wins over the model's default); its `promptCacheKey` →
 * `prompt_cache_key`, over `extra`'s (a body's key stays for the requests without one).
 *
 * @example
 * ```ts
 * openAIRequestBody('gpt-4o-mini', { messages: [{ role: 'user', content: 'Hi' }], tools: [] });
 * // { model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Hi' }] }
 * openAIRequestBody('gpt-4o-mini', { messages: [{ role: 'user', content: 'Hi' }], tools: [], maxOutputTokens: 256 })['max_completion_tokens']; // 256
 * openAIRequestBody('gpt-4o-mini', { messages: [{ role: 'user', content: 'Hi' }], tools: [], promptCacheKey: 'conversation-42' })['prompt_cache_key']; // 'conversation-42'
 * ```
 * @throws {InvalidOptionError} for a request whose `maxOutputTokens` is not a positive integer,
 * or whose `promptCacheKey` is not a non-empty string.
 */
export function openAIRequestBody(model: string, request: ModelRequest, extra: Readonly<Record<string, unknown>> = {}): Record<string, unknown> {
  const body: Record<string, unknown> = {
    ...extra,
    model,
    stream: true,
    stream_options: { include_usage: true },
    messages: request.messages.map(toOpenAIMessage),
  };
  if (request.tools.length > 0) {
    body['tools'] = openAITools(request.tools);
    const choice = request.toolChoice;
    if (choice !== undefined) body['tool_choice'] = typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.tool } };
  }
  const maxOutputTokens = requestMaxOutputTokens('openAIRequestBody', request);
  if (maxOutputTokens !== undefined) {
    delete body['max_tokens'];
    body['max_completion_tokens'] = maxOutputTokens;
  }
  const promptCacheKey = requestPromptCacheKey('openAIRequestBody', request);
  if (promptCacheKey !== undefined) body['prompt_cache_key'] = promptCacheKey;
  return body;
}
