/**
 * OpenAI's Responses API (`POST /responses`, `stream: true`) spoken with `fetch`: the request
 * body from a model request, and {@link openAIResponsesModel}. The stream is read by
 * responsesDecoder.ts. Also spoken by Azure OpenAI, OpenRouter, Ollama and others.
 *
 * @module
 */
import type { Message, ReasoningPart, ToolCall } from '../core/events/events.js';
import { toolParameters, type Model, type ModelContext, type ModelRequest, type ToolSpec } from '../core/model/model.js';
import { requestMaxOutputTokens } from '../core/model/outputTokens.js';
import { requestPromptCacheKey } from '../core/model/promptCacheKey.js';
import { argumentsText, OPENAI_OPTION_PROPS, type OpenAICompatibleModelOptions } from './openai.js';
import { checkProviderOptions, withoutTrailingSlashes } from './providerOptions.js';
import { asyncScheduler, throwError, type Observable } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import { check } from '../core/errors/options.js';
import { ResponsesDecoder, type DeclaredTools } from './responsesDecoder.js';
import { resumableResponses, resumeRules, type ResponsesResumeOptions } from './responsesResume.js';
import { decodeSse, fetchSse, isObject, type SseRequest } from './sse.js';
import type { SseEvent } from './sseParser.js';

/**
 * Options of {@link openAIResponsesModel}: those of `openAICompatibleModel` (`apiKey`, `model`,
 * `headers`, `fetch`, `maxEventSize`), with its own base URL path, body and id.
 *
 * @example
 * ```ts
 * const options: OpenAIResponsesModelOptions = { baseURL: 'https://api.openai.com/v1', apiKey: process.env.OPENAI_API_KEY, model: 'gpt-5-mini' };
 * ```
 */
export interface OpenAIResponsesModelOptions extends Omit<OpenAICompatibleModelOptions, 'baseURL' | 'body' | 'id'> {
  /** The API's base URL, up to and including the version: `https://api.openai.com/v1`. Requests go to `<baseURL>/responses`. */
  readonly baseURL: string;
  /**
   * Extra fields merged into every request body (`{ reasoning: { effort: 'low', summary: 'auto' },
   * max_output_tokens: 2048 }`; `store: true` to keep responses on OpenAI's side; `tools` for the
   * tools the provider runs itself, `{ type: 'web_search' }`, or client tools such as
   * `{ type: 'custom', name }`, sent before the request's own function tools); the adapter's own
   * fields win. A request's `maxOutputTokens` is per request, so it wins over this body's
   * `max_output_tokens` (the model's default) for that request.
   */
  readonly body?: Readonly<Record<string, unknown>>;
  /** The `Model.id` (breakers are named `model:<id>`). Defaults to `openai-responses:<model>`. */
  readonly id?: string;
  /**
   * Resume a lost stream instead of restarting it: each request is a stored background response
   * (`background: true`, `store: true`), and when its stream breaks mid-answer — the connection
   * drops, the body ends early, or (with `idleMs`) no event comes for that long — it is picked up
   * again with `GET <baseURL>/responses/{id}?stream=true&starting_after=<last sequence_number>`,
   * up to `maxResumes` times per call (default 2) before the error goes on to retries and
   * fallbacks. Nothing is regenerated: the text shown stays, none is lost or doubled, the output
   * tokens are those of one answer; a `resume` event on the run's hub says each time. Unsubscribing
   * aborts the request and cancels the response (`POST <baseURL>/responses/{id}/cancel`, best
   * effort), as does giving up. A stored response keeps its reasoning on the provider's side: the
   * encrypted content is then not asked for (`include` unchanged), and reasoning items go back by
   * id. `true`: the defaults. Off by default; refused with `body.store: false`. The provider must
   * keep background responses (OpenAI and rxheal/server do; a server that does not will refuse
   * `background` or answer the resuming GET with 404 — then the error goes on as without resume).
   * In a journaled run (`runAgent({ runId, journal })`) the response id and the last
   * `sequence_number` are its checkpoint (`context.checkpoint`): a run resumed in another process
   * continues the interrupted turn through `model.resume` — the stored response read again from
   * its first event (`GET …/responses/{id}?stream=true`, the decoder's state rebuilt), nothing
   * generated again — and unsubscribing leaves the response to expire instead of cancelling it.
   */
  readonly resume?: boolean | ResponsesResumeOptions;
  /**
   * Prompt caching: key, retention, explicit breakpoints (see {@link ResponsesPromptCache}). None
   * by default. A request's `promptCacheKey` is sent as `prompt_cache_key` in place of `key`.
   */
  readonly promptCache?: ResponsesPromptCache;
}

