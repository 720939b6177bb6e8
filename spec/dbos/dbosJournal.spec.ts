/**
 * dbosJournal's contract with DBOS, without a database: it is refused by shape (naming what is
 * missing), and a run on it calls `DBOS.runStep(fn, { name, retriesAllowed: false })` for each
 * turn and each tool call — the engine here spec/support/stepEngine.ts's, behind a `runStep`.
 * The real DBOS, killed and recovered: killRecover.spec.ts.
 */
import { expect } from 'chai';
import { lastValueFrom, toArray } from 'rxjs';
import * as t from 'io-ts';
import { InvalidOptionError } from '../../src/core/errors/errors.js';
import { dbosJournal, type DbosSteps } from '../../src/dbos/index.js';
import { defineTool, runAgent } from '../../src/index.js';
import { finish, scriptedModel, textDeltas, toolCall } from '../../src/testing/index.js';
import { StepEngine } from '../support/stepEngine.js';

describe('rxheal/dbos: dbosJournal', () => {
  it('refuses what is not DBOS, naming what it lacks', () => {
    for (const bad of [undefined, null, {}, { runStep: 'no' }, 'DBOS'])
      expect(() => dbosJournal(bad as never))
        .to.throw(InvalidOptionError, /DBOS of @dbos-inc\/dbos-sdk 5\.x .*it has no runStep/)
        .with.property('option', 'dbos');
  });

  it('runs each turn and each tool call as DBOS.runStep(fn, { name, retriesAllowed: false })', async () => {
    const engine = new StepEngine();
    const { run } = engine.life();
    const configs: unknown[] = [];
    const DBOS: DbosSteps = { runStep: (fn, config) => (configs.push(config), run(config!.name!, fn) as Promise<never>) };
    const model = scriptedModel('m', [
      [toolCall('c1', 'echo', { text: 'hi' }), finish('tool-calls')],
      [...textDeltas('said hi'), finish('stop')],
    ]);
    const echo = defineTool({ name: 'echo', description: 'Echoes', args: t.type({ text: t.string }), idempotent: true, execute: ({ text }) => text });
    const events = await lastValueFrom(
      runAgent({ model, tools: [echo], messages: [{ role: 'user', content: 'say hi' }], runId: 'wf-1', journal: dbosJournal(DBOS) }).pipe(toArray()),
    );
    expect(configs).to.deep.equal([
      { name: 'rxheal turn 1', retriesAllowed: false },
      { name: 'rxheal tool wf-1/1/0/echo', retriesAllowed: false },
      { name: 'rxheal turn 2', retriesAllowed: false },
    ]);
    expect(events.filter((e) => e.type === 'message').pop()).to.deep.include({ message: { role: 'assistant', content: 'said hi' } });
  });
});
