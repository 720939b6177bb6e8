import { expect } from 'chai';
import { defer, lastValueFrom, throwError, VirtualTimeScheduler, of } from 'rxjs';
import { HttpError } from '../../src/core/errors.js';
import type { HealEvent } from '../../src/core/events.js';
import { HealHub } from '../../src/core/hub.js';
import { CircuitBreaker } from '../../src/core/CircuitBreaker.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { Boom, reportedByRxjs } from '../support/guards.js';

describe('HealHub', () => {
  it('every subscriber gets every event reported; watched breakers are followed while anyone listens', () => {
    const hub = new HealHub();
    const a: string[] = [];
    const b: string[] = [];
    const subA = hub.events$.subscribe((e) => a.push(e.type));
    hub.events$.subscribe((e) => b.push(e.type));
    hub.report({ type: 'retry', target: 't', attempt: 1, max: 3, delayMs: 10, category: 'server_error', error: 'x' });
    subA.unsubscribe();
    hub.report({ type: 'retry-succeeded', target: 't', attempt: 2 });
    expect(a).to.deep.equal(['retry']);
    expect(b).to.deep.equal(['retry', 'retry-succeeded']);
  });

  describe('a listener that throws (the guard rule)', () => {
    it('does not disturb the operator reporting to the hub, nor the other listeners; RxJS reports the throw (config.onUnhandledError)', async () => {
      const hub = new HealHub();
      const boom = new Boom('listener');
      const seen: HealEvent['type'][] = [];
      hub.events$.subscribe(() => {
        throw boom;
      });
      hub.events$.subscribe((e) => seen.push(e.type));
      let calls = 0;
      const scheduler = new VirtualTimeScheduler();
      const breaker = new CircuitBreaker({ scheduler, failureThreshold: 1 });
      const call$ = defer(() => (calls++ === 0 ? throwError(() => new HttpError(503)) : of('ok'))).pipe(
        retryWithBackoff({ hub, jitter: 'none', initialBackoffMs: 10, scheduler }),
        circuitBreak(breaker, { hub }),
      );
      let result: string | undefined;
      const reported = await reportedByRxjs(async () => {
        const done = lastValueFrom(call$);
        scheduler.flush();
        result = await done;
      });
      expect(result).to.equal('ok');
      expect(seen).to.deep.equal(['retry', 'retry-succeeded']);
      expect(reported).to.deep.equal([boom, boom]);
    });
  });
});