/** Our tool call's metadata from this protocol: the item id, and the item type for a call that is not a `function_call`. */
function openaiMeta(call: ToolCall | ReasoningPart): Record<string, unknown> | undefined {
  const meta = call.providerMetadata?.['openai'];
  return isObject(meta) ? meta : undefined;
}

/**
 * The reasoning items of an assistant message that this API can take back: those it produced
 * (`providerMetadata.openai.itemId`), with their encrypted content when the response was not
 * stored (`store: false`: the item is not on OpenAI's side, so its content must come back);
 * reasoning of other providers (Anthropic's signed thinking, DeepSeek's text) has no place here.
 */
function reasoningItems(parts: readonly ReasoningPart[], store: boolean): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  for (const part of parts) {
    const meta = openaiMeta(part);
    if (meta?.['itemType'] === 'compaction' && isObject(meta['item'])) {
      // the encrypted summary of the conversation before it: it goes back whatever `store` says
      items.push(withoutStatus(meta['item']));
      continue;
    }
    const id = meta?.['itemId'];
    if (typeof id !== 'string') continue;
    const encrypted = meta?.['reasoningEncryptedContent'];
    if (!store && typeof encrypted !== 'string') continue; // not stored and not carried: nothing to send back
    const summary = part.text === '' ? [] : [{ type: 'summary_text', text: part.text }];
    items.push(typeof encrypted === 'string' ? { type: 'reasoning', id, summary, encrypted_content: encrypted } : { type: 'reasoning', id, summary });
  }
  return items;
}

/** An output item to send back as input: as it came, without the `status` only output items carry. */
function withoutStatus(item: Record<string, unknown>): Record<string, unknown> {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars -- what input items do not take
  const { status: _status, ...rest } = item;
  return rest;
}

/** The type of item each tool call id was (the assistant's calls so far), for its result's output item. */
function callTypes(messages: readonly Message[]): Map<string, string> {
  const types = new Map<string, string>();
  for (const m of messages)
    if (m.role === 'assistant') for (const call of m.toolCalls ?? []) types.set(call.id, String(openaiMeta(call)?.['itemType'] ?? 'function_call'));
  return types;
}

/**
 * A tool's result as the output item its call's type takes: `function_call_output` /
 * `custom_tool_call_output` / `local_shell_call_output` with the text; `shell_call_output` with
 * the text as stdout (stderr and exit code 1 for an error); `apply_patch_call_output` with status
 * `completed` or `failed`; `mcp_approval_response` approving unless the result is an error;
 * `computer_call_output` with the text as the screenshot's image URL.
 */
function outputItem(type: string, result: Extract<Message, { role: 'tool' }>): Record<string, unknown> {
  const call_id = result.toolCallId;
  const failed = result.isError === true;
  switch (type) {
    case 'shell_call':
      return {
        type: 'shell_call_output',
        call_id,
        output: [{ stdout: failed ? '' : result.content, stderr: failed ? result.content : '', outcome: { type: 'exit', exit_code: failed ? 1 : 0 } }],
      };
    case 'apply_patch_call':
      return { type: 'apply_patch_call_output', call_id, status: failed ? 'failed' : 'completed', output: result.content };
    case 'mcp_approval_request':
      return { type: 'mcp_approval_response', approval_request_id: call_id, approve: !failed };
    case 'computer_call':
      return { type: 'computer_call_output', call_id, output: { type: 'computer_screenshot', image_url: result.content } };
    default:
      // function_call, custom_tool_call, local_shell_call, tool_search_call: `<type>_output` with the text
      return { type: `${type}_output`, call_id, output: result.content };
  }
}

