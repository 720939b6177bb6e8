/**
 * The AI SDK route under Restate, for real: what a user of `@restatedev/vercel-ai-middleware`
 * writes — `generateText` on `wrapLanguageModel({ model, middleware: durableCalls(ctx) })`, each
 * tool's effect in a `ctx.run` — with `toAiSdk(fallbackModel([...]))` as the model, in a service
 * under a real Restate server (spec/support/aiSdkEngineWorker.ts). The middleware makes each model
 * call (`doGenerate`: it wraps no stream) one `ctx.run`; rxheal heals inside it: the primary's 503 and its stream cut mid-answer cost
 * no step a failure and a re-run. Killed mid-answer, the service's next process gets the
 * invocation again and every model call Restate journaled comes back without running. And what
 * Restate's own retry of a thrown step adds when both providers are down: left on (the
 * middleware's default), it runs rxheal's whole healing again and again; `maxRetryAttempts: 1`
 * ends the call with rxheal's error after one. Needs Node ≥ 22 (spec/support/majors): .ci/run
 * runs it on Node 24.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import type { AiSdkWorkerArgs } from '../support/aiSdkEngineWorker.js';
import { effectsIn, majorsBundle, servicePort, stepsOf } from '../support/engineKills.js';
import { ANSWER, assistant, providers, spawnLife, type Life } from '../support/killResume.js';
import { majorsProject } from '../support/nextMajors.js';
import { startRestate, type RestateServer } from '../support/restateServer.js';

const WORKER = fileURLToPath(new URL('../support/aiSdkEngineWorker.ts', import.meta.url));

describe('the AI SDK route under Restate: toAiSdk(fallbackModel(…)) in @restatedev/vercel-ai-middleware’s durableCalls, a real Restate server', function () {
  this.timeout(120_000);
  let server: RestateServer | undefined;
  let worker: string;
  let port: number;
  let effects: string;

  before(async function () {
    const project = majorsProject('the Restate AI SDK specs (ai 7, the middleware and the SDK live in spec/support/majors)', 'Node 24');
    if (!project.ok) {
      console.log(`\n  [skipped] ${this.test?.parent?.fullTitle()}: ${project.reason}\n`);
      return this.skip();
    }
    const binary = join(project.dir, 'node_modules', '@restatedev', 'restate-server-linux-x64', 'bin', 'restate-server');
    [server, worker, port] = await Promise.all([startRestate(binary), majorsBundle(WORKER, project.dir), servicePort()]);
  });
  beforeEach(() => {
    effects = mkdtempSync(join(tmpdir(), 'rxheal-effects-'));
  });
  afterEach(() => rmSync(effects, { recursive: true, force: true }));
  after(async () => {
    await server?.stop();
  });

  /** One invocation, served by a process per entry of `lives` (each killed where it says, the last not). */
  async function invocation(
    p: { primary: LocalProvider; secondary: LocalProvider },
    lives: readonly Partial<AiSdkWorkerArgs>[],
  ): Promise<{ lives: Life[]; id: string }> {
    const base: AiSdkWorkerArgs = { engine: 'restate', primary: p.primary.url, secondary: p.secondary.url, effects, port };
    const out: Life[] = [];
    let id: string | undefined;
    for (const extra of lives) {
      const life = spawnLife(worker, { ...base, ...extra });
      if (id === undefined) {
        for (let i = 0; ; i++) {
          try {
            await server!.register(`http://127.0.0.1:${port}`);
            break;
          } catch (error) {
            if (i > 100) throw error;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
        id = await server!.send('seatChat', 'run');
      }
      out.push(await life);
    }
    return { lives: out, id: id! };
  }

  it('a 503 and a stream cut mid-answer are healed inside the model call’s step: one step a model call, none run again, the answer whole', async () => {
    const p = await providers();
    try {
      const { lives, id } = await invocation(p, [{}]);
      expect(await server!.attach(id)).to.equal(ANSWER);
      // four model calls (lookup, book, notify, the answer): four steps, each run once
      expect(stepsOf(lives[0]!)).to.have.length(4);
      expect(new Set(stepsOf(lives[0]!)).size).to.equal(1);
      // inside them: the 503 retried, the cut stream restarted on the secondary
      expect(p.primary.requests.map((r) => r.status)).to.include(503);
      expect(p.primary.requests.some((r) => r.end !== 'completed')).to.equal(true);
      for (const tool of ['lookup', 'book', 'notify']) expect(effectsIn(effects, tool), tool).to.equal(1);
    } finally {
      await Promise.all([p.primary.close(), p.secondary.close()]);
    }
  });

  it('the service killed mid-answer: Restate retries the invocation, the model calls it journaled come back without running, each tool’s effect once', async () => {
    const p = await providers();
    try {
      const { lives, id } = await invocation(p, [{ killAtStep: 4, killAfterMs: 40 }, {}]);
      expect(lives[0]!.killed).to.equal(true);
      expect(await server!.attach(id)).to.equal(ANSWER);
      expect(stepsOf(lives[0]!)).to.have.length(4);
      // the next process ran only the model call that was cut
      expect(stepsOf(lives[1]!)).to.have.length(1);
      for (const tool of ['lookup', 'book', 'notify']) expect(effectsIn(effects, tool), tool).to.equal(1);
    } finally {
      await Promise.all([p.primary.close(), p.secondary.close()]);
    }
  });

  it('both providers down: Restate’s retry of a thrown step, left on, runs rxheal’s whole healing again; maxRetryAttempts: 1 ends the call with rxheal’s error after one', async () => {
    const down = async (name: string) => startLocalProvider({ name, assistant, tokenDelayMs: 0, faults: [{ kind: 'status', status: 503 }] });
    const p = { primary: await down('primary'), secondary: await down('secondary') };
    const asked = (): number => p.primary.requests.length + p.secondary.requests.length;
    try {
      // maxRetryAttempts: 1 — the step's one attempt is rxheal's healing: the primary twice (one retry), the secondary twice
      const once = await invocation(p, [{ middleware: { maxRetryAttempts: 1 }, exitOnError: true }]);
      expect(stepsOf(once.lives[0]!)).to.have.length(1);
      expect(asked()).to.equal(4);
      const end = await server!.outcome(once.id);
      expect(end.status, end.body).to.not.equal(200);
      expect(end.body).to.match(/AllFallbacksFailedError|All 2 alternatives failed/);
      // the middleware's default: Restate retries the thrown step, each time rxheal's whole healing again
      const before = asked();
      const left = await invocation(p, [{ lifeMs: 4_000 }]);
      await server!.kill(left.id);
      const runs = stepsOf(left.lives[0]!).length;
      console.log(`      Restate's default retry of the thrown step: run ${runs} times in 4 s, ${asked() - before} requests (maxRetryAttempts: 1: once, 4)`);
      expect(runs, 'the step run again by Restate').to.be.at.least(3);
      expect(asked() - before, 'each run rxheal’s four requests').to.equal(4 * runs);
    } finally {
      await Promise.all([p.primary.close(), p.secondary.close()]);
    }
  });
});
