/**
 * The parts of one AI SDK `doStream` call read into rxheal model events, for {@link fromAiSdk}:
 * one state machine ({@link PartDecoder}: text, reasoning blocks, tool inputs, the finish), with
 * the token counts of any spec's usage.
 *
 * @module
 */
import { IncompleteStreamError, MalformedStreamError } from '../core/errors/errors.js';
import type { FinishReason, ReasoningEnd, TurnEvent, Usage } from '../core/events/events.js';
import { parseToolArguments } from '../providers/sse.js';
import { isObject, num, providerStreamError } from '../adapters/common.js';
import { sealed, sealOf, type Seal } from './seal.js';

/** The key under a tool call's `providerMetadata` that marks a provider's call waiting for approval (`{ approvalId }`). */
export const APPROVAL_METADATA = 'rxheal';

const FINISH_REASONS: ReadonlySet<string> = new Set<FinishReason>(['stop', 'tool-calls', 'length', 'content-filter', 'error', 'other']);

/** Where {@link PartDecoder} hands its events (the turn's subscriber). */
interface EventSink {
  next(event: TurnEvent): void;
}

interface PendingInput {
  readonly name: string;
  /** The deltas so far: JSON text, or (spec v4's `inputEncoding: 'text'`) the raw input itself. */
  json: string;
  /** v4's `inputEncoding: 'text'`: the deltas concatenate to the input, a string, not JSON. */
  readonly raw: boolean;
  ended: boolean;
  /** What the provider attached to the call (Gemini's thought signature), from its start. */
  readonly metadata: Record<string, unknown> | undefined;
}

/** A tool-call event, with the provider's metadata for the call when it sent some. */
function toolCallEvent(id: string, name: string, args: unknown, metadata: unknown): TurnEvent {
  return isObject(metadata) ? { type: 'tool-call', id, name, args, providerMetadata: metadata } : { type: 'tool-call', id, name, args };
}

/** A reasoning block between its `reasoning-start` and our `reasoning-end`. */
interface OpenReasoning {
  /** Text not yet handed on: the block's deltas while another block was streaming. */
  pending: string;
  /** Whether any text was handed on or is pending. */
  said: boolean;
  ended: boolean;
  readonly seal: Seal;
}

/**
 * Reads one `doStream`'s parts into model events: text deltas; reasoning deltas, each block ended
 * by a `reasoning-end` with the signature or redacted data its parts carried; tool calls from
 * whole `tool-call` parts, or assembled from `tool-input-start/-delta/-end` when no `tool-call`
 * part follows (v4's `inputEncoding: 'text'`: the raw string, not parsed); one `finish`. An
 * `error` part, an error finish, a finish that says the stream was cut (v2 `unknown`, v3 `other`
 * without a raw reason, v4 `interrupted`), or a tool input still open at the finish is an error.
 * Every other part (v4's `ping`, `custom`, `reasoning-file`; sources, files, metadata) says
 * nothing of an rxheal turn and is skipped.
 *
 * Reasoning blocks open at once (by their ids): the first opened streams, the others' deltas wait
 * until it ends, then pass on as one delta — our blocks never interleave, and no block's text or
 * signature is mixed into another's. Blocks still open at the finish end there, in order.
 */
export class PartDecoder {
  done = false;
  private parts = 0;
  private readonly inputs = new Map<string, PendingInput>();
  private readonly called = new Set<string>();
  /** Ids of tool calls the provider runs itself (its results come in the stream; not ours to run). */
  private readonly providerExecuted = new Set<string>();
  /** The provider's own calls, whole (`tool-call` parts), for an approval request that names one. */
  private readonly providerCalls = new Map<string, { readonly name: string; readonly input: unknown; readonly metadata: unknown }>();
  /** Whether a provider's call waiting for approval became a tool call of the turn. */
  private approvals = false;
  /** Reasoning blocks by id, in the order they opened: the first is the one streaming. */
  private readonly reasoning = new Map<string, OpenReasoning>();
  /** The id of the first open reasoning block (the one whose deltas pass at once). */
  private streaming: string | undefined = undefined;

  constructor(private readonly model: string) {}

