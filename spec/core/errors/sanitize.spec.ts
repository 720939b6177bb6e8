import { expect } from 'chai';
import fc from 'fast-check';
import { DEFAULT_MAX_ERROR_CHARS, errorText, isSecretName, sanitizeText } from '../../../src/core/errors/sanitize.js';

describe('sanitizeText', () => {
  describe('redacts secrets', () => {
    const cases: [string, string, string][] = [
      ['a bearer token', 'rejected: Bearer xyz', 'rejected: Bearer [REDACTED]'],
      ['a JWT bearer token', 'Bearer eyJhbGciOi.J9eyJzdWIi.OiIxMjM0 expired', 'Bearer [REDACTED] expired'],
      ['an sk- key', 'invalid key sk-abc123456789 provided', 'invalid key sk-[REDACTED] provided'],
      ['an sk-proj- key', 'key sk-proj-AbC_123-xyz.', 'key sk-[REDACTED].'],
      [
        'api_key= in a query string, keeping the other parameters',
        'GET https://x.io/v1?api_key=abc123&city=nyc failed',
        'GET https://x.io/v1?api_key=[REDACTED]&city=nyc failed',
      ],
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

/** Characters of the secrets below: none of them occurs in the surrounding text nor in '[REDACTED]'. */
const SECRET_CHARS = 'FGHJKMNPQUVWXYZ0123456789';
const pem = (kind: string, p: string, nl = '\n') =>
  `-----BEGIN ${kind}PRIVATE KEY-----${nl}${Array.from({ length: 30 }, () => p.repeat(4).slice(0, 64)).join(nl)}${nl}-----END ${kind}PRIVATE KEY-----`;

/** Each format: how a secret `p` appears, and (for `p = SECRET`) what is left of it. */
const FORMATS: readonly (readonly [string, (p: string) => string, string])[] = [
  ['URL credentials (postgres)', (p) => `postgres://admin:${p}@db.internal:5432/app`, 'postgres://admin:[REDACTED]@db.internal:5432/app'],
  ['URL credentials (any scheme)', (p) => `redis://:${p}@cache:6379`, 'redis://:[REDACTED]@cache:6379'],
  ['?key=AIza… in a URL', (p) => `https://maps.example.test/api?key=AIza${p}${p}&q=1`, 'https://maps.example.test/api?key=[REDACTED]&q=1'],
  ['a bare AIza… key', (p) => `key AIza${p}${p} rejected`, 'key AIza[REDACTED] rejected'],
  ['api_key= in a URL', (p) => `https://x.io/v1?api_key=${p}&city=nyc`, 'https://x.io/v1?api_key=[REDACTED]&city=nyc'],
  ['token= in a URL', (p) => `https://x.io/cb?state=1&token=${p}`, 'https://x.io/cb?state=1&token=[REDACTED]'],
  [
    'a signed URL (X-Amz-Signature)',
    (p) => `https://b.s3.test/o?X-Amz-Signature=${p}&X-Amz-Date=1`,
    'https://b.s3.test/o?X-Amz-Signature=[REDACTED]&X-Amz-Date=1',
  ],
  ['AWS_SECRET_ACCESS_KEY=', (p) => `AWS_SECRET_ACCESS_KEY=${p}`, 'AWS_SECRET_ACCESS_KEY=[REDACTED]'],
  ['aws_session_token:', (p) => `aws_session_token: ${p}`, 'aws_session_token: [REDACTED]'],
  ['a PEM private key block', (p) => pem('RSA ', p), '-----BEGIN RSA PRIVATE KEY-----[REDACTED]'],
  ['an OpenSSH private key block', (p) => pem('OPENSSH ', p), '-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]'],
  [
    '"private_key" in JSON (a service account)',
    (p) => `{"type":"service_account","private_key":"${pem('', p, '\\n')}\\n","x":1}`,
    '{"type":"service_account","private_key":"[REDACTED]","x":1}',
  ],
  ['a Cookie: header', (p) => `Cookie: session=${p}; theme=dark\nnext`, 'Cookie: [REDACTED]\nnext'],
  ['a Set-Cookie: header', (p) => `set-cookie: sid=${p}; Path=/; HttpOnly`, 'set-cookie: [REDACTED]'],
  ['a GitHub token (ghp_)', (p) => `token ghp_${p}${p} expired`, 'token ghp_[REDACTED] expired'],
  ['a GitHub fine-grained token (github_pat_)', (p) => `github_pat_${p}_${p}`, 'github_pat_[REDACTED]'],
  ['a Slack token (xoxb-)', (p) => `xoxb-${p}-${p}`, 'xoxb-[REDACTED]'],
  ['an Anthropic key (sk-ant-)', (p) => `sk-ant-api03-${p}AA`, 'sk-[REDACTED]'],
  ['an OpenAI key (sk-proj-)', (p) => `sk-proj-${p}`, 'sk-[REDACTED]'],
  ['a JWT', (p) => `session eyJhbGciOiJIUzI1NiJ9.eyJ${p}.${p}`, 'session [REDACTED JWT]'],
  ['a Bearer token', (p) => `Bearer ${p}`, 'Bearer [REDACTED]'],
  ['an Authorization header', (p) => `Authorization: Basic ${p}`, 'Authorization: [REDACTED]'],
  ['an x-api-key header', (p) => `x-api-key: ${p}`, 'x-api-key: [REDACTED]'],
  ['a JSON password', (p) => `{"password": "${p}"}`, '{"password": "[REDACTED]"}'],
  ['a long JSON secret (longer than the redaction margin)', (p) => `{"client_secret":"${p.repeat(40)}"}`, '{"client_secret":"[REDACTED]"}'],
  ['password=', (p) => `login password=${p} failed`, 'login password=[REDACTED] failed'],
];

describe('sanitizeText: the table of secret formats', () => {
  const SECRET = 'FGH7JKM2NPQ9UVWX4YZ58';
  for (const [name, render, expected] of FORMATS) {
    it(name, () => {
      expect(sanitizeText(render(SECRET), Infinity)).to.equal(expected);
    });
  }

  it('no secret of the table survives, whatever surrounds it and wherever the window cuts (property)', () => {
    const filler = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz .,:;\n'), maxLength: 3000 });
    fc.assert(
      fc.property(
        fc.constantFrom(...FORMATS),
        fc.string({ unit: fc.constantFrom(...SECRET_CHARS), minLength: 16, maxLength: 40 }),
        filler,
        filler,
        fc.nat(),
        ([, render], p, before, after, cutSeed) => {
          const text = `${before} ${render(p)} ${after}`;
          const maxChars = cutSeed % (text.length + 20);
          const out = sanitizeText(text, maxChars);
          for (let i = 0; i + 6 <= p.length; i++) expect(out, `${JSON.stringify(p.slice(i, i + 6))} in ${out}`).not.to.contain(p.slice(i, i + 6));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('a secret straddling the redaction window is never half-kept (a quoted value, a PEM block)', () => {
    const p = 'FGH7JKM2NPQ9UVWX4YZ5';
    for (const text of [`${'x'.repeat(1990)} {"password": "${p.repeat(40)}"}`, `${'x'.repeat(1990)} ${pem('', p)}`]) {
      const out = sanitizeText(text);
      expect(out).not.to.contain(p.slice(0, 6));
      expect(out).to.match(/… \[\d+ more characters cut\]$/);
    }
  });

  it('isSecretName: names ending in a secret word', () => {
    for (const name of ['password', 'db_password', 'client_secret', 'openai_api_key', 'AWS_SECRET_ACCESS_KEY', 'private_key', 'apiKey', 'refreshToken'])
      expect(isSecretName(name), name).to.equal(true);
    for (const name of ['max_tokens', 'model', 'tokenizer', 'secret value', '']) expect(isSecretName(name), name).to.equal(false);
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
