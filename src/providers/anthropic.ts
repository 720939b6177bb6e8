/**
 * Anthropic's Messages API over Server-Sent Events, spoken with `fetch` (Node 20 and browsers;
 * no SDK).
 *
 * @module
 */
import { errorTypeStatus } from '../core/errors/readError.js';
import type { Message } from '../core/events/events.js';
import { Bool, Func, NonEmptyString, PositiveInteger, check } from '../core/errors/options.js';
import { toolParameters, type Model, type ModelRequest } from '../core/model/model.js';
import { requestMaxOutputTokens } from '../core/model/outputTokens.js';
import { throwError } from 'rxjs';
import { AnyString, HttpUrl, PlainObject, StringRecord, checkProviderOptions, withoutTrailingSlashes } from './providerOptions.js';
import { anthropicStreamDecoder } from './anthropicDecoder.js';
import { decodeSse, isObject, parseToolArguments } from './sse.js';

export { anthropicStreamDecoder } from './anthropicDecoder.js';

/**
 * Options of {@link anthropicModel}.
 *
 * @example
 * ```ts
 * const options: AnthropicModelOptions = { apiKey: process.env.ANTHROPIC_API_KEY, model: 'claude-sonnet-4-5', maxTokens: 2048 };
 * ```
 */
export interface AnthropicModelOptions {
  /** The API's origin. Requests go to `<baseURL>/v1/messages`. Defaults to `https://api.anthropic.com`. */
  readonly baseURL?: string;
  /** Sent as `x-api-key`. None by default (local servers need none). */
  readonly apiKey?: string;
  /** The model name sent in each request, e.g. `'claude-sonnet-4-5'`. */
  readonly model: string;
  /**
   * `max_tokens` of each request (required by the API). Defaults to 4096. A request's
   * `maxOutputTokens` is per request, so it wins over this default (and over a `body.max_tokens`)
   * for that request; with extended thinking keep it above `thinking.budget_tokens`, as the API asks.
   */
  readonly maxTokens?: number;
  /**
   * Extra request headers; they win over the defaults. From a browser, Anthropic's API also
   * wants `'anthropic-dangerous-direct-browser-access': 'true'`.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /** Extra fields merged into every request body (e.g. `{ temperature: 0 }`); the adapter's own fields win. */
  readonly body?: Readonly<Record<string, unknown>>;
  /** The `fetch` to use. Defaults to the global `fetch`, looked up per call. */
  readonly fetch?: typeof fetch;
  /**
   * The largest Server-Sent Event accepted, in characters: a larger one ends the stream with a
   * `MalformedStreamError` (a provider fault: retryable, fallback-able) instead of growing memory
   * without bound. Defaults to `DEFAULT_MAX_EVENT_SIZE` (16 MiB).
   */
  readonly maxEventSize?: number;
  /** The `Model.id` (breakers are named `model:<id>`). Defaults to `anthropic:<model>`. */
  readonly id?: string;
  /**
   * Server-side fallback: when the model's safety classifiers block a turn, the API retries it on
   * a fallback model itself, in the same stream. `'default'`: the model Anthropic recommends
   * (beta `server-side-fallback-2026-07-01`, added to `anthropic-beta`); an array: an explicit
   * chain, each entry `{ model, … }` merged into the request for that attempt (beta
   * `server-side-fallback-2026-06-01`). Sent as `fallbacks`. The stream's `fallback` block becomes
   * a `fallback` event marked `providerSide` on the run's hub (and a `reset` when the blocked model
   * had emitted), the finish's `providerFallbacks` and `usage.iterations`; a client-side
   * `fallbackModel` around this model does not move on because of it. None by default.
   */
  readonly fallbacks?: AnthropicFallbacks;
  /** Prompt caching: `cache_control` breakpoints (see {@link AnthropicCacheOptions}). None by default. */
  readonly cache?: AnthropicCacheOptions;
  /**
   * Fine-grained tool streaming: every tool is sent with `eager_input_streaming: true`, so its
   * input streams without the API buffering it whole. That input may arrive partial or invalid
   * (a turn cut by `max_tokens`): it is kept raw until its block ends and, when it is not JSON,
   * the call's arguments are that raw text — the tool's codec rejects them (`ToolError`, `phase:
   * 'validate'`) and `reflectOnError` asks the model to correct them. Off by default.
   */
  readonly eagerInputStreaming?: boolean;
}

