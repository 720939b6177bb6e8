import { expect } from 'chai';
import fc from 'fast-check';
import { TextBuffer } from '../../../src/core/model/textBuffer.js';

describe('TextBuffer', () => {
  it('holds exactly the concatenation of what was appended, across blocks and repeated reads', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 6 }), { maxLength: 2_000 }), fc.integer({ min: 0, max: 2_000 }), (pieces, readAt) => {
        const text = new TextBuffer();
        pieces.forEach((p, i) => {
          text.append(p);
          if (i === readAt) expect(text.toString()).to.equal(pieces.slice(0, i + 1).join(''));
        });
        expect(text.toString()).to.equal(pieces.join(''));
        expect(text.toString()).to.equal(pieces.join(''));
        expect(text.empty).to.equal(pieces.join('') === '');
      }),
      { numRuns: 100 },
    );
  });

  it('clear() starts over', () => {
    const text = new TextBuffer();
    for (let i = 0; i < 600; i++) text.append('x');
    text.clear();
    expect([text.empty, text.toString()]).to.deep.equal([true, '']);
    text.append('y');
    expect([text.empty, text.toString()]).to.deep.equal([false, 'y']);
  });

  it('with keep: false, only records whether anything non-empty came', () => {
    const text = new TextBuffer(false);
    text.append('');
    expect(text.empty).to.equal(true);
    text.append('a');
    expect([text.empty, text.toString()]).to.deep.equal([false, '']);
  });
});
