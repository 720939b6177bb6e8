/**
 * restateJournal's contract with Restate, without a server: it is refused by shape (naming what
 * is missing), and a run on it calls `ctx.run(name, fn)` for each turn and each tool call — the
 * engine here spec/support/stepEngine.ts's, behind a `run`. The real server, with a killed
 * service process: killRecover.spec.ts.
 */
import { expect } from 'chai';
import { lastValueFrom, toArray } from 'rxjs';
import * as t from 'io-ts';
import { InvalidOptionError } from '../../src/core/errors/errors.js';
import { defineTool, runAgent } from '../../src/index.js';
import { restateJournal, type RestateSteps } from '../../src/restate/index.js';
import { finish, scriptedModel, textDeltas, toolCall } from '../../src/testing/index.js';
import { StepEngine } from '../support/stepEngine.js';

describe('rxheal/restate: restateJournal', () => {
  it('refuses what is not a handler’s context, naming what it lacks', () => {
    for (const bad of [undefined, null, {}, { run: 1 }, 'ctx'])
      expect(() => restateJournal(bad as never))
        .to.throw(InvalidOptionError, /restate\.Context.*it has no run\(name, fn\)/)
        .with.property('option', 'ctx');
  });

  it('runs each turn and each tool call as ctx.run(name, fn)', async () => {
    const engine = new StepEngine();
    const { run } = engine.life();
    const ctx: RestateSteps = { run: (name, fn) => run(name, fn) };
    const model = scriptedModel('m', [
      [toolCall('c1', 'echo', { text: 'hi' }), finish('tool-calls')],
      [...textDeltas('said hi'), finish('stop')],
    ]);
    const echo = defineTool({ name: 'echo', description: 'Echoes', args: t.type({ text: t.string }), idempotent: true, execute: ({ text }) => text });
    const events = await lastValueFrom(
      runAgent({ model, tools: [echo], messages: [{ role: 'user', content: 'say hi' }], runId: 'inv_1', journal: restateJournal(ctx) }).pipe(toArray()),
    );
    expect(engine.started).to.deep.equal(['rxheal turn 1', 'rxheal tool inv_1/1/0/echo', 'rxheal turn 2']);
    expect(events.filter((e) => e.type === 'message').pop()).to.deep.include({ message: { role: 'assistant', content: 'said hi' } });
  });
});
