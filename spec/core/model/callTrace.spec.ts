import { expect } from 'chai';
import { asyncScheduler, config, defer, NEVER, Subscriber, type Observable } from 'rxjs';
import { traced, type TracedCall } from '../../../src/core/model/callTrace.js';
import { HttpError } from '../../../src/core/errors/errors.js';
import type { HealEvent } from '../../../src/core/events/events.js';
import { HealHub } from '../../../src/core/hub/hub.js';
import { testScheduler } from '../../support/marbles.js';

const call: TracedCall = { kind: 'model', name: 'gpt', id: 'step-1.1/1', step: 1, parentId: 'step-1.1' };
const f = { type: 'finish', reason: 'stop', usage: { inputTokens: 5, outputTokens: 2 } };

/** The hub's events while `source` runs traced, to the end, in virtual time. */
function trace(source: (cold: (m: string) => Observable<unknown>) => Observable<unknown>): HealEvent[] {
  const hub = new HealHub();
  const log: HealEvent[] = [];
  hub.events$.subscribe((e) => log.push(e));
  testScheduler().run(({ cold, flush }) => {
    traced(
      hub,
      asyncScheduler,
      call,
      source((m) => cold(m, { f }, new HttpError(503))),
    ).subscribe({ error: () => undefined });
    flush();
  });
  return log;
}

describe('traced (call-start / call-end)', () => {
  it('a success: call-start, then call-end with the duration on the scheduler and the usage of the finish', () => {
    expect(trace((cold) => cold('--(f|)'))).to.deep.equal([
      { type: 'call-start', ...call, at: 0 },
      { type: 'call-end', ...call, at: 2, durationMs: 2, outcome: 'success', usage: { inputTokens: 5, outputTokens: 2 } },
    ]);
  });

  it('an error: its text, category and HTTP status', () => {
    expect(trace((cold) => cold('-#'))[1]).to.deep.equal({
      type: 'call-end',
      ...call,
      at: 1,
      durationMs: 1,
      outcome: 'error',
      error: 'HTTP 503',
      category: 'service_unavailable',
      status: 503,
    });
  });

  it('unsubscribed before the end: cancelled', () => {
    const hub = new HealHub();
    const log: HealEvent[] = [];
    hub.events$.subscribe((e) => log.push(e));
    traced(hub, asyncScheduler, call, NEVER).subscribe().unsubscribe();
    expect(log.map((e) => (e.type === 'call-end' ? e.outcome : e.type))).to.deep.equal(['call-start', 'cancelled']);
  });

  it('subscribed by a subscriber already closed: the source is never subscribed, nothing is traced, nothing throws', () => {
    const hub = new HealHub();
    const log: HealEvent[] = [];
    hub.events$.subscribe((e) => log.push(e));
    let subscribed = 0;
    const unhandled: unknown[] = [];
    const previous = config.onUnhandledError;
    config.onUnhandledError = (e) => unhandled.push(e);
    try {
      const gone = new Subscriber<unknown>();
      gone.unsubscribe();
      traced(
        hub,
        asyncScheduler,
        call,
        defer(() => (subscribed++, NEVER)),
      ).subscribe(gone);
    } finally {
      config.onUnhandledError = previous;
    }
    expect({ subscribed, log, unhandled }).to.deep.equal({ subscribed: 0, log: [], unhandled: [] });
  });
});
