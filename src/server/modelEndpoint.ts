/**
 * The local provider's model endpoints (`POST /v1/chat/completions`, `POST /v1/messages`,
 * `POST /v1/responses`): one request answered by the assistant, in the wire format of OpenAI's
 * Chat Completions, Anthropic's Messages or OpenAI's Responses API, streamed or not, and
 * the faults that act on it on the way — before the answer (slow first byte, down, status) and
 * within the stream (reset, stall, malformed chunk, error event, bad tool arguments) — and the
 * prompt cache's wait for the input it did not hold (`promptCache.uncachedMsPer1kTokens`). Node only.
 *
 * @module
 */
// Node-only module: the library's build has no ambient Node types (its other modules are browser-safe)
/// <reference types="node" />
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { asyncScheduler } from 'rxjs';
import type { Message } from '../core/events/events.js';
import { tokenize, type Assistant, type AssistantRequest, type AssistantTool, type AssistantTurn } from './assistant.js';
import type { FaultController } from './faults.js';
import { json, readJson } from './http.js';
import {
  anthropicFrames,
  asksForThinking,
  thinkingSignature,
  toolsAllowed,
  anthropicJson,
  argumentPieces,
  BadRequest,
  errorBody,
  fromAnthropic,
  fromOpenAI,
  isRecord,
  malformedFrame,
  openAIFrames,
  openAIJson,
  streamErrorFrame,
  type Answer,
  type Protocol,
  type ToolCallOut,
} from './protocols.js';
import type { MutableRequest, RequestLog } from './requests.js';
import type { BackgroundResponses } from './backgroundResponses.js';
import { anthropicCacheParts, anthropicCompaction, fallbackTarget, responsesCompaction, uncachedDelayMs, type PromptCache } from './providerSide.js';
import {
  fromResponses,
  responsesAsksForThinking,
  responsesFrames,
  responsesJson,
  responsesMalformedFrame,
  responsesRunningJson,
  responsesStreamErrorFrame,
} from './responsesProtocol.js';

/** What the model endpoints need of the server they answer for. */
export interface ModelEndpoint {
  /** The server's `name` (in its error messages). */
  readonly name: string;
  readonly faults: FaultController;
  readonly assistant: Assistant;
  /** Wait before each streamed content chunk, in ms. */
  readonly tokenDelayMs: number;
  readonly maxBodyBytes: number;
  readonly log: RequestLog;
  /** Requests in progress, by the controller that stops their work (`close()` aborts them). */
  readonly running: Map<AbortController, MutableRequest>;
  /** Whether the server is closing: a request that ends then ends `'server-closed'`. */
  closing(): boolean;
  /** The next request's id: `req_1`, `req_2`… */
  nextId(): string;
  /** The stored background responses (Responses API, `background: true`). */
  readonly background: BackgroundResponses;
  /** The prompt cache: the prefixes of the requests seen. */
  readonly promptCache: PromptCache;
  /** The wait before an answer's first byte per 1 000 input tokens not read from the cache, in ms. */
  readonly uncachedMsPer1kTokens: number;
}

/**
 * What a request reads from and writes to the prompt cache: Anthropic's with `cache_control`
 * breakpoints (prefixes seen before are read, the rest up to the last breakpoint written),
 * OpenAI's with a `prompt_cache_key` (the longest run of leading messages seen before under that
 * key is read). Nothing without either.
 */
function promptCacheUse(
  cache: PromptCache,
  protocol: Protocol,
  body: Record<string, unknown>,
  messages: readonly Message[],
  inputTokens: number,
): { cacheRead?: number; cacheWrite?: number } {
  if (protocol === 'anthropic') {
    const { parts, cached } = anthropicCacheParts(body);
    if (cached === 0) return {};
    const { read, write } = cache.use('anthropic', parts, cached);
    // what is read and written are parts of the input: together never more than it
    const cacheRead = Math.min(read, inputTokens);
    const cacheWrite = Math.min(write, inputTokens - cacheRead);
    return { ...(cacheRead > 0 ? { cacheRead } : {}), ...(cacheWrite > 0 ? { cacheWrite } : {}) };
  }
  const key = body['prompt_cache_key'];
  if (typeof key !== 'string' || key === '') return {};
  // the last message is the new one: only what came before it can have been seen
  const { read } = cache.use(
    `${protocol}:${key}`,
    messages.map((m) => JSON.stringify(m)),
    0,
  );
  return read > 0 ? { cacheRead: Math.min(read, inputTokens) } : {};
}