/** Our messages as Responses input items. */
function inputItems(messages: readonly Message[], store: boolean): Record<string, unknown>[] {
  const types = callTypes(messages);
  const items: Record<string, unknown>[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
      case 'user':
        items.push({ role: message.role, content: message.content });
        break;
      case 'assistant':
        items.push(...reasoningItems(message.reasoning ?? [], store));
        if (message.content !== '') items.push({ role: 'assistant', content: message.content });
        for (const call of message.toolCalls ?? []) {
          const meta = openaiMeta(call);
          const item = meta?.['item'];
          if (meta?.['itemType'] === 'custom_tool_call')
            items.push({
              type: 'custom_tool_call',
              call_id: call.id,
              name: call.name,
              input: typeof call.args === 'string' ? call.args : argumentsText(call.args),
            });
          else if (typeof meta?.['itemType'] === 'string' && isObject(item))
            items.push(withoutStatus(item)); // another client-run item: sent back as it came
          else items.push({ type: 'function_call', call_id: call.id, name: call.name, arguments: argumentsText(call.args) });
        }
        break;
      case 'tool':
        items.push(outputItem(types.get(message.toolCallId) ?? 'function_call', message));
        break;
    }
  }
  return items;
}

/**
 * Prompt caching on the Responses API: `key` → `prompt_cache_key` (requests that share a prefix
 * and a key land on the same cache: keep one per conversation or tenant, and the same across a
 * fallback chain's attempts; a request's own `promptCacheKey` wins over it), `retention` → `prompt_cache_retention` (`'24h'`: cached prefixes
 * kept up to a day), `ttl` → `prompt_cache_options.ttl`, and `breakpoints` (1 to 4): explicit
 * cache breakpoints (`prompt_cache_options.mode: 'explicit'`, a `prompt_cache_breakpoint` on the
 * text of, in this order, the last system message, the end of the conversation and the end of the
 * turn before it). Cached input comes back as `usage.cachedInputTokens`.
 *
 * @example
 * ```ts
 * const promptCache: ResponsesPromptCache = { key: `tenant-${tenantId}`, retention: '24h', breakpoints: 2 };
 * ```
 */
export interface ResponsesPromptCache {
  readonly key?: string;
  readonly retention?: 'in_memory' | '24h';
  readonly ttl?: '30m';
  readonly breakpoints?: number;
}

/**
 * The check of a `promptCache` option ({@link ResponsesPromptCache}), for `checkProviderOptions`.
 *
 * @example
 * ```ts
 * PromptCacheCheck.is({ key: 'conversation-42', retention: '24h' }); // true
 * ```
 */
export const PromptCacheCheck = check(
  "{ key?: non-empty string, retention?: 'in_memory' | '24h', ttl?: '30m', breakpoints?: 1 to 4 }",
  (u): u is ResponsesPromptCache =>
    isObject(u) &&
    Object.keys(u).every((k) => ['key', 'retention', 'ttl', 'breakpoints'].includes(k)) &&
    (u['key'] === undefined || (typeof u['key'] === 'string' && u['key'] !== '')) &&
    (u['retention'] === undefined || u['retention'] === 'in_memory' || u['retention'] === '24h') &&
    (u['ttl'] === undefined || u['ttl'] === '30m') &&
    (u['breakpoints'] === undefined || (Number.isInteger(u['breakpoints']) && (u['breakpoints'] as number) >= 1 && (u['breakpoints'] as number) <= 4)),
);

/**
 * A Responses request body with its prompt-cache fields and breakpoints (see
 * {@link ResponsesPromptCache}); the body itself is not changed.
 *
 * @example
 * ```ts
 * withPromptCache(openAIResponsesBody('gpt-5-mini', request), { key: 'conversation-42', retention: '24h' });
 * ```
 */
