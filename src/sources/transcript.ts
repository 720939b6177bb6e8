/**
 * What the consumer of a `fallbackModel` call was shown since its last reset, in `'continue'`
 * mode ({@link Transcript}): the partial text sent on to the next model, and what is shown again
 * when a reset inside a continuation takes back only the continuation's own output.
 *
 * @module
 */
import type { TurnEvent } from '../core/events/events.js';
import { TextBuffer } from '../core/model/textBuffer.js';

/** Consecutive text (or reasoning) deltas shown, kept flat. */
class Run {
  readonly text = new TextBuffer();

  constructor(readonly type: 'text-delta' | 'reasoning-delta') {}
}

/**
 * What the consumer was shown since its last reset, in `'continue'` mode: the text to send on as
 * the partial answer, and everything to show again when a reset inside a continuation takes back
 * only the continuation's own output. Runs of deltas are kept flat (about a byte per character,
 * whatever the number of deltas); other events (a reasoning block's end, a tool call) as they came.
 */
export class Transcript {
  /** Shown before the continuation running now: sealed, never taken back by a reset inside it. */
  private base: (Run | TurnEvent)[] = [];
  private baseText = false;
  /** Shown since (the whole turn, when no continuation runs). */
  private own: (Run | TurnEvent)[] = [];
  private ownText = false;
  /** The run the next delta of its kind extends. */
  private run: Run | undefined;

  get hasText(): boolean {
    return this.baseText || this.ownText;
  }

  /** Whether the consumer was shown anything since the seal. */
  get ownShown(): boolean {
    return this.own.length > 0;
  }

  append(event: TurnEvent): void {
    if (event.type === 'text-delta' || event.type === 'reasoning-delta') {
      if (event.text === '') return;
      if (event.type === 'text-delta') this.ownText = true;
      if (this.run?.type !== event.type) this.own.push((this.run = new Run(event.type)));
      this.run.text.append(event.text);
    } else {
      this.own.push(event);
      this.run = undefined;
    }
  }

  /** The text shown, in order. */
  text(): string {
    let text = '';
    for (const parts of [this.base, this.own]) for (const part of parts) if (part instanceof Run && part.type === 'text-delta') text += part.text.toString();
    return text;
  }

  /** A continuation starts: everything shown so far is what its resets never take back. */
  seal(): void {
    if (this.own.length > 0) this.base = this.base.length === 0 ? this.own : this.base.concat(this.own);
    this.baseText ||= this.ownText;
    this.dropOwn();
  }

  /** Takes back what was shown since the seal. */
  dropOwn(): void {
    this.own = [];
    this.ownText = false;
    this.run = undefined;
  }

  /** A reset the consumer honours in full. */
  clear(): void {
    this.base = [];
    this.baseText = false;
    this.dropOwn();
  }

  /** What was shown before the seal, as events to show it again (a run as one delta). */
  *replay(): Generator<TurnEvent> {
    for (const part of this.base) yield part instanceof Run ? { type: part.type, text: part.text.toString() } : part;
  }
}
