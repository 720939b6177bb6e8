import { expect } from 'chai';
import { CapabilityRegistry, type CapabilityEvent } from '../../../src/core/capabilities/CapabilityRegistry.js';
import { InvalidOptionError } from '../../../src/core/errors/errors.js';
import type { HealEvent } from '../../../src/core/events/events.js';
import { HealHub } from '../../../src/core/hub/hub.js';
import { Boom, reportedByRxjs, thrower } from '../../support/guards.js';

function record(registry: CapabilityRegistry): CapabilityEvent[] {
  const events: CapabilityEvent[] = [];
  registry.events$.subscribe((e) => events.push(e));
  return events;
}

describe('CapabilityRegistry', () => {
  it('disable, enable, isAvailable and degraded() track what is unavailable and why', () => {
    const registry = new CapabilityRegistry();
    expect(registry.isAvailable('knowledge_search')).to.equal(true);
    expect(registry.disable('knowledge_search', 'no result within 3000 ms')).to.equal(true);
    expect(registry.disable('reranker', 'failed (service_unavailable)')).to.equal(true);
    expect(registry.isAvailable('knowledge_search')).to.equal(false);
    expect(registry.isAvailable('get_weather')).to.equal(true);
    expect(registry.degraded()).to.deep.equal(
      new Map([
        ['knowledge_search', 'no result within 3000 ms'],
        ['reranker', 'failed (service_unavailable)'],
      ]),
    );
    expect(registry.enable('knowledge_search')).to.equal(true);
    expect(registry.enable('knowledge_search')).to.equal(false);
    expect(registry.isAvailable('knowledge_search')).to.equal(true);
    expect([...registry.degraded().keys()]).to.deep.equal(['reranker']);
  });

  it('degraded() is a copy: changing it changes nothing', () => {
    const registry = new CapabilityRegistry();
    registry.disable('a', 'x');
    (registry.degraded() as Map<string, string>).delete('a');
    expect(registry.isAvailable('a')).to.equal(false);
  });

  it('events$: degraded / restored, no duplicates for a repeated disable with the same reason', () => {
    const registry = new CapabilityRegistry();
    const events = record(registry);
    registry.disable('knowledge_search', 'slow');
    registry.disable('knowledge_search', 'slow');
    registry.enable('get_weather');
    registry.disable('knowledge_search', 'failed (timeout)');
    registry.enable('knowledge_search');
    registry.enable('knowledge_search');
    expect(events).to.deep.equal([
      { type: 'degraded', capability: 'knowledge_search', reason: 'slow' },
      { type: 'degraded', capability: 'knowledge_search', reason: 'failed (timeout)' },
      { type: 'restored', capability: 'knowledge_search' },
    ]);
    expect(registry.disable('knowledge_search', 'failed (timeout)')).to.equal(true);
    expect(registry.disable('knowledge_search', 'failed (timeout)')).to.equal(false);
  });

  it('degraded$: the current map on subscribe, then a fresh snapshot after each change', () => {
    const registry = new CapabilityRegistry();
    registry.disable('a', 'x');
    const seen: ReadonlyMap<string, string>[] = [];
    const sub = registry.degraded$.subscribe((m) => seen.push(m));
    registry.disable('b', 'y');
    registry.disable('b', 'y'); // no change, no emission
    registry.enable('a');
    sub.unsubscribe();
    registry.enable('b');
    expect(seen).to.deep.equal([
      new Map([['a', 'x']]),
      new Map([
        ['a', 'x'],
        ['b', 'y'],
      ]),
      new Map([['b', 'y']]),
    ]);
  });

  it('reports the same events to its hub', () => {
    const hub = new HealHub();
    const heal: HealEvent[] = [];
    hub.events$.subscribe((e) => heal.push(e));
    const registry = new CapabilityRegistry({ hub });
    expect(registry.hub).to.equal(hub);
    registry.disable('knowledge_search', 'slow');
    registry.disable('knowledge_search', 'slow');
    registry.enable('knowledge_search');
    expect(heal).to.deep.equal([
      { type: 'degraded', capability: 'knowledge_search', reason: 'slow' },
      { type: 'restored', capability: 'knowledge_search' },
    ]);
  });

  describe('systemPromptSuffix()', () => {
    it("is '' while everything is available", () => {
      const registry = new CapabilityRegistry();
      expect(registry.systemPromptSuffix()).to.equal('');
      registry.disable('a', 'x');
      registry.enable('a');
      expect(registry.systemPromptSuffix()).to.equal('');
    });

    it('lists each unavailable capability with its reason and tells the model to tell the user and continue', () => {
      const registry = new CapabilityRegistry();
      registry.disable('knowledge_search', 'no result within 3000 ms');
      registry.disable('reranker', '');
      expect(registry.systemPromptSuffix()).to.equal(
        'These capabilities are unavailable right now:\n' +
          '- knowledge_search: no result within 3000 ms\n' +
          '- reranker\n' +
          'Do not try to use them. Tell the user which of them you could not use, and continue without them.',
      );
    });

    it('flattens reasons to one line, redacts secrets and bounds them (they may come from errors)', () => {
      const registry = new CapabilityRegistry();
      registry.disable('search', 'line one\n\nkey=sk-abcdefghijkl\t' + 'x'.repeat(300));
      const suffix = registry.systemPromptSuffix();
      expect(suffix.split('\n')).to.have.length(3);
      const line = suffix.split('\n').find((l) => l.startsWith('- search'))!;
      expect(line).to.match(/^- search: line one key=sk-\[REDACTED\] x+… \[\d+ more characters cut\]$/);
      expect(line).not.to.contain('abcdefghijkl');
    });
  });

  describe('validation', () => {
    it('rejects bad options at construction', () => {
      expect(() => new CapabilityRegistry({ hub: {} as HealHub })).to.throw(InvalidOptionError, /CapabilityRegistry: option "hub" must be a HealHub, got \{\}/);
      expect(() => new CapabilityRegistry({ hubb: 1 } as never)).to.throw(InvalidOptionError, /"hubb"/);
    });

    it('rejects empty names and non-string reasons', () => {
      const registry = new CapabilityRegistry();
      expect(() => registry.disable('', 'x')).to.throw(InvalidOptionError, /CapabilityRegistry.disable: option "name" must be a non-empty string/);
      expect(() => registry.disable('a', 42 as never)).to.throw(InvalidOptionError, /"reason" must be a string, got 42/);
      expect(() => registry.enable(undefined as never)).to.throw(InvalidOptionError, /CapabilityRegistry.enable/);
    });
  });
});

describe('CapabilityRegistry: a listener that throws (the guard rule)', () => {
  it('disable() and enable() still change the state and return; other listeners and the hub still hear; RxJS reports the throw', async () => {
    const hub = new HealHub();
    const registry = new CapabilityRegistry({ hub });
    const boom = new Boom('listener');
    const heard = record(registry);
    const hubHeard: HealEvent[] = [];
    hub.events$.subscribe((e) => hubHeard.push(e));
    let changed: boolean[] = [];
    const reported = await reportedByRxjs(() => {
      registry.events$.subscribe(thrower(boom));
      registry.degraded$.subscribe(thrower(boom));
      changed = [registry.disable('search', 'slow'), registry.enable('search')];
    });
    expect(changed).to.deep.equal([true, true]);
    expect(registry.isAvailable('search')).to.equal(true);
    expect(heard.map((e) => e.type)).to.deep.equal(['degraded', 'restored']);
    expect(hubHeard.map((e) => e.type)).to.deep.equal(['degraded', 'restored']);
    // degraded$ threw on its first snapshot too (at subscription), then on each change
    expect(reported).to.have.length(5);
    expect(reported.every((e) => e === boom)).to.equal(true);
  });
});