export function withPromptCache(body: Readonly<Record<string, unknown>>, cache: ResponsesPromptCache | undefined): Record<string, unknown> {
  if (cache === undefined) return { ...body };
  const out: Record<string, unknown> = { ...body };
  if (cache.key !== undefined) out['prompt_cache_key'] = cache.key;
  if (cache.retention !== undefined) out['prompt_cache_retention'] = cache.retention;
  const options: Record<string, unknown> = isObject(body['prompt_cache_options']) ? { ...body['prompt_cache_options'] } : {};
  if (cache.ttl !== undefined) options['ttl'] = cache.ttl;
  if (cache.breakpoints !== undefined && Array.isArray(body['input'])) {
    options['mode'] = 'explicit';
    const input = [...(body['input'] as unknown[])];
    const roleAt = (i: number): unknown => (isObject(input[i]) ? (input[i] as Record<string, unknown>)['role'] : undefined);
    const lastOf = (from: number, role?: string): number => {
      for (let i = from; i >= 0; i--) if (typeof input[i] === 'object' && typeof roleAt(i) === 'string' && (role === undefined || roleAt(i) === role)) return i;
      return -1;
    };
    const lastUser = lastOf(input.length - 1, 'user');
    const marks = [lastOf(input.length - 1, 'system'), lastOf(input.length - 1), lastUser > 0 ? lastOf(lastUser - 1) : -1];
    const chosen = [...new Set(marks.filter((i) => i >= 0))].slice(0, cache.breakpoints);
    for (const i of chosen) {
      const item = input[i] as Record<string, unknown>;
      const content = item['content'];
      if (typeof content === 'string' && content !== '')
        input[i] = { ...item, content: [{ type: 'input_text', text: content, prompt_cache_breakpoint: { mode: 'explicit' } }] };
    }
    out['input'] = input;
  }
  if (Object.keys(options).length > 0) out['prompt_cache_options'] = options;
  return out;
}

/**
 * The prompt cache a request is sent with: the model's `cache`, its key replaced by the request's
 * `promptCacheKey` when the request has one (a pool's affinity, a user's per-conversation key).
 *
 * @example
 * ```ts
 * requestPromptCache({ messages, tools: [], promptCacheKey: 'tenant-7' }, { key: 'default', retention: '24h' }); // { key: 'tenant-7', retention: '24h' }
 * ```
 * @throws {InvalidOptionError} for a request whose `promptCacheKey` is not a non-empty string.
 * @internal
 */
export function requestPromptCache(request: ModelRequest, cache: ResponsesPromptCache | undefined): ResponsesPromptCache | undefined {
  const key = requestPromptCacheKey('openAIResponsesBody', request);
  return key === undefined ? cache : { ...cache, key };
}

/** Tools as Responses function tools (a tool without parameters takes any object; `strict: false`: any JSON schema). */
function responsesTools(tools: readonly ToolSpec[]): Record<string, unknown>[] {
  return tools.map((tool) => ({ type: 'function', name: tool.name, description: tool.description, parameters: toolParameters(tool), strict: false }));
}

/**
 * The Responses request body for a model request: `stream: true`; not stored (`store: false`)
 * unless `extra.store` is `true`, and then with `include: ['reasoning.encrypted_content']` added,
 * so a reasoning model's tool turn works statelessly (its reasoning items come back with their
 * encrypted content); our
 * messages as input items (tool results as `function_call_output`, an assistant's calls as
 * `function_call` items — a custom tool's as `custom_tool_call` and `custom_tool_call_output` —,
 * its reasoning as the `reasoning` items it came as); the request's tools after `extra.tools`;
 * its `maxOutputTokens` as `max_output_tokens`, over `extra`'s (the request's own limit wins);
 * its `promptCacheKey` as `prompt_cache_key`, over `extra`'s.
 *
 * @example
 * ```ts
 * openAIResponsesBody('gpt-5-mini', { messages: [{ role: 'user', content: 'Hi' }], tools: [] });
 * // { model: 'gpt-5-mini', stream: true, store: false, include: ['reasoning.encrypted_content'], input: [{ role: 'user', content: 'Hi' }] }
 * openAIResponsesBody('gpt-5-mini', { messages: [{ role: 'user', content: 'Hi' }], tools: [], maxOutputTokens: 256 })['max_output_tokens']; // 256
 * openAIResponsesBody('gpt-5-mini', { messages: [{ role: 'user', content: 'Hi' }], tools: [], promptCacheKey: 'c-42' })['prompt_cache_key']; // 'c-42'
 * ```
 * @throws {InvalidOptionError} for a request whose `maxOutputTokens` is not a positive integer,
 * or whose `promptCacheKey` is not a non-empty string.
 */
