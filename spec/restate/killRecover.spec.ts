/**
 * rxheal inside Restate, for real: the Restate server (the binary of `@restatedev/restate-server`)
 * on 127.0.0.1, a service handler running the agent journaled on Restate's steps
 * (`restateJournal(ctx)`), its process SIGKILLed mid-tool and mid-answer and Restate retrying the
 * invocation on the next process — checked against the fault-free run
 * (spec/support/engineKills.ts). Needs Node ≥ 22 (the SDK, in spec/support/majors): .ci/run runs
 * it on Node 24.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { majorsProject } from '../support/nextMajors.js';
import { ANSWER, checkEpisode, type Episode } from '../support/killResume.js';
import { checkReplays, ENGINE_KILLS, engineEpisode, engineWorkerBundle, planName, servicePort } from '../support/engineKills.js';
import { startRestate, type RestateServer } from '../support/restateServer.js';
import type { KillPoint } from '../support/durableAgentWorker.js';

describe('rxheal/restate: an agent service killed and retried by the Restate server', function () {
  this.timeout(180_000);
  let server: RestateServer | undefined;
  let worker: string;
  let port: number;
  let baseline: Episode & { output?: unknown };

  before(async function () {
    const project = majorsProject('Restate specs (the SDK and the server live in spec/support/majors)', 'Node 24');
    if (!project.ok) {
      console.log(`\n  [skipped] ${this.test?.parent?.fullTitle()}: ${project.reason}\n`);
      return this.skip();
    }
    const binary = join(project.dir, 'node_modules', '@restatedev', 'restate-server-linux-x64', 'bin', 'restate-server');
    [server, worker, port] = await Promise.all([startRestate(binary), engineWorkerBundle(project.dir), servicePort()]);
    baseline = await engineEpisode(worker, { engine: 'restate', server, port }, []);
  });

  after(async () => {
    await server?.stop();
  });

  it('the invocation not killed: the answer, in one life, and as its output', () => {
    checkEpisode(baseline, baseline, []);
    checkReplays(baseline);
    expect(baseline.output).to.equal(ANSWER);
  });

  for (const kills of ENGINE_KILLS)
    it(`killed at ${planName(kills)}: retried by Restate, the same answer, nothing journaled called again`, async () => {
      const run = await engineEpisode(worker, { engine: 'restate', server: server!, port }, kills);
      checkEpisode(run, baseline, kills);
      checkReplays(run);
      expect(run.output).to.equal(ANSWER);
    });

  it('with an effect ledger on a file journal, killed after the booking, after the notice and mid-answer: the ledger, keyed as the tools’ steps, answers', async () => {
    const ordered: KillPoint[] = [
      { at: 'effect', tool: 'book', phase: 'after' },
      { at: 'effect', tool: 'notify', phase: 'after' },
      { at: 'delta', n: 5 },
    ];
    const dir = mkdtempSync(join(tmpdir(), 'rxheal-ledger-'));
    try {
      const run = await engineEpisode(worker, { engine: 'restate', server: server!, port }, ordered, { kind: 'file', dir });
      checkEpisode(run, baseline, ordered);
      checkReplays(run);
      expect(run.output).to.equal(ANSWER);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