  /**
   * Decodes one part, handing its events (none, one, or at the finish the assembled tool calls and
   * the finish) to `out`; throws what ends the turn. No array or closure per part: this runs for
   * every text delta.
   */
  push(part: unknown, out: EventSink): void {
    this.parts++;
    if (this.done || !isObject(part)) return;
    switch (part['type']) {
      case 'text-delta': {
        const text = part['delta'];
        if (typeof text === 'string' && text !== '') out.next({ type: 'text-delta', text });
        return;
      }
      case 'reasoning-start':
        sealOf(part['providerMetadata'], this.block(String(part['id'])).seal);
        return;
      case 'reasoning-delta': {
        const id = String(part['id']);
        const block = this.block(id);
        sealOf(part['providerMetadata'], block.seal);
        const text = part['delta'];
        if (typeof text !== 'string' || text === '') return;
        block.said = true;
        // the first open block streams; another's text waits for it to end
        if (this.streaming === id) out.next({ type: 'reasoning-delta', text });
        else block.pending += text;
        return;
      }
      case 'reasoning-end': {
        const block = this.block(String(part['id']));
        sealOf(part['providerMetadata'], block.seal);
        block.ended = true;
        this.settle(out);
        return;
      }
      case 'tool-input-start': {
        const id = String(part['id']);
        if (part['providerExecuted'] === true) this.providerExecuted.add(id);
        else if (!this.called.has(id)) {
          this.inputs.set(id, {
            name: String(part['toolName'] ?? ''),
            json: '',
            raw: part['inputEncoding'] === 'text',
            ended: false,
            metadata: isObject(part['providerMetadata']) ? part['providerMetadata'] : undefined,
          });
        }
        return;
      }
      case 'tool-input-delta': {
        const id = String(part['id']);
        const input = this.inputs.get(id);
        if (input !== undefined) input.json += typeof part['delta'] === 'string' ? part['delta'] : '';
        else if (!this.called.has(id) && !this.providerExecuted.has(id)) throw this.malformed(`tool-input-delta for a tool call never started (${id})`, part);
        return;
      }
      case 'tool-input-end': {
        const input = this.inputs.get(String(part['id']));
        if (input !== undefined) input.ended = true;
        return;
      }
      case 'tool-call': {
        const id = String(part['toolCallId']);
        if (part['providerExecuted'] === true || this.providerExecuted.has(id)) {
          this.providerCalls.set(id, { name: String(part['toolName'] ?? ''), input: part['input'], metadata: part['providerMetadata'] });
          return;
        }
        if (this.called.has(id)) return;
        this.called.add(id);
        this.inputs.delete(id);
        // `input`: the arguments as JSON text (an object from some hand-written models)
        const input = part['input'];
        out.next(
          toolCallEvent(id, String(part['toolName'] ?? ''), typeof input === 'string' ? parseToolArguments(input) : (input ?? {}), part['providerMetadata']),
        );
        return;
      }
      case 'tool-approval-request':
        return this.approvalRequest(part, out);
      case 'finish':
        // every check first: a finish that throws hands on none of its tool calls
        for (const event of this.finish(part)) out.next(event);
        return;
      case 'error':
        throw providerStreamError(this.model, part['error']);
      case 'ping':
        // v4's heartbeat: the stream is alive, nothing to say
        return;
      case 'custom':
      case 'reasoning-file':
        // v4's provider-specific content blocks and files produced while reasoning: an rxheal turn
        // carries text, reasoning text and tool calls only, so these are dropped (the rule
        // fromAiSdk documents), as sources and files are
        return;
      default:
        // stream-start, response-metadata, text-start, text-end (v4: with its citations, which
        // are sources), sources, files, raw, provider-executed tool results: not part of an
        // rxheal turn
        return;
    }
  }

  /**
   * A provider's own call waits for approval (hosted MCP's `require_approval`): a tool call of the
   * turn, marked with its approval id (`providerMetadata.rxheal.approvalId`), so the run decides it
   * as any call (a `providerToolApproval` tool asks for approval) and `fromAiSdk` sends the answer
   * back as the provider's `tool-approval-response`. A request for a call the stream never made is
   * malformed.
   */
  private approvalRequest(part: Record<string, unknown>, out: EventSink): void {
    const id = String(part['toolCallId']);
    const call = this.providerCalls.get(id);
    if (call === undefined) throw this.malformed(`tool-approval-request for a tool call the provider never made (${id})`, part);
    this.providerCalls.delete(id);
    const input = call.input;
    const args = typeof input === 'string' ? parseToolArguments(input) : (input ?? {});
    const metadata = isObject(call.metadata) ? call.metadata : {};
    out.next(toolCallEvent(id, call.name, args, { ...metadata, [APPROVAL_METADATA]: { approvalId: String(part['approvalId']) } }));
    this.approvals = true;
  }

  /** The reasoning block of this id, opened if it is not (a delta or an end without a start). */
  private block(id: string): OpenReasoning {
    let block = this.reasoning.get(id);
    if (block === undefined) {
      this.reasoning.set(id, (block = { pending: '', said: false, ended: false, seal: {} }));
      this.streaming ??= id;
    }
    return block;
  }

  /**
   * Hands on what the blocks in front have finished: while the first block has ended, its
   * `reasoning-end` (a block with no text, seal or metadata ends unseen), then the next block's
   * waiting text. `all`: end every block (the finish).
   */
  private settle(out: EventSink, all = false): void {
    this.streaming = undefined;
    for (const [id, block] of this.reasoning) {
      this.streaming = id;
      if (block.pending !== '') out.next({ type: 'reasoning-delta', text: block.pending });
      block.pending = '';
      if (!block.ended && !all) return;
      if (block.said || sealed(block.seal)) out.next({ type: 'reasoning-end', ...block.seal } satisfies ReasoningEnd);
      this.reasoning.delete(id);
      this.streaming = undefined;
    }
  }