/**
 * The `fallbacks` of a server-side fallback: `'default'`, or an explicit chain of request
 * overrides, each with its `model`.
 *
 * @example
 * ```ts
 * const fallbacks: AnthropicFallbacks = [{ model: 'claude-opus-4-8', max_tokens: 2048 }];
 * ```
 */
export type AnthropicFallbacks = 'default' | readonly ({ readonly model: string } & Readonly<Record<string, unknown>>)[];

/**
 * Prompt-cache breakpoints: `breakpoints` (1 to 4, the API's limit; default 2) `cache_control`
 * marks, placed in this order — the end of the tools, the end of the system prompt, the end of
 * the conversation (its last message), the end of the turn before it (the message before the
 * last user message) — on what the request has; `ttl` `'5m'` (default) or `'1h'` (written at 2×
 * the input price, read at 0.1× for an hour). What was read and written comes back as
 * `usage.cachedInputTokens` and `usage.cacheWriteTokens`.
 *
 * @example
 * ```ts
 * const cache: AnthropicCacheOptions = { ttl: '1h', breakpoints: 4 };
 * ```
 */
export interface AnthropicCacheOptions {
  readonly ttl?: '5m' | '1h';
  readonly breakpoints?: number;
}

const Fallbacks = check(
  "'default' or a non-empty array of { model: non-empty string, … }",
  (u): u is AnthropicFallbacks =>
    u === 'default' || (Array.isArray(u) && u.length > 0 && u.every((f) => isObject(f) && typeof f['model'] === 'string' && f['model'] !== '')),
);
const Cache = check(
  "{ ttl?: '5m' | '1h', breakpoints?: 1 to 4 }",
  (u): u is AnthropicCacheOptions =>
    isObject(u) &&
    Object.keys(u).every((k) => k === 'ttl' || k === 'breakpoints') &&
    (u['ttl'] === undefined || u['ttl'] === '5m' || u['ttl'] === '1h') &&
    (u['breakpoints'] === undefined || (Number.isInteger(u['breakpoints']) && (u['breakpoints'] as number) >= 1 && (u['breakpoints'] as number) <= 4)),
);

const props = {
  baseURL: HttpUrl,
  apiKey: AnyString,
  model: NonEmptyString,
  maxTokens: PositiveInteger,
  headers: StringRecord,
  body: PlainObject,
  fetch: Func,
  id: NonEmptyString,
  maxEventSize: PositiveInteger,
  fallbacks: Fallbacks,
  cache: Cache,
  eagerInputStreaming: Bool,
};

/**
 * The API version this adapter speaks, sent as `anthropic-version`.
 *
 * @example
 * ```ts
 * fetch(url, { headers: { 'anthropic-version': ANTHROPIC_VERSION } });
 * ```
 */
export const ANTHROPIC_VERSION = '2023-06-01';

// ---------------------------------------------------------------------------------------------
// request
// ---------------------------------------------------------------------------------------------

type Block = Record<string, unknown>;
interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

/** A tool call's arguments as the object `tool_use.input` must be. */
function inputOf(args: unknown): Record<string, unknown> {
  if (typeof args === 'object' && args !== null && !Array.isArray(args)) return args as Record<string, unknown>;
  if (typeof args === 'string') {
    const parsed = parseToolArguments(args);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  }
  // not an object (e.g. raw text that was not JSON): the tool result that follows says what was wrong
  return {};
}

