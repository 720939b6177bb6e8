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
import { ChaosInputError, checkHealing, faults, incidentSpec, recordIncident, replaySchedule, replaySpec, type FaultSchedule } from '../../src/chaos/index.js';
import { runSpecFiles } from '../support/runSpecFiles.js';
import { healing, retriesBooking } from './agents.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NAMING = { from: '../spec/chaos/agents.js', chaos: '../src/chaos/index.js' } as const;
/** The primary's reset after 2 events, then a 503 the retry meets: healed by the retries. */
const SCHEDULE: FaultSchedule = { models: { primary: [{ kind: 'reset', afterEvents: 2 }, { kind: 'status', status: 503 }] } };

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
    expect(() => incidentSpec({ ...incident, version: 2 } as unknown as typeof incident)).to.throw(ChaosInputError, 'incidentSpec: an incident of version 2; this rxheal writes version 1');
    expect(() => incidentSpec(incident, { agentArgs: [{ history: [] }, () => 1] })).to.throw(ChaosInputError, 'incidentSpec: naming.agentArgs[1] is not a JSON value');
    expect(() => incidentSpec(incident, { agentArgs: [new Date(0)] })).to.throw(ChaosInputError, 'naming.agentArgs[0] is not a JSON value');
    expect(() => incidentSpec(incident, { agent: 'make agent' })).to.throw(ChaosInputError, 'incidentSpec: naming.agent "make agent" is not an identifier');
    expect(() => incidentSpec(incident, { from: "./a'gent.js" })).to.throw(ChaosInputError, `incidentSpec: naming.from "./a'gent.js" is not a module specifier`);
    const run = await replaySchedule(healing, SCHEDULE);
    expect(() => replaySpec(run, { options: 'opts;' })).to.throw(ChaosInputError, 'replaySpec: naming.options "opts;" is not an identifier');
  });

  it('run by mocha: replaySpec fails on the broken agent and passes on the one that heals; incidentSpec passes as recorded, fails when the healing differs', async () => {
    const broken = await checkHealing(retriesBooking, { faults: faults.schedule({ tools: ['book'], tool: { weights: { stall: 0, timeout: 0 } } }), runs: 100, seed: 25 });
    if (broken.ok) throw new Error('expected checkHealing to find the broken agent');
    const files: Record<string, string> = {
      'broken.spec.ts': replaySpec(broken.failure.run, { ...NAMING, agent: 'retriesBooking' }),
      'fixed.spec.ts': replaySpec(broken.failure.run, { ...NAMING, agent: 'healing' }),
    };
    const incident = recordIncident((await replaySchedule(healing, SCHEDULE)).events.map((e) => e.event));
    files['incident.spec.ts'] = incidentSpec(incident, { ...NAMING, agent: 'healing', title: 'incident as recorded' });
    files['other.spec.ts'] = incidentSpec({ ...incident, healing: incident.healing.slice(1) }, { ...NAMING, agent: 'healing', title: 'incident healed otherwise' });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const run = await runSpecFiles(Object.keys(files).map((name) => join(dir, name)));
    expect(run.passed).to.have.members(['heals under the schedule checkHealing found', 'incident as recorded']);
    expect(run.failed.map((f) => f.title)).to.have.members(['heals under the schedule checkHealing found', 'incident healed otherwise']);
    expect(run.failed.find((f) => f.title === 'incident healed otherwise')!.message).to.contain('retry model:primary #1 after 200 ms');
    expect(run.code).to.equal(2);
  });
});
