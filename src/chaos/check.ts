/**
 * {@link checkHealing}: the user's agent under many fault schedules, as a fast-check property in
 * virtual time. A failing schedule is shrunk by fast-check to a minimal one and reported as a
 * marble diagram of its run and a spec that replays it. {@link assertHealing} throws that report.
 *
 * @module
 */
import { fc, type Arbitrary } from './fastCheck.js';
import type { FaultSchedule } from './schedule.js';
import { ChaosInputError, compactSchedule } from './schedule.js';
import { SCHEDULE_NAMES, type ScheduleArbitrary } from './faults.js';
import type { ChaosRun, Violation } from './invariants.js';
import { marbleDiagram, replaySpec, type ReplaySpecNaming } from './report.js';
import { replaySchedule, type AgentFactory, type ReplayOptions } from './run.js';
import { CrashRuns, WHOLE } from './crashRuns.js';

/**
 * Options of {@link checkHealing}: the schedules (an arbitrary, e.g. `faults.schedule({...})`),
 * how many runs and from which seed, and the replay options every run shares.
 *
 * @example
 * ```ts
 * const options: CheckHealingOptions = { faults: faults.schedule({ models: ['primary', 'secondary'] }), runs: 500, seed: 42, budget: { maxModelCalls: 8 } };
 * ```
 */
export interface CheckHealingOptions extends ReplayOptions {
  readonly faults: Arbitrary<FaultSchedule>;
  /** Schedules tried (fast-check's `numRuns`). Defaults to 100. */
  readonly runs?: number;
  /** fast-check's seed: the same seed tries the same schedules. Defaults to fast-check's (random; reported). */
  readonly seed?: number;
  /** How the replay spec names its imports (and, with `options`, the export holding these options). */
  readonly spec?: ReplaySpecNaming;
  /**
   * Crash mode: each schedule is also run crashed once at every one of its crash points (journal
   * writes in flight and committed, each call started, each model's first words: see
   * `ChaosRun.crashPoints`) and resumed from `chaos.journal` by a fresh agent, each checked by
   * `crash-anywhere` (the same end as the run that never crashed, at most one turn's model calls
   * more) and by the invariants that hold across a crash (`side-effects-once` among them: a
   * non-idempotent tool run again on resume is caught). The agent must journal its run:
   * `runAgent({ ...config, runId: chaos.runId, journal: chaos.journal })`. A failure names its
   * crash point; its replay spec carries it (`crashAt`).
   */
  readonly crash?: boolean;
}

/**
 * A failure, shrunk: the minimal schedule fast-check found, its run, and how to show and replay it.
 *
 * @example
 * ```ts
 * if (!report.ok) console.log(report.failure.marbles, '\n', report.failure.spec ?? report.failure.specMissing);
 * ```
 */
export interface HealingFailure {
  /** The shrunk schedule, compacted (trailing `ok` faults and empty lists left out). */
  readonly schedule: FaultSchedule;
  /**
   * What is wrong: the replay's violations — never empty. When the shrunk schedule healed on
   * its replay although it broke an invariant during the check, the violations the check saw
   * and `replays-same` saying so (the agent does not replay deterministically).
   */
  readonly violations: readonly Violation[];
  /** The run under that schedule (its replay). */
  readonly run: ChaosRun;
  /** Shrinking steps fast-check took. */
  readonly shrinks: number;
  /** fast-check's path to the counterexample (with the seed, it reruns exactly this case). */
  readonly path: string;
  /** {@link marbleDiagram} of the run. */
  readonly marbles: string;
  /** {@link replaySpec} of the run; undefined when it cannot carry what the check needs to fail (see `specMissing`). */
  readonly spec: string | undefined;
  /** Why there is no `spec`, and how to have one (name the export holding the options). */
  readonly specMissing?: string;
}

/**
 * What {@link checkHealing} found: `ok`, how many schedules ran, the seed; on failure, the shrunk
 * failure and a `message` with all of it.
 *
 * @example
 * ```ts
 * const report: HealingReport = await checkHealing(agent, { faults: schedules });
 * ```
 */
export type HealingReport =
  | { readonly ok: true; readonly runs: number; readonly seed: number }
  | { readonly ok: false; readonly runs: number; readonly seed: number; readonly failure: HealingFailure; readonly message: string };