function blocksOf(message: Exclude<Message, { role: 'system' }>): AnthropicMessage {
  switch (message.role) {
    case 'user':
      return { role: 'user', content: message.content === '' ? [] : [{ type: 'text', text: message.content }] };
    case 'assistant': {
      // reasoning first, as the API gave it: signed thinking and redacted blocks (the API wants
      // them back on a tool-use turn with extended thinking); unsigned reasoning can't be sent
      const content: Block[] = [];
      for (const part of message.reasoning ?? []) {
        const opaque = anthropicBlock(part.providerMetadata);
        if (opaque !== undefined) content.push({ ...opaque });
        else if (part.redactedData !== undefined) content.push({ type: 'redacted_thinking', data: part.redactedData });
        else if (part.signature !== undefined) content.push({ type: 'thinking', thinking: part.text, signature: part.signature });
      }
      if (message.content !== '') content.push({ type: 'text', text: message.content });
      for (const call of message.toolCalls ?? []) content.push({ type: 'tool_use', id: call.id, name: call.name, input: inputOf(call.args) });
      return { role: 'assistant', content };
    }
    case 'tool': {
      const block: Block = { type: 'tool_result', tool_use_id: message.toolCallId, content: message.content };
      if (message.isError) block['is_error'] = true;
      return { role: 'user', content: [block] };
    }
  }
}

/**
 * An opaque block this API gave (a compaction), kept in `providerMetadata.anthropic.block`: sent
 * back as it came. Another provider's metadata is not this API's: never sent here.
 */
function anthropicBlock(meta: Readonly<Record<string, unknown>> | undefined): Block | undefined {
  const mine = meta?.['anthropic'];
  const block = isObject(mine) ? mine['block'] : undefined;
  return isObject(block) && typeof block['type'] === 'string' ? block : undefined;
}

/**
 * What the request body takes besides the request: prompt-cache breakpoints and fine-grained tool
 * streaming (as {@link AnthropicModelOptions} describes them).
 *
 * @example
 * ```ts
 * anthropicRequestBody('claude-sonnet-4-5', 1024, request, {}, { cache: { ttl: '1h' }, eagerInputStreaming: true });
 * ```
 */
export interface AnthropicBodyOptions {
  readonly cache?: AnthropicCacheOptions;
  readonly eagerInputStreaming?: boolean;
}

/**
 * {@link AnthropicBodyOptions}, checked: `cache` and `eagerInputStreaming` of `options` (other
 * fields are left to the caller), or an `InvalidOptionError` naming `target` and the option.
 *
 * @example
 * ```ts
 * anthropicBodyOptions('fromAnthropic', { cache: { ttl: '1h' } }); // { cache: { ttl: '1h' } }
 * ```
 * @throws {InvalidOptionError} for a `cache` or `eagerInputStreaming` that is not one.
 */
export function anthropicBodyOptions(
  target: string,
  options: { readonly cache?: unknown; readonly eagerInputStreaming?: unknown } | undefined,
): AnthropicBodyOptions {
  const { cache, eagerInputStreaming } = options ?? {};
  checkProviderOptions(target, { cache: Cache, eagerInputStreaming: Bool }, { cache, eagerInputStreaming }, []);
  return { ...(cache ? { cache: cache as AnthropicCacheOptions } : {}), ...(eagerInputStreaming === true ? { eagerInputStreaming: true } : {}) };
}

/**
 * A `cache_control` mark on the last block of `content` (a string is made a text block first), in
 * a copy of the list: a list the caller gave (the `body` option's `system` or `tools`) is never
 * changed, so one call's marks never reach the next call, nor another model sharing the option.
 */
function markLast(holder: Record<string, unknown>, key: string, control: Record<string, unknown>): boolean {
  const value = holder[key];
  if (typeof value === 'string') {
    if (value === '') return false;
    holder[key] = [{ type: 'text', text: value, cache_control: control }];
    return true;
  }
  if (!Array.isArray(value) || value.length === 0) return false;
  const last: unknown = value[value.length - 1];
  if (!isObject(last)) return false;
  holder[key] = [...(value as unknown[]).slice(0, -1), { ...last, cache_control: control }];
  return true;
}

/**
 * Up to `breakpoints` marks: the tools' end, the system prompt's, the conversation's, the turn
 * before it. Where they go depends on the body and `cache` alone (never on an attempt, a time or
 * a model instance): a retry, and every model with the same options, send the same prefix with
 * the same marks, so the provider's cache reads what the first one wrote.
 */
