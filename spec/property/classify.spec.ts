import { expect } from 'chai';
import fc from 'fast-check';
import { classifyError, createClassifier, isServiceFailure, type ErrorCategory, type ErrorClassification } from '../../src/core/errors/classify.js';
import { HttpError, RetriesExhaustedError, ToolError } from '../../src/core/errors/errors.js';

const CATEGORIES: ReadonlySet<ErrorCategory> = new Set<ErrorCategory>([
  'cancelled',
  'programming',
  'circuit_open',
  'budget_exceeded',
  'request_timeout',
  'conflict',
  'rate_limit',
  'server_error',
  'bad_gateway',
  'service_unavailable',
  'gateway_timeout',
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'validation_error',
  'client_error',
  'timeout',
  'connection',
  'transient',
  'unknown',
]);
const STRATEGIES = new Set(['exponential_backoff', 'retry_with_longer_timeout', 'fallback', 'fail_fast', 'abort']);

function wellFormed(c: ErrorClassification): void {
  expect(c).to.be.an('object');
  expect(c.retryable).to.be.a('boolean');
  expect(c.fallback).to.be.a('boolean');
  expect(CATEGORIES.has(c.category), `category ${String(c.category)}`).to.equal(true);
  expect(STRATEGIES.has(c.strategy), `strategy ${String(c.strategy)}`).to.equal(true);
  // ≥ 0 and never NaN; Infinity is still possible (see the pending test below)
  if (c.retryAfterMs !== undefined) expect(c.retryAfterMs >= 0, `retryAfterMs ${c.retryAfterMs}`).to.equal(true);
  expect(() => isServiceFailure(c)).not.to.throw();
}

/** A Proxy on which every operation throws (getters, `in`, prototype, keys, calls). */
function hostile(target: object = {}): object {
  const boom = (): never => {
    throw new Error('hostile');
  };
  return new Proxy(target, {
    get: boom,
    has: boom,
    getPrototypeOf: boom,
    ownKeys: boom,
    getOwnPropertyDescriptor: boom,
    apply: boom,
    construct: boom,
    set: boom,
    defineProperty: boom,
    deleteProperty: boom,
    isExtensible: boom,
    preventExtensions: boom,
    setPrototypeOf: boom,
  });
}

