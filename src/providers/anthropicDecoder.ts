/**
 * Reads an Anthropic Messages stream (its Server-Sent Events) into model events: the state
 * machine of one stream (before `message_start`, a message open, its blocks open by index, done),
 * what each block becomes, the opaque blocks kept for sending back (compaction), the server-side
 * fallback (a `fallback` block), and the finish with its usage (anthropicUsage.ts).
 *
 * @module
 */
import type { Finish, FinishReason, ProviderFallback, TurnEvent } from '../core/events/events.js';
import { AnthropicUsage } from './anthropicUsage.js';
import { IncompleteStreamError, MalformedStreamError, isObject, midStreamError, parseEventJson, parseToolArguments, type StreamDecoder } from './sse.js';
import type { SseEvent } from './sseParser.js';

const STOP_REASONS: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool-calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  refusal: 'content-filter',
};

/**
 * Block types kept whole and opaque: each becomes a `reasoning-end` without text whose
 * `providerMetadata.anthropic.block` is the block as the API must get it back (a compaction's
 * summary replaces what came before it on the next request: it goes back first, as it came).
 */
const OPAQUE_BLOCKS: Readonly<Record<string, { readonly delta: string; readonly field: string }>> = {
  compaction: { delta: 'compaction_delta', field: 'content' },
};

interface OpenBlock {
  readonly type: string;
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
  json: string;
  /** A thinking block's signature (its `signature_delta`, or the start's own). */
  signature: string;
  /** An opaque block's content so far (its start's, then its deltas'). */
  opaque: string;
}

/** A thinking block's end, with its signature when it got one. */
const reasoningEnd = (block: OpenBlock): TurnEvent =>
  block.signature === '' ? { type: 'reasoning-end' } : { type: 'reasoning-end', signature: block.signature };

/** Delta types that carry nothing of the answer (anything else unknown in a text or tool_use block is an error). */
const SKIPPED_DELTAS = new Set(['citations_delta']);

/**
 * Reads one stream's events into model events; `done` once `message_stop` arrived.
 *
 * A state machine: before `message_start` (tolerated: some servers omit it), a message open (its
 * id known), blocks open by index, done. What would lose text or a tool call is a
 * {@link MalformedStreamError}: a second `message_start` with another id (a spliced stream), a
 * block started at an index already open, an `input_json_delta` or unknown delta in the wrong
 * block, a `tool_use` or opaque block still open at `message_stop`. Usage: see
 * {@link AnthropicUsage}. A `fallback` block (the server-side fallback: the primary model's turn
 * was blocked and the API retried it on another model) is recorded for the finish
 * (`providerFallbacks`) and, after anything was emitted, becomes a `reset` (`reason: 'fallback'`,
 * `target: 'model:<the model that took over>'`): what the blocked model said is taken back, never
 * spliced onto the answer. A `compaction` block is kept whole and opaque (see `OPAQUE_BLOCKS`).
 * See the state table in spec/providers/anthropic.spec.ts.
 */
class EventDecoder {
  done = false;
  private events = 0;
  private stopReason: FinishReason | undefined;
  /** Whether a `message_start` arrived, and its message id. */
  private started = false;
  private messageId: unknown;
  private readonly usage = new AnthropicUsage();
  private readonly blocks = new Map<number, OpenBlock>();
  /** Whether anything was emitted since the start (or the last provider fallback). */
  private emitted = false;
  private readonly fallbacks: ProviderFallback[] = [];
  private recommendedModel: string | undefined;

  constructor(private readonly model: string) {}

  push(sse: SseEvent): TurnEvent[] {
    this.events++;
    if (this.done) return [];
    const out = this.decode(sse);
    if (out.some((e) => e.type !== 'finish' && e.type !== 'reset')) this.emitted = true;
    return out;
  }

