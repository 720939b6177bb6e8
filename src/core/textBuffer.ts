/**
 * An answer's text, accumulated delta by delta in memory proportional to the text itself.
 *
 * `text += delta` builds a rope: one cons cell per delta (32 bytes on V8) that also keeps each
 * delta's own string alive, about 50 bytes per delta for deltas of a few characters, so a
 * 10⁶-delta answer holds ~50 MB for ~4 MB of text. Here deltas are joined into a flat block every
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
  private blocks: string[] = [];
  private pieces: string[] = [];
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
    this.pieces.push(piece);
    if (this.pieces.length === BLOCK) {
      this.blocks.push(this.pieces.join(''));
      this.pieces = [];
    }
  }

  clear(): void {
    this.blocks = [];
    this.pieces = [];
    this.nonEmpty = false;
  }

  /** The text so far (`''` when not kept). */
  toString(): string {
    if (this.blocks.length === 0) return this.pieces.join('');
    const all = this.blocks.join('') + this.pieces.join('');
    // keep it as one block: a second read costs nothing more
    this.blocks = [all];
    this.pieces = [];
    return all;
  }
}
