/**
 * {@link TurnOutput}: what one model turn of `runAgent` gathered — its text, reasoning blocks, tool
 * calls and finish — as the turn streams; a `reset` discards it.
 *
 * @module
 */
import type { Finish, ReasoningPart, ToolCall, TurnEvent } from '../core/events/events.js';
import { TextBuffer } from '../core/model/textBuffer.js';

/**
 * What one turn gathered from the model pipeline; a `reset` discards it.
 *
 * @example
 * ```ts
 * const output = new TurnOutput();
 * output.add({ type: 'text-delta', text: 'Hi' });
 * ```
 */
export class TurnOutput {
  /** The turn's text, kept flat (a 10⁶-delta answer costs its characters, not a rope of cells). */
  private readonly buffer = new TextBuffer();
  calls: ToolCall[] = [];
  finish: Finish | undefined = undefined;
  received = 0;
  /** Reasoning blocks, each closed by a `reasoning-end` (or by the finish: unsigned). */
  private blocks: ReasoningPart[] | undefined = undefined;
  /** The open block's text (flat, as the answer's), made at the turn's first reasoning. */
  private thinking: TextBuffer | undefined = undefined;

  get text(): string {
    return this.buffer.toString();
  }

  /** The turn's reasoning blocks (a block still open ends here, unsigned), or undefined when it had none. */
  takeReasoning(): ReasoningPart[] | undefined {
    if (this.thinking !== undefined && !this.thinking.empty) this.endBlock({});
    return this.blocks;
  }

  private endBlock(end: { signature?: string; redactedData?: string; providerMetadata?: Record<string, unknown> }): void {
    const part: ReasoningPart = { text: this.thinking?.toString() ?? '' };
    if (end.signature !== undefined) part.signature = end.signature;
    if (end.redactedData !== undefined) part.redactedData = end.redactedData;
    if (end.providerMetadata !== undefined) part.providerMetadata = end.providerMetadata;
    (this.blocks ??= []).push(part);
    this.thinking?.clear();
  }

  add(event: TurnEvent): void {
    this.received++;
    switch (event.type) {
      case 'text-delta':
        this.buffer.append(event.text);
        break;
      case 'reasoning-delta':
        (this.thinking ??= new TextBuffer()).append(event.text);
        break;
      case 'reasoning-end':
        this.endBlock(event);
        break;
      case 'tool-call':
        // with what the provider needs back with it (a Gemini thought signature), when it sent some
        this.calls.push(
          event.providerMetadata === undefined
            ? { id: event.id, name: event.name, args: event.args }
            : { id: event.id, name: event.name, args: event.args, providerMetadata: event.providerMetadata },
        );
        break;
      case 'finish':
        this.finish = event;
        break;
      case 'reset':
        this.buffer.clear();
        this.calls = [];
        this.finish = undefined;
        this.blocks = undefined;
        this.thinking?.clear();
        break;
    }
  }
}