/** A counterexample's report text. */
function describeFailure(failure: HealingFailure, seed: number, runs: number): string {
  return [
    `checkHealing: the agent did not heal (after ${runs} schedule${runs === 1 ? '' : 's'}, seed ${seed}, path "${failure.path}", ${failure.shrinks} shrinks)`,
    ...failure.violations.map((v) => `  ${v.invariant}: ${v.message}`),
    '',
    `schedule: ${JSON.stringify(failure.schedule)}`,
    '',
    failure.marbles,
    '',
    ...(failure.spec === undefined ? [`no replay spec: ${failure.specMissing}`] : ['replay it:', failure.spec]),
  ].join('\n');
}

/** Whether `u` is a fast-check arbitrary (what `faults.schedule` returns, or one of the user's). */
const isArbitrary = (u: unknown): u is Arbitrary<FaultSchedule> =>
  u instanceof fc.Arbitrary ||
  (typeof u === 'object' && u !== null && typeof (u as Arbitrary<unknown>).generate === 'function' && typeof (u as Arbitrary<unknown>).shrink === 'function');

/**
 * Runs the agent factory under `options.runs` schedules drawn from `options.faults`, each in
 * virtual time, and checks every run against the invariants (see `builtinInvariants`: it ends
 * within the bound, answers or fails with a documented typed error, delivers each answer's text
 * whole and once, runs non-idempotent tools at most once per call, holds the budget, reports
 * every retry and fallback on the hub, leaves nothing scheduled) plus `options.invariants`. A
 * failing schedule is shrunk by fast-check and reported with the marble diagram of its run and
 * a spec that replays it (with the check's options in it: see `replaySpec`). Before any
 * schedule, the factory runs once without faults: one that throws, or a schedule naming what the
 * agent does not wrap, is a {@link ChaosInputError}, never a shrunk schedule. Every run draws the
 * same seeded numbers (`randomSeed`), so a failure replays as it was found.
 *
 * @example
 * ```ts
 * const report = await checkHealing(
 *   (chaos) => runAgent({ model: fallbackModel([chaos.model(primary), chaos.model(secondary)], { breakers: new CircuitBreakerRegistry() }), messages }),
 *   { faults: faults.schedule({ models: ['primary', 'secondary'] }), runs: 200 },
 * );
 * if (!report.ok) console.log(report.message);
 * ```
 * @throws {ChaosInputError} (a rejection) for an agent factory that throws or returns no
 * observable, schedules naming a model or tool the agent does not wrap, or bad options.
 */
