import { expect } from 'chai';
import fc from 'fast-check';
import { InvalidOptionError } from '../../../src/core/errors/errors.js';
import { type ModelPrice, checkPrices, costUsd, priceOf } from '../../../src/core/money/prices.js';

const sonnet: ModelPrice = { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15, reasoning: 15 };

describe('core/money/prices', () => {
  describe('costUsd', () => {
    it('bills each part of the usage at its own price', () => {
      // 1 000 uncached × 3 + 8 000 read × 0.3 + 1 000 written × 3.75 + 300 output × 15 + 200 reasoning × 15
      const usd = costUsd(sonnet, { inputTokens: 10_000, cachedInputTokens: 8_000, cacheWriteTokens: 1_000, outputTokens: 500, reasoningTokens: 200 });
      expect(usd).to.be.closeTo((1_000 * 3 + 8_000 * 0.3 + 1_000 * 3.75 + 300 * 15 + 200 * 15) / 1e6, 1e-12);
    });

    it('prices cache reads, cache writes and reasoning at input and output when the price leaves them out', () => {
      const plain: ModelPrice = { input: 2, output: 8 };
      const usage = { inputTokens: 1_000, cachedInputTokens: 600, cacheWriteTokens: 100, outputTokens: 50, reasoningTokens: 20 };
      expect(costUsd(plain, usage)).to.be.closeTo((1_000 * 2 + 50 * 8) / 1e6, 1e-12);
    });

    it('clamps counts a provider reports inconsistently: no part is negative', () => {
      // cached more than the input, reasoning more than the output
      const usd = costUsd(sonnet, { inputTokens: 100, cachedInputTokens: 500, cacheWriteTokens: 50, outputTokens: 10, reasoningTokens: 99 });
      expect(usd).to.be.closeTo((100 * 0.3 + 10 * 15) / 1e6, 1e-12);
    });

    it('is never negative, grows with every count, and a cache read never costs more than its uncached price when cached input is cheaper', () => {
      const count = fc.integer({ min: 0, max: 2_000_000 });
      const price = fc.record({ input: fc.double({ min: 0, max: 100, noNaN: true }), output: fc.double({ min: 0, max: 100, noNaN: true }) });
      fc.assert(
        fc.property(price, count, count, count, count, fc.double({ min: 0, max: 1, noNaN: true }), (p, input, output, cached, more, share) => {
          const priced: ModelPrice = { ...p, cachedInput: p.input * share };
          const usage = { inputTokens: input, outputTokens: output, cachedInputTokens: Math.min(cached, input) };
          const usd = costUsd(priced, usage);
          expect(usd).to.be.at.least(0);
          expect(costUsd(priced, { ...usage, inputTokens: input + more })).to.be.at.least(usd - 1e-9);
          expect(costUsd(priced, { ...usage, outputTokens: output + more })).to.be.at.least(usd - 1e-9);
          expect(usd).to.be.at.most(costUsd(priced, { inputTokens: input, outputTokens: output }) + 1e-9);
        }),
        { numRuns: 500 },
      );
    });
  });

  describe('checkPrices', () => {
    it('accepts a list whose every entry has input and output prices', () => {
      const prices = { 'gpt-5-mini': { input: 0.25, cachedInput: 0.025, output: 2 }, free: { input: 0, output: 0 } };
      expect(checkPrices('runAgent', prices)).to.equal(prices);
    });

    const bad: [string, unknown, string][] = [
      ['not an object', 'cheap', 'prices'],
      ['an array', [], 'prices'],
      ['an entry that is not an object', { m: 3 }, 'prices.m'],
      ['a missing output price', { m: { input: 1 } }, 'prices.m.output'],
      ['a negative price', { m: { input: -1, output: 1 } }, 'prices.m.input'],
      ['a price that is not finite', { m: { input: 1, output: Infinity } }, 'prices.m.output'],
      ['a price given as text', { m: { input: 1, output: 2, cachedInput: '0.1' } }, 'prices.m.cachedInput'],
      ['an unknown field (a typo)', { m: { input: 1, output: 2, cacheRead: 0.1 } }, 'prices.m.cacheRead'],
    ];
    for (const [what, prices, option] of bad) {
      it(`refuses ${what}, naming ${option}`, () => {
        expect(() => checkPrices('runAgent', prices))
          .to.throw(InvalidOptionError)
          .with.property('option', option);
      });
    }
  });

  describe('priceOf', () => {
    it("returns a listed model's price", () => {
      expect(priceOf('runAgent', { a: sonnet }, 'a')).to.equal(sonnet);
    });

    it('refuses a model the list does not name, naming the model and the list, never a silent $0', () => {
      expect(() => priceOf('runAgent', { a: sonnet, b: sonnet }, 'gpt-9'))
        .to.throw(InvalidOptionError, /price for model "gpt-9" \(it names "a", "b"\)/)
        .with.property('option', 'prices');
      expect(() => priceOf('runAgent', {}, 'toString')).to.throw(InvalidOptionError, /it names none/);
    });
  });
});