/** What the local provider "thinks" before a turn: the question, and what it will do about it. */
function reasoningFor(messages: readonly Message[], calls: readonly ToolCallOut[]): string {
  let question = '';
  for (const m of messages) if (m.role === 'user') question = m.content;
  const asked = question.length > 80 ? `${question.slice(0, 80)}…` : question;
  const plan = calls.length > 0 ? `I'll call ${calls.map((c) => c.name).join(' and ')}.` : 'I can answer from what I have.';
  return `The user asks: "${asked}". ${plan}`;
}

/**
 * Answers one model call: reads and records the request, lets the faults due act on it, asks the
 * assistant, and writes its answer as JSON or as the protocol's stream, the stream faults acting
 * where they are due. Every way the request ends is recorded in the log.
 */
export async function answerModelCall(endpoint: ModelEndpoint, req: IncomingMessage, res: ServerResponse, protocol: Protocol, path: string): Promise<void> {
  const { name, faults, assistant, tokenDelayMs, log, running } = endpoint;
  const raw = await readJson(req, endpoint.maxBodyBytes).catch((error: unknown) => {
    if (error instanceof BadRequest) return error;
    throw error;
  });
  if (raw instanceof BadRequest || !isRecord(raw.value)) {
    const status = raw instanceof BadRequest ? raw.status : 400;
    const message = raw instanceof BadRequest ? raw.message : 'the body must be a JSON object';
    return json(res, status, errorBody(protocol, status, message));
  }
  const body = raw.value;
  const stream = body['stream'] === true;
  const record: MutableRequest = {
    id: endpoint.nextId(),
    protocol,
    path,
    stream,
    body,
    bodyBytes: raw.bytes,
    startedAt: asyncScheduler.now(),
    faults: [],
    chunks: 0,
  };
  log.start(record);

  const controller = new AbortController();
  running.set(controller, record);
  res.on('close', () => {
    running.delete(controller);
    controller.abort();
    log.finish(record, endpoint.closing() ? 'server-closed' : res.writableFinished ? 'completed' : 'client-closed');
  });
  const { signal } = controller;
  const wait = (ms: number): Promise<void> => (ms > 0 ? sleep(ms, undefined, { signal }) : Promise.resolve());
  const destroy = (): void => {
    log.finish(record, 'reset');
    res.socket?.destroy();
  };
  const headers = { 'x-request-id': record.id };

  try {
    const slow = faults.consume('slow-first-byte');
    if (slow) {
      record.faults.push('slow-first-byte');
      await wait(slow.delayMs);
    }
    const down = faults.consume('down');
    if (down) {
      record.faults.push('down');
      if ((down.mode ?? 'destroy') === 'destroy') return destroy();
      record.status = 503;
      return json(res, 503, errorBody(protocol, 503, `provider '${name}' is down (local fault)`), headers);
    }
    const status = faults.consume('status');
    if (status) {
      record.faults.push('status');
      record.status = status.status;
      const extra: Record<string, string> = { ...headers };
      if (status.retryAfter !== undefined) extra['retry-after'] = String(status.retryAfter);
      if (status.retryAfterMs !== undefined) extra['retry-after-ms'] = String(status.retryAfterMs);
      if (status.shouldRetry !== undefined) extra['x-should-retry'] = String(status.shouldRetry);
      // the message says what a real API's does, not the status: every client already prefixes that
      return json(
        res,
        status.status,
        errorBody(protocol, status.status, status.message ?? `${STATUS_CODES[status.status] ?? 'Error'} from '${name}' (local fault)`),
        extra,
      );
    }

    let conversation: { messages: Message[]; tools: AssistantTool[] };
    try {
      conversation = protocol === 'openai' ? fromOpenAI(body) : protocol === 'responses' ? fromResponses(body) : fromAnthropic(body);
    } catch (error) {
      if (!(error instanceof BadRequest)) throw error;
      record.status = 400;
      return json(res, 400, errorBody(protocol, 400, error.message), headers);
    }
    const model = typeof body['model'] === 'string' ? body['model'] : 'local';
    // tool_choice honoured as the APIs do: 'none' offers no tool, a named one only that one
    const request: AssistantRequest = { protocol, model, messages: conversation.messages, tools: toolsAllowed(body, conversation.tools) };
    const turn: AssistantTurn = assistant(request);
    let calls: ToolCallOut[] = (turn.toolCalls ?? []).map((c, i) => ({
      id: protocol === 'anthropic' ? `toolu_${record.id.slice(4)}_${i}` : `call_${record.id.slice(4)}_${i}`,
      name: c.name,
      args: c.args,
    }));
    if (calls.length > 0) {
      const bad = faults.consume('bad-tool-args');
      if (bad) {
        record.faults.push('bad-tool-args');
        calls = calls.map((c) => ({ ...c, args: bad.args ?? (c.name === 'get_weather' && isRecord(c.args) ? { ...c.args, units: 'kelvin' } : {}) }));
      }
    }
    const blocked = protocol === 'anthropic' ? faults.consume('blocked') : undefined;
    if (blocked) record.faults.push('blocked');
    const fallbackTo = blocked ? fallbackTarget(body, model) : undefined;
    const refused = blocked !== undefined && fallbackTo === undefined;
    const said = refused ? '' : (turn.text ?? '');
    // a model that talks too long: the answer said over and over
    const verbose = said !== '' ? faults.consume('verbose') : undefined;
    if (verbose) record.faults.push('verbose');
    const text = verbose ? Array.from({ length: verbose.repeat ?? 20 }, () => said).join(' ') : said;
    const tokens = tokenize(text);
    if (refused) calls = [];
    const inputChars = conversation.messages.reduce((n, m) => n + m.content.length, 0);
    const inputTokens = Math.max(1, Math.ceil(inputChars / 4));
    const cache = promptCacheUse(endpoint.promptCache, protocol, body, conversation.messages, inputTokens);
    if (cache.cacheRead !== undefined) record.cacheRead = cache.cacheRead;
    if (cache.cacheWrite !== undefined) record.cacheWrite = cache.cacheWrite;
    // the input the cache did not hold is processed first: the answer starts that much later
    const uncachedDelay = uncachedDelayMs(endpoint.uncachedMsPer1kTokens, inputTokens, cache.cacheRead ?? 0);
    if (uncachedDelay > 0) await wait(uncachedDelay);
    const compaction =
      protocol === 'anthropic'
        ? anthropicCompaction(body, conversation.messages, inputTokens)
        : protocol === 'responses'
          ? responsesCompaction(body, conversation.messages, inputTokens)
          : undefined;
    // thinking asked for: a short, signed reasoning block first (the API's own shape)
    const thought = (protocol === 'responses' ? responsesAsksForThinking(body) : asksForThinking(body))
      ? reasoningFor(conversation.messages, calls)
      : undefined;
    const reasoning = thought === undefined || refused ? undefined : { tokens: tokenize(thought), signature: thinkingSignature(thought) };
    const answer: Answer = {
      id: protocol === 'openai' ? `chatcmpl-${record.id}` : protocol === 'responses' ? record.id : `msg_${record.id}`,
      model,
      text,
      tokens,
      toolCalls: calls,
      finishReason: turn.finishReason ?? (calls.length > 0 ? 'tool-calls' : 'stop'),
      inputTokens,
      outputTokens: tokens.length + calls.reduce((n, c) => n + argumentPieces(c.args).length, 0) + (reasoning?.tokens.length ?? 0),
      ...(reasoning ? { reasoning } : {}),
      ...cache,
      ...(compaction === undefined ? {} : { compaction }),
      ...(fallbackTo === undefined ? {} : { fallback: { from: model, to: fallbackTo } }),
      ...(refused ? { refusal: { recommendedModel: blocked?.recommendedModel ?? `${model}-fallback` } } : {}),
    };

    if (protocol === 'responses' && body['background'] === true) {
      // generated by the server on its own and kept, whoever reads it: a lost stream is picked up again
      if (body['store'] === false) {
        record.status = 400;
        return json(res, 400, errorBody(protocol, 400, "Background mode requires 'store' to be true: a background response is stored."), headers);
      }
      const stored = endpoint.background.start({
        id: `resp_${answer.id}`,
        frames: responsesFrames(answer, body),
        running: responsesRunningJson(answer, body),
        done: responsesJson(answer, body),
      });
      record.status = 200;
      if (!stream) return json(res, 200, stored.object(), headers);
      const fault = faults.consume('reset', 'stall', 'malformed', 'stream-error');
      if (fault) record.faults.push(fault.kind);
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', ...headers });
      res.flushHeaders();
      return endpoint.background.follow(stored, -1, res, fault, destroy);
    }

    if (!stream) {
      record.status = 200;
      return json(
        res,
        200,
        protocol === 'openai' ? openAIJson(answer) : protocol === 'responses' ? responsesJson(answer, body) : anthropicJson(answer),
        headers,
      );
    }

    const streamOptions = body['stream_options'];
    const frames =
      protocol === 'openai'
        ? openAIFrames(answer, isRecord(streamOptions) && streamOptions['include_usage'] === true)
        : protocol === 'responses'
          ? responsesFrames(answer, body)
          : anthropicFrames(answer);
    /** Frames written so far: a Responses fault event is numbered as the next one. */
    let written = 0;
    const fault = faults.consume('reset', 'stall', 'malformed', 'stream-error');
    if (fault) record.faults.push(fault.kind);
    const after = fault?.afterChunks ?? 0;
    let pending = fault;

    record.status = 200;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', ...headers });
    res.flushHeaders();
    const write = (chunk: string): Promise<void> => new Promise((resolve, reject) => res.write(chunk, (error) => (error ? reject(error) : resolve())));

    /** Acts on the stream fault; true when the stream must stop here. */
    const act = async (): Promise<boolean> => {
      const f = pending;
      pending = undefined;
      if (f === undefined) return false;
      switch (f.kind) {
        case 'reset':
          // when the next chunk would have come: a client reading chunk by chunk (Chromium) gets
          // the last one before the error, not sometimes with it (and then loses it)
          await wait(tokenDelayMs);
          destroy();
          return true;
        case 'stall':
          // headers (and what was sent so far), then silence until the client leaves or close()
          if (!signal.aborted) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
          return true;
        case 'malformed':
          await write(protocol === 'responses' ? responsesMalformedFrame(written) : malformedFrame(protocol, answer));
          return false;
        case 'stream-error':
          await write(protocol === 'responses' ? responsesStreamErrorFrame(f, written) : streamErrorFrame(protocol, f));
          res.end();
          return true;
      }
    };

    let content = 0;
    for (const frame of frames) {
      if (signal.aborted) return;
      // a stream fault acts before content chunk `after` + 1, or before the closing events of a shorter answer
      const due = pending !== undefined && (frame.part === 'closing' || (frame.part === 'content' && content >= after));
      if (due && (await act())) return;
      if (frame.part === 'content') {
        await wait(tokenDelayMs);
        content++;
        record.chunks = content;
      }
      await write(frame.text);
      written++;
    }
    res.end();
  } catch (error) {
    if (signal.aborted) return; // the client left, or close(): nothing to answer
    if (error instanceof BadRequest) {
      record.status = 400;
      return json(res, 400, errorBody(protocol, 400, error.message), headers);
    }
    if (!res.headersSent) {
      record.status = 500;
      return json(res, 500, errorBody(protocol, 500, `the local assistant failed: ${(error as Error | undefined)?.message ?? String(error)}`), headers);
    }
    res.destroy();
  }
}
