/**
 * The fault arbitraries' options (src/chaos/faults.ts): a weight or a bound that is negative,
 * NaN, not a number or out of range is refused, naming the option and its value — never read as
 * 0, never left to fast-check's own message.
 */
import { expect } from 'chai';
import { ChaosInputError, faults } from '../../src/chaos/index.js';
import { fc } from '../../src/chaos/fastCheck.js';

describe('faults: options', () => {
  const schedule = (options: Parameters<typeof faults.schedule>[0]) => () => faults.schedule(options);

  it('a negative, NaN or infinite weight is refused, naming it', () => {
    expect(schedule({ models: ['a'], model: { weights: { reset: -1 } } })).to.throw(
      ChaosInputError,
      'faults: model.weights.reset must be a finite number >= 0 (0 leaves the kind out), got -1',
    );
    expect(schedule({ models: ['a'], model: { weights: { ok: Number.NaN } } })).to.throw(
      ChaosInputError,
      'faults: model.weights.ok must be a finite number >= 0 (0 leaves the kind out), got NaN',
    );
    expect(schedule({ tools: ['t'], tool: { weights: { throw: Infinity } } })).to.throw(
      ChaosInputError,
      'faults: tool.weights.throw must be a finite number >= 0 (0 leaves the kind out), got Infinity',
    );
    expect(schedule({ tools: ['t'], tool: { weights: { throw: '2' as never } } })).to.throw(
      ChaosInputError,
      'faults: tool.weights.throw must be a finite number >= 0',
    );
    expect(
      schedule({
        models: ['a'],
        model: { weights: { ok: 0, status: 0, down: 0, reset: 0, malformed: 0, stall: 0, 'slow-first-byte': 0, 'bad-tool-args': 0 } },
      }),
    ).to.throw(ChaosInputError, 'faults: every weight in model.weights is 0');
  });

  it('a bound that is negative, fractional or not a number is refused, naming it', () => {
    expect(schedule({ models: ['a'], model: { bounds: { maxDelayMs: -5 } } })).to.throw(
      ChaosInputError,
      'faults: model.bounds.maxDelayMs must be a whole number >= 0, got -5',
    );
    expect(schedule({ models: ['a'], model: { bounds: { maxAfterEvents: Number.NaN } } })).to.throw(
      ChaosInputError,
      'faults: model.bounds.maxAfterEvents must be a whole number >= 0, got NaN',
    );
    expect(schedule({ tools: ['t'], tool: { bounds: { maxDownMs: 1.5 } } })).to.throw(
      ChaosInputError,
      'faults: tool.bounds.maxDownMs must be a whole number >= 0, got 1.5',
    );
    expect(schedule({ models: ['a'], model: { bounds: { statuses: [] } } })).to.throw(
      ChaosInputError,
      'faults: model.bounds.statuses must be a non-empty array of HTTP statuses',
    );
    expect(schedule({ models: ['a'], model: { bounds: { statuses: [503, 200] } } })).to.throw(
      ChaosInputError,
      'faults: model.bounds.statuses[1] must be an HTTP error status (400–599), got 200',
    );
    expect(schedule({ models: ['a'], maxCalls: -1 })).to.throw(ChaosInputError, 'faults: maxCalls must be a whole number >= 0, got -1');
    expect(schedule({ models: ['a', ''] })).to.throw(ChaosInputError, 'faults.schedule: models must be an array of non-empty names');
  });

  it('still a TypeError (what it was given is not what it takes), as before', () => {
    expect(schedule({})).to.throw(TypeError, /name at least one model/);
  });

  it('fractional weights keep their proportions (fast-check takes whole ones)', () => {
    const kinds = fc
      .sample(faults.modelFault({ weights: { ok: 0.5, reset: 1.5, status: 0, down: 0, malformed: 0, stall: 0, 'slow-first-byte': 0, 'bad-tool-args': 0 } }), {
        numRuns: 4_000,
        seed: 1,
      })
      .map((f) => f.kind);
    const resets = kinds.filter((k) => k === 'reset').length / kinds.length;
    expect(new Set(kinds)).to.deep.equal(new Set(['ok', 'reset']));
    expect(resets).to.be.within(0.7, 0.8);
  });
});
