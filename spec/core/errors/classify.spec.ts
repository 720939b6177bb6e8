import { expect } from 'chai';
import { NEVER, TimeoutError, firstValueFrom, timeout } from 'rxjs';
import { type ErrorCategory, type ErrorClassification, type RecoveryStrategy, classifyError, createClassifier } from '../../../src/core/errors/classify.js';
import { impliedStatus } from '../../../src/core/errors/readError.js';
import {
  AllFallbacksFailedError,
  BudgetExceededError,
  CircuitOpenError,
  HttpError,
  InvalidOptionError,
  RetriesExhaustedError,
  TotalTimeoutError,
} from '../../../src/core/errors/errors.js';

/** An Error with extra own properties (code, status, …), as Node and SDKs throw them. */
function errorWith(message: string, props: Record<string, unknown>, options?: { cause?: unknown }): Error {
  return Object.assign(new Error(message, options), props);
}

/** Checks the four mandatory fields, and that the result is a well-formed classification. */
function expectVerdict(
  actual: ErrorClassification,
  expected: { retryable: boolean; fallback: boolean; category: ErrorCategory; strategy: RecoveryStrategy },
): void {
  expect(actual).to.be.an('object');
  expect(actual.retryable, 'retryable').to.equal(expected.retryable);
  expect(actual.fallback, 'fallback').to.equal(expected.fallback);
  expect(actual.category, 'category').to.equal(expected.category);
  expect(actual.strategy, 'strategy').to.equal(expected.strategy);
}

const CANCELLED = { retryable: false, fallback: false, category: 'cancelled', strategy: 'abort' } as const;
const PROGRAMMING = { retryable: false, fallback: false, category: 'programming', strategy: 'fail_fast' } as const;
const CONNECTION = { retryable: true, fallback: true, category: 'connection', strategy: 'exponential_backoff' } as const;
const TIMEOUT = { retryable: true, fallback: true, category: 'timeout', strategy: 'retry_with_longer_timeout' } as const;
const UNKNOWN = { retryable: false, fallback: true, category: 'unknown', strategy: 'fallback' } as const;