export function openAIResponsesBody(model: string, request: ModelRequest, extra: Readonly<Record<string, unknown>> = {}): Record<string, unknown> {
  const store = extra['store'] === true;
  const include = Array.isArray(extra['include']) ? (extra['include'] as unknown[]) : [];
  const body: Record<string, unknown> = {
    ...extra,
    model,
    stream: true,
    store,
    ...(store ? {} : { include: include.includes('reasoning.encrypted_content') ? include : [...include, 'reasoning.encrypted_content'] }),
    input: inputItems(request.messages, store),
  };
  const own = responsesTools(request.tools);
  const theirs = Array.isArray(extra['tools']) ? (extra['tools'] as unknown[]) : [];
  if (own.length + theirs.length > 0) body['tools'] = [...theirs, ...own];
  else delete body['tools'];
  const choice = request.toolChoice;
  if (choice !== undefined && request.tools.length > 0) body['tool_choice'] = typeof choice === 'string' ? choice : { type: 'function', name: choice.tool };
  const maxOutputTokens = requestMaxOutputTokens('openAIResponsesBody', request);
  if (maxOutputTokens !== undefined) body['max_output_tokens'] = maxOutputTokens;
  const promptCacheKey = requestPromptCacheKey('openAIResponsesBody', request);
  if (promptCacheKey !== undefined) body['prompt_cache_key'] = promptCacheKey;
  return body;
}

/**
 * What a request body declared that a client-run output item may call: a function tool of that
 * name, or a tool of its `tools` (`{ type: 'custom', name }`, or the built-in `{ type: 'shell' }`,
 * `apply_patch`, `local_shell`, `computer…`, `mcp`, `tool_search`).
 *
 * @example
 * ```ts
 * responsesDeclaredTools({ tools: [{ type: 'custom', name: 'write_sql' }] })('write_sql'); // true
 * ```
 */
export function responsesDeclaredTools(body: Readonly<Record<string, unknown>>): DeclaredTools {
  const tools = Array.isArray(body['tools']) ? (body['tools'] as unknown[]).filter(isObject) : [];
  return (name) =>
    tools.some((tool) => {
      const type = tool['type'];
      if (type === 'function' || type === 'custom') return tool['name'] === name;
      if (name === 'computer') return typeof type === 'string' && type.startsWith('computer');
      if (name === 'mcp_approval_request') return type === 'mcp';
      return type === name;
    });
}

/**
 * A {@link Model} speaking OpenAI's Responses API with `stream: true`, over `fetch`: OpenAI
 * itself, or any server that speaks it (Azure OpenAI, OpenRouter, Ollama, the local provider of
 * `rxheal/server`…). Requests as {@link openAIResponsesBody} builds them (stateless by default:
 * `store: false`, reasoning carried back encrypted); events as `ResponsesDecoder` reads them —
 * text, reasoning with one `reasoning-end` per reasoning item (its item id and encrypted content
 * in `providerMetadata.openai`, which go back with the assistant message), tool calls, one
 * `finish` with usage.
 *
 * Errors (each one `classifyError` understands): a non-2xx response → `HttpError` with status,
 * headers and body; `response.failed` or an `error` event mid-stream → `HttpError` with the status
 * its code implies (`server_error` → 500: retryable; `rate_limit_exceeded` → 429; `invalid_prompt`
 * → 400: not retryable); the body ending before `response.completed` / `response.incomplete` /
 * `response.failed`, or the connection dropping → `IncompleteStreamError`; an event out of order
 * (`sequence_number`), unreadable, or one that would have to be dropped (a client-run item of a
 * tool the request did not declare) → `MalformedStreamError`. Unsubscribing aborts the request.
 * With `resume`, a dropped or stalled stream is picked up again where it stopped instead (see
 * the option).
 *
 * @example
 * ```ts
 * const gpt = openAIResponsesModel({
 *   baseURL: 'https://api.openai.com/v1',
 *   apiKey: process.env.OPENAI_API_KEY,
 *   model: 'gpt-5-mini',
 *   body: { reasoning: { effort: 'low', summary: 'auto' } },
 * });
 * runAgent({ model: fallbackModel([gpt, local]), tools: [getWeather], messages }).subscribe(render);
 * ```
 * @throws {InvalidOptionError} at once, for a missing or invalid option.
 */
