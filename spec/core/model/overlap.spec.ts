import { expect } from 'chai';
import fc from 'fast-check';
import { OverlapTrimmer, overlapLengths } from '../../../src/core/model/overlap.js';

/**
 * The trimming rule as it was first written (O(maxOverlap³) on a repetitive tail): the reference
 * the linear trimmer must agree with, delta by delta.
 */
class ReferenceTrimmer {
  decided = false;
  private buffer = '';
  private candidates: number[] | undefined;
  constructor(
    private readonly partial: string,
    private readonly maxOverlap: number,
    private readonly longOverlap: number,
  ) {}
  push(text: string): string {
    if (this.decided) return text;
    this.buffer += text;
    const buf = this.buffer;
    if (buf === '') return '';
    const p = this.partial;
    const len = p.length;
    if (this.candidates === undefined) {
      this.candidates = [];
      for (let k = 1, max = Math.min(len, this.maxOverlap); k <= max; k++) if (p.charCodeAt(len - k) === buf.charCodeAt(0)) this.candidates.push(k);
    }
    this.candidates = this.candidates.filter((k) => p.startsWith(buf.slice(0, Math.min(k, buf.length)), len - k));
    if (this.candidates.some((k) => buf.length <= k)) return '';
    return this.decide(false);
  }
  end(): string {
    return this.decided ? '' : this.decide(true);
  }
  private decide(ended: boolean): string {
    this.decided = true;
    let best = 0;
    for (const k of this.candidates ?? []) if (k > best && k <= this.buffer.length && this.acceptable(k, ended)) best = k;
    return this.buffer.slice(best);
  }
  private acceptable(k: number, ended: boolean): boolean {
    if (k >= this.longOverlap) return true;
    const p = this.partial;
    const overlap = p.slice(p.length - k);
    if (overlap.replace(/\s+/g, '').length < 2) return false;
    if (!/\s/.test(overlap.charAt(0))) {
      const before = p.charAt(p.length - k - 1);
      return before === '' || !/[\p{L}\p{N}]/u.test(before);
    }
    const after = this.buffer.charAt(k);
    return after === '' ? ended : !/[\p{L}\p{N}]/u.test(after);
  }
}

/** Feeds `deltas` then ends; the outputs of each step (the end's last). */
function run(trimmer: { push(t: string): string; end(): string }, deltas: readonly string[]): string[] {
  return [...deltas.map((d) => trimmer.push(d)), trimmer.end()];
}

describe('overlap (continuation trimming)', () => {
  describe('overlapLengths', () => {
    it('lists every length at which the window ends with the text’s head, longest first', () => {
      expect(overlapLengths('the weather is', ' is sunny')).to.deep.equal([3]);
      expect(overlapLengths('aaaa', 'aab')).to.deep.equal([2, 1]);
      expect(overlapLengths('abab', 'abab')).to.deep.equal([4, 2]);
      expect(overlapLengths('abc', 'xyz')).to.deep.equal([]);
      expect(overlapLengths('', 'x')).to.deep.equal([]);
      expect(overlapLengths('x', '')).to.deep.equal([]);
    });

    it('agrees with the definition on random text', () => {
      fc.assert(
        fc.property(
          fc.string({ unit: fc.constantFrom('a', 'b', ' '), maxLength: 30 }),
          fc.string({ unit: fc.constantFrom('a', 'b', ' '), maxLength: 30 }),
          (window, text) => {
            const expected: number[] = [];
            for (let k = Math.min(window.length, text.length); k > 0; k--) if (window.endsWith(text.slice(0, k))) expected.push(k);
            expect(overlapLengths(window, text)).to.deep.equal(expected);
          },
        ),
        { numRuns: 500 },
      );
    });
  });

  describe('OverlapTrimmer', () => {
    it('holds back while the text could still repeat the tail, then trims a repeat of whole words', () => {
      const trimmer = new OverlapTrimmer('The weather in', 1000, 16);
      expect(trimmer.push(' in')).to.equal('');
      expect(trimmer.decided).to.equal(false);
      expect(trimmer.push(' Paris')).to.equal(' Paris');
      expect(trimmer.decided).to.equal(true);
      expect(trimmer.push(' today')).to.equal(' today');
      expect(trimmer.end()).to.equal('');
    });

    it('trims a restarted word and a long repeat; keeps a coincidence', () => {
      expect(run(new OverlapTrimmer('The wea', 1000, 16), ['weather is', ' fine'])).to.deep.equal(['ther is', ' fine', '']);
      expect(run(new OverlapTrimmer('to the', 1000, 16), [' theatre'])).to.deep.equal([' theatre', '']);
      expect(run(new OverlapTrimmer('x'.repeat(20) + 'abcdefghijklmnopq', 1000, 16), ['abcdefghijklmnopq!'])).to.deep.equal(['!', '']);
    });

    it('decides on what it holds when the text ends', () => {
      const trimmer = new OverlapTrimmer('It is', 1000, 16);
      expect(trimmer.push(' is')).to.equal('');
      expect(trimmer.end()).to.equal('');
    });

    it('with an empty window (maxOverlap 0) passes everything at once', () => {
      expect(run(new OverlapTrimmer('abc', 0, 16), ['abc', 'd'])).to.deep.equal(['abc', 'd', '']);
    });

    it('agrees with the reference trimmer, delta by delta (random text, random chunks, random options)', () => {
      const unit = fc.constantFrom('a', 'b', ' ', 'é', '.', '😀');
      fc.assert(
        fc.property(
          fc.string({ unit, maxLength: 40 }),
          fc.array(fc.string({ unit, maxLength: 6 }), { maxLength: 8 }),
          fc.integer({ min: 0, max: 45 }),
          fc.integer({ min: 1, max: 20 }),
          (partial, deltas, maxOverlap, longOverlap) => {
            expect(run(new OverlapTrimmer(partial, maxOverlap, longOverlap), deltas)).to.deep.equal(
              run(new ReferenceTrimmer(partial, maxOverlap, longOverlap), deltas),
            );
          },
        ),
        { numRuns: 3000 },
      );
    });

    it('is linear in the overlap window: a repetitive 200 000-character tail, fed one character at a time (the reference: hours)', () => {
      const partial = 'a'.repeat(200_000);
      const trimmer = new OverlapTrimmer(partial, 200_000, 16);
      let out = '';
      for (let i = 0; i < 1000; i++) out += trimmer.push('a');
      out += trimmer.push('b');
      expect(out).to.equal('b');
    });
  });
});
