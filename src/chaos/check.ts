/**
 * {@link checkHealing}: the user's agent under many fault schedules, as a fast-check property in
 * virtual time. A failing schedule is shrunk by fast-check to a minimal one and reported as a
 * marble diagram of its run and a spec that replays it. {@link assertHealing} throws that report.
 *
 * @module
 */
import fc from 'fast-check';
import type { FaultSchedule } from './schedule.js';
import { ChaosInputError, compactSchedule } from './schedule.js';
import { SCHEDULE_NAMES, type ScheduleArbitrary } from './faults.js';
import type { ChaosRun, Violation } from './invariants.js';
import { marbleDiagram, replaySpec, type ReplaySpecNaming } from './report.js';
import { replaySchedule, type AgentFactory, type ReplayOptions } from './run.js';

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
  readonly faults: fc.Arbitrary<FaultSchedule>;
  /** Schedules tried (fast-check's `numRuns`). Defaults to 100. */
  readonly runs?: number;
  /** fast-check's seed: the same seed tries the same schedules. Defaults to fast-check's (random; reported). */
  readonly seed?: number;
  /** How the replay spec names its imports. */
  readonly spec?: ReplaySpecNaming;
}

/**
 * A failure, shrunk: the minimal schedule fast-check found, its run, and how to show and replay it.
 *
 * @example
 * ```ts
 * if (!report.ok) console.log(report.failure.marbles, '\n', report.failure.spec);
 * ```
 */
export interface HealingFailure {
  /** The shrunk schedule, compacted (trailing `ok` faults and empty lists left out). */
  readonly schedule: FaultSchedule;
  readonly violations: readonly Violation[];
  /** The run under that schedule. */
  readonly run: ChaosRun;
  /** Shrinking steps fast-check took. */
  readonly shrinks: number;
  /** fast-check's path to the counterexample (with the seed, it reruns exactly this case). */
  readonly path: string;
  /** {@link marbleDiagram} of the run. */
  readonly marbles: string;
  /** {@link replaySpec} of the run. */
  readonly spec: string;
}

/**
 * What {@link checkHealing} found: `ok`, how many schedules ran, the seed; on failure, the shrunk
 * failure and a `message` with all of it.
 *
 * @example
 * ```ts
 * const report: HealingReport = checkHealing(agent, { faults: schedules });
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
    'replay it:',
    failure.spec,
  ].join('\n');
}

/**
 * Runs the agent factory under `options.runs` schedules drawn from `options.faults`, each in
 * `TestScheduler` virtual time, and checks every run against the invariants (see
 * `builtinInvariants`: it ends within the bound, answers or fails with a documented typed error,
 * delivers each answer's text whole and once, runs non-idempotent tools at most once per call,
 * holds the budget, reports every retry and fallback on the hub, leaves nothing scheduled) plus
 * `options.invariants`. A failing schedule is shrunk by fast-check and reported with the marble
 * diagram of its run and a spec that replays it. Before any schedule, the factory runs once
 * without faults: one that throws, or a schedule naming what the agent does not wrap, is a
 * {@link ChaosInputError}, never a shrunk schedule.
 *
 * @example
 * ```ts
 * const report = checkHealing(
 *   (chaos) => runAgent({ model: fallbackModel([chaos.model(primary), chaos.model(secondary)], { breakers: new CircuitBreakerRegistry() }), messages }),
 *   { faults: faults.schedule({ models: ['primary', 'secondary'] }), runs: 200 },
 * );
 * if (!report.ok) console.log(report.message);
 * ```
 * @throws {ChaosInputError} for an agent factory that throws or returns no observable, or
 * schedules naming a model or tool the agent does not wrap.
 */
export function checkHealing(agent: AgentFactory, options: CheckHealingOptions): HealingReport {
  if (!(options?.faults instanceof fc.Arbitrary)) throw new ChaosInputError(`checkHealing: options.faults must be a fast-check arbitrary of schedules (what faults.schedule returns), got ${String(options?.faults)}`);
  const runs = options.runs ?? 100;
  if (!Number.isInteger(runs) || runs < 1) throw new ChaosInputError(`checkHealing: options.runs must be a whole number >= 1, got ${String(runs)}`);
  // the agent as it is, without faults: a factory that throws is reported as such
  replaySchedule(agent, {}, options);
  const names = (options.faults as Partial<ScheduleArbitrary>)[SCHEDULE_NAMES];
  if (names) replaySchedule(agent, { models: Object.fromEntries(names.models.map((n) => [n, []])), tools: Object.fromEntries(names.tools.map((n) => [n, []])) }, options);
  let inputError: unknown;
  const property = fc.property(options.faults, (schedule) => {
    if (inputError !== undefined) return true;
    try {
      return replaySchedule(agent, schedule, options).violations.length === 0;
    } catch (error) {
      if (!(error instanceof ChaosInputError)) throw error;
      inputError = error;
      return true;
    }
  });
  const details = fc.check(property, { numRuns: runs, ...(options.seed === undefined ? {} : { seed: options.seed }) });
  if (inputError !== undefined) throw inputError;
  if (!details.failed) return { ok: true, runs: details.numRuns, seed: details.seed };
  if (details.counterexample === null) throw details.errorInstance;
  const schedule = compactSchedule(details.counterexample[0]);
  const run = replaySchedule(agent, schedule, options);
  const failure: HealingFailure = {
    schedule,
    violations: run.violations,
    run,
    shrinks: details.numShrinks,
    path: details.counterexamplePath ?? '',
    marbles: marbleDiagram(run),
    spec: replaySpec(run, options.spec),
  };
  return { ok: false, runs: details.numRuns, seed: details.seed, failure, message: describeFailure(failure, details.seed, details.numRuns) };
}

/**
 * The error {@link assertHealing} throws: its message is the whole report (violations, schedule,
 * marble diagram, replay spec).
 *
 * @example
 * ```ts
 * try { assertHealing(agent, options); } catch (e) { if (e instanceof HealingError) console.log(e.failure.schedule); }
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
 * {@link checkHealing}, throwing a {@link HealingError} with the report when the agent does not
 * heal: for a spec's body.
 *
 * @example
 * ```ts
 * it('heals', () => assertHealing(agent, { faults: faults.schedule({ models: ['primary'] }), runs: 300 }));
 * ```
 * @throws {HealingError} with the shrunk failure; {@link ChaosInputError} as `checkHealing`.
 */
export function assertHealing(agent: AgentFactory, options: CheckHealingOptions): { readonly runs: number; readonly seed: number } {
  const report = checkHealing(agent, options);
  if (!report.ok) throw new HealingError(report.message, report.failure);
  return { runs: report.runs, seed: report.seed };
}

export type { ChaosRun };
