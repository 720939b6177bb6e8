import { expect } from 'chai';
import { defer, lastValueFrom, of, throwError, VirtualTimeScheduler, type Subscription } from 'rxjs';
import { HttpError } from '../../../src/core/errors/errors.js';
import type { HealEvent } from '../../../src/core/events/events.js';
import { defaultHub, HealHub, joinHubs, withDefaultHub } from '../../../src/core/hub/hub.js';
import { CircuitBreaker } from '../../../src/core/breaker/CircuitBreaker.js';
import { circuitBreak } from '../../../src/operators/circuitBreak.js';
import { retryWithBackoff } from '../../../src/operators/retryWithBackoff.js';
import { Boom, reportedByRxjs } from '../../support/guards.js';
import { testScheduler } from '../../support/marbles.js';

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

const retry: HealEvent = { type: 'retry', target: 'model:gpt', attempt: 1, max: 3, delayMs: 500, category: 'rate_limit' };

/** Every event a hub reports, in order. */
function heard(hub: HealHub): HealEvent[] {
  const log: HealEvent[] = [];
  hub.events$.subscribe((e) => log.push(e));
  return log;
}

describe('HealHub', () => {
  it('reports each event to every subscriber', () => {
    const hub = new HealHub();
    const [a, b] = [heard(hub), heard(hub)];
    hub.report(retry);
    expect([a, b]).to.deep.equal([[retry], [retry]]);
  });

  it('a report reaches the subscribers of when it began, in subscription order (as a Subject): one who joins during it waits for the next, one who leaves hears no more', () => {
    const hub = new HealHub();
    const log: string[] = [];
    let late: Subscription | undefined;
    const first = hub.events$.subscribe((e) => {
      log.push(`first ${e.type}`);
      late ??= hub.events$.subscribe((x) => log.push(`late ${x.type}`));
      second.unsubscribe();
    });
    const second = hub.events$.subscribe((e) => log.push(`second ${e.type}`));
    hub.report(retry);
    hub.report({ type: 'retry-succeeded', target: 't', attempt: 2 });
    first.unsubscribe();
    late!.unsubscribe();
    hub.report(retry);
    expect(log).to.deep.equal(['first retry', 'first retry-succeeded', 'late retry-succeeded']);
  });

  it('the same subscriber twice hears each event twice, until each subscription ends', () => {
    const hub = new HealHub();
    const log: string[] = [];
    const observer = { next: (e: HealEvent) => log.push(e.type) };
    const a = hub.events$.subscribe(observer);
    const b = hub.events$.subscribe(observer);
    hub.report(retry);
    a.unsubscribe();
    hub.report(retry);
    b.unsubscribe();
    hub.report(retry);
    expect(log).to.deep.equal(['retry', 'retry', 'retry']);
  });

  it("watches a breaker's transitions while it has subscribers", () => {
    testScheduler().run(() => {
      const hub = new HealHub();
      const breaker = new CircuitBreaker({ name: 'model:gpt', failureThreshold: 1 });
      hub.watch(breaker);
      hub.watch(breaker);
      const log = heard(hub);
      const permit = breaker.acquire();
      if (permit instanceof Error) throw permit;
      permit.failure(new Error('503'));
      expect(log.map((e) => (e.type === 'circuit' && e.kind === 'transition' ? `${e.from}>${e.to}` : e.type))).to.deep.equal(['closed>open']);
    });
  });
});

describe('joinHubs', () => {
  it('none: undefined; one, or the same one twice: that hub itself', () => {
    const hub = new HealHub();
    expect(joinHubs([])).to.equal(undefined);
    expect(joinHubs([undefined, undefined])).to.equal(undefined);
    expect(joinHubs([hub, undefined])).to.equal(hub);
    expect(joinHubs([hub, hub])).to.equal(hub);
  });

  it('two hubs: each event reaches each once', () => {
    const own = new HealHub();
    const run = new HealHub();
    const [fromOwn, fromRun] = [heard(own), heard(run)];
    joinHubs([own, run])!.report(retry);
    expect([fromOwn, fromRun]).to.deep.equal([[retry], [retry]]);
  });

  it('a joined hub joined again with one of its members reports to each member once', () => {
    const own = new HealHub();
    const run = new HealHub();
    const fromRun = heard(run);
    joinHubs([joinHubs([own, run]), run])!.report(retry);
    expect(fromRun).to.deep.equal([retry]);
  });

  it('watches a breaker on each member: one transition event per hub', () => {
    testScheduler().run(() => {
      const own = new HealHub();
      const run = new HealHub();
      const [fromOwn, fromRun] = [heard(own), heard(run)];
      const breaker = new CircuitBreaker({ name: 'model:gpt', failureThreshold: 1 });
      joinHubs([own, run])!.watch(breaker);
      const permit = breaker.acquire();
      if (permit instanceof Error) throw permit;
      permit.failure(new Error('503'));
      expect([fromOwn.length, fromRun.length]).to.deep.equal([1, 1]);
    });
  });
});

describe('withDefaultHub / defaultHub (operators created in a callback report to the run)', () => {
  it('is set while the callback runs, nested calls restore the outer one, and it is cleared after (also after a throw)', () => {
    const run = new HealHub();
    const inner = new HealHub();
    const seen: unknown[] = [];
    withDefaultHub({ hub: run, target: 'model:gpt' }, () => {
      seen.push(defaultHub()?.target);
      withDefaultHub({ hub: inner, target: 'model:claude' }, () => seen.push(defaultHub()?.target));
      seen.push(defaultHub()?.hub === run);
    });
    expect(() =>
      withDefaultHub({ hub: run, target: 'x' }, () => {
        throw new Error('bug');
      }),
    ).to.throw('bug');
    expect(seen).to.deep.equal(['model:gpt', 'model:claude', true]);
    expect(defaultHub()).to.equal(undefined);
  });

  it('retryWithBackoff and circuitBreak created inside report to it; an explicit hub or target wins', () => {
    const run = new HealHub();
    const own = new HealHub();
    const [fromRun, fromOwn] = [heard(run), heard(own)];
    testScheduler().run(({ cold, flush }) => {
      const breaker = new CircuitBreaker({ name: 'model:gpt', failureThreshold: 1 });
      const source = cold('-#', undefined, new HttpError(503));
      withDefaultHub({ hub: run, target: 'model:gpt' }, () => {
        source.pipe(retryWithBackoff({ maxRetries: 1, initialBackoffMs: 10, jitter: 'none' }), circuitBreak(breaker)).subscribe({ error: () => undefined });
        source.pipe(retryWithBackoff({ hub: own, target: 'mine', maxRetries: 1, initialBackoffMs: 10, jitter: 'none' })).subscribe({ error: () => undefined });
      });
      // created outside: no hub
      source.pipe(retryWithBackoff({ maxRetries: 1 })).subscribe({ error: () => undefined });
      flush();
    });
    const label = (e: HealEvent) =>
      e.type === 'retry' ? `retry:${e.target}` : e.type === 'circuit' && e.kind === 'transition' ? `circuit:${e.breaker}:${e.to}` : e.type;
    expect(fromRun.map(label)).to.deep.equal(['retry:model:gpt', 'circuit:model:gpt:open', 'circuit:model:gpt:half-open']); // the flush runs the reset timer too
    expect(fromOwn.map(label)).to.deep.equal(['retry:mine']);
  });
});