function revoked(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

/** An error-like object whose chosen keys are getters that throw, the others plain values. */
const throwingGetters = fc
  .record({
    throwing: fc.subarray(['name', 'message', 'status', 'statusCode', 'response', 'headers', 'code', 'cause', 'phase', 'idempotent'] as const),
    status: fc.oneof(fc.integer({ min: 100, max: 700 }), fc.constantFrom('503', '429', 'abc'), fc.anything()),
    message: fc.oneof(fc.string(), fc.constantFrom('rate limit', 'ECONNRESET', 'timed out', 'fetch failed'), fc.anything()),
    name: fc.oneof(fc.constantFrom('TypeError', 'AbortError', 'ToolError', 'RetriesExhaustedError', 'TimeoutError', 'HttpError'), fc.anything()),
  })
  .map(({ throwing, status, message, name }) => {
    const o: Record<string, unknown> = { status, message, name, headers: { 'retry-after': '2' } };
    for (const key of throwing) {
      Object.defineProperty(o, key, {
        get() {
          throw new Error(`getter ${key}`);
        },
        enumerable: true,
      });
    }
    return o;
  });

/** Headers that misbehave (built lazily where fast-check would trip over them). */
const hostileHeaders = fc.oneof(
  fc.constant({
    get: (): never => {
      throw new Error('get');
    },
  }),
  fc.constant({
    get: (): unknown => ({
      toString: (): never => {
        throw new Error('toString');
      },
    }),
  }),
  fc.dictionary(fc.constantFrom('retry-after', 'Retry-After', 'retry-after-ms', 'x-should-retry', 'x'), fc.anything()),
  fc.record({ 'retry-after': fc.oneof(fc.string(), fc.constantFrom('1e308', '-1', 'Infinity', 'NaN', '16 days', 'Thu, 01 Jan 2099 00:00:00 GMT', '0x10')) }),
  fc.record({ 'retry-after-ms': fc.oneof(fc.string(), fc.constantFrom('1e308', '-5', 'Infinity', '1.5')) }),
);

/** A chain of causes `depth` deep, optionally closed into a cycle. */
const causeChain = fc
  .record({ depth: fc.integer({ min: 0, max: 200 }), cyclic: fc.boolean(), leaf: fc.anything(), wrapper: fc.constantFrom('error', 'retries', 'tool', 'plain') })
  .map(({ depth, cyclic, leaf, wrapper }) => {
    const first: { cause?: unknown } = wrapper === 'plain' ? {} : new Error('outer');
    let current: { cause?: unknown } = first;
    for (let i = 0; i < depth; i++) {
      const next: { cause?: unknown } =
        wrapper === 'retries'
          ? new RetriesExhaustedError(1, [leaf])
          : wrapper === 'tool'
            ? new ToolError({ toolName: 't', callId: 'c', phase: 'execute', args: {}, idempotent: true, message: 'tool failed', cause: leaf })
            : new Error(`level ${i}`);
      current.cause = next;
      current = next;
    }
    current.cause = cyclic ? first : leaf;
    return first;
  });

describe('property: classifyError is total', () => {
  it('never throws and is well formed for fc.anything()', () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withBoxedValues: true,
          withDate: true,
          withMap: true,
          withSet: true,
          withNullPrototype: true,
          withTypedArray: true,
          withSparseArray: true,
        }),
        (v) => wellFormed(classifyError(v)),
      ),
      { numRuns: 300 },
    );
  });

  it('never throws for objects with throwing getters, hostile or revoked proxies, in any position', () => {
    // hostile values are built inside the predicate: fast-check itself must not touch them
    type Hostile =
      | 'proxy'
      | 'function proxy'
      | 'revoked'
      | 'cause: proxy'
      | 'cause: revoked'
      | 'headers: proxy'
      | 'headers: revoked'
      | 'response.headers: proxy'
      | 'status: proxy';
    const build = (kind: Hostile): unknown => {
      switch (kind) {
        case 'proxy':
          return hostile();
        case 'function proxy':
          return hostile(() => undefined);
        case 'revoked':
          return revoked();
        case 'cause: proxy':
          return { cause: hostile() };
        case 'cause: revoked':
          return new Error('wrapped', { cause: revoked() });
        case 'headers: proxy':
          return new HttpError(503, hostile() as never);
        case 'headers: revoked':
          return { status: 429, headers: revoked() };
        case 'response.headers: proxy':
          return { response: { status: 503, headers: hostile() } };
        case 'status: proxy':
          return { status: hostile(), statusCode: revoked(), response: hostile() };
      }
    };
    const kinds: Hostile[] = [
      'proxy',
      'function proxy',
      'revoked',
      'cause: proxy',
      'cause: revoked',
      'headers: proxy',
      'headers: revoked',
      'response.headers: proxy',
      'status: proxy',
    ];
    const now = fc.option(fc.integer({ min: -1e15, max: 1e15 }), { nil: undefined });
    const ctx = (t: number | undefined) => (t === undefined ? {} : { now: t });
    fc.assert(
      fc.property(fc.constantFrom(...kinds), now, (kind, t) => wellFormed(classifyError(build(kind), ctx(t)))),
      { numRuns: 100 },
    );
    fc.assert(
      fc.property(throwingGetters, now, (v, t) => wellFormed(classifyError(v, ctx(t)))),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(hostileHeaders, fc.constantFrom('HttpError', 'status', 'response'), now, (headers, where, t) => {
        const v =
          where === 'HttpError' ? new HttpError(503, headers as never) : where === 'status' ? { status: 429, headers } : { response: { status: 503, headers } };
        wellFormed(classifyError(v, ctx(t)));
      }),
      { numRuns: 300 },
    );
  });

  it('never throws for deep and cyclic cause chains', () => {
    fc.assert(
      fc.property(causeChain, (v) => wellFormed(classifyError(v))),
      { numRuns: 200 },
    );
  });

  it('a classifier with broken rules still answers: rules that throw or return junk are skipped', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constant('throw' as const), fc.anything()), { maxLength: 4 }), fc.anything(), (rules, error) => {
        const classify = createClassifier({
          rules: rules.map((r) => () => {
            if (r === 'throw') throw new Error('rule');
            // anything that is not an object is "not mine"; an object is taken as the answer
            return (typeof r === 'object' && r !== null ? undefined : r) as undefined;
          }),
        });
        wellFormed(classify(error));
      }),
      { numRuns: 200 },
    );
  });

  it('is deterministic: the same value (and time) gives the same verdict', () => {
    fc.assert(
      fc.property(fc.anything(), (v) => {
        expect(classifyError(v, { now: 0 })).to.deep.equal(classifyError(v, { now: 0 }));
      }),
      { numRuns: 200 },
    );
  });

  // Found by the property above: `retry-after: 1e308` (seconds) overflows to Infinity ms. With
  // the default maxRetryAfterMs the retry gives up ('retry_after_too_long'), but with
  // maxRetryAfterMs: Infinity retryWithBackoff would wait Infinity ms. Not a performance fix, so
  // left to the owner of classify.ts; un-skip when parseRetryAfter caps or rejects it.
  it('retryAfterMs is always finite (retry-after: "1e308" is capped, not Infinity)', () => {
    fc.assert(
      fc.property(hostileHeaders, (headers) => {
        const c = classifyError(new HttpError(503, headers as never));
        if (c.retryAfterMs !== undefined) expect(Number.isFinite(c.retryAfterMs)).to.equal(true);
      }),
      { numRuns: 300 },
    );
  });
});
