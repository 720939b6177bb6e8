/**
 * The third wire protocol of the local provider: OpenAI's Responses API (`POST /v1/responses`),
 * streaming (SSE events, each with its `sequence_number`) and not (a response object); requests
 * in (input items → rxheal messages), with the API's rule for reasoning sent back statelessly; the
 * error, malformed and mid-stream error events.
 *
 * @module
 */
// Node-only module (Buffer): the library's build has no ambient Node types
/// <reference types="node" />
import { asyncScheduler } from 'rxjs';
import { showValue } from '../core/errors/errors.js';
import type { Message } from '../core/events/events.js';
import { parseToolArguments } from '../providers/sse.js';
import type { AssistantTool } from './assistant.js';
import type { StreamErrorFault } from './faults.js';
import { afterCompaction, compactionSummary, encryptedCompaction } from './providerSide.js';
import { argumentPieces, BadRequest, isRecord, sse, textOf, thinkingSignature, type Answer, type Frame } from './protocols.js';

/** Whether a Responses request asks for reasoning: `reasoning: { effort }` other than `'none'`. */
export function responsesAsksForThinking(body: Record<string, unknown>): boolean {
  const reasoning = body['reasoning'];
  return isRecord(reasoning) && typeof reasoning['effort'] === 'string' && reasoning['effort'] !== 'none';
}

/**
 * The local provider's "encrypted" reasoning: the summary text and its signature, base64url — not
 * a secret, but opaque to a client and checked when it comes back, as the API checks its own.
 */
export function encryptedReasoning(text: string): string {
  return `local-enc-${Buffer.from(JSON.stringify({ text, signature: thinkingSignature(text) }), 'utf8').toString('base64url')}`;
}

/** Whether `blob` is reasoning this provider encrypted (unaltered). */
function verified(blob: unknown): boolean {
  if (typeof blob !== 'string' || !blob.startsWith('local-enc-')) return false;
  try {
    const { text, signature } = JSON.parse(Buffer.from(blob.slice('local-enc-'.length), 'base64url').toString('utf8')) as {
      text?: unknown;
      signature?: unknown;
    };
    return typeof text === 'string' && signature === thinkingSignature(text);
  } catch {
    return false;
  }
}

/** The response's items of one answer, whole (as `output_item.done` and the response object carry them). */
function outputItems(answer: Answer, body: Record<string, unknown>): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  if (answer.reasoning) items.push(reasoningItem(answer, body));
  if (answer.text !== '')
    items.push({
      type: 'message',
      id: `msg_${answer.id}`,
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: answer.text, annotations: [] }],
    });
  answer.toolCalls.forEach((call, i) =>
    items.push({
      type: 'function_call',
      id: `fc_${answer.id}_${i}`,
      call_id: call.id,
      name: call.name,
      arguments: typeof call.args === 'string' ? call.args : JSON.stringify(call.args),
      status: 'completed',
    }),
  );
  // server-side compaction: after the answer, as the API sends it
  if (answer.compaction !== undefined) items.push({ type: 'compaction', id: `cmp_${answer.id}`, encrypted_content: encryptedCompaction(answer.compaction) });
  return items;
}

/** A reasoning item: its summary when `reasoning.summary` asked for one; its encrypted content when `include` asked for it. */
function reasoningItem(answer: Answer, body: Record<string, unknown>): Record<string, unknown> {
  const text = answer.reasoning!.tokens.join('');
  const reasoning = isRecord(body['reasoning']) ? body['reasoning'] : {};
  const summary = reasoning['summary'] !== undefined && reasoning['summary'] !== null ? [{ type: 'summary_text', text }] : [];
  const include = Array.isArray(body['include']) ? body['include'] : [];
  return {
    type: 'reasoning',
    id: `rs_${answer.id}`,
    summary,
    encrypted_content: include.includes('reasoning.encrypted_content') ? encryptedReasoning(text) : null,
  };
}

function usageOf(answer: Answer): Record<string, unknown> {
  return {
    input_tokens: answer.inputTokens,
    input_tokens_details: { cached_tokens: answer.cacheRead ?? 0 },
    output_tokens: answer.outputTokens,
    output_tokens_details: { reasoning_tokens: answer.reasoning?.tokens.length ?? 0 },
    total_tokens: answer.inputTokens + answer.outputTokens,
  };
}

/** The response object: in progress (no output yet), or done with its items and usage. */
function responseObject(answer: Answer, body: Record<string, unknown>, done: boolean): Record<string, unknown> {
  const length = answer.finishReason === 'length';
  return {
    id: `resp_${answer.id}`,
    object: 'response',
    created_at: Math.floor(asyncScheduler.now() / 1000),
    status: done ? (length ? 'incomplete' : 'completed') : 'in_progress',
    error: null,
    incomplete_details: done && length ? { reason: 'max_output_tokens' } : null,
    model: answer.model,
    output: done ? outputItems(answer, body) : [],
    background: body['background'] === true,
    store: body['store'] !== false,
    usage: done ? usageOf(answer) : null,
  };
}

