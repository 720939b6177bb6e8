import { expect } from 'chai';
import { of } from 'rxjs';
import { CircuitBreaker } from '../../../src/core/breaker/CircuitBreaker.js';
import { classifyError } from '../../../src/core/errors/classify.js';
import { CircuitOpenError, HttpError } from '../../../src/core/errors/errors.js';
import type { HealEvent } from '../../../src/core/events/events.js';
import { decideFallback, fallbackVerdict, guardedAttempt, nextAlternative, type ChainLink } from '../../../src/core/fallback/fallbackChain.js';
import { HealHub } from '../../../src/core/hub/hub.js';
import { circuitBreak } from '../../../src/operators/circuitBreak.js';
import { testScheduler } from '../../support/marbles.js';

/** A hub and what it reports. */
function recordedHub(): { hub: HealHub; log: HealEvent[] } {
  const hub = new HealHub();
  const log: HealEvent[] = [];
  hub.events$.subscribe((e) => log.push(e));
  return { hub, log };
}

describe('fallbackChain (the rules fallbackTo and fallbackModel share)', () => {
  describe('fallbackVerdict', () => {
    it('moves on for what the classifier says is worth a fallback, with its category as the reason', () => {
      const verdict = fallbackVerdict(new HttpError(503), true, classifyError, undefined);
      expect(verdict?.reason).to.equal('service_unavailable');
      expect(verdict?.classification.fallback).to.equal(true);
      expect(fallbackVerdict(new TypeError('bug'), true, classifyError, undefined)).to.equal(undefined);
    });

    it('shouldFallback decides instead of the classifier (the reason is still the category)', () => {
      expect(fallbackVerdict(new HttpError(503), true, classifyError, () => false)).to.equal(undefined);
      expect(fallbackVerdict(new TypeError('bug'), true, classifyError, () => true)?.reason).to.equal('programming');
    });

    it("a CircuitOpenError from an alternative never called always moves on, as 'circuit_open'; one from a call is judged like any error", () => {
      const open = new CircuitOpenError('b', 0);
      expect(fallbackVerdict(open, false, classifyError, () => false)?.reason).to.equal('circuit_open');
      expect(fallbackVerdict(open, true, classifyError, () => false)).to.equal(undefined);
    });

    it('throws what the classifier or the predicate throws (the operators turn it into the error)', () => {
      const boom = new Error('predicate broke');
      expect(() =>
        fallbackVerdict(new HttpError(503), true, classifyError, () => {
          throw boom;
        }),
      ).to.throw(boom);
    });
  });

  describe('decideFallback', () => {
    it('the verdict, or what to fail with: the error itself when not worth a fallback, or what the predicate threw', () => {
      expect(decideFallback(new HttpError(503), true, classifyError, undefined)).to.include({ reason: 'service_unavailable' });
      const bug = new TypeError('bug');
      expect(decideFallback(bug, true, classifyError, undefined)).to.deep.equal({ fail: bug });
      const boom = new Error('predicate broke');
      const decision = decideFallback(new HttpError(503), true, classifyError, () => {
        throw boom;
      });
      expect(decision).to.have.property('fail', boom);
    });
  });

  describe('nextAlternative', () => {
    function chain(ts: ReturnType<typeof testScheduler>): { links: ChainLink[]; open: CircuitBreaker } {
      const open = new CircuitBreaker({ name: 'b', failureThreshold: 1, resetTimeoutMs: 1_000, scheduler: ts });
      open.isolate();
      return {
        open,
        links: [
          { name: 'a', breaker: undefined },
          { name: 'b', breaker: open },
          { name: 'c', breaker: undefined },
        ],
      };
    }

    it('returns the next alternative, reporting the hand-over with the hop as given', () => {
      const ts = testScheduler();
      const { hub, log } = recordedHub();
      const errors: unknown[] = [];
      expect(nextAlternative(chain(ts).links, 0, { from: 'primary', reason: 'rate_limit', midStream: true }, errors, hub)).to.equal(0);
      expect(log).to.deep.equal([{ type: 'fallback', from: 'primary', to: 'a', reason: 'rate_limit', midStream: true }]);
      expect(errors).to.deep.equal([]);
    });

    it("skips an open breaker without a call: its CircuitOpenError joins the errors, the rejection is reported, the next hop is 'circuit_open' and not mid-stream", () => {
      const ts = testScheduler();
      const { hub, log } = recordedHub();
      const errors: unknown[] = [];
      expect(nextAlternative(chain(ts).links, 1, { from: 'a', reason: 'timeout', midStream: true }, errors, hub)).to.equal(2);
      expect(errors).to.have.length(1);
      expect(errors[0]).to.be.instanceOf(CircuitOpenError);
      expect((errors[0] as CircuitOpenError).breaker).to.equal('b');
      expect(log).to.deep.equal([
        { type: 'fallback', from: 'a', to: 'b', reason: 'timeout', midStream: true },
        { type: 'circuit', breaker: 'b', kind: 'rejected', retryAfterMs: Infinity },
        { type: 'fallback', from: 'b', to: 'c', reason: 'circuit_open', midStream: false },
      ]);
    });

    it('-1 when none is left; nothing is reported for the chain’s start (from undefined)', () => {
      const ts = testScheduler();
      const { hub, log } = recordedHub();
      const { links } = chain(ts);
      expect(nextAlternative(links, 3, { from: 'c', reason: 'timeout', midStream: false }, [], hub)).to.equal(-1);
      expect(nextAlternative(links, 0, { from: undefined, reason: '', midStream: false }, [], hub)).to.equal(0);
      expect(log).to.deep.equal([]);
    });
  });

  describe('guardedAttempt', () => {
    it('called() is false until the start runs, and stays false when the guard rejects the call', () => {
      const breaker = new CircuitBreaker({ name: 'g' });
      breaker.isolate();
      const guarded = guardedAttempt(() => of(1), circuitBreak<number>(breaker));
      expect(guarded.called()).to.equal(false);
      let error: unknown;
      guarded.input.subscribe({ error: (e: unknown) => (error = e) });
      expect(error).to.be.instanceOf(CircuitOpenError);
      expect(guarded.called()).to.equal(false);
      const plain = guardedAttempt(() => of(1), undefined);
      const seen: number[] = [];
      plain.input.subscribe((v) => seen.push(v));
      expect(plain.called()).to.equal(true);
      expect(seen).to.deep.equal([1]);
    });
  });
});