function placeBreakpoints(body: Record<string, unknown>, messages: AnthropicMessage[], cache: AnthropicCacheOptions): void {
  const control: Record<string, unknown> = cache.ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
  let left = cache.breakpoints ?? 2;
  if (left > 0 && Array.isArray(body['tools']) && markLast(body, 'tools', control)) left--;
  if (left > 0 && markLast(body, 'system', control)) left--;
  const last = messages.length - 1;
  if (left > 0 && last >= 0 && markLast(messages[last] as unknown as Record<string, unknown>, 'content', control)) left--;
  // the end of the previous turn: the message before the last user message
  let lastUser = last;
  while (lastUser >= 0 && messages[lastUser]!.role !== 'user') lastUser--;
  if (left > 0 && lastUser >= 1 && lastUser - 1 !== last) markLast(messages[lastUser - 1] as unknown as Record<string, unknown>, 'content', control);
}

/**
 * The `anthropic-beta` values a request body needs: the server-side fallback's
 * (`server-side-fallback-2026-07-01` for `fallbacks: 'default'`, `server-side-fallback-2026-06-01`
 * for a chain), context editing's (`context-management-2025-06-27` with `context_management`),
 * compaction's (`compact-2026-01-12` with a `compact_20260112` edit, or a compaction block sent
 * back), joined with those already in `given` (each once).
 *
 * @example
 * ```ts
 * anthropicBetas({ fallbacks: 'default' }); // 'server-side-fallback-2026-07-01'
 * ```
 */
export function anthropicBetas(body: Readonly<Record<string, unknown>>, given?: string): string | undefined {
  const betas = new Set(
    (given ?? '')
      .split(',')
      .map((b) => b.trim())
      .filter((b) => b !== ''),
  );
  const fallbacks = body['fallbacks'];
  if (fallbacks === 'default') betas.add('server-side-fallback-2026-07-01');
  else if (Array.isArray(fallbacks) && fallbacks.length > 0) betas.add('server-side-fallback-2026-06-01');
  const management = body['context_management'];
  const edits = isObject(management) && Array.isArray(management['edits']) ? (management['edits'] as unknown[]) : [];
  if (isObject(management)) betas.add('context-management-2025-06-27');
  const messages = Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : [];
  const compactionBack = messages.some(
    (m) => isObject(m) && Array.isArray(m['content']) && (m['content'] as unknown[]).some((b) => isObject(b) && b['type'] === 'compaction'),
  );
  if (compactionBack || edits.some((e) => isObject(e) && e['type'] === 'compact_20260112')) betas.add('compact-2026-01-12');
  return betas.size === 0 ? undefined : [...betas].join(',');
}

/**
 * The Messages API request body for a model request (streaming): system messages joined into
 * `system`, tool results as user `tool_result` blocks, tool calls as assistant `tool_use`
 * blocks, consecutive messages of one role merged (the API wants roles to alternate), empty text
 * left out. `max_tokens` is the request's `maxOutputTokens` when it has one, else `maxTokens` (the
 * model's default).
 *
 * @example
 * ```ts
 * anthropicRequestBody('claude-sonnet-4-5', 1024, { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }], tools: [] });
 * // { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, system: 'Be brief.', messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] }
 * anthropicRequestBody('claude-sonnet-4-5', 1024, { messages: [{ role: 'user', content: 'Hi' }], tools: [], maxOutputTokens: 256 })['max_tokens']; // 256
 * ```
 * @throws {InvalidOptionError} for a request whose `maxOutputTokens` is not a positive integer.
 */