  private decode(sse: SseEvent): TurnEvent[] {
    const data = parseEventJson(this.model, sse.data);
    // the data's `type` is authoritative; the `event:` field repeats it
    const type = typeof data['type'] === 'string' ? data['type'] : sse.event;
    switch (type) {
      case 'message_start': {
        const message = data['message'];
        if (!isObject(message)) throw this.malformed('message_start without a message', sse);
        if (this.started) {
          // the same message announced again is harmless; another one is a spliced stream
          if (message['id'] === this.messageId) return [];
          throw this.malformed(
            `a second message_start (id ${String(message['id'])}) while message ${String(this.messageId)} is open: two streams spliced`,
            sse,
          );
        }
        this.started = true;
        this.messageId = message['id'];
        const content = message['content'];
        if (Array.isArray(content) && content.length > 0) throw this.malformed('message_start with content (it would be lost: content arrives in blocks)', sse);
        this.usage.read(message['usage']);
        return [];
      }
      case 'content_block_start': {
        const block = data['content_block'];
        const index = data['index'];
        if (!isObject(block) || typeof index !== 'number') throw this.malformed('content_block_start without index or content_block', sse);
        if (this.blocks.has(index)) throw this.malformed(`content_block_start for block ${index}, which is still open`, sse);
        const open: OpenBlock = {
          type: String(block['type']),
          id: typeof block['id'] === 'string' ? block['id'] : `toolu_${index}`,
          name: typeof block['name'] === 'string' ? block['name'] : '',
          input: block['input'],
          json: '',
          signature: typeof block['signature'] === 'string' ? block['signature'] : '',
          opaque: '',
        };
        this.blocks.set(index, open);
        if (open.type === 'fallback') return this.providerFallback(block, sse);
        const opaque = OPAQUE_BLOCKS[open.type];
        if (opaque !== undefined) {
          const start = block[opaque.field];
          if (typeof start === 'string') open.opaque = start;
          return [];
        }
        if (open.type === 'redacted_thinking') {
          // opaque and whole at its start: a block of its own, sent back as it came
          const redacted = block['data'];
          if (typeof redacted !== 'string') throw this.malformed(`redacted_thinking block ${index} without data`, sse);
          return [{ type: 'reasoning-end', redactedData: redacted }];
        }
        const text = block['type'] === 'text' ? block['text'] : block['type'] === 'thinking' ? block['thinking'] : undefined;
        if (typeof text !== 'string' || text === '') return [];
        return [open.type === 'text' ? { type: 'text-delta', text } : { type: 'reasoning-delta', text }];
      }
      case 'content_block_delta': {
        const delta = data['delta'];
        const index = data['index'];
        if (!isObject(delta) || typeof index !== 'number') throw this.malformed('content_block_delta without index or delta', sse);
        const block = this.blocks.get(index);
        if (delta['type'] === 'text_delta') {
          const text = delta['text'];
          if (typeof text !== 'string') throw this.malformed('text_delta without text', sse);
          if (block?.type === 'tool_use') throw this.malformed(`text_delta in tool_use block ${index}`, sse);
          // a text delta without its block start loses nothing: it is shown
          return text === '' ? [] : [{ type: 'text-delta', text }];
        }
        if (delta['type'] === 'thinking_delta' || delta['type'] === 'signature_delta') {
          const piece = delta['type'] === 'thinking_delta' ? delta['thinking'] : delta['signature'];
          if (typeof piece !== 'string') throw this.malformed(`${delta['type']} without its text`, sse);
          if (delta['type'] === 'signature_delta') {
            // only a thinking block is signed (one never started, or another kind, has nothing to sign)
            if (block?.type === 'thinking') block.signature = piece;
            return [];
          }
          // reasoning, wherever it arrives (without its block start, in another block): shown, never lost
          return piece === '' ? [] : [{ type: 'reasoning-delta', text: piece }];
        }
        const opaque = block === undefined ? undefined : OPAQUE_BLOCKS[block.type];
        if (block !== undefined && opaque !== undefined && opaque.delta === delta['type']) {
          const piece = delta[opaque.field];
          if (piece !== null && piece !== undefined && typeof piece !== 'string') throw this.malformed(`${opaque.delta} without its text`, sse);
          block.opaque += piece ?? '';
          return [];
        }
        if (delta['type'] === 'input_json_delta') {
          const piece = delta['partial_json'];
          if (typeof piece !== 'string' || block === undefined) throw this.malformed('input_json_delta without partial_json or an open block', sse);
          if (block.type === 'text' || block.type === 'thinking') throw this.malformed(`input_json_delta in ${block.type} block ${index}`, sse);
          block.json += piece;
          return [];
        }
        // citations: not part of the answer; anything else in a text or tool_use block might be,
        // and would be lost
        if ((block?.type === 'text' || block?.type === 'tool_use') && !SKIPPED_DELTAS.has(String(delta['type']))) {
          throw this.malformed(`a ${String(delta['type'])} delta in ${block.type} block ${index} (it would be lost)`, sse);
        }
        return [];
      }
      case 'content_block_stop': {
        const index = data['index'];
        if (typeof index !== 'number') throw this.malformed('content_block_stop without index', sse);
        const block = this.blocks.get(index);
        this.blocks.delete(index);
        if (block?.type === 'thinking') return [reasoningEnd(block)];
        const opaque = block === undefined ? undefined : OPAQUE_BLOCKS[block.type];
        if (block !== undefined && opaque !== undefined) {
          return [{ type: 'reasoning-end', providerMetadata: { anthropic: { block: { type: block.type, [opaque.field]: block.opaque } } } }];
        }
        // a stop for a block never started loses nothing
        if (block === undefined || block.type !== 'tool_use') return [];
        const args = block.json.trim() === '' ? (block.input ?? {}) : parseToolArguments(block.json);
        return [{ type: 'tool-call', id: block.id, name: block.name, args }];
      }
      case 'message_delta': {
        const delta = data['delta'];
        if (isObject(delta) && typeof delta['stop_reason'] === 'string') this.stopReason = STOP_REASONS[delta['stop_reason']] ?? 'other';
        const details = isObject(delta) ? delta['stop_details'] : undefined;
        if (isObject(details) && typeof details['recommended_model'] === 'string') this.recommendedModel = details['recommended_model'];
        this.usage.read(data['usage']);
        return [];
      }
      case 'message_stop': {
        const ends: TurnEvent[] = [];
        for (const [index, block] of this.blocks) {
          // its tool call is emitted at its stop: finishing now would drop it
          if (block.type === 'tool_use') throw this.malformed(`message_stop with tool_use block ${index} (${block.name}) still open`, sse);
          // a thinking block never stopped: its deltas were shown; it ends here, with what signature came
          if (block.type === 'thinking') ends.push(reasoningEnd(block));
          // an opaque block never stopped is incomplete: it can't go back
          if (OPAQUE_BLOCKS[block.type] !== undefined) throw this.malformed(`message_stop with ${block.type} block ${index} still open`, sse);
        }
        this.blocks.clear();
        this.done = true;
        ends.push(this.finish());
        return ends;
      }
      case 'error': {
        const error = isObject(data['error']) ? data['error'] : {};
        const message = typeof error['message'] === 'string' ? error['message'] : 'error event';
        throw midStreamError(this.model, data, `${String(error['type'] ?? 'error')}: ${message}`);
      }
      default:
        // ping, and event types added to the API later
        return [];
    }
  }

