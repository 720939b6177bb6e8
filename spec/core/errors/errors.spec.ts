import { expect } from 'chai';
import {
  AllFallbacksFailedError,
  BudgetExceededError,
  CircuitOpenError,
  HttpError,
  InvalidOptionError,
  RetriesExhaustedError,
  TotalTimeoutError,
  showValue,
} from '../../../src/core/errors/errors.js';

describe('errors', () => {
  describe('every error class', () => {
    const cases: readonly (readonly [string, Error])[] = [
      ['CircuitOpenError', new CircuitOpenError('llm', 10)],
      ['RetriesExhaustedError', new RetriesExhaustedError(1, [new Error('x')])],
      ['AllFallbacksFailedError', new AllFallbacksFailedError([new Error('x')])],
      ['TotalTimeoutError', new TotalTimeoutError(100, 101)],
      ['BudgetExceededError', new BudgetExceededError('tokens', 10, 11)],
      ['HttpError', new HttpError(500)],
      ['InvalidOptionError', new InvalidOptionError('retryWithBackoff', 'maxRetries', -1, 'a non-negative integer')],
    ];

    for (const [name, error] of cases) {
      it(`${name} sets name, is an Error and has a non-empty message`, () => {
        expect(error).to.be.instanceOf(Error);
        expect(error.name).to.equal(name);
        expect(error.message).to.be.a('string').and.not.equal('');
        expect(String(error)).to.match(new RegExp(`^${name}: `));
      });
    }
  });

  describe('CircuitOpenError', () => {
    it('carries breaker and retryAfterMs and names both in the message', () => {
      const e = new CircuitOpenError('openai', 1500);
      expect(e.breaker).to.equal('openai');
      expect(e.retryAfterMs).to.equal(1500);
      expect(e.message).to.equal("Circuit 'openai' is open; next probe in 1500 ms");
      expect(e.cause).to.equal(undefined);
    });

    it('says "isolated" instead of a probe time when retryAfterMs is Infinity', () => {
      const e = new CircuitOpenError('tools', Infinity);
      expect(e.retryAfterMs).to.equal(Infinity);
      expect(e.message).to.equal("Circuit 'tools' is open (isolated)");
      expect(e.message).not.to.include('Infinity');
    });

    it('reports 0 ms for a half-open breaker with every probe slot busy', () => {
      const e = new CircuitOpenError('b', 0);
      expect(e.retryAfterMs).to.equal(0);
      expect(e.message).to.equal("Circuit 'b' is open; next probe in 0 ms");
    });

    it('accepts a standard cause', () => {
      const cause = new Error('last failure');
      const e = new CircuitOpenError('b', 5, { cause });
      expect(e.cause).to.equal(cause);
    });
  });

  describe('RetriesExhaustedError', () => {
    it('keeps attempts, every error in order, and the last error as cause', () => {
      const errors = [new Error('first'), new Error('second'), new HttpError(503)];
      const e = new RetriesExhaustedError(3, errors);
      expect(e.attempts).to.equal(3);
      expect(e.errors).to.equal(errors);
      expect(e.errors).to.have.lengthOf(3);
      expect(e.errors[0]).to.equal(errors[0]);
      expect(e.errors[2]).to.equal(errors[2]);
      expect(e.cause).to.equal(errors[2]);
      expect(e.reason).to.equal('max_retries');
    });

    it('describes the last error in the message, with plural/singular attempts', () => {
      expect(new RetriesExhaustedError(3, [new Error('a'), new Error('b')]).message).to.equal('Gave up after 3 attempts: Error: b');
      expect(new RetriesExhaustedError(1, [new RangeError('only')]).message).to.equal('Gave up after 1 attempt: RangeError: only');
    });

    it('renders a non-Error last value safely', () => {
      const e = new RetriesExhaustedError(2, ['x', 'boom']);
      expect(e.message).to.equal('Gave up after 2 attempts: "boom"');
      expect(e.cause).to.equal('boom');
    });

    it("records reason 'retry_after_too_long' and says so in the message", () => {
      const last = new HttpError(429, { 'retry-after': '3600' });
      const e = new RetriesExhaustedError(1, [last], 'retry_after_too_long');
      expect(e.reason).to.equal('retry_after_too_long');
      expect(e.cause).to.equal(last);
      expect(e.message).to.include('retry-after exceeds maxRetryAfterMs');
      expect(e.message).to.include('HttpError: HTTP 429');
    });

    it('has an undefined cause when there were no errors, without throwing', () => {
      const e = new RetriesExhaustedError(0, []);
      expect(e.cause).to.equal(undefined);
      expect(e.errors).to.deep.equal([]);
      expect(e.message).to.match(/^Gave up after 0 attempts: /);
    });
  });

  describe('AllFallbacksFailedError', () => {
    it('keeps errors in the order tried and the last one as cause', () => {
      const a = new Error('primary');
      const b = new HttpError(503);
      const c = new Error('last resort');
      const e = new AllFallbacksFailedError([a, b, c]);
      expect(e.errors).to.have.lengthOf(3);
      expect(e.errors[0]).to.equal(a);
      expect(e.errors[1]).to.equal(b);
      expect(e.errors[2]).to.equal(c);
      expect(e.cause).to.equal(c);
      expect(e.message).to.equal('All 3 alternatives failed: [1] Error: primary; [2] HttpError: HTTP 503; [3] Error: last resort');
      const long = new AllFallbacksFailedError([new Error('x'.repeat(500)), new Error('y')]);
      expect(long.message).to.equal(`All 2 alternatives failed: [1] Error: ${'x'.repeat(193)}…; [2] Error: y`);
    });

    it('uses the singular for one alternative', () => {
      const e = new AllFallbacksFailedError([new Error('only')]);
      expect(e.message).to.equal('All 1 alternative failed: Error: only');
    });
  });

  describe('TotalTimeoutError', () => {
    it('carries timeoutMs, elapsedMs and a standard cause', () => {
      const cause = new Error('last attempt');
      const e = new TotalTimeoutError(5000, 5003, { cause });
      expect(e.timeoutMs).to.equal(5000);
      expect(e.elapsedMs).to.equal(5003);
      expect(e.cause).to.equal(cause);
      expect(e.message).to.equal('Total timeout of 5000 ms exceeded after 5003 ms');
    });

    it('has no cause when none was given', () => {
      const e = new TotalTimeoutError(100, 100);
      expect(e.cause).to.equal(undefined);
    });
  });

  describe('BudgetExceededError', () => {
    it('carries resource, limit and used', () => {
      const e = new BudgetExceededError('tokens', 10_000, 10_412);
      expect(e.resource).to.equal('tokens');
      expect(e.limit).to.equal(10_000);
      expect(e.used).to.equal(10_412);
      expect(e.message).to.equal('Budget exceeded: 10412 tokens used, limit 10000');
    });

    it('accepts a standard cause', () => {
      const cause = new Error('why');
      expect(new BudgetExceededError('usd', 1, 2, { cause }).cause).to.equal(cause);
    });
  });

  describe('HttpError', () => {
    it('carries status, headers and body', () => {
      const headers = { 'retry-after': '2' };
      const e = new HttpError(429, headers, { error: 'slow down' });
      expect(e.status).to.equal(429);
      expect(e.headers).to.equal(headers);
      expect(e.body).to.deep.equal({ error: 'slow down' });
      expect(e.message).to.equal('HTTP 429: {"error":"slow down"}');
    });

    it('defaults headers to an empty record and leaves body undefined', () => {
      const e = new HttpError(503);
      expect(e.status).to.equal(503);
      expect(e.headers).to.deep.equal({});
      expect(e.body).to.equal(undefined);
      expect(e.message).to.equal('HTTP 503');
      expect(e.cause).to.equal(undefined);
    });

    it('accepts a Headers object', () => {
      const headers = new Headers({ 'Retry-After': '1' });
      const e = new HttpError(503, headers);
      expect(e.headers).to.equal(headers);
    });

    it('includes a string body in the message and truncates long bodies', () => {
      expect(new HttpError(400, {}, 'bad input').message).to.equal('HTTP 400: bad input');
      const long = 'x'.repeat(500);
      const e = new HttpError(400, {}, long);
      expect(e.body).to.equal(long);
      expect(e.message).to.equal(`HTTP 400: ${'x'.repeat(200)}…`);
    });

    it('omits an empty or null body from the message', () => {
      expect(new HttpError(500, {}, '').message).to.equal('HTTP 500');
      expect(new HttpError(500, {}, null).message).to.equal('HTTP 500');
    });

    it('accepts a custom message and a standard cause', () => {
      const cause = new Error('socket');
      const e = new HttpError(502, {}, undefined, { message: 'upstream failed', cause });
      expect(e.message).to.equal('upstream failed');
      expect(e.cause).to.equal(cause);
      expect(e.status).to.equal(502);
    });
  });

  describe('InvalidOptionError', () => {
    it('is a TypeError carrying target, option and value', () => {
      const e = new InvalidOptionError('retryWithBackoff', 'maxRetries', -1, 'a non-negative integer');
      expect(e).to.be.instanceOf(TypeError);
      expect(e).to.be.instanceOf(Error);
      expect(e.name).to.equal('InvalidOptionError');
      expect(e.target).to.equal('retryWithBackoff');
      expect(e.option).to.equal('maxRetries');
      expect(e.value).to.equal(-1);
    });

    it('formats the message as `target: option "x" must be ..., got value`', () => {
      const e = new InvalidOptionError('retryWithBackoff', 'maxRetries', -1, 'a non-negative integer');
      expect(e.message).to.equal('retryWithBackoff: option "maxRetries" must be a non-negative integer, got -1');
    });

    const rendered: readonly (readonly [string, unknown, string])[] = [
      ['a string (quoted)', 'abc', '"abc"'],
      ['undefined', undefined, 'undefined'],
      ['null', null, 'null'],
      ['NaN', NaN, 'NaN'],
      ['Infinity', Infinity, 'Infinity'],
      ['a bigint', 10n, '10n'],
      ['an object', { a: 1 }, '{"a":1}'],
      ['a named function', function myFn() {}, 'function myFn'],
    ];
    for (const [label, value, shown] of rendered) {
      it(`renders ${label} in the message`, () => {
        const e = new InvalidOptionError('CircuitBreaker', 'window.minimumCalls', value, 'a positive integer');
        expect(e.message).to.equal(`CircuitBreaker: option "window.minimumCalls" must be a positive integer, got ${shown}`);
        expect(e.option).to.equal('window.minimumCalls');
        if (typeof value === 'number' && Number.isNaN(value)) expect(Number.isNaN(e.value)).to.equal(true);
        else expect(e.value).to.equal(value);
      });
    }
  });

  describe('showValue', () => {
    it('never throws, even for cyclic objects, symbols and hostile values', () => {
      const cyclic: Record<string, unknown> = {};
      cyclic['self'] = cyclic;
      expect(showValue(cyclic)).to.equal('[object Object]');
      expect(showValue(Symbol('s'))).to.equal('Symbol(s)');
      const hostile = {
        toJSON() {
          throw new Error('no');
        },
      };
      expect(showValue(hostile)).to.equal('[object Object]');
    });

    it('never throws for a revoked proxy (documented as never-throwing)', () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      expect(() => showValue(proxy)).not.to.throw();
    });

    it('error constructors that describe a value do not throw for a revoked proxy', () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      const e = new RetriesExhaustedError(1, [proxy]);
      expect(e.cause).to.equal(proxy);
      expect(e.message).to.equal('Gave up after 1 attempt: unknown error');
      expect(new AllFallbacksFailedError([proxy]).message).to.equal('All 1 alternative failed: unknown error');
    });

    it('truncates long strings and long JSON to 80 characters plus an ellipsis', () => {
      expect(showValue('y'.repeat(100))).to.equal(JSON.stringify('y'.repeat(80) + '…'));
      const big = showValue({ k: 'z'.repeat(200) });
      expect(big).to.have.lengthOf(81);
      expect(big.endsWith('…')).to.equal(true);
    });

    it('names anonymous functions', () => {
      const anon = [() => 1][0];
      expect(showValue(anon)).to.equal('function (anonymous)');
    });
  });
});