  /** The stream ended: fine only after `finish` (streamModel says so otherwise). */
  end(): void {
    if (!this.done) throw new IncompleteStreamError(this.model, 'no finish part', this.parts);
  }

  private finish(part: Record<string, unknown>): TurnEvent[] {
    this.done = true;
    const reasonField = part['finishReason'];
    // v2: a string; v3, v4: { unified, raw }
    const unified = isObject(reasonField) ? reasonField['unified'] : reasonField;
    const raw = isObject(reasonField) ? reasonField['raw'] : undefined;
    // 'error', or the provider's own 'error' (OpenRouter's finish_reason, which @ai-sdk/openai unifies as 'other')
    if (unified === 'error' || raw === 'error') {
      throw new IncompleteStreamError(this.model, `finish reason 'error'${typeof raw === 'string' ? ` (${raw})` : ''}`, this.parts);
    }
    // what an AI SDK provider finishes with when the stream ended without a finish reason (a cut
    // connection): v2's 'unknown', v3's { unified: 'other', raw: undefined }, v4's 'interrupted'
    if (unified === 'unknown' || unified === 'interrupted' || (isObject(reasonField) && unified === 'other' && raw === undefined)) {
      throw new IncompleteStreamError(
        this.model,
        `the provider sent no finish reason (the stream was cut${unified === 'interrupted' ? `: 'interrupted'` : ''})`,
        this.parts,
      );
    }
    const out: TurnEvent[] = [];
    // reasoning the provider never ended ends here, with what its parts carried
    this.settle({ next: (event) => out.push(event) }, true);
    for (const [id, input] of this.inputs) {
      if (!input.ended) throw this.malformed(`the input of tool call ${id} (${input.name}) was still open at the finish`, part);
      out.push(toolCallEvent(id, input.name, input.raw ? input.json : parseToolArguments(input.json), input.metadata));
    }
    this.inputs.clear();
    const given: FinishReason = typeof unified === 'string' && FINISH_REASONS.has(unified) ? (unified as FinishReason) : 'other';
    // a turn that ends waiting for approval of the provider's call ends in that call
    const reason: FinishReason = this.approvals && given === 'stop' ? 'tool-calls' : given;
    const usage = usageOf(part['usage']);
    out.push(usage ? { type: 'finish', reason, usage } : { type: 'finish', reason });
    return out;
  }

  private malformed(detail: string, part: Record<string, unknown>): MalformedStreamError {
    let data = '';
    try {
      data = JSON.stringify(part) ?? '';
    } catch {
      // a part that can't be shown
    }
    return new MalformedStreamError(this.model, detail, data);
  }
}

/** The sum of the counts given, `undefined` when none is. */
function sum(counts: readonly unknown[]): number | undefined {
  let total: number | undefined;
  for (const c of counts) if (num(c) !== undefined) total = (total ?? 0) + (c as number);
  return total;
}

/**
 * Token counts of any spec's usage: v3/v4 `{ inputTokens: { total } }` (or, without a total, the
 * sum of its parts: `noCache` + `cacheRead` + `cacheWrite`, `text` + `reasoning`), v2 numbers;
 * the cache's reads and writes and the reasoning share as rxheal's `cachedInputTokens`,
 * `cacheWriteTokens` and `reasoningTokens` (v2's `cachedInputTokens` and `reasoningTokens`).
 */
function usageOf(u: unknown): Usage | undefined {
  if (!isObject(u)) return undefined;
  const count = (v: unknown, parts: readonly string[]): number | undefined =>
    num(v) ?? (isObject(v) ? (num(v['total']) ?? sum(parts.map((p) => v[p]))) : undefined);
  const input = count(u['inputTokens'], ['noCache', 'cacheRead', 'cacheWrite']);
  const output = count(u['outputTokens'], ['text', 'reasoning']);
  if (input === undefined && output === undefined) return undefined;
  // v3/v4's shares (v2's cachedInputTokens / reasoningTokens numbers too), when they say something
  const share = (holder: unknown, key: string, v2: string): number | undefined => {
    const value = isObject(holder) ? num(holder[key]) : num(u[v2]);
    return value !== undefined && value > 0 ? value : undefined;
  };
  const cached = share(u['inputTokens'], 'cacheRead', 'cachedInputTokens');
  const written = isObject(u['inputTokens']) ? share(u['inputTokens'], 'cacheWrite', '') : undefined;
  const reasoning = share(u['outputTokens'], 'reasoning', 'reasoningTokens');
  return {
    inputTokens: input ?? 0,
    outputTokens: output ?? 0,
    ...(cached === undefined ? {} : { cachedInputTokens: cached }),
    ...(written === undefined ? {} : { cacheWriteTokens: written }),
    ...(reasoning === undefined ? {} : { reasoningTokens: reasoning }),
  };
}
