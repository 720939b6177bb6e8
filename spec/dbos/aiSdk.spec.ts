/**
 * The AI SDK route under DBOS, for real: what a user of `@dbos-inc/vercel-ai` writes — `streamText`
 * on `wrapLanguageModel({ model, middleware: durableCalls(opts) })` in a DBOS workflow, each
 * tool's effect in a `DBOS.runStep` — with `toAiSdk(fallbackModel([...]))` as the model, on
 * Debian's Postgres (spec/support/aiSdkEngineWorker.ts). The middleware makes each model call
 * (its stream too) one step; rxheal heals inside it: the primary's 503 and its stream cut mid-
 * answer cost no step a failure and a re-run. Killed mid-answer, the workflow is recovered by the
 * next process's launch and every model call DBOS journaled comes back without running. And what
 * DBOS's own retry of a failed step adds when both providers are down: left on (the middleware's
 * default, `retriesAllowed: true`, 3 attempts), it runs rxheal's whole healing three times;
 * `retriesAllowed: false` runs it once.
 *
 * `@dbos-inc/vercel-ai` 0.1.5 declares `@dbos-inc/dbos-sdk@^4.21.0` as its peer, so npm refuses it
 * beside DBOS 5.x; spec/support/majors overrides that peer with its 5.3 (package.json
 * `overrides`), which the middleware runs on. Needs Node ≥ 22 (the middleware): .ci/run runs it
 * on Node 24.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import type { AiSdkWorkerArgs } from '../support/aiSdkEngineWorker.js';
import { effectsIn, majorsBundle, stepsOf } from '../support/engineKills.js';
import { ANSWER, assistant, providers, spawnLife, type Life } from '../support/killResume.js';
import { majorsProject } from '../support/nextMajors.js';
import { postgresProgram, startPostgres, type PostgresServer } from '../support/postgresServer.js';
import { requireProgram } from '../support/systemPackage.js';

const WORKER = fileURLToPath(new URL('../support/aiSdkEngineWorker.ts', import.meta.url));
let unique = 0;

describe('the AI SDK route under DBOS: toAiSdk(fallbackModel(…)) in @dbos-inc/vercel-ai’s durableCalls, on Postgres', function () {
  this.timeout(120_000);
  let postgres: PostgresServer | undefined;
  let worker: string;
  let url: string;
  let effects: string;

  before(async function () {
    const project = majorsProject('the DBOS AI SDK specs (ai 7, the middleware and DBOS live in spec/support/majors)', 'Node 24');
    if (!project.ok) {
      console.log(`\n  [skipped] ${this.test?.parent?.fullTitle()}: ${project.reason}\n`);
      return this.skip();
    }
    [postgres, worker] = await Promise.all([startPostgres(requireProgram(this, postgresProgram()), { fsync: false }), majorsBundle(WORKER, project.dir)]);
    url = postgres.connectionString.replace(/\/postgres$/, '/rxheal_ai_sdk');
  });
  beforeEach(() => {
    effects = mkdtempSync(join(tmpdir(), 'rxheal-effects-'));
  });
  afterEach(() => rmSync(effects, { recursive: true, force: true }));
  after(async () => {
    await postgres?.stop();
  });

  /** One workflow, run by a process per entry of `lives` (each killed where it says; the first starts it). */
  async function workflow(p: { primary: LocalProvider; secondary: LocalProvider }, lives: readonly Partial<AiSdkWorkerArgs>[]): Promise<Life[]> {
    const workflowId = `seat-chat-${process.pid}-${++unique}`;
    const out: Life[] = [];
    for (const [i, extra] of lives.entries())
      out.push(
        await spawnLife(worker, {
          engine: 'dbos',
          primary: p.primary.url,
          secondary: p.secondary.url,
          effects,
          dbos: { workflowId, url, start: i === 0 },
          ...extra,
        } satisfies AiSdkWorkerArgs),
      );
    return out;
  }
  const answerOf = (life: Life) => life.lines.find((l) => 'done' in l);

  it('a 503 and a stream cut mid-answer are healed inside the model call’s step: one step a model call, none run again, the answer whole', async () => {
    const p = await providers();
    try {
      const [life] = await workflow(p, [{ middleware: { retriesAllowed: false } }]);
      expect(answerOf(life!)).to.deep.include({ done: 'answer', text: ANSWER });
      expect(stepsOf(life!)).to.have.length(4);
      expect(p.primary.requests.map((r) => r.status)).to.include(503);
      expect(p.primary.requests.some((r) => r.end !== 'completed')).to.equal(true);
      for (const tool of ['lookup', 'book', 'notify']) expect(effectsIn(effects, tool), tool).to.equal(1);
    } finally {
      await Promise.all([p.primary.close(), p.secondary.close()]);
    }
  });

  it('the worker killed mid-answer: DBOS recovers the workflow, the model calls it journaled come back without running, each tool’s effect once', async () => {
    const p = await providers();
    try {
      const lives = await workflow(p, [{ middleware: { retriesAllowed: false }, killAtStep: 4, killAfterMs: 40 }, { middleware: { retriesAllowed: false } }]);
      expect(lives[0]!.killed).to.equal(true);
      expect(stepsOf(lives[0]!)).to.have.length(4);
      expect(stepsOf(lives[1]!), 'the next process ran only the model call that was cut').to.have.length(1);
      expect(answerOf(lives[1]!)).to.deep.include({ done: 'answer', text: ANSWER });
      for (const tool of ['lookup', 'book', 'notify']) expect(effectsIn(effects, tool), tool).to.equal(1);
    } finally {
      await Promise.all([p.primary.close(), p.secondary.close()]);
    }
  });

  it('both providers down: DBOS’s step retries, left on, run rxheal’s whole healing three times; retriesAllowed: false once', async () => {
    const down = async (name: string) => startLocalProvider({ name, assistant, tokenDelayMs: 0, faults: [{ kind: 'status', status: 503 }] });
    const p = { primary: await down('primary'), secondary: await down('secondary') };
    const asked = (): number => p.primary.requests.length + p.secondary.requests.length;
    try {
      const [once] = await workflow(p, [{ middleware: { retriesAllowed: false }, exitOnError: true }]);
      expect(stepsOf(once!)).to.have.length(1);
      // rxheal's healing of one model call: the primary twice (one retry), then the secondary twice
      expect(asked()).to.equal(4);
      expect(answerOf(once!)).to.deep.include({ done: 'error' });
      const [left] = await workflow(p, [{ middleware: { intervalSeconds: 0.1 }, exitOnError: true }]);
      expect(stepsOf(left!), 'the step run again by DBOS (maxAttempts 3)').to.have.length(3);
      expect(asked() - 4, 'each attempt rxheal’s four requests').to.equal(12);
    } finally {
      await Promise.all([p.primary.close(), p.secondary.close()]);
    }
  });
});
