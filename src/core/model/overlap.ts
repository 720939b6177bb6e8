/**
 * Overlap trimming for a continued answer: when a fallback model continues a cut-off answer, it
 * often starts by repeating the partial text's tail. {@link OverlapTrimmer} holds the start of the
 * continuation back only while it could still be such a repeat, then lets through what is new.
 *
 * Linear in the overlap window: a suffix automaton of the window answers "could the text held so
 * far still be a repeat?" in O(1) per character, and the Knuth–Morris–Pratt failure function finds
 * every repeat length at once when it is time to decide. (Checking each candidate length against
 * the held text, as before, cost O(maxOverlap³) on a repetitive tail: 1 000 characters, 1.2 s.)
 *
 * @module
 */

const WORD_CHAR = /[\p{L}\p{N}]/u;
const SPACE = /\s/;

/** Transitions of the suffix automaton of `text` (UTF-16 code units): state 0 is the start. */
function suffixAutomaton(text: string): Map<number, number>[] {
  const next: Map<number, number>[] = [new Map()];
  const link: number[] = [-1];
  const len: number[] = [0];
  let last = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const cur = next.length;
    next.push(new Map());
    len.push(len[last]! + 1);
    link.push(0);
    let p = last;
    while (p !== -1 && !next[p]!.has(c)) {
      next[p]!.set(c, cur);
      p = link[p]!;
    }
    if (p !== -1) {
      const q = next[p]!.get(c)!;
      if (len[p]! + 1 === len[q]) {
        link[cur] = q;
      } else {
        const clone = next.length;
        next.push(new Map(next[q]!));
        len.push(len[p]! + 1);
        link.push(link[q]!);
        while (p !== -1 && next[p]!.get(c) === q) {
          next[p]!.set(c, clone);
          p = link[p]!;
        }
        link[q] = clone;
        link[cur] = clone;
      }
    }
    last = cur;
  }
  return next;
}

/**
 * Every `k` in `1..min(window.length, text.length)` such that `window` ends with the first `k`
 * characters of `text`, longest first. O(window + text): KMP of `text`'s head over `window`,
 * then the failure chain.
 *
 * @example
 * ```ts
 * overlapLengths('the weather is', ' is sunny'); // [3]
 * overlapLengths('aaaa', 'aab'); // [2, 1]
 * ```
 */
export function overlapLengths(window: string, text: string): number[] {
  const pattern = text.slice(0, Math.min(window.length, text.length));
  const m = pattern.length;
  if (m === 0) return [];
  const fail = new Int32Array(m);
  for (let i = 1, k = 0; i < m; i++) {
    while (k > 0 && pattern.charCodeAt(i) !== pattern.charCodeAt(k)) k = fail[k - 1]!;
    if (pattern.charCodeAt(i) === pattern.charCodeAt(k)) k++;
    fail[i] = k;
  }
  let q = 0;
  for (let i = 0; i < window.length; i++) {
    const c = window.charCodeAt(i);
    if (q === m) q = fail[q - 1]!;
    while (q > 0 && c !== pattern.charCodeAt(q)) q = fail[q - 1]!;
    if (c === pattern.charCodeAt(q)) q++;
  }
  const out: number[] = [];
  for (let k = q; k > 0; k = fail[k - 1]!) out.push(k);
  return out;
}

/**
 * Holds back the start of a continuation until it is known whether it repeats the tail of the
 * partial text (at most `maxOverlap` characters of it), then lets through what is new. A repeat
 * of at least `longOverlap` characters is trimmed wherever it falls; a shorter one (of at least 2
 * non-space characters) only when it restarts a word of the partial text (`'wea'` then
 * `'weather…'`) or repeats whole words (`' is'` then `' is sunny'`).
 *
 * Linear in the overlap window: O(maxOverlap) to set up, O(1) per character held back, O(maxOverlap)
 * to decide.
 *
 * @example
 * ```ts
 * const trimmer = new OverlapTrimmer('The weather in', 1000, 16);
 * trimmer.push(' in');    // '': ' in' could still be a repeat of the tail
 * trimmer.push(' Paris'); // ' Paris': ' in' repeated whole words, so it is trimmed
 * ```
 */
export class OverlapTrimmer {
  /** Whether the trimmer has decided: from then on every delta passes through unchanged. */
  decided = false;
  private buffer = '';
  /** The partial text's last `maxOverlap` characters: where a repeat may come from. */
  private readonly window: string;
  private automaton: Map<number, number>[] | undefined;
  private nonSpace: Int32Array | undefined;
  private state = 0;

  constructor(
    private readonly partial: string,
    maxOverlap: number,
    private readonly longOverlap: number,
  ) {
    this.window = partial.slice(partial.length - Math.min(partial.length, maxOverlap));
  }

  /** One delta's text in; what may be shown now out (`''` while undecided). */
  push(text: string): string {
    if (this.decided) return text;
    const from = this.buffer.length;
    this.buffer += text;
    if (this.buffer === '') return '';
    if (this.window === '') return this.decide(false);
    const automaton = (this.automaton ??= suffixAutomaton(this.window));
    // held back while everything held so far occurs in the window: it may still be a repeat
    for (let i = from; i < this.buffer.length; i++) {
      const next = automaton[this.state]!.get(this.buffer.charCodeAt(i));
      if (next === undefined) return this.decide(false);
      this.state = next;
    }
    return '';
  }

  /** The continuation's text ended (another event came, or completion): decide now. */
  end(): string {
    return this.decided ? '' : this.decide(true);
  }

  private decide(ended: boolean): string {
    this.decided = true;
    let best = 0;
    for (const k of overlapLengths(this.window, this.buffer)) {
      if (this.acceptable(k, ended)) {
        best = k;
        break;
      }
    }
    const out = this.buffer.slice(best);
    this.buffer = '';
    this.automaton = undefined;
    return out;
  }

  /** Non-space characters in the window's last `k` characters (counted once per decision, O(window)). */
  private nonSpaceInTail(k: number): number {
    if (this.nonSpace === undefined) {
      const w = this.window;
      this.nonSpace = new Int32Array(w.length + 1);
      for (let i = 1; i <= w.length; i++) this.nonSpace[i] = this.nonSpace[i - 1]! + (SPACE.test(w.charAt(w.length - i)) ? 0 : 1);
    }
    return this.nonSpace[k]!;
  }

  private acceptable(k: number, ended: boolean): boolean {
    if (k >= this.longOverlap) return true;
    const p = this.partial;
    if (this.nonSpaceInTail(k) < 2) return false;
    if (!SPACE.test(p.charAt(p.length - k))) {
      // restarts the partial text's last word(s): the overlap begins where a word begins
      const before = p.charAt(p.length - k - 1);
      return before === '' || !WORD_CHAR.test(before);
    }
    // repeats whole words: what follows the overlap starts a new word (or nothing follows)
    const after = this.buffer.charAt(k);
    return after === '' ? ended : !WORD_CHAR.test(after);
  }
}