/** The events of one answer, numbered: created, in progress, each item (added, its deltas, done), then completed (or incomplete at `length`). */
export function responsesFrames(answer: Answer, body: Record<string, unknown>): Frame[] {
  const frames: Frame[] = [];
  const push = (part: Frame['part'], event: Record<string, unknown>): void => {
    frames.push({ part, text: sse({ ...event, sequence_number: frames.length }, String(event['type'])) });
  };
  push('preamble', { type: 'response.created', response: responseObject(answer, body, false) });
  push('preamble', { type: 'response.in_progress', response: responseObject(answer, body, false) });
  const whole = outputItems(answer, body);
  whole.forEach((item, output_index) => {
    const id = item['id'];
    push('preamble', {
      type: 'response.output_item.added',
      output_index,
      item:
        item['type'] === 'function_call'
          ? { ...item, arguments: '', status: 'in_progress' }
          : item['type'] === 'compaction'
            ? item
            : { ...item, ...(item['type'] === 'message' ? { content: [], status: 'in_progress' } : { summary: [], encrypted_content: null }) },
    });
    if (item['type'] === 'reasoning') {
      if ((item['summary'] as unknown[]).length > 0) {
        push('preamble', {
          type: 'response.reasoning_summary_part.added',
          item_id: id,
          output_index,
          summary_index: 0,
          part: { type: 'summary_text', text: '' },
        });
        for (const delta of answer.reasoning!.tokens)
          push('content', { type: 'response.reasoning_summary_text.delta', item_id: id, output_index, summary_index: 0, delta });
        push('preamble', {
          type: 'response.reasoning_summary_text.done',
          item_id: id,
          output_index,
          summary_index: 0,
          text: answer.reasoning!.tokens.join(''),
        });
        push('preamble', {
          type: 'response.reasoning_summary_part.done',
          item_id: id,
          output_index,
          summary_index: 0,
          part: (item['summary'] as unknown[])[0],
        });
      }
    } else if (item['type'] === 'message') {
      push('preamble', {
        type: 'response.content_part.added',
        item_id: id,
        output_index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
      for (const delta of answer.tokens)
        push('content', { type: 'response.output_text.delta', item_id: id, output_index, content_index: 0, delta, logprobs: [] });
      push('preamble', { type: 'response.output_text.done', item_id: id, output_index, content_index: 0, text: answer.text, logprobs: [] });
      push('preamble', {
        type: 'response.content_part.done',
        item_id: id,
        output_index,
        content_index: 0,
        part: { type: 'output_text', text: answer.text, annotations: [] },
      });
    } else if (item['type'] === 'function_call') {
      for (const delta of argumentPieces(item['arguments']))
        push('content', { type: 'response.function_call_arguments.delta', item_id: id, output_index, delta });
      push('preamble', { type: 'response.function_call_arguments.done', item_id: id, output_index, arguments: item['arguments'] });
    }
    push('preamble', { type: 'response.output_item.done', output_index, item });
  });
  const done = responseObject(answer, body, true);
  push('closing', { type: done['status'] === 'incomplete' ? 'response.incomplete' : 'response.completed', response: done });
  return frames;
}

/** The response object of an answer still being generated (a background response's, until it ends). */
export function responsesRunningJson(answer: Answer, body: Record<string, unknown>): Record<string, unknown> {
  return responseObject(answer, body, false);
}

/** The non-streaming answer: the response object. */
export function responsesJson(answer: Answer, body: Record<string, unknown>): Record<string, unknown> {
  return responseObject(answer, body, true);
}

/** A broken event (its JSON cut), numbered as the next one. */
export function responsesMalformedFrame(sequence: number): string {
  return `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":${sequence},"output_index":0,"delta":"Hel\n\n`;
}

/** The API's codes for the fault's error types (Anthropic's names in the fault, as for the other protocols). */
const ERROR_CODES: Readonly<Record<string, string>> = {
  rate_limit_error: 'rate_limit_exceeded',
  overloaded_error: 'server_is_overloaded',
  api_error: 'server_error',
};

/** The top-level `error` event the API sends after its 200, numbered as the next event. */
export function responsesStreamErrorFrame(fault: StreamErrorFault, sequence: number): string {
  const type = fault.errorType ?? 'overloaded_error';
  const code = ERROR_CODES[type] ?? type;
  const message = fault.message ?? (code === 'server_is_overloaded' ? 'The server is overloaded. Please try again later.' : 'The stream failed (local fault)');
  return sse({ type: 'error', code, message, param: null, sequence_number: sequence }, 'error');
}

/**
 * The API's rule for a stateless tool loop of a reasoning model (`store: false`, reasoning asked
 * for): each assistant turn's `function_call` items must come after that turn's reasoning item,
 * sent back with the `encrypted_content` it was given, unaltered. A broken rule is a 400.
 */
function checkReasoningBack(items: readonly Record<string, unknown>[]): void {
  let reasoning: Record<string, unknown> | undefined;
  items.forEach((item, i) => {
    const type = item['type'];
    if (type === 'reasoning') {
      if (!verified(item['encrypted_content'])) {
        throw new BadRequest(
          `input[${i}]: the encrypted content of reasoning item ${showValue(item['id'])} could not ` +
            `be verified (send it back as it came, with include: ['reasoning.encrypted_content'])`,
        );
      }
      reasoning = item;
    } else if (type === 'function_call') {
      if (reasoning === undefined) {
        throw new BadRequest(
          `input[${i}]: item of type 'function_call' (call_id ${showValue(item['call_id'])}) was provided without ` +
            `its required 'reasoning' item: with store false, send the reasoning item back with its encrypted_content`,
        );
      }
    } else if (type !== 'function_call_output') reasoning = undefined; // a new turn starts
  });
}

/** A Responses request's input (and `instructions`) as rxheal messages, and its function tools. */
export function fromResponses(body: Record<string, unknown>): { messages: Message[]; tools: AssistantTool[] } {
  const input = body['input'];
  const items: Record<string, unknown>[] =
    typeof input === 'string'
      ? [{ role: 'user', content: input }]
      : Array.isArray(input)
        ? (input as unknown[]).map((item, i) => {
            if (!isRecord(item)) throw new BadRequest(`input[${i}]: each input item must be an object`);
            return item;
          })
        : [];
  if (typeof input !== 'string' && !Array.isArray(input)) throw new BadRequest("Missing required parameter: 'input'.");
  if (responsesAsksForThinking(body) && body['store'] === false) checkReasoningBack(items);
  const messages: Message[] = [];
  if (typeof body['instructions'] === 'string' && body['instructions'] !== '') messages.push({ role: 'system', content: body['instructions'] });
  const names = new Map<string, string>();
  let compacted: { at: number; summary: string } | undefined;
  items.forEach((item, i) => {
    const type = item['type'] ?? 'message';
    if (type === 'message') {
      const role = item['role'];
      const content = textOf(item['content']);
      if (role === 'system' || role === 'developer') messages.push({ role: 'system', content });
      else if (role === 'user') messages.push({ role: 'user', content });
      else if (role === 'assistant') messages.push({ role: 'assistant', content });
      else throw new BadRequest(`input[${i}].role: unknown role ${showValue(role)}`);
    } else if (type === 'function_call') {
      const call = {
        id: String(item['call_id'] ?? ''),
        name: String(item['name'] ?? ''),
        args: parseToolArguments(typeof item['arguments'] === 'string' ? item['arguments'] : ''),
      };
      names.set(call.id, call.name);
      const last = messages[messages.length - 1];
      // the calls of one turn follow its text (or start a turn of their own)
      if (last?.role === 'assistant') messages[messages.length - 1] = { ...last, toolCalls: [...(last.toolCalls ?? []), call] };
      else messages.push({ role: 'assistant', content: '', toolCalls: [call] });
    } else if (type === 'function_call_output') {
      const id = String(item['call_id'] ?? '');
      messages.push({ role: 'tool', toolCallId: id, toolName: names.get(id) ?? '', content: textOf(item['output']) });
    } else if (type === 'compaction') {
      // the encrypted summary of everything before it: what came before is dropped, as the API does
      const summary = compactionSummary(item['encrypted_content']);
      if (summary === undefined) throw new BadRequest(`input[${i}].encrypted_content: not a compaction this provider made`);
      compacted = { at: messages.length, summary };
    } else if (type !== 'reasoning' && type !== 'item_reference') {
      throw new BadRequest(`input[${i}].type: the local provider does not take ${showValue(type)} items`);
    }
  });
  const tools = Array.isArray(body['tools'])
    ? (body['tools'] as unknown[])
        .filter((tool) => isRecord(tool) && tool['type'] === 'function')
        .map((tool): AssistantTool => {
          const fn = tool as Record<string, unknown>;
          return { name: String(fn['name'] ?? ''), description: String(fn['description'] ?? ''), parameters: fn['parameters'] };
        })
    : [];
  return { messages: compacted ? afterCompaction(messages, compacted.at, compacted.summary) : messages, tools };
}