export function anthropicRequestBody(
  model: string,
  maxTokens: number,
  request: ModelRequest,
  extra: Readonly<Record<string, unknown>> = {},
  options: AnthropicBodyOptions = {},
): Record<string, unknown> {
  const maxOutputTokens = requestMaxOutputTokens('anthropicRequestBody', request) ?? maxTokens;
  const system: string[] = [];
  const messages: AnthropicMessage[] = [];
  for (const message of request.messages) {
    if (message.role === 'system') {
      system.push(message.content);
      continue;
    }
    const next = blocksOf(message);
    if (next.content.length === 0) continue;
    const last = messages[messages.length - 1];
    if (last !== undefined && last.role === next.role) {
      // tool results go first in a user turn, as the API asks
      last.content = next.content.some((b) => b['type'] === 'tool_result')
        ? [...last.content, ...next.content].sort(toolResultsFirst)
        : [...last.content, ...next.content];
    } else {
      messages.push(next);
    }
  }
  const body: Record<string, unknown> = { ...extra, model, max_tokens: maxOutputTokens, stream: true };
  if (system.length > 0) body['system'] = system.join('\n\n');
  body['messages'] = messages;
  if (request.tools.length > 0) {
    body['tools'] = request.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: toolParameters(tool),
      ...(options.eagerInputStreaming ? { eager_input_streaming: true } : {}),
    }));
    const choice = request.toolChoice;
    if (choice !== undefined)
      body['tool_choice'] = typeof choice === 'object' ? { type: 'tool', name: choice.tool } : { type: choice === 'required' ? 'any' : choice };
  }
  if (options.cache) placeBreakpoints(body, messages, options.cache);
  return body;
}

const toolResultsFirst = (a: Block, b: Block): number => Number(b['type'] === 'tool_result') - Number(a['type'] === 'tool_result');

// ---------------------------------------------------------------------------------------------
// response
// ---------------------------------------------------------------------------------------------

/**
 * The HTTP status the Messages API gives an error type (`overloaded_error` → 529,
 * `rate_limit_error` → 429, …; unknown types → 500).
 *
 * @example
 * ```ts
 * anthropicErrorStatus('overloaded_error'); // 529
 * ```
 */
export function anthropicErrorStatus(type: unknown): number {
  return errorTypeStatus(type) ?? 500;
}

