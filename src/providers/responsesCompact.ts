/**
 * {@link compactResponses}: OpenAI's `POST /responses/compact` over `fetch` — a conversation in,
 * its compacted window out, as rxheal messages whose compaction item stays opaque and goes back
 * to the Responses API as it came. Browser-safe.
 *
 * @module
 */
import type { Message, ReasoningPart, Usage } from '../core/events/events.js';
import { abortable } from '../core/model/abortable.js';
import type { Observable } from 'rxjs';
import { MalformedStreamError } from '../core/errors/errors.js';
import { openAIResponsesBody } from './responses.js';
import { responsesUsage } from './responsesDecoder.js';
import { checkProviderOptions, withoutTrailingSlashes } from './providerOptions.js';
import { OPENAI_OPTION_PROPS } from './openai.js';
import { httpError, isObject } from './sse.js';

/**
 * Options of {@link compactResponses}: where and as whom (as `openAIResponsesModel` takes them),
 * and `body`: extra fields of the request (`instructions`, `previous_response_id`…), the
 * function's own (`model`, `input`) win.
 *
 * @example
 * ```ts
 * const options: CompactResponsesOptions = { baseURL: 'https://api.openai.com/v1', apiKey: process.env.OPENAI_API_KEY, model: 'gpt-5-mini' };
 * ```
 */
export interface CompactResponsesOptions {
  /** The API's base URL, up to and including the version: the request goes to `<baseURL>/responses/compact`. */
  readonly baseURL: string;
  /** Sent as `authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
  /** The model that compacts (`model` of the request). */
  readonly model: string;
  /** Extra request headers. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The `fetch` to use. Defaults to the global one. */
  readonly fetch?: typeof globalThis.fetch;
  /** Extra fields of the request body (`instructions`, `previous_response_id`…). */
  readonly body?: Readonly<Record<string, unknown>>;
}

/**
 * A compacted conversation: `messages` to go on from (in place of those compacted), the
 * compaction's `usage`, its `id`.
 *
 * @example
 * ```ts
 * const { messages, usage }: CompactedConversation = await firstValueFrom(compactResponses(options, history));
 * ```
 */
export interface CompactedConversation {
  /** The compaction's id. */
  readonly id: string;
  /** The compacted window: the user's messages, then the compaction item's message. */
  readonly messages: readonly Message[];
  /** The tokens of the compaction pass (undefined when the answer has none). */
  readonly usage: Usage | undefined;
}

/** One output item of a compaction as a message: a message item by its text, a compaction item opaque. */
function messageOf(model: string, item: unknown, raw: string): Message {
  if (!isObject(item)) throw new MalformedStreamError(model, 'a compaction output item that is not an object', raw);
  if (item['type'] === 'compaction') {
    if (typeof item['encrypted_content'] !== 'string') throw new MalformedStreamError(model, 'a compaction item without its "encrypted_content"', raw);
    // as the stream's decoder keeps it: the whole item, sent back as it came (never shown, never to another provider)
    const part: ReasoningPart = { text: '', providerMetadata: { openai: { itemId: item['id'] ?? null, itemType: 'compaction', item } } };
    return { role: 'assistant', content: '', reasoning: [part] };
  }
  const role = item['role'];
  if ((item['type'] === 'message' || item['type'] === undefined) && (role === 'user' || role === 'assistant' || role === 'system' || role === 'developer')) {
    const content = item['content'];
    const text =
      typeof content === 'string'
        ? content
        : Array.isArray(content)
          ? content.map((part: unknown) => (isObject(part) && typeof part['text'] === 'string' ? part['text'] : '')).join('')
          : '';
    return { role: role === 'developer' ? 'system' : role, content: text };
  }
  throw new MalformedStreamError(model, `a compaction output item rxheal cannot carry (type ${JSON.stringify(item['type'])})`, raw);
}

/**
 * Compacts a conversation with OpenAI's `POST <baseURL>/responses/compact`: its messages go as
 * the input items `openAIResponsesModel` would send (tool calls, tool results, reasoning, an
 * earlier compaction); the compacted window comes back as messages — a `compaction` item as an
 * assistant message with no text whose reasoning part carries the item, opaque
 * (`providerMetadata.openai.itemType: 'compaction'`), which `openAIResponsesModel` and
 * `fromOpenAIResponses` send back as it came; a message item by its text. Go on from
 * `[...instruction, ...compacted.messages, next user message]`. The compaction is OpenAI's own:
 * another provider cannot read it — a fallback to one must start from the uncompacted
 * transcript (keep it). A cold observable: each subscription is one request, unsubscribing
 * aborts it.
 *
 * Errors: a non-2xx answer → `HttpError` (status, headers, body); an answer that is not a
 * compaction (no `output` array, an item of another kind) → `MalformedStreamError`.
 *
 * @example
 * ```ts
 * const compacted = await firstValueFrom(compactResponses({ baseURL: 'https://api.openai.com/v1', apiKey, model: 'gpt-5-mini' }, history));
 * runAgent({ model: gpt, messages: [...compacted.messages, { role: 'user', content: 'And now?' }] }).subscribe(render);
 * ```
 * @throws {InvalidOptionError} at once, for a missing or invalid option.
 */
export function compactResponses(options: CompactResponsesOptions, messages: readonly Message[]): Observable<CompactedConversation> {
  checkProviderOptions('compactResponses', OPENAI_OPTION_PROPS, options, ['baseURL', 'model']);
  const { apiKey, model, headers = {}, body = {} } = options;
  const url = `${withoutTrailingSlashes(options.baseURL)}/responses/compact`;
  const id = `openai-responses:${model}`;
  return abortable(async ({ signal }) => {
    const input = openAIResponsesBody(model, { messages, tools: [] }, { store: true })['input'];
    const response = await (options.fetch ?? globalThis.fetch)(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}), ...headers },
      body: JSON.stringify({ ...body, model, input }),
      signal,
    });
    if (!response.ok) throw await httpError(id, response);
    const raw = await response.text();
    let answer: unknown;
    try {
      answer = JSON.parse(raw);
    } catch {
      throw new MalformedStreamError(id, 'the compaction is not JSON', raw);
    }
    if (!isObject(answer) || !Array.isArray(answer['output'])) throw new MalformedStreamError(id, 'the compaction has no "output" array', raw);
    return {
      id: String(answer['id'] ?? ''),
      messages: (answer['output'] as unknown[]).map((item) => messageOf(id, item, raw)),
      usage: responsesUsage(id, answer['usage'], () => raw),
    };
  });
}