  /** The turn's finish: its reason, usage, the provider's fallbacks and recommended model. */
  private finish(): TurnEvent {
    // assigned one by one: only what the stream said
    const finish: { -readonly [K in keyof Finish]: Finish[K] } = { type: 'finish', reason: this.stopReason ?? 'other' };
    const usage = this.usage.total();
    if (usage) finish.usage = usage;
    if (this.fallbacks.length > 0) finish.providerFallbacks = this.fallbacks;
    if (this.recommendedModel !== undefined) finish.recommendedModel = this.recommendedModel;
    return finish;
  }

  /**
   * A `fallback` block: the API blocked the turn on `from.model` and goes on with `to.model`.
   * Recorded for the finish; what was emitted before it is taken back by a `reset`.
   */
  private providerFallback(block: Record<string, unknown>, sse: SseEvent): TurnEvent[] {
    const model = (side: unknown): string | undefined => (isObject(side) && typeof side['model'] === 'string' ? side['model'] : undefined);
    const from = model(block['from']);
    const to = model(block['to']);
    if (from === undefined || to === undefined) throw this.malformed('a fallback block without its from.model and to.model', sse);
    const midStream = this.emitted;
    this.fallbacks.push({ from, to, midStream });
    if (!midStream) return [];
    this.emitted = false;
    return [{ type: 'reset', reason: 'fallback', target: `model:${to}` }];
  }

  /** The stream's body ended: fine only after `message_stop`. */
  end(): void {
    if (!this.done) throw new IncompleteStreamError(this.model, 'no message_stop', this.events);
  }

  private malformed(detail: string, sse: SseEvent): MalformedStreamError {
    return new MalformedStreamError(this.model, detail, sse.data);
  }
}

/**
 * A fresh decoder of one stream's Messages API events into model events (what the model uses per request):
 * feed it parsed Server-Sent Events; `done` at the protocol's final event; `end` throws when the
 * body ended before it. For replaying recorded streams and for protocols built on this one.
 *
 * @example
 * ```ts
 * const decoder = anthropicStreamDecoder('recorded');
 * const events = parseSse(recorded).flatMap((e) => decoder.push(e));
 * decoder.end(); // throws IncompleteStreamError if the recording was cut short
 * ```
 */
export function anthropicStreamDecoder(modelId: string): StreamDecoder<TurnEvent> {
  return new EventDecoder(modelId);
}