export async function checkHealing(agent: AgentFactory, options: CheckHealingOptions): Promise<HealingReport> {
  if (!isArbitrary(options?.faults))
    throw new ChaosInputError(
      `checkHealing: options.faults must be a fast-check arbitrary of schedules (what faults.schedule returns), got ${String(options?.faults)}`,
    );
  const runs = options.runs ?? 100;
  if (!Number.isInteger(runs) || runs < 1) throw new ChaosInputError(`checkHealing: options.runs must be a whole number >= 1, got ${String(runs)}`);
  if (options.seed !== undefined && !Number.isSafeInteger(options.seed))
    throw new ChaosInputError(`checkHealing: options.seed must be a whole number, got ${String(options.seed)}`);
  if (options.crash !== undefined && typeof options.crash !== 'boolean')
    throw new ChaosInputError(`checkHealing: options.crash must be true or false, got ${String(options.crash)}`);
  if (options.crash === true && options.crashAt !== undefined)
    throw new ChaosInputError('checkHealing: options.crash tries every crash point; options.crashAt is for replaySchedule (a spec replaying one)');
  const { crash: crashMode, [WHOLE]: whole, ...replayOptions } = options as CheckHealingOptions & { readonly [WHOLE]?: boolean };
  // the agent as it is, without faults: a factory that throws is reported as such
  await replaySchedule(agent, {}, replayOptions);
  const names = (options.faults as Partial<ScheduleArbitrary>)[SCHEDULE_NAMES];
  if (names)
    await replaySchedule(
      agent,
      { models: Object.fromEntries(names.models.map((n) => [n, []])), tools: Object.fromEntries(names.tools.map((n) => [n, []])) },
      replayOptions,
    );
  let inputError: unknown;
  // what the last failing run broke: fast-check's counterexample is the last schedule that failed
  let broken: { readonly schedule: FaultSchedule; readonly violations: readonly Violation[]; readonly crashAt: number | undefined } | undefined;
  const crashes = crashMode === true ? new CrashRuns(agent, replayOptions, whole === true) : undefined;
  const property = fc.asyncProperty(options.faults, async (schedule) => {
    if (inputError !== undefined) return true;
    try {
      let violations: readonly Violation[];
      let crashedAt: number | undefined;
      if (crashes === undefined) violations = (await replaySchedule(agent, schedule, replayOptions)).violations;
      else ({ violations, crashedAt } = await crashes.check(schedule));
      if (violations.length > 0) broken = { schedule, violations, crashAt: crashedAt };
      return violations.length === 0;
    } catch (error) {
      if (!(error instanceof ChaosInputError)) throw error;
      inputError = error;
      return true;
    }
  });
  const details = await fc.check(property, { numRuns: runs, ...(options.seed === undefined ? {} : { seed: options.seed }) });
  if (inputError !== undefined) throw inputError;
  // a crash restarted from a fork ended otherwise than the same crash run whole: the check again, every crash run whole
  if (crashes?.untrusted === true) return checkHealing(agent, { ...options, [WHOLE]: true } as CheckHealingOptions);
  if (!details.failed) return { ok: true, runs: details.numRuns, seed: details.seed };
  if (details.counterexample === null) throw details.errorInstance;
  const found = details.counterexample[0];
  const schedule = compactSchedule(found);
  const last = broken !== undefined && JSON.stringify(broken.schedule) === JSON.stringify(found) ? broken : undefined;
  const run = await replaySchedule(agent, schedule, last?.crashAt === undefined ? replayOptions : { ...replayOptions, crashAt: last.crashAt });
  const seen = last?.violations ?? [];
  const violations: readonly Violation[] =
    run.violations.length > 0
      ? run.violations
      : [
          ...seen,
          {
            invariant: 'replays-same',
            message:
              `the schedule broke ${seen.map((v) => v.invariant).join(', ') || 'an invariant'} when checked and healed when replayed: ` +
              `the agent does not replay deterministically (randomness of its own not drawn from chaos.random, ` +
              `or state kept between runs: a breaker, a cache or a counter made outside the factory)`,
          },
        ];
  let spec: string | undefined;
  let specMissing: string | undefined;
  if (run.violations.length === 0) {
    specMissing =
      'the shrunk schedule healed when replayed, so a spec replaying it would pass: make the agent replay deterministically first (see replays-same)';
  } else {
    try {
      spec = replaySpec(run, options.spec);
    } catch (error) {
      if (!(error instanceof ChaosInputError)) throw error;
      specMissing = error.message;
    }
  }
  const failure: HealingFailure = {
    schedule,
    violations,
    run,
    shrinks: details.numShrinks,
    path: details.counterexamplePath ?? '',
    marbles: marbleDiagram(run),
    spec,
    ...(specMissing === undefined ? {} : { specMissing }),
  };
  return { ok: false, runs: details.numRuns, seed: details.seed, failure, message: describeFailure(failure, details.seed, details.numRuns) };
}

/**
 * The error {@link assertHealing} throws: its message is the whole report (violations, schedule,
 * marble diagram, replay spec).
 *
 * @example
 * ```ts
 * try { await assertHealing(agent, options); } catch (e) { if (e instanceof HealingError) console.log(e.failure.schedule); }
 * ```
 */
export class HealingError extends Error {
  override readonly name = 'HealingError';

  constructor(
    message: string,
    readonly failure: HealingFailure,
  ) {
    super(message);
  }
}

/**
 * {@link checkHealing}, rejecting with a {@link HealingError} with the report when the agent does
 * not heal: for a spec's body.
 *
 * @example
 * ```ts
 * it('heals', () => assertHealing(agent, { faults: faults.schedule({ models: ['primary'] }), runs: 300 }));
 * ```
 * @throws {HealingError} (a rejection) with the shrunk failure; {@link ChaosInputError} as `checkHealing`.
 */
export async function assertHealing(agent: AgentFactory, options: CheckHealingOptions): Promise<{ readonly runs: number; readonly seed: number }> {
  const report = await checkHealing(agent, options);
  if (!report.ok) throw new HealingError(report.message, report.failure);
  return { runs: report.runs, seed: report.seed };
}

export type { ChaosRun };