describe('classifyError', () => {
  describe('cancellation', () => {
    it("classifies an Error named 'AbortError' as cancelled", () => {
      const e = new Error('The operation was aborted');
      e.name = 'AbortError';
      expect(classifyError(e)).to.deep.equal(CANCELLED);
    });

    it("classifies a DOMException('x', 'AbortError') as cancelled", () => {
      expect(classifyError(new DOMException('x', 'AbortError'))).to.deep.equal(CANCELLED);
    });

    it('classifies the AbortError of an aborted AbortController as cancelled', () => {
      const controller = new AbortController();
      controller.abort();
      expect(classifyError(controller.signal.reason)).to.deep.equal(CANCELLED);
    });

    it('cancellation wins over an HTTP status or a retryable message on the same error', () => {
      const e = errorWith('rate limit', { name: 'AbortError', status: 503 });
      expect(classifyError(e)).to.deep.equal(CANCELLED);
    });
  });

  describe('programming errors', () => {
    const cases: readonly (readonly [string, unknown])[] = [
      ['TypeError', new TypeError('x is not a function')],
      ['RangeError', new RangeError('Invalid array length')],
      ['ReferenceError', new ReferenceError('foo is not defined')],
      ['SyntaxError', new SyntaxError('Unexpected token')],
      ['InvalidOptionError', new InvalidOptionError('retryWithBackoff', 'maxRetries', -1, 'a non-negative integer')],
      ['a real JSON.parse SyntaxError', captureThrown(() => JSON.parse('{'))],
      ['a real TypeError from calling undefined', captureThrown(() => (undefined as unknown as () => void)())],
      ['a plain object named TypeError (cross-realm)', { name: 'TypeError', message: 'cannot read properties' }],
    ];
    for (const [label, error] of cases) {
      it(`${label} → programming, no retry, no fallback`, () => {
        expect(classifyError(error)).to.deep.equal(PROGRAMMING);
      });
    }

    it('a programming error is not retried even when its message looks transient', () => {
      expect(classifyError(new TypeError('rate limit: please try again'))).to.deep.equal(PROGRAMMING);
      expect(classifyError(new RangeError('timed out'))).to.deep.equal(PROGRAMMING);
    });

    it('a programming error is not retried even when it carries an HTTP status', () => {
      expect(classifyError(errorWithType(new TypeError('bad'), { status: 503 }))).to.deep.equal(PROGRAMMING);
    });
  });

  describe("fetch's network TypeError", () => {
    it("new TypeError('fetch failed') → connection, retryable", () => {
      expect(classifyError(new TypeError('fetch failed'))).to.deep.equal(CONNECTION);
    });

    it("TypeError('fetch failed') with cause { code: 'ECONNRESET' } → connection, retryable", () => {
      expect(classifyError(new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } }))).to.deep.equal(CONNECTION);
    });

    it("TypeError('fetch failed') with an Error cause of code 'UND_ERR_SOCKET' → connection, retryable", () => {
      const cause = errorWith('other side closed', { code: 'UND_ERR_SOCKET' });
      expect(classifyError(new TypeError('fetch failed', { cause }))).to.deep.equal(CONNECTION);
    });

    it("TypeError('fetch failed') with a cause that says nothing → still connection", () => {
      expect(classifyError(new TypeError('fetch failed', { cause: new Error('boom') }))).to.deep.equal(CONNECTION);
    });

    it("TypeError('fetch failed') with a timeout cause → timeout", () => {
      const cause = errorWith('Connect Timeout Error', { code: 'ETIMEDOUT' });
      expectVerdict(classifyError(new TypeError('fetch failed', { cause })), TIMEOUT);
    });

    const browserMessages = ['Failed to fetch', 'NetworkError when attempting to fetch resource.', 'Load failed', 'Network request failed'];
    for (const message of browserMessages) {
      it(`browser TypeError('${message}') → connection`, () => {
        expect(classifyError(new TypeError(message))).to.deep.equal(CONNECTION);
      });
    }

    it('a TypeError that merely mentions fetch elsewhere in its message is still a programming error', () => {
      expect(classifyError(new TypeError('cannot read property fetch failed of undefined'))).to.deep.equal(PROGRAMMING);
    });
  });

  describe('CircuitOpenError', () => {
    it('→ circuit_open, not retryable, fallback, strategy fallback', () => {
      expect(classifyError(new CircuitOpenError('llm', 1000))).to.deep.equal({
        retryable: false,
        fallback: true,
        category: 'circuit_open',
        strategy: 'fallback',
      });
    });

    it('also when isolated (retryAfterMs Infinity) and when recognised by name only', () => {
      expectVerdict(classifyError(new CircuitOpenError('llm', Infinity)), {
        retryable: false,
        fallback: true,
        category: 'circuit_open',
        strategy: 'fallback',
      });
      expectVerdict(classifyError({ name: 'CircuitOpenError', message: 'open' }), {
        retryable: false,
        fallback: true,
        category: 'circuit_open',
        strategy: 'fallback',
      });
    });
  });

  describe('BudgetExceededError', () => {
    it('→ budget_exceeded, no retry, no fallback', () => {
      expect(classifyError(new BudgetExceededError('tokens', 10_000, 10_412))).to.deep.equal({
        retryable: false,
        fallback: false,
        category: 'budget_exceeded',
        strategy: 'fail_fast',
      });
    });

    it('even with a retryable cause', () => {
      const e = new BudgetExceededError('usd', 1, 2, { cause: new HttpError(503) });
      expectVerdict(classifyError(e), {
        retryable: false,
        fallback: false,
        category: 'budget_exceeded',
        strategy: 'fail_fast',
      });
    });
  });

  describe('HTTP status table', () => {
    const retryable: readonly (readonly [number, ErrorCategory])[] = [
      [408, 'request_timeout'],
      [409, 'conflict'],
      [429, 'rate_limit'],
      [500, 'server_error'],
      [502, 'bad_gateway'],
      [503, 'service_unavailable'],
      [504, 'gateway_timeout'],
      [501, 'server_error'],
      [507, 'server_error'],
      [599, 'server_error'],
    ];
    for (const [status, category] of retryable) {
      it(`${status} → ${category}, retryable, exponential_backoff`, () => {
        expect(classifyError(new HttpError(status))).to.deep.equal({
          retryable: true,
          fallback: true,
          category,
          strategy: 'exponential_backoff',
        });
      });
    }

    const failFast: readonly (readonly [number, ErrorCategory])[] = [
      [400, 'bad_request'],
      [401, 'unauthorized'],
      [403, 'forbidden'],
      [404, 'not_found'],
      [422, 'validation_error'],
      [418, 'client_error'],
      [405, 'client_error'],
      [451, 'client_error'],
    ];
    for (const [status, category] of failFast) {
      it(`${status} → ${category}, not retryable, fail_fast`, () => {
        const c = classifyError(new HttpError(status));
        expectVerdict(c, { retryable: false, fallback: c.fallback, category, strategy: 'fail_fast' });
        expect(c.fallback).to.be.a('boolean');
        expect(c).not.to.have.property('retryAfterMs');
      });
    }

    it('the status wins over the message', () => {
      expectVerdict(classifyError(new HttpError(400, {}, undefined, { message: 'rate limit, try again' })), {
        retryable: false,
        fallback: true,
        category: 'bad_request',
        strategy: 'fail_fast',
      });
    });

    it('ignores values that are not HTTP failure statuses', () => {
      for (const status of [200, 302, 399, 600, 429.5, NaN, '4xx', true]) {
        expect(classifyError(errorWith('boom', { status })).category, String(status)).to.equal('unknown');
      }
    });
  });

  describe('HTTP status sources', () => {
    it('reads `status` from an SDK-like plain object', () => {
      const sdk = { status: 429, headers: { 'retry-after': '1' }, message: 'Rate limited' };
      expect(classifyError(sdk)).to.deep.equal({
        retryable: true,
        fallback: true,
        category: 'rate_limit',
        strategy: 'exponential_backoff',
        retryAfterMs: 1000,
      });
    });

    it('reads `status` from an Error subclass with a status (OpenAI/Anthropic style)', () => {
      class APIError extends Error {
        constructor(
          readonly status: number,
          readonly headers: Record<string, string>,
        ) {
          super(`${status} status code`);
        }
      }
      expectVerdict(classifyError(new APIError(529, {})), {
        retryable: true,
        fallback: true,
        category: 'service_unavailable',
        strategy: 'exponential_backoff',
      });
      expectVerdict(classifyError(new APIError(401, {})), {
        retryable: false,
        fallback: true,
        category: 'unauthorized',
        strategy: 'fail_fast',
      });
    });

    it('reads `statusCode`', () => {
      expect(classifyError(errorWith('nope', { statusCode: 503 })).category).to.equal('service_unavailable');
      expect(classifyError({ statusCode: 404 }).category).to.equal('not_found');
    });

    it('reads `response.status` from a real fetch Response, and its headers', () => {
      const response = new Response('', { status: 503, headers: { 'Retry-After': '3' } });
      expect(classifyError({ response })).to.deep.equal({
        retryable: true,
        fallback: true,
        category: 'service_unavailable',
        strategy: 'exponential_backoff',
        retryAfterMs: 3000,
      });
    });

    it('reads `response.status` from a plain response object', () => {
      expect(classifyError(errorWith('Request failed', { response: { status: 422 } })).category).to.equal('validation_error');
    });

    it('reads a three-digit string status', () => {
      expect(classifyError({ status: '429' }).category).to.equal('rate_limit');
    });

    it('reads HttpError', () => {
      expect(classifyError(new HttpError(504)).category).to.equal('gateway_timeout');
    });
  });

  describe('x-should-retry', () => {
    it('`true` makes a 400 retryable', () => {
      expect(classifyError(new HttpError(400, { 'x-should-retry': 'true' }))).to.deep.equal({
        retryable: true,
        fallback: true,
        category: 'bad_request',
        strategy: 'exponential_backoff',
      });
    });

    it('`false` makes a 503 not retryable', () => {
      expect(classifyError(new HttpError(503, { 'x-should-retry': 'false' }))).to.deep.equal({
        retryable: false,
        fallback: true,
        category: 'service_unavailable',
        strategy: 'fail_fast',
      });
    });

    it('works with a Headers object and any case of name and value', () => {
      expect(classifyError(new HttpError(503, new Headers({ 'X-Should-Retry': 'FALSE' }))).retryable).to.equal(false);
      expect(classifyError(new HttpError(404, { 'X-SHOULD-RETRY': ' True ' })).retryable).to.equal(true);
    });

    it('an unrecognised value leaves the status rule in charge', () => {
      expect(classifyError(new HttpError(503, { 'x-should-retry': 'maybe' })).retryable).to.equal(true);
      expect(classifyError(new HttpError(400, { 'x-should-retry': 'yes' })).retryable).to.equal(false);
    });
  });

  describe('retry-after headers', () => {
    const now = Date.parse('Sun, 29 Nov 2026 10:00:00 GMT');

    const cases: readonly (readonly [string, Record<string, string | string[] | number> | Headers, number])[] = [
      ["retry-after-ms: '1500'", { 'retry-after-ms': '1500' }, 1500],
      ["retry-after: '2'", { 'retry-after': '2' }, 2000],
      ["retry-after: '0.5'", { 'retry-after': '0.5' }, 500],
      ["retry-after: '0'", { 'retry-after': '0' }, 0],
      ['retry-after as a number', { 'retry-after': 7 }, 7000],
      ['retry-after as an array', { 'retry-after': ['4'] }, 4000],
      ["mixed-case 'Retry-After'", { 'Retry-After': '2' }, 2000],
      ["upper-case 'RETRY-AFTER-MS'", { 'RETRY-AFTER-MS': '250' }, 250],
      ['a Headers object (retry-after)', new Headers({ 'Retry-After': '2' }), 2000],
      ['a Headers object (retry-after-ms)', new Headers({ 'retry-after-ms': '1500' }), 1500],
      ['an HTTP date 5 s ahead', { 'retry-after': 'Sun, 29 Nov 2026 10:00:05 GMT' }, 5000],
      ['an HTTP date in the past', { 'retry-after': 'Sun, 29 Nov 2026 09:59:00 GMT' }, 0],
      ['retry-after-ms winning over retry-after', { 'retry-after': '2', 'retry-after-ms': '1500' }, 1500],
      ['retry-after-ms winning over retry-after (Headers)', new Headers({ 'Retry-After': '9', 'Retry-After-Ms': '100' }), 100],
      ['an unparseable retry-after-ms falling back to retry-after', { 'retry-after-ms': 'soon', 'retry-after': '1' }, 1000],
    ];
    for (const [label, headers, expected] of cases) {
      it(`${label} → retryAfterMs ${expected}`, () => {
        const c = classifyError(new HttpError(429, headers), { now });
        expect(c.retryAfterMs).to.equal(expected);
        expect(c.category).to.equal('rate_limit');
        expect(c.retryable).to.equal(true);
      });
    }

    it('uses context.now for HTTP dates', () => {
      const headers = { 'retry-after': 'Sun, 29 Nov 2026 10:00:05 GMT' };
      expect(classifyError(new HttpError(503, headers), { now: now + 2000 }).retryAfterMs).to.equal(3000);
    });

    const garbage: readonly (readonly [string, Record<string, string>])[] = [
      ['garbage', { 'retry-after': 'garbage' }],
      ['an empty value', { 'retry-after': '' }],
      ['a negative number of seconds', { 'retry-after': '-5' }],
      ['no header at all', {}],
    ];
    for (const [label, headers] of garbage) {
      it(`${label} → no retryAfterMs key`, () => {
        const c = classifyError(new HttpError(503, headers), { now });
        expect(c).not.to.have.property('retryAfterMs');
        expect(c.category).to.equal('service_unavailable');
      });
    }

    it('reads retry-after on a non-retryable status too (the caller decides)', () => {
      const c = classifyError(new HttpError(400, { 'retry-after': '1' }), { now });
      expect(c.retryable).to.equal(false);
      expect(c.retryAfterMs).to.equal(1000);
    });
  });

  describe('timeouts', () => {
    it("RxJS TimeoutError from timeout() → timeout, retryable, 'retry_with_longer_timeout'", async () => {
      const error = await firstValueFrom(NEVER.pipe(timeout(1))).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(TimeoutError);
      expect(classifyError(error)).to.deep.equal(TIMEOUT);
    });

    it("DOM TimeoutError (DOMException('t', 'TimeoutError')) → timeout", () => {
      expect(classifyError(new DOMException('t', 'TimeoutError'))).to.deep.equal(TIMEOUT);
    });

    it('AbortSignal.timeout() reason → timeout', async () => {
      const signal = AbortSignal.timeout(1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(signal.aborted).to.equal(true);
      expect(classifyError(signal.reason)).to.deep.equal(TIMEOUT);
    });

    it("code 'ETIMEDOUT' → timeout", () => {
      expect(classifyError(errorWith('connect ETIMEDOUT 10.0.0.1:443', { code: 'ETIMEDOUT' }))).to.deep.equal(TIMEOUT);
      expect(classifyError({ code: 'ETIMEDOUT' })).to.deep.equal(TIMEOUT);
    });

    it('a timeout error with an HTTP status is classified by the status', () => {
      expect(classifyError(errorWith('timed out', { name: 'TimeoutError', status: 504 })).category).to.equal('gateway_timeout');
    });

    it("a message like 'Request timed out' → timeout with retry_with_longer_timeout", () => {
      expect(classifyError(new Error('Request timed out'))).to.deep.equal(TIMEOUT);
    });
  });

  describe('network error codes', () => {
    const codes = ['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT'];
    for (const code of codes) {
      it(`code ${code} → connection, retryable`, () => {
        expect(classifyError(errorWith('network trouble', { code }))).to.deep.equal(CONNECTION);
      });
    }

    it('works on a plain object carrying only a code', () => {
      expect(classifyError({ code: 'ECONNREFUSED' })).to.deep.equal(CONNECTION);
    });

    it('an unknown code is not a network error', () => {
      expect(classifyError(errorWith('nope', { code: 'ENOENT' }))).to.deep.equal(UNKNOWN);
    });
  });

  describe('message patterns', () => {
    const cases: readonly (readonly [string, ErrorCategory])[] = [
      ['Rate limit reached for gpt-4o', 'rate_limit'],
      ['RATE_LIMIT exceeded', 'rate_limit'],
      ['Too Many Requests', 'rate_limit'],
      ['Model is OVERLOADED', 'service_unavailable'],
      ['Service temporarily unavailable', 'service_unavailable'],
      ['Request timed out', 'timeout'],
      ['please try again later', 'transient'],
      ['socket hang up', 'connection'],
      ['502 Bad Gateway', 'bad_gateway'],
      ['Internal Server Error', 'server_error'],
    ];
    for (const [message, category] of cases) {
      it(`'${message}' → ${category}, retryable`, () => {
        const c = classifyError(new Error(message));
        expect(c.retryable).to.equal(true);
        expect(c.fallback).to.equal(true);
        expect(c.category).to.equal(category);
        expect(c.strategy).to.equal(category === 'timeout' ? 'retry_with_longer_timeout' : 'exponential_backoff');
      });
    }

    it('plain strings thrown are matched too', () => {
      expect(classifyError('rate limit')).to.deep.equal({
        retryable: true,
        fallback: true,
        category: 'rate_limit',
        strategy: 'exponential_backoff',
      });
      expect(classifyError('Server OVERLOADED, try again').retryable).to.equal(true);
    });

    it('plain objects with a message are matched', () => {
      expect(classifyError({ message: 'The model is overloaded' }).category).to.equal('service_unavailable');
    });

    it('a message matching no pattern is unknown', () => {
      expect(classifyError(new Error('invalid api key format'))).to.deep.equal(UNKNOWN);
    });
  });

  describe('createClassifier: retryablePatterns', () => {
    const classify = createClassifier({ retryablePatterns: ['upstream hiccup', /flaky/i] });

    it('a string pattern matches case-insensitively as a substring → transient, retryable', () => {
      expect(classify(new Error('Upstream HICCUP, sorry'))).to.deep.equal({
        retryable: true,
        fallback: true,
        category: 'transient',
        strategy: 'exponential_backoff',
      });
    });

    it('a RegExp pattern matches → transient, retryable', () => {
      expect(classify(new Error('backend was Flaky')).category).to.equal('transient');
      expect(classify('flaky string').retryable).to.equal(true);
    });

    it('the default classifier does not match them', () => {
      expect(classifyError(new Error('upstream hiccup'))).to.deep.equal(UNKNOWN);
      expect(classifyError(new Error('flaky'))).to.deep.equal(UNKNOWN);
    });

    it('string patterns are literal, not regular expressions', () => {
      const c = createClassifier({ retryablePatterns: ['a.c (x)'] });
      expect(c(new Error('oops a.c (x) happened')).category).to.equal('transient');
      expect(c(new Error('abc x')).category).to.equal('unknown');
    });

    it('a global RegExp matches every time (lastIndex is reset)', () => {
      const c = createClassifier({ retryablePatterns: [/glitch/g] });
      for (let i = 0; i < 3; i++) expect(c(new Error('a glitch')).category, `call ${i}`).to.equal('transient');
    });

    it('defaults still apply, and still win over extra patterns', () => {
      expect(classify(new HttpError(401)).category).to.equal('unauthorized');
      expect(classify(new TypeError('flaky')).category).to.equal('programming');
      expect(classify(new Error('flaky rate limit')).category).to.equal('rate_limit');
    });
  });

  describe('createClassifier: rules', () => {
    const verdict: ErrorClassification = {
      retryable: false,
      fallback: true,
      category: 'rate_limit',
      strategy: 'fallback',
    };

    it('a rule returning a classification wins over the defaults', () => {
      const classify = createClassifier({ rules: [(e) => (e instanceof HttpError ? verdict : undefined)] });
      expect(classify(new HttpError(503))).to.equal(verdict);
    });

    it('a rule returning undefined falls through to the next rule and then the defaults', () => {
      const seen: unknown[] = [];
      const classify = createClassifier({
        rules: [
          (e) => {
            seen.push(e);
            return undefined;
          },
        ],
      });
      const error = new HttpError(503);
      expect(classify(error).category).to.equal('service_unavailable');
      expect(seen).to.deep.equal([error]);
    });

    it('rules run in order; the first decision wins', () => {
      const calls: string[] = [];
      const second: ErrorClassification = { ...verdict, category: 'conflict' };
      const classify = createClassifier({
        rules: [
          () => {
            calls.push('first');
            return undefined;
          },
          () => {
            calls.push('second');
            return second;
          },
          () => {
            calls.push('third');
            return verdict;
          },
        ],
      });
      expect(classify(new Error('x'))).to.equal(second);
      expect(calls).to.deep.equal(['first', 'second']);
    });

    it('a rule that throws is skipped', () => {
      const classify = createClassifier({
        rules: [
          () => {
            throw new Error('broken rule');
          },
          (e) => (e === 'special' ? verdict : undefined),
        ],
      });
      expect(classify('special')).to.equal(verdict);
      expect(classify(new HttpError(429)).category).to.equal('rate_limit');
    });

    it('rules receive the context', () => {
      let received: unknown;
      const classify = createClassifier({
        rules: [
          (_e, ctx) => {
            received = ctx;
            return undefined;
          },
        ],
      });
      classify(new Error('x'), { now: 42 });
      expect(received).to.deep.equal({ now: 42 });
    });
  });

  describe('wrappers and causes', () => {
    it('an Error whose cause is an HttpError(503) is classified as its cause', () => {
      const e = new Error('call failed', { cause: new HttpError(503) });
      expect(classifyError(e)).to.deep.equal({
        retryable: true,
        fallback: true,
        category: 'service_unavailable',
        strategy: 'exponential_backoff',
      });
    });

    it("the cause's retry-after is kept", () => {
      const e = new Error('wrapped', { cause: new HttpError(429, { 'retry-after-ms': '700' }) });
      expect(classifyError(e).retryAfterMs).to.equal(700);
    });

    it('an Error with its own status wins over its cause', () => {
      const e = errorWith('wrapped', { status: 400 }, { cause: new HttpError(503) });
      expectVerdict(classifyError(e), { retryable: false, fallback: true, category: 'bad_request', strategy: 'fail_fast' });
    });

    it('causes are followed through several levels', () => {
      const e = new Error('a', { cause: new Error('b', { cause: errorWith('c', { code: 'ECONNRESET' }) }) });
      expect(classifyError(e)).to.deep.equal(CONNECTION);
    });

    it('RetriesExhaustedError(3, [.., HttpError(503)]) → not retryable, fallback, category of the cause', () => {
      const e = new RetriesExhaustedError(3, [new HttpError(503), new HttpError(503), new HttpError(503)]);
      expect(classifyError(e)).to.deep.equal({
        retryable: false,
        fallback: true,
        category: 'service_unavailable',
        strategy: 'fallback',
      });
    });

    it('RetriesExhaustedError whose last error is a TypeError → no fallback, fail_fast', () => {
      const e = new RetriesExhaustedError(2, [new HttpError(503), new TypeError('x is not a function')]);
      expectVerdict(classifyError(e), { retryable: false, fallback: false, category: 'programming', strategy: 'fail_fast' });
    });

    it("RetriesExhaustedError with reason 'retry_after_too_long' is not retryable but may fall back", () => {
      const e = new RetriesExhaustedError(1, [new HttpError(429, { 'retry-after': '3600' })], 'retry_after_too_long');
      expectVerdict(classifyError(e), { retryable: false, fallback: true, category: 'rate_limit', strategy: 'fallback' });
    });

    it('RetriesExhaustedError recognised by name only (another copy of the library)', () => {
      const e = { name: 'RetriesExhaustedError', message: 'gave up', cause: new HttpError(502) };
      expectVerdict(classifyError(e), { retryable: false, fallback: true, category: 'bad_gateway', strategy: 'fallback' });
    });

    it('TotalTimeoutError is never retryable, with or without a cause', () => {
      expectVerdict(classifyError(new TotalTimeoutError(1000, 1001, { cause: new HttpError(503) })), {
        retryable: false,
        fallback: true,
        category: 'service_unavailable',
        strategy: 'fallback',
      });
      expect(classifyError(new TotalTimeoutError(1000, 1001)).retryable).to.equal(false);
      expect(classifyError(new TotalTimeoutError(1000, 1001, { cause: 'timed out' })).retryable).to.equal(false);
    });

    it('AllFallbacksFailedError is never retryable', () => {
      const e = new AllFallbacksFailedError([new HttpError(503), errorWith('x', { code: 'ECONNRESET' })]);
      expectVerdict(classifyError(e), { retryable: false, fallback: true, category: 'connection', strategy: 'fallback' });
      expect(classifyError(new AllFallbacksFailedError([new Error('rate limit')])).retryable).to.equal(false);
    });

    it('a give-up wrapped in a plain Error is still not retryable', () => {
      const inner = new RetriesExhaustedError(3, [new HttpError(503)]);
      expect(classifyError(new Error('outer', { cause: inner })).retryable).to.equal(false);
    });

    it('nested give-ups: the innermost cause decides fallback', () => {
      const e = new AllFallbacksFailedError([new RetriesExhaustedError(2, [new BudgetExceededError('tokens', 1, 2)])]);
      expectVerdict(classifyError(e), {
        retryable: false,
        fallback: false,
        category: 'budget_exceeded',
        strategy: 'fail_fast',
      });
    });
  });

  describe('unknown errors', () => {
    it("new Error('boom') → unknown, not retryable, fallback, strategy fallback", () => {
      expect(classifyError(new Error('boom'))).to.deep.equal(UNKNOWN);
    });

    it('a custom Error subclass with nothing to go on → unknown', () => {
      class WeirdError extends Error {}
      expect(classifyError(new WeirdError('weird'))).to.deep.equal(UNKNOWN);
    });

    it('an Error whose cause says nothing → unknown', () => {
      expect(classifyError(new Error('a', { cause: new Error('b') }))).to.deep.equal(UNKNOWN);
    });
  });

  describe('never throws', () => {
    function expectWellFormed(value: unknown): ErrorClassification {
      let c: ErrorClassification | undefined;
      expect(() => {
        c = classifyError(value);
      }).not.to.throw();
      expect(c).to.be.an('object');
      const result = c as ErrorClassification;
      expect(result.retryable).to.be.a('boolean');
      expect(result.fallback).to.be.a('boolean');
      expect(result.category).to.be.a('string');
      expect(result.strategy).to.be.a('string');
      return result;
    }

    const primitives: readonly (readonly [string, unknown])[] = [
      ['null', null],
      ['undefined', undefined],
      ['0', 0],
      ["''", ''],
      ['a string', 'something went wrong'],
      ['a number', 42],
      ['NaN', NaN],
      ['a symbol', Symbol('err')],
      ['a bigint', 10n],
      ['true', true],
      ['a function', () => 1],
      ['an empty object', {}],
      ['an object without prototype', Object.create(null) as unknown],
      ['an array', [1, 2]],
    ];
    for (const [label, value] of primitives) {
      it(`${label} → a well-formed classification`, () => {
        const c = expectWellFormed(value);
        expect(c).to.deep.equal(UNKNOWN);
      });
    }

    it('Object.freeze(new Error("rate limit")) → still retryable', () => {
      const c = expectWellFormed(Object.freeze(new Error('rate limit')));
      expect(c.retryable).to.equal(true);
      expect(c.category).to.equal('rate_limit');
    });

    it('a frozen HttpError with frozen headers', () => {
      const c = expectWellFormed(Object.freeze(new HttpError(429, Object.freeze({ 'retry-after': '1' }))));
      expect(c.category).to.equal('rate_limit');
      expect(c.retryAfterMs).to.equal(1000);
    });

    it('an object with throwing `status` and `message` getters', () => {
      const hostile = {
        get status(): number {
          throw new Error('status getter');
        },
        get message(): string {
          throw new Error('message getter');
        },
        get name(): string {
          throw new Error('name getter');
        },
        get cause(): unknown {
          throw new Error('cause getter');
        },
      };
      expect(expectWellFormed(hostile)).to.deep.equal(UNKNOWN);
    });

    it('a throwing getter does not hide the rest of the error', () => {
      const e = new Error('Rate limit reached');
      Object.defineProperty(e, 'status', {
        get() {
          throw new Error('nope');
        },
      });
      expect(expectWellFormed(e).category).to.equal('rate_limit');
    });

    it('a Proxy whose every trap throws', () => {
      const boom = (): never => {
        throw new Error('trap');
      };
      const handler: ProxyHandler<object> = {
        get: boom,
        has: boom,
        getPrototypeOf: boom,
        getOwnPropertyDescriptor: boom,
        ownKeys: boom,
        defineProperty: boom,
        set: boom,
        deleteProperty: boom,
        isExtensible: boom,
        preventExtensions: boom,
        setPrototypeOf: boom,
        apply: boom,
        construct: boom,
      };
      expect(expectWellFormed(new Proxy({}, handler))).to.deep.equal(UNKNOWN);
      expect(expectWellFormed(new Proxy(() => 1, handler))).to.deep.equal(UNKNOWN);
    });

    it('a revoked proxy', () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      expect(expectWellFormed(proxy)).to.deep.equal(UNKNOWN);
    });

    it('a revoked proxy as a cause, and as headers', () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      expect(expectWellFormed(new Error('x', { cause: proxy }))).to.deep.equal(UNKNOWN);
      const c = expectWellFormed(new HttpError(503, proxy as Record<string, string>));
      expect(c.category).to.equal('service_unavailable');
      expect(c).not.to.have.property('retryAfterMs');
    });

    it('a cyclic cause chain a → b → a', () => {
      const a = new Error('a') as Error & { cause?: unknown };
      const b = new Error('b', { cause: a });
      a.cause = b;
      expect(expectWellFormed(a)).to.deep.equal(UNKNOWN);
    });

    it('a cyclic chain still finds a classifiable link inside the cycle', () => {
      const a = new Error('a') as Error & { cause?: unknown };
      const b = errorWith('b', { code: 'ECONNRESET' }, { cause: a });
      a.cause = new Error('c', { cause: b });
      expect(expectWellFormed(new Error('outer', { cause: a }))).to.deep.equal(CONNECTION);
    });

    it('a self-referencing cause e.cause = e', () => {
      const e = new Error('self') as Error & { cause?: unknown };
      e.cause = e;
      expect(expectWellFormed(e)).to.deep.equal(UNKNOWN);
    });

    it('a self-referencing give-up error', () => {
      const e = new RetriesExhaustedError(1, [new Error('x')]) as RetriesExhaustedError & { cause?: unknown };
      Object.defineProperty(e, 'cause', { value: e });
      const c = expectWellFormed(e);
      expect(c.retryable).to.equal(false);
    });

    it('a 1000-deep cause chain', () => {
      let e: Error = new HttpError(503);
      for (let i = 0; i < 1000; i++) e = new Error(`level ${i}`, { cause: e });
      const c = expectWellFormed(e);
      expect(c.retryable).to.be.a('boolean');
    });

    it('a 1000-deep chain of give-up errors is never retryable', () => {
      let e: unknown = new HttpError(503);
      for (let i = 0; i < 1000; i++) e = new RetriesExhaustedError(1, [e]);
      expect(expectWellFormed(e).retryable).to.equal(false);
    });

    it('an object whose headers object has a throwing `get`', () => {
      const e = {
        status: 429,
        headers: {
          get(): string {
            throw new Error('headers.get');
          },
        },
      };
      const c = expectWellFormed(e);
      expect(c.category).to.equal('rate_limit');
      expect(c.retryable).to.equal(true);
      expect(c).not.to.have.property('retryAfterMs');
    });

    it('headers whose entries have throwing getters', () => {
      const headers = {};
      Object.defineProperty(headers, 'retry-after', {
        enumerable: true,
        get() {
          throw new Error('entry');
        },
      });
      const c = expectWellFormed({ status: 503, headers });
      expect(c.category).to.equal('service_unavailable');
      expect(c).not.to.have.property('retryAfterMs');
    });

    it('a throwing user rule together with a hostile error still returns a classification', () => {
      const classify = createClassifier({
        rules: [
          () => {
            throw new Error('rule');
          },
        ],
      });
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      expect(classify(proxy)).to.deep.equal(UNKNOWN);
    });
  });
});

function captureThrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected fn to throw');
}

function errorWithType<E extends Error>(error: E, props: Record<string, unknown>): E {
  return Object.assign(error, props);
}

describe('impliedStatus: the status an error body implies when the error has none', () => {
  it('a numeric code (or status) of 400–599 wins over the type; read in every place the SDKs keep the body', () => {
    expect(impliedStatus({ error: { code: 502, message: 'Provider returned error' } })).to.equal(502);
    expect(impliedStatus({ object: 'error', type: 'BadRequestError', code: 400 })).to.equal(400);
    expect(impliedStatus({ error: { type: 'server_error', code: '503' } })).to.equal(503);
    expect(impliedStatus({ body: { error: { type: 'insufficient_quota' } } })).to.equal(429);
    expect(impliedStatus({ data: { error: { type: 'overloaded_error' } } })).to.equal(529);
    expect(impliedStatus({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })).to.equal(529);
  });

  it('nothing that is not an HTTP error status: codes out of range, error codes of Node and the DOM, unknown types', () => {
    expect(impliedStatus({ error: { code: 200 } })).to.equal(undefined);
    expect(impliedStatus(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).to.equal(undefined);
    expect(impliedStatus(new DOMException('aborted', 'AbortError'))).to.equal(undefined);
    expect(impliedStatus({ error: { type: 'tokens' } })).to.equal(undefined);
    expect(impliedStatus(null)).to.equal(undefined);
  });

  it('classifyError reads it for a status-less error, and finds a quota type in HttpError.body and APICallError.data', () => {
    expect(classifyError({ error: { code: 502, message: 'Provider returned error' } })).to.include({ category: 'bad_gateway', retryable: true });
    const quota = { error: { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' } };
    expect(classifyError(new HttpError(429, {}, quota))).to.include({ category: 'rate_limit', retryable: false, fallback: true });
    const apiCallError = Object.assign(new Error('quota'), { name: 'AI_APICallError', statusCode: 429, isRetryable: true, data: quota });
    expect(classifyError(apiCallError)).to.include({ category: 'rate_limit', retryable: false, fallback: true });
  });

  it("the AI SDK's AI_TypeValidationError (a chunk its provider's schema rejects) is a malformed response, as fromAiSdk makes it: bad_gateway, retryable", () => {
    const error = Object.assign(new Error('Type validation failed: Value: {"object":"error"}.'), { name: 'AI_TypeValidationError' });
    expect(classifyError(error)).to.include({ category: 'bad_gateway', retryable: true, fallback: true });
  });

  it("the AI SDK's AI_InvalidResponseDataError (a stream that ended without a finish reason) is a malformed response: bad_gateway, retryable", () => {
    const error = Object.assign(new Error('Response stream ended without a finish reason.'), { name: 'AI_InvalidResponseDataError' });
    expect(classifyError(error)).to.include({ category: 'bad_gateway', retryable: true, fallback: true });
  });
});