/**
 * A {@link Model} speaking Anthropic's Messages API with `stream: true`, over `fetch`.
 *
 * Requests: `toolChoice` → `tool_choice` (`auto`, `none`, `any` for `'required'`, `tool` with
 * its name); `maxOutputTokens` → `max_tokens`, in place of the `maxTokens` option (one that is not a
 * positive integer errors the call with an `InvalidOptionError`, nothing sent); system messages become the top-level `system`; tool results become user
 * `tool_result` blocks (`is_error` kept), assistant tool calls `tool_use` blocks (arguments that
 * are not an object are sent as `{}`), an assistant message's signed reasoning `thinking` blocks,
 * its redacted reasoning `redacted_thinking` blocks and the opaque blocks this API gave
 * (`compaction`), first and in their order (so a tool-use turn with extended thinking — `body: {
 * thinking: { type: 'enabled', budget_tokens } }` — and a compacted conversation go back as the
 * API requires; another provider's reasoning or compaction is never sent here: a fallback from
 * it starts from the whole, uncompacted transcript); tools `{ name, description, input_schema }`
 * (with `eager_input_streaming`: see the option); `cache` breakpoints; `fallbacks`; headers
 * `x-api-key`, `anthropic-version: 2023-06-01` and the `anthropic-beta` the body needs
 * ({@link anthropicBetas}: server-side fallback, `context_management` edits, compaction) joined
 * with the one in `headers`.
 *
 * Events: `text_delta` → `text-delta`; a `thinking` block → `reasoning-delta`s (its
 * `thinking_delta`s), then a `reasoning-end` with its `signature` at its `content_block_stop`; a
 * `redacted_thinking` block → a `reasoning-end` with `redactedData`; a `tool_use` block (id and name from
 * `content_block_start`, its `input_json_delta` pieces joined) → one `tool-call` at its
 * `content_block_stop`, arguments parsed (the raw text when not valid JSON, as with
 * {@link openAICompatibleModel}); `message_stop` → one `finish` (`end_turn` / `stop_sequence` →
 * `stop`, `tool_use` → `tool-calls`, `max_tokens` → `length`, `refusal` → `content-filter`,
 * others `other`) with `usage`: input = `input_tokens` + `cache_creation_input_tokens` +
 * `cache_read_input_tokens` and output = `output_tokens`, each from the last `message_start` or
 * `message_delta` that carried it (summed over `usage.iterations` when the API ran several
 * samplings), the cache's reads and writes as `cachedInputTokens` / `cacheWriteTokens`; a
 * `fallback` block (server-side fallback) → the finish's `providerFallbacks` (a `fallback` event
 * marked `providerSide` on the run's hub) and a `reset` when the blocked model had emitted;
 * `stop_details.recommended_model` → the finish's `recommendedModel`; a `compaction` block → a
 * `reasoning-end` without text whose `providerMetadata.anthropic.block` is the block (opaque:
 * never shown, sent back as it came). `ping`, citations, server tool blocks, context editing's
 * `applied_edits` and unknown event types are skipped.
 *
 * Errors (each one `classifyError` understands):
 * - a non-2xx response → `HttpError` with status, headers and body;
 * - an `error` event mid-stream → `HttpError` with the status the API gives that error type:
 *   `overloaded_error` → 529 (`server_error`: retryable, fallback-able), `rate_limit_error` →
 *   429, `api_error` → 500, `invalid_request_error` → 400 (not retryable)…;
 * - the body ends before `message_stop`, or the connection drops → `IncompleteStreamError`
 *   (`connection`: retryable, fallback-able) — never a short answer;
 * - an unreadable event, or one that would lose text or a tool call (a second `message_start`
 *   with another id — a spliced stream —, a block started twice, a delta in the wrong block, a
 *   `tool_use` block still open at `message_stop`) → `MalformedStreamError` (`bad_gateway`:
 *   retryable, fallback-able); so is an event larger than `maxEventSize`.
 *
 * Unsubscribing aborts the request and cancels the body reader at once; so does aborting the
 * context signal given to `stream`.
 *
 * @example
 * ```ts
 * const claude = anthropicModel({ apiKey: process.env.ANTHROPIC_API_KEY, model: 'claude-sonnet-4-5' });
 * const local = anthropicModel({ baseURL: server.url, model: 'local', id: 'secondary' });
 * runAgent({ model: fallbackModel([claude, local]), tools: [getWeather], messages }).subscribe(render);
 * ```
 * @throws {InvalidOptionError} at once, for a missing or invalid option.
 */
export function anthropicModel(options: AnthropicModelOptions): Model {
  checkProviderOptions('anthropicModel', props, options, ['model']);
  const { apiKey, model, maxTokens = 4096, headers = {}, fallbacks, cache, eagerInputStreaming } = options;
  const body = fallbacks === undefined ? (options.body ?? {}) : { ...options.body, fallbacks };
  const id = options.id ?? `anthropic:${model}`;
  const url = `${withoutTrailingSlashes(options.baseURL ?? 'https://api.anthropic.com')}/v1/messages`;
  const defaults: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION, ...(apiKey ? { 'x-api-key': apiKey } : {}) };
  const bodyOptions: AnthropicBodyOptions = { ...(cache ? { cache } : {}), ...(eagerInputStreaming ? { eagerInputStreaming } : {}) };
  return {
    id,
    stream: (request, context) => {
      let payload: Record<string, unknown>;
      try {
        payload = anthropicRequestBody(model, maxTokens, request, body, bodyOptions);
      } catch (error) {
        return throwError(() => error); // a request it can't send (maxOutputTokens): an error of the call
      }
      const betas = anthropicBetas(payload, headers['anthropic-beta']);
      return decodeSse(
        {
          model: id,
          url,
          headers: { ...defaults, ...headers, ...(betas === undefined ? {} : { 'anthropic-beta': betas }) },
          body: payload,
          ...(options.fetch ? { fetch: options.fetch } : {}),
          ...(options.maxEventSize ? { maxEventSize: options.maxEventSize } : {}),
          signal: context.signal,
        },
        () => anthropicStreamDecoder(id),
      );
    },
  };
}
