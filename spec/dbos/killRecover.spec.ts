/**
 * rxheal inside DBOS, for real: a DBOS 5.x workflow on Debian's Postgres (its system database),
 * the agent journaled on DBOS's steps (`dbosJournal`), its worker process SIGKILLed mid-tool and
 * mid-answer and DBOS recovering the workflow at the next process's launch — checked against the
 * fault-free run (spec/support/engineKills.ts). Needs Node ≥ 22 (spec/support/majors, where DBOS
 * is installed beside the engines' other packages): .ci/run runs it on Node 24.
 */
import { majorsProject } from '../support/nextMajors.js';
import { checkEpisode } from '../support/killResume.js';
import { checkReplays, ENGINE_KILLS, engineEpisode, engineWorkerBundle, planName } from '../support/engineKills.js';
import { postgresProgram, startPostgres, type PostgresServer } from '../support/postgresServer.js';
import { requireProgram } from '../support/systemPackage.js';
import type { Episode } from '../support/killResume.js';
import type { KillPoint } from '../support/durableAgentWorker.js';

describe('rxheal/dbos: an agent workflow killed and recovered by DBOS (Postgres)', function () {
  this.timeout(180_000);
  let server: PostgresServer | undefined;
  let worker: string;
  let url: string;
  let baseline: Episode;

  before(async function () {
    const project = majorsProject('DBOS specs (the engines live in spec/support/majors)', 'Node 24');
    if (!project.ok) {
      console.log(`\n  [skipped] ${this.test?.parent?.fullTitle()}: ${project.reason}\n`);
      return this.skip();
    }
    const postgres = requireProgram(this, postgresProgram());
    [server, worker] = await Promise.all([startPostgres(postgres, { fsync: false }), engineWorkerBundle(project.dir)]);
    url = server.connectionString.replace(/\/postgres$/, '/rxheal_dbos');
    baseline = await engineEpisode(worker, { engine: 'dbos', url }, []);
  });

  after(async () => {
    await server?.stop();
  });

  it('the workflow not killed: the answer, in one life', () => {
    checkEpisode(baseline, baseline, []);
    checkReplays(baseline);
  });

  for (const kills of ENGINE_KILLS)
    it(`killed at ${planName(kills)}: recovered by DBOS, the same answer, nothing journaled called again`, async () => {
      const run = await engineEpisode(worker, { engine: 'dbos', url }, kills);
      checkEpisode(run, baseline, kills);
      checkReplays(run);
    });

  it('with an effect ledger on the same Postgres (postgresJournal), killed after the booking, after the notice and mid-answer: the ledger, keyed as the tools’ steps, answers', async () => {
    const ordered: KillPoint[] = [
      { at: 'effect', tool: 'book', phase: 'after' },
      { at: 'effect', tool: 'notify', phase: 'after' },
      { at: 'delta', n: 5 },
    ];
    const run = await engineEpisode(worker, { engine: 'dbos', url }, ordered, { kind: 'postgres', connectionString: server!.connectionString });
    checkEpisode(run, baseline, ordered);
    checkReplays(run);
  });
});