export function openAIResponsesModel(options: OpenAIResponsesModelOptions): Model {
  const { resume: resumeOption, promptCache, ...rest } = options;
  checkProviderOptions('openAIResponsesModel', OPENAI_OPTION_PROPS, rest, ['baseURL', 'model']);
  checkProviderOptions('openAIResponsesModel', { promptCache: PromptCacheCheck }, { promptCache }, []);
  const resume = resumeRules('openAIResponsesModel', resumeOption);
  const { apiKey, model, headers = {} } = options;
  if (resume && options.body?.['store'] === false) {
    throw new InvalidOptionError('openAIResponsesModel', 'body.store', false, 'absent or true with resume (a background response is stored)');
  }
  const body = resume ? { ...options.body, background: true, store: true } : (options.body ?? {});
  const id = options.id ?? `openai-responses:${model}`;
  const url = `${withoutTrailingSlashes(options.baseURL)}/responses`;
  const sent = { ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}), ...headers };
  const payloadOf = (request: ModelRequest) => withPromptCache(openAIResponsesBody(model, request, body), requestPromptCache(request, promptCache));
  const baseOf = (context: ModelContext): Omit<SseRequest, 'url' | 'body'> => ({
    model: id,
    headers: sent,
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.maxEventSize ? { maxEventSize: options.maxEventSize } : {}),
    signal: context.signal,
  });
  const decoderOf = (payload: Record<string, unknown>) => (): ResponsesDecoder => new ResponsesDecoder(id, responsesDeclaredTools(payload));
  if (!resume) {
    return {
      id,
      stream: (request, context) =>
        sent$(() => {
          const payload = payloadOf(request);
          return decodeSse({ ...baseOf(context), url, body: payload }, decoderOf(payload));
        }),
    };
  }
  /** A stored response's stream after event `after` (-1: from its first event). */
  const follow = (base: Omit<SseRequest, 'url' | 'body'>, responseId: string, after: number) =>
    fetchSse({
      ...base,
      method: 'GET',
      url: `${url}/${encodeURIComponent(responseId)}?stream=true${after < 0 ? '' : `&starting_after=${after}`}`,
      body: undefined,
    });
  /** One call's events over a resumable stream: `open` its first attempt (a POST, or another process's response read again). */
  const resumable = (
    request: ModelRequest,
    context: ModelContext,
    open: (base: Omit<SseRequest, 'url' | 'body'>, payload: Record<string, unknown>) => Observable<SseEvent>,
  ) => {
    const { hub, checkpoint } = context;
    const payload = payloadOf(request);
    const base = baseOf(context);
    return resumableResponses(
      id,
      decoderOf(payload),
      resume,
      {
        open: () => open(base, payload),
        reopen: (responseId, after) => follow(base, responseId, after),
        cancel: (responseId) => cancelResponse(options.fetch ?? globalThis.fetch, `${url}/${encodeURIComponent(responseId)}/cancel`, sent),
      },
      context.scheduler ?? asyncScheduler,
      hub ? (event) => hub.report(event) : undefined,
      checkpoint ? (responseId, sequence) => checkpoint({ model: id, responseId, sequence }) : undefined,
    );
  };
  return {
    id,
    stream: (request, context) => sent$(() => resumable(request, context, (base, payload) => fetchSse({ ...base, url, body: payload }))),
    // another process's turn: its stored events read again from the first through a fresh decoder
    // (the decoder's state is rebuilt, never journaled), then on as the provider generates them
    resume: (checkpoint, request, context) => sent$(() => resumable(request, context, (base) => follow(base, checkpoint.responseId, -1))),
  };
}

/** A call's events, or, when its request can't be built (a bad `maxOutputTokens` or `promptCacheKey`), that error as the call's: nothing sent. */
function sent$<T>(call: () => Observable<T>): Observable<T> {
  try {
    return call();
  } catch (error) {
    return throwError(() => error);
  }
}

/**
 * `POST …/responses/{id}/cancel`, fire and forget (the consumer is gone, or the call gave up on
 * the response): its answer is read and dropped, its failure ignored — the response expires anyway.
 */
function cancelResponse(fetchImpl: typeof fetch, url: string, headers: Readonly<Record<string, string>>): void {
  try {
    fetchImpl(url, { method: 'POST', headers: { ...headers } })
      .then((response) => response.body?.cancel())
      .catch(() => undefined);
  } catch {
    // a custom fetch that throws: nothing to cancel with
  }
}
