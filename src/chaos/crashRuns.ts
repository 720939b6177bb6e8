/**
 * Crash mode's runs of one schedule ({@link CrashRuns}): the run that never crashes, then the run
 * crashed at each of its points — restarted from the fork taken there when there is one (the run
 * up to point k is the same for every crash at k: recorded once, crashed many times), run whole
 * from the start otherwise. The forks are checked against whole runs: every point of the first
 * schedule, and one point of each schedule after it; where the two differ, the check is run again
 * with every crash run whole.
 *
 * @module
 */
import type { ChaosRun, Violation } from './invariants.js';
import type { FaultSchedule } from './schedule.js';
import { answerOfRun } from './crash.js';
import { replayCrashed, replayForCrashes, type AgentFactory, type CrashFork, type ReplayOptions } from './run.js';

/** checkHealing's own option (not in its type): every crash run whole, no fork (the check run again after a fork did not match). */
export const WHOLE = Symbol('rxheal.chaos.wholeCrashRuns');

/** What a crashed run did, as a string: two runs that did the same have the same one. */
function digest(run: ChaosRun): string {
  const end =
    run.end.kind === 'error'
      ? { ...run.end, error: run.end.error instanceof Error ? `${run.end.error.name}: ${run.end.error.message}` : String(run.end.error) }
      : run.end;
  return JSON.stringify([end, run.events, run.models, run.tools, run.pending, run.live, run.unhandled, run.crashPoints, run.crash ?? null, run.violations]);
}

/**
 * Crash mode's runs for a check: {@link check} runs one schedule's. `untrusted` turns true when a
 * fork's run differed from the same crash run whole (the agent's crash leaves behind something a
 * fork does not copy: a finalizer writing the world, a timer that outlives the run): the check
 * is then run again whole.
 *
 * @example
 * ```ts
 * const crashes = new CrashRuns(agent, replayOptions, false);
 * const { violations, crashedAt } = await crashes.check(schedule);
 * ```
 */
export class CrashRuns {
  /** Set when a fork's crashed run did not match the whole one. */
  untrusted = false;
  private schedules = 0;
  /** The answer of the run with no fault (undefined: it did not answer), once asked for. */
  private healthy: Promise<string | undefined> | undefined;

  constructor(
    private readonly agent: AgentFactory,
    private readonly options: ReplayOptions,
    private readonly whole: boolean,
  ) {}

  /** The run that never crashes, then (when it healed) each crash point's run, until one breaks an invariant. */
  async check(schedule: FaultSchedule): Promise<{ violations: readonly Violation[]; crashedAt: number | undefined }> {
    const { agent, options } = this;
    const { run, forks } = await replayForCrashes(agent, schedule, options);
    if (run.violations.length > 0) return { violations: run.violations, crashedAt: undefined };
    const forked = [...forks.keys()];
    // a run that gave up may answer once resumed (fresh retries): the answer it must give then
    const healthy = run.end.kind === 'error' ? await this.healthyAnswer() : undefined;
    const first = this.schedules++ === 0;
    // the points checked against whole runs: all of the first schedule's, then one a schedule, in turn
    const shadow = forked.length === 0 ? undefined : forked[(this.schedules - 1) % forked.length];
    for (let at = 1; at <= run.crashPoints.length; at++) {
      const crashOptions: ReplayOptions = { ...options, crashAt: at };
      const fork: CrashFork | undefined = this.whole || this.untrusted ? undefined : forks.get(at);
      let crashed = await replayCrashed(agent, schedule, crashOptions, run, fork, healthy);
      if (fork !== undefined && (first || at === shadow)) {
        const whole = await replayCrashed(agent, schedule, crashOptions, run, undefined, healthy);
        if (digest(whole) !== digest(crashed)) {
          this.untrusted = true;
          crashed = whole;
        }
      }
      if (crashed.violations.length > 0) return { violations: crashed.violations, crashedAt: at };
    }
    return { violations: [], crashedAt: undefined };
  }

  /** The answer of the agent's run with no fault at all (replayed once per check). */
  private healthyAnswer(): Promise<string | undefined> {
    this.healthy ??= replayForCrashes(this.agent, {}, this.options).then(({ run }) => answerOfRun(run));
    return this.healthy;
  }
}
