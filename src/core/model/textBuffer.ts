/**
 * An answer's text, accumulated delta by delta in memory proportional to the text itself.
 *
 * `text += delta` builds a rope: one cons cell per delta (32 bytes on V8) that also keeps each
 * delta's own string alive, about 50 bytes per delta for deltas of a few characters, so a
 * 10⁶-delta answer holds ~50 MB for ~4 MB of text. Here the rope is flattened into a block every
 * {@link BLOCK} deltas: about one byte per character, whatever the number of deltas.
 *
 * @module
 */

/** Deltas joined into one flat string at a time. */
const BLOCK = 256;

/**
 * Text appended piece by piece, kept flat in blocks. With `keep: false` it records only whether
 * anything non-empty was appended (for code that needs the text in one mode only).
 *
 * @example
 * ```ts
 * const text = new TextBuffer();
 * for (const delta of ['Hel', 'lo']) text.append(delta);
 * text.toString(); // 'Hello'
 * ```
 */
export class TextBuffer {
  /** Full blocks, flat (made at the first one: an idle or short answer holds no array). */
  private blocks: string[] | undefined = undefined;
  /** The block being filled: a rope of up to {@link BLOCK} deltas. */
  private current = '';
  private count = 0;
  private nonEmpty = false;

  constructor(private readonly keep = true) {}

  /** Whether nothing (or only empty strings) was appended since the last clear. */
  get empty(): boolean {
    return !this.nonEmpty;
  }

  append(piece: string): void {
    if (piece === '') return;
    this.nonEmpty = true;
    if (!this.keep) return;
    this.current += piece;
    if (++this.count === BLOCK) {
      // reading a character flattens the rope in place (V8, and other engines' ropes alike): the
      // block is then its characters alone, and its deltas' strings can be collected
      this.current.charCodeAt(0);
      (this.blocks ??= []).push(this.current);
      this.current = '';
      this.count = 0;
    }
  }

  clear(): void {
    this.blocks = undefined;
    this.current = '';
    this.count = 0;
    this.nonEmpty = false;
  }

  /** The text so far (`''` when not kept). */
  toString(): string {
    if (this.blocks === undefined) return this.current;
    const all = this.blocks.join('') + this.current;
    // kept as one block: a second read costs nothing more
    this.blocks = [all];
    this.current = '';
    this.count = 0;
    return all;
  }
}
