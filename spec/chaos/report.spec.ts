/**
 * The specs rxheal/chaos writes (src/chaos/report.ts), run as written: saved in the project (a
 * folder beside spec/, their imports relative to it) and run by a mocha of their own. replaySpec's
 * fails while the agent is broken and passes once it heals; incidentSpec's passes when the agent
 * heals as it did in the incident and fails, naming the step, when it heals otherwise.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ChaosInputError,
  DOCUMENTED_ERRORS,
  checkHealing,
  faults,
  incidentSpec,
  recordIncident,
  replaySchedule,
  replaySpec,
  type FaultSchedule,
} from '../../src/chaos/index.js';
import { runSpecFiles } from '../support/runSpecFiles.js';
import { BUDGET, budgetHeld, budgetLeak, healing, retriesBooking } from './agents.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NAMING = { from: '../spec/chaos/agents.js', chaos: '../src/chaos/index.js' } as const;
/** The primary's reset after 2 events, then a 503 the retry meets: healed by the retries. */
const SCHEDULE: FaultSchedule = {
  models: {
    primary: [
      { kind: 'reset', afterEvents: 2 },
      { kind: 'status', status: 503 },
    ],
  },
};

describe('the specs rxheal/chaos writes, run as written', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(ROOT, '.run-as-test-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('incidentSpec: the incident whole in the spec (a fault, a step per line where long), the agent called with agentArgs, a title', async () => {
    const incident = recordIncident((await replaySchedule(healing, SCHEDULE)).events.map((e) => e.event));
    const source = incidentSpec(incident, { ...NAMING, agent: 'makeAgent', agentArgs: [{ region: 'eu' }, 2], title: 'the outage of "Tuesday" heals' });
    expect(source).to.contain("import { replayIncident } from '../src/chaos/index.js';");
    expect(source).to.contain("import { makeAgent } from '../spec/chaos/agents.js';");
    expect(source).to.contain(`it("the outage of \\"Tuesday\\" heals", async () => {`);
    expect(source).to.contain('"primary": [{"kind":"reset","afterEvents":2},{"kind":"status","status":503},{"kind":"ok"}');
    expect(source).to.contain('"retry model:primary #1 after 200 ms",');
    expect(source).to.contain('}, makeAgent({"region":"eu"}, 2));');
    // no options, no arguments: the export is the factory
    expect(incidentSpec(incident, NAMING)).to.contain(`}, agent);\n  assert.deepEqual(replay.run.violations, []);`);
  });

  it('bad input: an incident of another version, agentArgs that are not JSON data, names that would not make valid source — each an error naming it', async () => {
    const incident = recordIncident((await replaySchedule(healing, SCHEDULE)).events.map((e) => e.event));
    expect(() => incidentSpec({ ...incident, version: 2 } as unknown as typeof incident)).to.throw(
      ChaosInputError,
      'incidentSpec: an incident of version 2; this rxheal writes version 1',
    );
    expect(() => incidentSpec(incident, { agentArgs: [{ history: [] }, () => 1] })).to.throw(
      ChaosInputError,
      'incidentSpec: naming.agentArgs[1] is not a JSON value',
    );
    expect(() => incidentSpec(incident, { agentArgs: [new Date(0)] })).to.throw(ChaosInputError, 'naming.agentArgs[0] is not a JSON value');
    expect(() => incidentSpec(incident, { agent: 'make agent' })).to.throw(ChaosInputError, 'incidentSpec: naming.agent "make agent" is not an identifier');
    expect(() => incidentSpec(incident, { from: "./a'gent.js" })).to.throw(
      ChaosInputError,
      `incidentSpec: naming.from "./a'gent.js" is not a module specifier`,
    );
    const run = await replaySchedule(healing, SCHEDULE);
    expect(() => replaySpec(run, { options: 'opts;' })).to.throw(ChaosInputError, 'replaySpec: naming.options "opts;" is not an identifier');
  });

  it('run by mocha: replaySpec fails on the broken agent and passes on the one that heals; incidentSpec passes as recorded, fails when the healing differs', async () => {
    const broken = await checkHealing(retriesBooking, {
      faults: faults.schedule({ tools: ['book'], tool: { weights: { stall: 0, timeout: 0 } } }),
      runs: 100,
      seed: 25,
    });
    if (broken.ok) throw new Error('expected checkHealing to find the broken agent');
    const files: Record<string, string> = {
      'broken.spec.ts': replaySpec(broken.failure.run, { ...NAMING, agent: 'retriesBooking' }),
      'fixed.spec.ts': replaySpec(broken.failure.run, { ...NAMING, agent: 'healing' }),
    };
    const incident = recordIncident((await replaySchedule(healing, SCHEDULE)).events.map((e) => e.event));
    files['incident.spec.ts'] = incidentSpec(incident, { ...NAMING, agent: 'healing', title: 'incident as recorded' });
    files['other.spec.ts'] = incidentSpec(
      { ...incident, healing: incident.healing.slice(1) },
      { ...NAMING, agent: 'healing', title: 'incident healed otherwise' },
    );
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const run = await runSpecFiles(Object.keys(files).map((name) => join(dir, name)));
    expect(run.passed).to.have.members(['heals under the schedule checkHealing found', 'incident as recorded']);
    expect(run.failed.map((f) => f.title)).to.have.members(['heals under the schedule checkHealing found', 'incident healed otherwise']);
    expect(run.failed.find((f) => f.title === 'incident healed otherwise')!.message).to.contain('retry model:primary #1 after 200 ms');
    expect(run.code).to.equal(2);
  });

  describe('the options the check ran with are in the spec', () => {
    const leakOptions = {
      faults: faults.schedule({ models: ['primary', 'secondary'], model: { weights: { stall: 0, 'slow-first-byte': 0 } } }),
      runs: 200,
      seed: 25,
      budget: BUDGET,
    } as const;

    it('a budget-held failure: the spec replays with the budget, so it fails on the unfixed agent and passes on the fixed one (run by mocha)', async () => {
      const report = await checkHealing(budgetLeak, leakOptions);
      if (report.ok) throw new Error('expected checkHealing to find the budget leak');
      expect(report.failure.violations.map((v) => v.invariant)).to.deep.equal(['budget-held']);
      const spec = report.failure.spec!;
      expect(spec).to.contain(`await replaySchedule(agent, schedule, { budget: ${JSON.stringify(BUDGET)} });`);
      writeFileSync(join(dir, 'leak.spec.ts'), replaySpec(report.failure.run, { ...NAMING, agent: 'budgetLeak' }));
      writeFileSync(join(dir, 'held.spec.ts'), replaySpec(report.failure.run, { ...NAMING, agent: 'budgetHeld' }));
      const run = await runSpecFiles([join(dir, 'leak.spec.ts'), join(dir, 'held.spec.ts')]);
      expect(run.failed.map((f) => f.title)).to.deep.equal(['heals under the schedule checkHealing found']);
      expect(run.failed[0]!.message).to.contain('budget-held');
      expect(run.passed).to.deep.equal(['heals under the schedule checkHealing found']);
    });

    it('bound, seed and allowed errors are written out; the documented errors by name', async () => {
      const run = await replaySchedule(budgetHeld, {}, { boundMs: 60_000, randomSeed: 3, errors: [...DOCUMENTED_ERRORS, 'TimeoutError'], budget: BUDGET });
      const spec = replaySpec(run, NAMING);
      expect(spec).to.contain("import { replaySchedule, DOCUMENTED_ERRORS } from '../src/chaos/index.js';");
      expect(spec).to.contain(
        `await replaySchedule(agent, schedule, { boundMs: 60000, randomSeed: 3, budget: {"maxModelCalls":2}, errors: [...DOCUMENTED_ERRORS, "TimeoutError"] });`,
      );
      const some = replaySpec(await replaySchedule(budgetHeld, {}, { errors: [DOCUMENTED_ERRORS[0]!, 'AbortError'] }), NAMING);
      expect(some).to.contain(
        `errors: [...DOCUMENTED_ERRORS.filter((kind) => typeof kind !== 'string' && ["AllFallbacksFailedError"].includes(kind.name)), "AbortError"]`,
      );
    });

    it('custom invariants cannot be written out: the spec is refused, saying why, unless the options are named', async () => {
      const options = {
        faults: faults.schedule({ models: ['primary', 'secondary'] }),
        runs: 200,
        seed: 25,
        invariants: [
          {
            name: 'primary-answers',
            check: (r: { models: readonly { model: string }[] }) => (r.models.some((a) => a.model === 'secondary') ? 'the secondary was asked' : undefined),
          },
        ],
      };
      const report = await checkHealing(healing, options);
      if (report.ok) throw new Error('expected the custom invariant to fail');
      expect(report.failure.spec).to.equal(undefined);
      expect(report.failure.specMissing).to.contain("the run was checked with custom invariants ('primary-answers'), which a spec cannot write out");
      expect(report.message).to.contain('no replay spec: replaySpec: the run was checked with custom invariants');
      expect(() => replaySpec(report.failure.run)).to.throw(ChaosInputError, 'naming.options');
      const named = await checkHealing(healing, { ...options, spec: { options: 'healingOptions' } });
      if (named.ok) throw new Error('expected the custom invariant to fail');
      expect(named.failure.spec).to.contain("import { agent, healingOptions } from './agent.js';");
      expect(named.failure.spec).to.contain('await replaySchedule(agent, schedule, healingOptions);');
    });

    it('a spec says which runner it is for: the global it by default, or node:test / vitest imported', async () => {
      const run = await replaySchedule(healing, SCHEDULE);
      expect(replaySpec(run).split('\n')[0]).to.equal(
        "// a spec for mocha, jest or vitest (globals: true): `it` is the runner's global; for node --test, import { it } from 'node:test'",
      );
      expect(replaySpec(run, { runner: 'node:test' }).split('\n')[0]).to.equal("import { it } from 'node:test';");
      expect(replaySpec(run, { runner: 'vitest' }).split('\n')[0]).to.equal("import { it } from 'vitest';");
      expect(() => replaySpec(run, { runner: 'jasmine' as never })).to.throw(
        ChaosInputError,
        "naming.runner \"jasmine\" is none of 'globals', 'node:test', 'vitest'",
      );
    });
  });
});
