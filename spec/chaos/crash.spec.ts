/**
 * rxheal/chaos's crash mode: `checkHealing({ crash: true })` kills each schedule's run once at
 * every crash point (journal writes in flight and committed, each call started, each model's
 * first words) and resumes it from `chaos.journal` with a fresh agent; `crash-anywhere` and
 * `side-effects-once` across the crash. A five-step durable agent passes; one whose booking
 * tool's `verify` lies (so the booking runs again on resume) and one that does not journal are
 * caught and shrunk to one crash.
 */
import { expect } from 'chai';
import { agentFor } from './clerk.js';
import { ChaosInputError, checkHealing, faults, replaySchedule, type ChaosRun, type FaultSchedule } from '../../src/chaos/index.js';
import { replayCrashed, replayForCrashes } from '../../src/chaos/run.js';

const schedules = faults.schedule({ models: ['primary', 'secondary'], tools: ['lookup'] });

describe('rxheal/chaos crash mode: checkHealing({ crash: true })', function () {
  this.timeout(120_000);

  it('a run passes its crash points in order: journal records committed, calls started, tools running, a model answering', async () => {
    const run = await replaySchedule(agentFor(), {});
    expect(run.violations).to.deep.equal([]);
    expect(run.crashPoints).to.include.members([
      'start committed',
      'a model answering',
      'message committed',
      'tool-start committed',
      'tool book running',
      'end committed',
    ]);
    expect(run.crashPoints.filter((p) => p.endsWith('committed')).length).to.be.greaterThan(8);
    // a point where nothing moved since the one before is the same crash: a tool's call-start right after its start record
    expect(run.crashPoints).not.to.include('tool book started');
    expect(run.crash).to.equal(undefined);
  });

  it('the durable agent heals wherever it crashes: every point of 40 schedules', async () => {
    const report = await checkHealing(agentFor(), { faults: schedules, runs: 40, seed: 7, crash: true });
    expect(report.ok, report.ok ? '' : report.message).to.equal(true);
  });

  it('crashed inside notify (no verify): the resumed run reports the outcome unknown, tells the model, and gives the same answer', async () => {
    const points = (await replaySchedule(agentFor(), {})).crashPoints;
    const at = points.indexOf('tool notify running') + 1;
    const run = await replaySchedule(agentFor(), {}, { crashAt: at });
    expect(run.crash?.point).to.equal('tool notify running');
    expect(run.violations).to.deep.equal([]);
    expect(run.events.map((e) => e.event.type)).to.include('tool-outcome-unknown');
  });

  it('a verify that lies (the booking run again on resume) is caught by side-effects-once across the crash, and shrunk to one crash with no fault', async () => {
    const report = await checkHealing(agentFor({ lyingVerify: true }), { faults: schedules, runs: 20, seed: 7, crash: true });
    expect(report.ok).to.equal(false);
    if (report.ok) return;
    const { failure } = report;
    expect(failure.violations.map((v) => v.invariant)).to.include('side-effects-once');
    expect(failure.schedule).to.deep.equal({});
    expect(failure.run.crash?.point).to.match(/book/);
    expect(failure.spec).to.include(`crashAt: ${failure.run.options.crashAt}`);
    // the printed replay reproduces it; without the crash, the same agent heals
    expect((await replaySchedule(agentFor({ lyingVerify: true }), failure.schedule, failure.run.options)).violations).not.to.deep.equal([]);
    expect((await checkHealing(agentFor({ lyingVerify: true }), { faults: schedules, runs: 20, seed: 7 })).ok).to.equal(true);
  });

  it('an agent that does not journal its run starts over after a crash: crash-anywhere (the model asked again) and the booking twice', async () => {
    const report = await checkHealing(agentFor({ noJournal: true }), { faults: schedules, runs: 5, seed: 7, crash: true });
    expect(report.ok).to.equal(false);
    if (report.ok) return;
    expect(report.failure.violations.map((v) => v.invariant)).to.satisfy(
      (names: string[]) => names.includes('crash-anywhere') || names.includes('side-effects-once'),
    );
    expect(report.message).to.match(/crashed at /);
  });

  it("a crash point's run restarted from the uncrashed run's fork there is the run crashed there whole, at every point of a faulty schedule", async () => {
    const schedule: FaultSchedule = {
      models: { primary: [{ kind: 'reset', afterEvents: 2 }, { kind: 'ok' }, { kind: 'down', forMs: 300 }] },
      tools: { lookup: [{ kind: 'throw', status: 503 }] },
    };
    const agent = agentFor();
    const { run, forks } = await replayForCrashes(agent, schedule, {});
    expect(run.violations).to.deep.equal([]);
    // every point but a call's start (the call is begun after its announcement: that crash runs whole)
    expect([...forks.keys()].map((at) => run.crashPoints[at - 1])).to.deep.equal(run.crashPoints.filter((p) => !p.endsWith(' started')));
    expect(forks.size).to.be.greaterThan(15);
    const seen = (r: ChaosRun): string =>
      JSON.stringify([r.end.kind, r.end.at, r.events, r.models, r.tools, r.pending, r.live, r.crashPoints, r.crash, r.violations]);
    for (const [at, fork] of forks) {
      const whole = await replayCrashed(agent, schedule, { crashAt: at }, run);
      const forked = await replayCrashed(agent, schedule, { crashAt: at }, run, fork);
      expect(seen(forked), `crashed at ${at}, ${run.crashPoints[at - 1]}`).to.equal(seen(whole));
    }
  });

  it('a crash whose teardown leaves what a fork cannot copy (bookings flushed to the world on exit) is checked with every crash run whole', async () => {
    // restarted from a fork, the flushed booking would be missing and booked again: only the whole run, its teardown run at the crash, heals
    const point = (await replaySchedule(agentFor({ flushesOnExit: true }), {})).crashPoints.indexOf('tool book running') + 1;
    const { run, forks } = await replayForCrashes(agentFor({ flushesOnExit: true }), {}, {});
    const forked = await replayCrashed(agentFor({ flushesOnExit: true }), {}, { crashAt: point }, run, forks.get(point));
    expect(forked.violations.map((v) => v.invariant)).to.include('side-effects-once');
    expect((await replaySchedule(agentFor({ flushesOnExit: true }), {}, { crashAt: point })).violations).to.deep.equal([]);
    const report = await checkHealing(agentFor({ flushesOnExit: true }), { faults: schedules, runs: 5, seed: 7, crash: true });
    expect(report.ok, report.ok ? '' : report.message).to.equal(true);
  });

  it('a run that fails, crashed after its end was journaled, fails again with the error replayed by name (typed-outcome across the crash)', async () => {
    const down: FaultSchedule = { models: { primary: [{ kind: 'down', forMs: 60_000 }], secondary: [{ kind: 'down', forMs: 60_000 }] } };
    const base = await replaySchedule(agentFor(), down);
    expect(base.end.kind).to.equal('error');
    const at = base.crashPoints.lastIndexOf('end committed') + 1;
    expect(at).to.be.greaterThan(0);
    const run = await replaySchedule(agentFor(), down, { crashAt: at });
    expect(run.end.kind === 'error' && (run.end.error as Error).name).to.equal((base.end as { error: Error }).error.name);
    expect(run.end.kind === 'error' && run.end.error).not.to.be.instanceOf((base.end as { error: Error }).error.constructor);
    expect(run.violations).to.deep.equal([]);
  });

  it('a crash that helps is no violation: a run that gave up, resumed with fresh retries, answers as a run with no fault does — any other answer is caught', async () => {
    // the primary down 601 ms, the secondary malformed: uncrashed, every fallback fails before the primary is back
    const helps: FaultSchedule = {
      models: { primary: [{ kind: 'down', forMs: 601 }], secondary: [0, 1, 2].map(() => ({ kind: 'malformed' as const, afterEvents: 0 })) },
    };
    const { run: base } = await replayForCrashes(agentFor(), helps, {});
    expect(base.end.kind === 'error' && (base.end.error as Error).name).to.equal('AllFallbacksFailedError');
    const messages = (await replaySchedule(agentFor(), {})).events.map((e) => e.event).filter((e) => e.type === 'message' && e.message.role === 'assistant');
    const last = messages.at(-1);
    const answer = last?.type === 'message' ? last.message.content : undefined;
    expect(answer).to.equal('Seat 1A is yours and you have been texted.');
    const crashAnywhere = (run: ChaosRun): string[] => run.violations.filter((v) => v.invariant === 'crash-anywhere').map((v) => v.message);
    let helped = 0;
    for (let at = 1; at <= base.crashPoints.length; at++) {
      const judged = await replayCrashed(agentFor(), helps, { crashAt: at }, base, undefined, answer);
      if (judged.end.kind !== 'complete') continue;
      helped++;
      expect(crashAnywhere(judged), `crash point ${at}`).to.deep.equal([]);
      // the same run judged against another fault-free answer: caught, naming both
      const wrong = await replayCrashed(agentFor(), helps, { crashAt: at }, base, undefined, 'Seat 2B is yours.');
      expect(crashAnywhere(wrong).join('\n')).to.match(/uncrashed, it failed with AllFallbacksFailedError, and with no fault it answers "Seat 2B is yours\."/);
    }
    expect(helped).to.be.greaterThan(0);
    for (const seed of [25, 8]) {
      const report = await checkHealing(agentFor(), { faults: schedules, runs: 60, seed, crash: true });
      expect(report.ok, report.ok ? '' : report.message).to.equal(true);
    }
  });

  it('bad options: crash not a boolean, crashAt not a whole number >= 1, both at once', async () => {
    const bad = async (p: Promise<unknown>, pattern: RegExp): Promise<void> => {
      const error = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(ChaosInputError);
      expect((error as Error).message).to.match(pattern);
    };
    await bad(checkHealing(agentFor(), { faults: schedules, crash: 'yes' as unknown as boolean }), /options\.crash must be true or false/);
    await bad(replaySchedule(agentFor(), {}, { crashAt: 0 }), /options\.crashAt must be a whole number >= 1/);
    await bad(checkHealing(agentFor(), { faults: schedules, crash: true, crashAt: 2 }), /crashAt is for replaySchedule/);
  });
});
