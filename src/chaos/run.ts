/**
 * One chaos run: the user's agent factory, handed a {@link Chaos} for one schedule, run to its end
 * in `TestScheduler` virtual time (stepping the clock only while the run lasts, up to a bound),
 * then checked against the invariants. {@link replaySchedule} is what `checkHealing` runs for
 * each schedule, and what a replay spec calls.
 *
 * @module
 */
import { asyncScheduler, config as rxConfig, isObservable, type Observable, type SchedulerLike } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { AgentEvent } from '../core/events/events.js';
import type { Model } from '../core/model/model.js';
import type { AnyTool } from '../sources/agentConfig.js';
import { ChaosRecorder, chaosModel, chaosTool } from './inject.js';
import { builtinInvariants, checkInvariants, type ChaosEnd, type ChaosRun, type Invariant, type InvariantOptions } from './invariants.js';
import { ChaosInputError, validateSchedule, type FaultSchedule } from './schedule.js';

/**
 * What an agent factory is handed for one run: the schedule, the (virtual) scheduler, and the
 * wrappers that put the user's models and tools under it.
 *
 * @example
 * ```ts
 * const agent: AgentFactory = (chaos) =>
 *   runAgent({ model: fallbackModel([chaos.model(primary), chaos.model(secondary)], { breakers: new CircuitBreakerRegistry() }), tools: [chaos.tool(book)], messages });
 * ```
 */
export interface Chaos {
  readonly schedule: FaultSchedule;
  /** The run's scheduler: virtual (`asyncScheduler` inside `TestScheduler.run`). */
  readonly scheduler: SchedulerLike;
  /** The model under the schedule's faults for its id (see `chaosModel`). */
  model(model: Model): Model;
  /** The tool under the schedule's faults for its name (see `chaosTool`). */
  tool<T extends AnyTool>(tool: T): T;
}

/**
 * The user's agent for one run: returns the run's observable (`runAgent({...})`, or anything
 * emitting agent events). Build everything a run owns inside it (models, breakers, budgets),
 * fresh per call: each schedule is its own world.
 *
 * @example
 * ```ts
 * const agent: AgentFactory = (chaos) => runAgent({ model: chaos.model(scriptedModel('m', turns)), messages });
 * ```
 */
export type AgentFactory = (chaos: Chaos) => Observable<AgentEvent>;

/**
 * Options of {@link replaySchedule} (and `checkHealing`): the virtual-time bound, what the
 * built-in invariants are told (`errors`, `budget`), and custom invariants.
 *
 * @example
 * ```ts
 * const options: ReplayOptions = { boundMs: 120_000, budget: { maxModelCalls: 6 }, invariants: [noSecondModel] };
 * ```
 */
export interface ReplayOptions extends InvariantOptions {
  /** Virtual time a run may take before it counts as hung. Defaults to 600 000 ms (10 minutes). */
  readonly boundMs?: number;
  /** Checks added to the built-in ones. */
  readonly invariants?: readonly Invariant[];
}

const label = (u: unknown): string => (u instanceof Error ? `${u.name}: ${u.message}` : String(u));

/** Names in the schedule that the agent never wrapped: a schedule that does not fit it. */
function misfits(schedule: FaultSchedule, recorder: ChaosRecorder): string | undefined {
  const list = (set: Set<string>): string => [...set].map((n) => `'${n}'`).join(', ') || 'none';
  for (const name of Object.keys(schedule.tools ?? {})) {
    if (!recorder.wrappedTools.has(name)) return `the schedule has faults for tool '${name}', but the agent has no tool '${name}' under chaos.tool() (it has: ${list(recorder.wrappedTools)})`;
  }
  for (const id of Object.keys(schedule.models ?? {})) {
    if (!recorder.wrappedModels.has(id)) return `the schedule has faults for model '${id}', but the agent has no model '${id}' under chaos.model() (it has: ${list(recorder.wrappedModels)})`;
  }
  return undefined;
}

/**
 * Runs the agent once under `schedule` in virtual time (a `TestScheduler` of its own) and checks
 * the run: the built-in invariants (see `builtinInvariants`) and `options.invariants`. Returns
 * everything the run did ({@link ChaosRun}) with its `violations` (empty: it healed).
 * Deterministic: the same agent and schedule give the same run. Call it outside any
 * `TestScheduler.run` of your own: it runs its own.
 *
 * @example
 * ```ts
 * const run = replaySchedule(agent, { models: { primary: [{ kind: 'reset', afterEvents: 2 }] } });
 * expect(run.violations).to.deep.equal([]);
 * ```
 * @throws {ChaosInputError} when the schedule is malformed or names a model or tool the agent does
 * not wrap, or when the factory throws or returns no observable.
 */
export function replaySchedule(agent: AgentFactory, schedule: FaultSchedule, options: ReplayOptions = {}): ChaosRun {
  validateSchedule(schedule);
  const boundMs = options.boundMs ?? 600_000;
  const ts = new TestScheduler(() => undefined);
  let run: Omit<ChaosRun, 'violations'> | undefined;
  const unhandled: string[] = [];
  const previous = rxConfig.onUnhandledError;
  rxConfig.onUnhandledError = (error: unknown) => unhandled.push(label(error));
  try {
    ts.run(() => {
      const recorder = new ChaosRecorder(asyncScheduler);
      const chaos: Chaos = {
        schedule,
        scheduler: asyncScheduler,
        model: (model) => chaosModel(model, schedule, { recorder }),
        tool: (tool) => chaosTool(tool, schedule, { recorder }),
      };
      let source: unknown;
      try {
        source = agent(chaos);
      } catch (error) {
        throw new ChaosInputError(`the agent factory threw synchronously (before any fault could act): ${label(error)}`, { cause: error });
      }
      if (!isObservable(source)) throw new ChaosInputError(`the agent factory returned ${typeof source}, not an Observable of agent events`);
      const misfit = misfits(schedule, recorder);
      if (misfit !== undefined) throw new ChaosInputError(misfit);
      let end: ChaosEnd | undefined;
      const subscription = (source as Observable<AgentEvent>).subscribe({
        next: (event) => recorder.event(event),
        error: (error: unknown) => (end = { kind: 'error', at: ts.now(), error }),
        complete: () => (end = { kind: 'complete', at: ts.now() }),
      });
      // step the clock only while the run lasts: what is scheduled at its end is what it left behind
      while (end === undefined && ts.actions.length > 0 && ts.actions[0]!.delay <= boundMs) {
        ts.maxFrames = ts.actions[0]!.delay;
        ts.flush();
      }
      const ended: ChaosEnd =
        end ??
        (ts.actions.length > 0
          ? { kind: 'hang', at: boundMs, reason: `still running at the bound of ${boundMs} ms` }
          : { kind: 'hang', at: ts.now(), reason: 'it waits on nothing that will ever happen (no deadline ends the wait)' });
      const pending = ts.actions.length;
      const live = recorder.live();
      recorder.closed = true;
      subscription.unsubscribe();
      // whatever is left would run in TestScheduler.run's own flush: drop it
      for (const action of [...ts.actions]) action.unsubscribe();
      ts.actions.length = 0;
      run = { schedule, end: ended, events: recorder.events, models: recorder.models, tools: recorder.tools, pending, live, unhandled };
    });
  } finally {
    rxConfig.onUnhandledError = previous;
  }
  const done = run!;
  return { ...done, violations: checkInvariants(done, [...builtinInvariants(options), ...(options.invariants ?? [])]) };
}
