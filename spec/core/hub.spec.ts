import { expect } from 'chai';
import { CircuitBreaker } from '../../src/core/CircuitBreaker.js';
import type { HealEvent } from '../../src/core/events.js';
import { HealHub, joinHubs } from '../../src/core/hub.js';
import { testScheduler } from '../support/marbles.js';

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
