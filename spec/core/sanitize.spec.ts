import { expect } from 'chai';
import { DEFAULT_MAX_ERROR_CHARS, errorText, sanitizeText } from '../../src/core/sanitize.js';

describe('sanitizeText', () => {
  describe('redacts secrets', () => {
    const cases: [string, string, string][] = [
      ['a bearer token', 'rejected: Bearer xyz', 'rejected: Bearer [REDACTED]'],
      ['a JWT bearer token', 'Bearer eyJhbGciOi.J9eyJzdWIi.OiIxMjM0 expired', 'Bearer [REDACTED] expired'],
      ['an sk- key', 'invalid key sk-abc123456789 provided', 'invalid key sk-[REDACTED] provided'],
      ['an sk-proj- key', 'key sk-proj-AbC_123-xyz.', 'key sk-[REDACTED].'],
      ['api_key= in a query string, keeping the other parameters', 'GET https://x.io/v1?api_key=abc123&city=nyc failed', 'GET https://x.io/v1?api_key=[REDACTED]&city=nyc failed'],
      ['apiKey: with a quoted value', 'config apiKey: "abc123" rejected', 'config apiKey: "[REDACTED]" rejected'],
      ['api-key= and case', 'API-KEY=Zz9', 'API-KEY=[REDACTED]'],
      ['token=', 'callback?token=t0k3n', 'callback?token=[REDACTED]'],
      ['access_token=', 'access_token=abc; path=/', 'access_token=[REDACTED]; path=/'],
      ['password=', 'login password=hunter2 failed', 'login password=[REDACTED] failed'],
      ['secret:', 'client secret: s3cr3t', 'client secret: [REDACTED]'],
      ['an Authorization: Basic header, to the end of the line', 'Authorization: Basic dXNlcjpwYXNz\nnext line', 'Authorization: [REDACTED]\nnext line'],
      ['an Authorization: Bearer header', 'authorization: Bearer abc.def', 'authorization: [REDACTED]'],
      ['an x-api-key: header', 'sent x-api-key: k-123 and failed', 'sent x-api-key: [REDACTED] and failed'],
      ['an x-api-key= value', 'X-API-KEY=k-123', 'X-API-KEY=[REDACTED]'],
    ];
    for (const [label, input, expected] of cases) {
      it(label, () => {
        expect(sanitizeText(input)).to.equal(expected);
      });
    }

    it('redacts every occurrence', () => {
      expect(sanitizeText('Bearer a then Bearer b; sk-aaaaaaaa and sk-bbbbbbbb')).to.equal(
        'Bearer [REDACTED] then Bearer [REDACTED]; sk-[REDACTED] and sk-[REDACTED]',
      );
    });

    it('matches its TSDoc example', () => {
      expect(sanitizeText('401 for https://x.io/v1?api_key=abc123 (Authorization: Bearer eyJhbGci)')).to.equal(
        '401 for https://x.io/v1?api_key=[REDACTED] (Authorization: [REDACTED]',
      );
    });

    it('leaves ordinary text alone', () => {
      for (const text of [
        'Invalid units. Supported: celsius, fahrenheit',
        'task-abcdefghij is done', // "sk-" inside a word
        'sk-abc', // too short to be a key
        'max_tokens: 5',
        'the token was fine',
      ]) {
        expect(sanitizeText(text), text).to.equal(text);
      }
    });

    it('redacts secret-named fields in JSON key/value form (how tool arguments and HTTP error bodies are rendered)', () => {
      expect(sanitizeText('{"city":"nyc","api_key":"abc123"}')).to.equal('{"city":"nyc","api_key":"[REDACTED]"}');
      expect(sanitizeText('HTTP 401: {"password": "hunter2"}')).to.equal('HTTP 401: {"password": "[REDACTED]"}');
    });
  });

  describe('caps the length', () => {
    it('keeps maxChars characters and says how many were cut', () => {
      expect(sanitizeText('abcdefghij', 4)).to.equal('abcd… [6 more characters cut]');
    });

    it('does not cut text of exactly maxChars characters', () => {
      expect(sanitizeText('abcd', 4)).to.equal('abcd');
    });

    it('defaults to DEFAULT_MAX_ERROR_CHARS (2 000)', () => {
      expect(DEFAULT_MAX_ERROR_CHARS).to.equal(2000);
      expect(sanitizeText('x'.repeat(2000))).to.equal('x'.repeat(2000));
      expect(sanitizeText('x'.repeat(2500))).to.equal(`${'x'.repeat(2000)}… [500 more characters cut]`);
    });

    it('redacts before cutting, so a secret is never half-kept', () => {
      expect(sanitizeText('Bearer abcdefghijklmnop', 10)).to.equal('Bearer [RE… [7 more characters cut]');
    });

    it('never cuts with maxChars Infinity', () => {
      const long = 'y'.repeat(10_000);
      expect(sanitizeText(long, Infinity)).to.equal(long);
    });
  });
});

describe('errorText', () => {
  it("is an Error's message", () => {
    expect(errorText(new Error('Invalid units. Supported: celsius, fahrenheit'))).to.equal('Invalid units. Supported: celsius, fahrenheit');
  });

  it("is an Error's name when its message is empty", () => {
    expect(errorText(new RangeError(''))).to.equal('RangeError');
  });

  it('is a string as it is', () => {
    expect(errorText('quota gone')).to.equal('quota gone');
  });

  it('renders other values briefly', () => {
    expect(errorText({ code: 'E1', detail: 'bad' })).to.equal('{"code":"E1","detail":"bad"}');
    expect(errorText(null)).to.equal('null');
    expect(errorText(undefined)).to.equal('undefined');
    expect(errorText(42)).to.equal('42');
  });

  it('is sanitised: secrets redacted, length capped', () => {
    expect(errorText(new Error('denied for api_key=abc123def'))).to.equal('denied for api_key=[REDACTED]');
    expect(errorText(new Error('0123456789'), 5)).to.equal('01234… [5 more characters cut]');
    expect(errorText('x'.repeat(2001))).to.equal(`${'x'.repeat(2000)}… [1 more characters cut]`);
  });

  it('never throws: throwing getters, revoked proxies, cycles', () => {
    const throwingMessage = new Error('hidden');
    Object.defineProperty(throwingMessage, 'message', {
      get() {
        throw new Error('no message for you');
      },
    });
    expect(errorText(throwingMessage)).to.equal('unknown error');

    const throwingGetter = {
      get detail(): string {
        throw new Error('boom');
      },
    };
    expect(() => errorText(throwingGetter)).not.to.throw();
    expect(errorText(throwingGetter)).to.be.a('string');

    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(errorText(proxy)).to.equal('unknown error');

    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(() => errorText(cyclic)).not.to.throw();
    expect(errorText(cyclic)).to.be.a('string');
  });
});
