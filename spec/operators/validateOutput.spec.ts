import { expect } from 'chai';
import * as t from 'io-ts';
import { InvalidOptionError } from '../../src/core/errors/errors.js';
import { validateOutput, type OutputCheck, type ValidateOutputOptions } from '../../src/operators/validateOutput.js';

const Weather = t.type({ city: t.string, celsius: t.number });

function expectInvalid(fn: () => unknown, option: string): InvalidOptionError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).to.be.instanceOf(InvalidOptionError);
  const error = caught as InvalidOptionError;
  expect(error.target).to.equal('validateOutput');
  expect(error.option).to.equal(option);
  return error;
}

describe('validateOutput', () => {
  describe('with a codec', () => {
    const validator = validateOutput(Weather);

    it('an answer that is JSON and decodes has no problems', () => {
      expect(validator.check('{"city":"NYC","celsius":22}')).to.deep.equal([]);
      expect(validator.check('  {"city":"NYC","celsius":22}\n')).to.deep.equal([]);
    });

    it('accepts the JSON inside a fenced ```json block (or a bare ``` block)', () => {
      expect(validator.check('```json\n{"city":"NYC","celsius":22}\n```')).to.deep.equal([]);
      expect(validator.check('```\n{"city":"NYC","celsius":22}\n```')).to.deep.equal([]);
    });

    it('strips a fence exactly as before: ```json / ``` at the start, ``` at the end, whitespace around', () => {
      for (const answer of ['```json{"city":"NYC","celsius":22}```', '```json  \n {"city":"NYC","celsius":22} \n\t```  ', ' ```{"city":"NYC","celsius":22}']) {
        expect(validator.check(answer), answer).to.deep.equal([]);
      }
      expect(validator.check('```JSON\n{"city":"NYC","celsius":22}```'), 'the language tag is lower-case json only').to.have.length(1);
      expect(validator.check('``````')[0]).to.match(/^the answer is not valid JSON/);
    });

    it('strips fences in linear time: 250 000 spaces between two words are checked at once (the old regex took minutes)', () => {
      const problems = validator.check(`{ ${' '.repeat(250_000)} x`);
      expect(problems).to.have.length(1);
      expect(problems[0]).to.match(/^the answer is not valid JSON/);
    });

    it('an answer that is not JSON: one problem saying so', () => {
      const problems = validator.check('It is 22 °C in NYC.');
      expect(problems).to.have.length(1);
      expect(problems[0]).to.match(/^the answer is not valid JSON \(.+\)$/);
    });

    it('lists each decode problem by field', () => {
      expect(validator.check('{"city":7}')).to.deep.equal(['city: expected string, got 7', 'celsius: expected number, got undefined']);
      expect(validator.check('[]')).to.deep.equal(['expected { city: string, celsius: number }, got []']);
    });

    it('names nested fields by dotted path', () => {
      const nested = validateOutput(t.type({ place: t.type({ city: t.string }) }));
      expect(nested.check('{"place":{"city":null}}')).to.deep.equal(['place.city: expected string, got null']);
    });
  });

  describe('with checks', () => {
    it('collects string, array and nothing results, in order; empty strings are not problems', () => {
      const checks: OutputCheck[] = [
        (a) => (a.length > 5 ? 'answer is longer than 5 characters' : undefined),
        () => ['no sources cited', '', 'no date'],
        () => undefined,
        () => null,
        () => '',
        () => [],
      ];
      expect(validateOutput(checks).check('too long an answer')).to.deep.equal(['answer is longer than 5 characters', 'no sources cited', 'no date']);
      expect(validateOutput(checks.slice(2)).check('anything')).to.deep.equal([]);
    });

    it('hands each check the answer', () => {
      const seen: string[] = [];
      validateOutput([(a) => (seen.push(a), undefined), (a) => (seen.push(a), undefined)]).check('the answer');
      expect(seen).to.deep.equal(['the answer', 'the answer']);
    });

    it('a throwing check throws from check() (the guard rule: runAgent ends the run with it, see runAgent.spec)', () => {
      const exploded = new Error('regex exploded');
      const validator = validateOutput([
        () => 'checked first',
        () => {
          throw exploded;
        },
      ]);
      expect(() => validator.check('x')).to.throw(exploded);
      expect(() =>
        validateOutput([
          () => {
            throw 'plain string';
          },
        ]).check('x'),
      ).to.throw('plain string');
    });
  });

  describe('maxCorrections', () => {
    it('defaults to 2', () => {
      expect(validateOutput(Weather).maxCorrections).to.equal(2);
      expect(validateOutput([() => undefined]).maxCorrections).to.equal(2);
      expect(validateOutput(Weather, { maxCorrections: undefined }).maxCorrections).to.equal(2);
    });

    it('takes 0 and other non-negative integers', () => {
      expect(validateOutput(Weather, { maxCorrections: 0 }).maxCorrections).to.equal(0);
      expect(validateOutput(Weather, { maxCorrections: 5 }).maxCorrections).to.equal(5);
    });

    it('rejects -1, fractions and non-numbers', () => {
      const e = expectInvalid(() => validateOutput(Weather, { maxCorrections: -1 }), 'maxCorrections');
      expect(e.message).to.equal('validateOutput: option "maxCorrections" must be a non-negative integer, got -1');
      expectInvalid(() => validateOutput(Weather, { maxCorrections: 1.5 }), 'maxCorrections');
      expectInvalid(() => validateOutput(Weather, { maxCorrections: '2' } as unknown as ValidateOutputOptions), 'maxCorrections');
    });

    it('rejects an unknown option', () => {
      expectInvalid(() => validateOutput(Weather, { retries: 1 } as unknown as ValidateOutputOptions), 'retries');
    });
  });

  describe('rule validation', () => {
    const bad: [string, unknown][] = [
      ['an empty array', []],
      ['an array with a non-function', [() => undefined, 'not a check']],
      ['a string', 'json'],
      ['a number', 42],
      ['null', null],
      ['a plain object', { city: 'string' }],
    ];
    for (const [label, rule] of bad) {
      it(`rejects ${label}`, () => {
        const e = expectInvalid(() => validateOutput(rule as readonly OutputCheck[]), 'rule');
        expect(e.message).to.contain('an io-ts codec or a non-empty array of check functions');
        expect(e.value).to.equal(rule);
      });
    }
  });

  describe('correction()', () => {
    const validator = validateOutput(Weather);

    it('one problem', () => {
      expect(validator.correction(['city: expected string, got 7'])).to.equal(
        'Your previous answer has a problem:\n- city: expected string, got 7\nReply again with a corrected answer, and only the answer.',
      );
    });

    it('several problems, one per line', () => {
      expect(validator.correction(['the answer is not valid JSON', 'too long'])).to.equal(
        'Your previous answer has these problems:\n- the answer is not valid JSON\n- too long\nReply again with a corrected answer, and only the answer.',
      );
    });

    it('round-trips what check() found', () => {
      const problems = validator.check('{"city":7,"celsius":"hot"}');
      expect(validator.correction(problems)).to.equal(
        'Your previous answer has these problems:\n' +
          '- city: expected string, got 7\n' +
          '- celsius: expected number, got "hot"\n' +
          'Reply again with a corrected answer, and only the answer.',
      );
    });
  });
});
