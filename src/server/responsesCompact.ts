/**
 * The local provider's `POST /v1/responses/compact` (OpenAI's Responses API): a conversation's
 * input items in, its compacted window out — as the API gives it, the user's messages followed by
 * one encrypted `compaction` item standing for the whole conversation (the local provider's
 * summary of it, as its server-side compaction writes), which a client sends back as its next
 * request's input. Node only.
 *
 * @module
 */
// Node-only module: the library's build has no ambient Node types (its other modules are browser-safe)
/// <reference types="node" />
import type { IncomingMessage, ServerResponse } from 'node:http';
import { json, readJson } from './http.js';
import { BadRequest, errorBody, isRecord } from './protocols.js';
import { encryptedCompaction, summaryOf, tokensOf } from './providerSide.js';
import { fromResponses } from './responsesProtocol.js';

/**
 * Answers one `POST /v1/responses/compact`: `{ model, input, instructions? }` (the input a
 * `POST /v1/responses` would take: messages, function calls and their outputs, reasoning, an
 * earlier compaction) → `{ id, object: 'response.compaction', created_at, output: [each user
 * message, then the compaction item], usage }`. A body without a `model` or an `input` array is a 400 in the API's words; any
 * other method a 405.
 *
 * @example
 * ```ts
 * if (path === '/v1/responses/compact') return answerCompact(req, res, { maxBodyBytes, now: () => scheduler.now(), next: () => ++compactions });
 * ```
 */
export async function answerCompact(
  req: IncomingMessage,
  res: ServerResponse,
  options: { readonly maxBodyBytes: number; readonly now: () => number; readonly next: () => number },
): Promise<void> {
  if (req.method !== 'POST') return json(res, 405, errorBody('responses', 405, 'use POST'), { allow: 'POST' });
  const { value: body } = await readJson(req, options.maxBodyBytes);
  if (!isRecord(body) || typeof body['model'] !== 'string' || body['model'] === '') throw new BadRequest("Missing required parameter: 'model'.");
  if (!Array.isArray(body['input'])) throw new BadRequest("Invalid 'input': expected an array of input items.");
  const instructions = typeof body['instructions'] === 'string' ? [{ role: 'system', content: body['instructions'] }] : [];
  const { messages } = fromResponses({ ...body, input: [...instructions, ...(body['input'] as unknown[])] });
  const summary = summaryOf(messages);
  const n = options.next();
  const input_tokens = tokensOf(JSON.stringify(body['input']).length);
  const output_tokens = tokensOf(summary.length);
  return json(res, 200, {
    id: `resp_cmp_${n}`,
    object: 'response.compaction',
    created_at: Math.floor(options.now() / 1000),
    output: [
      ...messages
        .filter((m) => m.role === 'user')
        .map((m, i) => ({ id: `msg_cmp_${n}_${i}`, type: 'message', status: 'completed', role: 'user', content: [{ type: 'input_text', text: m.content }] })),
      { id: `cmp_${n}`, type: 'compaction', encrypted_content: encryptedCompaction(summary) },
    ],
    usage: {
      input_tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: input_tokens + output_tokens,
    },
  });
}
