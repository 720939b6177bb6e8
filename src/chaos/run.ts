/**
 * One chaos run: the user's agent factory, handed a {@link Chaos} for one schedule, run to its end
 * in virtual time (a `TestScheduler`'s clock, held across `await`s so that promises a tool, model
 * or factory returns resolve in it; the clock steps only while the run lasts, up to a bound),
 * then checked against the invariants. {@link replaySchedule} is what `checkHealing` runs for
 * each schedule, and what a replay spec calls.
 *
 * @module
 */
import { asyncScheduler, config as rxConfig, isObservable, Subject, takeUntil, type Observable, type SchedulerLike, type Subscription } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { AgentEvent } from '../core/events/events.js';
import type { JournalStore } from '../core/journal/journal.js';
import { memoryJournal } from '../core/journal/memoryJournal.js';
import type { Model } from '../core/model/model.js';
import { seedLibraryRandom } from '../core/rx/random.js';
import type { AnyTool } from '../sources/agentConfig.js';
import { fc } from './fastCheck.js';
import { chaosModel, chaosTool } from './inject.js';
import { ChaosRecorder } from './recorder.js';
import { CrashPoints, crashAnywhere } from './crash.js';
import { builtinInvariants, checkInvariants, sideEffectsOnce, type ChaosEnd, type ChaosRun, type Invariant, type ReplayOptions } from './invariants.js';
import { ChaosInputError, validateSchedule, type FaultSchedule } from './schedule.js';
import { checkClockFree, nextTurn, VirtualClock } from './virtualTime.js';

export type { ReplayOptions };

/**
 * What an agent factory is handed for one run: the schedule, the (virtual) scheduler, a seeded
 * source of randomness for the agent's own, and the wrappers that put the user's models and
 * tools under the schedule.
 *
 * @example
 * ```ts
 * const agent: AgentFactory = (chaos) =>
 *   runAgent({
 *     model: fallbackModel([chaos.model(primary), chaos.model(secondary)], { breakers: new CircuitBreakerRegistry() }),
 *     tools: [chaos.tool(book)],
 *     messages,
 *   });
 * ```
 */
export interface Chaos {
  readonly schedule: FaultSchedule;
  /** The run's scheduler: `asyncScheduler`, on the replay's virtual clock. */
  readonly scheduler: SchedulerLike;
  /**
   * Numbers in `[0, 1)` drawn from the replay's seed (`randomSeed`): hand it to whatever of the
   * agent's own is random (a `random` option you set, a jitter of your own) so that it replays the
   * same too. rxheal's own defaults (`retryWithBackoff`'s jitter) are seeded without it.
   */
  readonly random: () => number;
  /** The model under the schedule's faults for its id (see `chaosModel`). */
  model(model: Model): Model;
  /** The tool under the schedule's faults for its name (see `chaosTool`). */
  tool<T extends AnyTool>(tool: T): T;
  /**
   * A journal for the run (`memoryJournal` on the replay's clock), and {@link runId} the run's id
   * in it: hand both to `runAgent` (`runAgent({ ...config, runId: chaos.runId, journal: chaos.journal })`)
   * and the run is durable — what crash mode (`checkHealing({ crash: true })`) needs. The journal
   * outlives a crash: the fresh agent built after it resumes the run from there.
   */
  readonly journal: JournalStore;
  readonly runId: string;
  /**
   * What outlives a crash of this run, as the world outside a process does (a stand-in booking
   * system's ledger, that a tool's `verify` reads): one Map for the run and its resume after a
   * crash, fresh for each replay.
   */
  readonly world: Map<string, unknown>;
}

/**
 * The user's agent for one run: returns the run's observable (`runAgent({...})`, or anything
 * emitting agent events), or a promise of it (an `async` factory that sets something up first).
 * Build everything a run owns inside it (models, breakers, budgets), fresh per call: each
 * schedule is its own world.
 *
 * @example
 * ```ts
 * const agent: AgentFactory = (chaos) => runAgent({ model: chaos.model(scriptedModel('m', turns)), messages });
 * const later: AgentFactory = async (chaos) => runAgent({ model: chaos.model(await loadModel()), messages });
 * ```
 */
export type AgentFactory = (chaos: Chaos) => Observable<AgentEvent> | PromiseLike<Observable<AgentEvent>>;

const label = (u: unknown): string => (u instanceof Error ? `${u.name}: ${u.message}` : String(u));

const isPromiseLike = (u: unknown): u is PromiseLike<unknown> => typeof (u as PromiseLike<unknown> | undefined)?.then === 'function';

/** Names in the schedule that the agent never wrapped: a schedule that does not fit it. */
function misfits(schedule: FaultSchedule, recorder: ChaosRecorder): string | undefined {
  const list = (set: Set<string>): string => [...set].map((n) => `'${n}'`).join(', ') || 'none';
  for (const name of Object.keys(schedule.tools ?? {})) {
    if (!recorder.wrappedTools.has(name))
      return `the schedule has faults for tool '${name}', but the agent has no tool '${name}' under chaos.tool() (it has: ${list(recorder.wrappedTools)})`;
  }
  for (const id of Object.keys(schedule.models ?? {})) {
    if (!recorder.wrappedModels.has(id))
      return `the schedule has faults for model '${id}', but the agent has no model '${id}' under chaos.model() (it has: ${list(recorder.wrappedModels)})`;
  }
  return undefined;
}

/** The draws of {@link seededRandom}: whole numbers from fast-check's generator. */
const DRAWS = fc.infiniteStream(fc.noBias(fc.integer({ min: 0, max: 0x7fffffff })));

/**
 * Numbers in `[0, 1)` from `seed`, drawn lazily from fast-check's generator (the same seed, the
 * same numbers); the generator is made at the first draw (most runs of a crash check draw none).
 */
function seededRandom(seed: number): () => number {
  let draws: Iterator<number> | undefined;
  return () => {
    draws ??= fc.sample(DRAWS, { seed, numRuns: 1 })[0]![Symbol.iterator]();
    return (draws.next().value as number) / 0x80000000;
  };
}

/** The agent's stream of `chaos.random`: apart from the library's, so its draws do not shift rxheal's. */
const AGENT_STREAM = 0x5bd1e995;

/** Event-loop turns a pending promise gets to settle once nothing is scheduled, before the run counts as hung. */
const PATIENCE_TURNS = 1_000;

/** Microtask ticks in a row that change nothing before the run counts as settled between two steps (more while a promise it follows is pending). */
const QUIET_TICKS = 32;
const QUIET_TICKS_PENDING = 512;

/** Replays run one after another: while one runs, it owns the clock of RxJS's schedulers. */
let queue: Promise<unknown> = Promise.resolve();

function oneAtATime<T>(work: () => Promise<T>): Promise<T> {
  const run = queue.then(work, work);
  queue = run.then(
    () => undefined,
    () => undefined,
  );
  return run;
}

/** One replay's clock and what moves it. */
class Replay {
  readonly ts = new TestScheduler(() => undefined);
  readonly recorder = new ChaosRecorder(asyncScheduler);
  readonly clock: VirtualClock;

  constructor(readonly boundMs: number) {
    this.clock = new VirtualClock(this.ts);
    // what a model or tool delivers while the clock is let go waits for it
    this.recorder.open = () => this.clock.held;
  }

  /** The clock held, and what waited for it delivered. */
  hold(): void {
    this.clock.hold();
    this.recorder.release();
  }

  /** What changes whenever anything happens: the recorder's moves and the timers scheduled (the count, the next one's time), as one string. */
  private fingerprint(): string {
    const next = this.ts.actions[0];
    return `${this.recorder.progress}:${this.ts.actions.length}:${next?.delay ?? ''}`;
  }

  /**
   * Lets microtasks run, the clock held, until they stop moving the run: no macrotask runs
   * meanwhile, so nothing but the run's own work sees the virtual clock. What it watches is
   * {@link fingerprint}'s, read as numbers (a tick that changes none of them is quiet).
   */
  async settle(): Promise<void> {
    this.hold();
    const { ts, recorder } = this;
    let progress = recorder.progress;
    let timers = ts.actions.length;
    let due = ts.actions[0]?.delay ?? -1;
    let quiet = 0;
    for (;;) {
      await Promise.resolve();
      const nowProgress = recorder.progress;
      const nowTimers = ts.actions.length;
      const nowDue = ts.actions[0]?.delay ?? -1;
      if (nowProgress !== progress || nowTimers !== timers || nowDue !== due) {
        progress = nowProgress;
        timers = nowTimers;
        due = nowDue;
        quiet = 0;
      } else if (++quiet >= (recorder.pending > 0 ? QUIET_TICKS_PENDING : QUIET_TICKS)) return;
    }
  }

  /**
   * Steps the clock, letting promises settle between steps, until `done()` or nothing can move
   * the run: no timer within the bound, and no promise that settles. Returns how it hung, or
   * undefined when done.
   */
  async drive(done: () => boolean): Promise<Extract<ChaosEnd, { kind: 'hang' }> | undefined> {
    const { ts, recorder, boundMs } = this;
    for (;;) {
      await this.settle();
      if (done()) return undefined;
      const next = ts.actions[0];
      if (next === undefined) {
        const waiting = recorder.pendingPromises();
        // a promise waiting on something outside the clock (ready I/O) gets some turns of its own
        if (waiting.length > 0 && (await this.patience())) continue;
        const reason =
          waiting.length > 0
            ? `it waits on promises that never settled: ${waiting.join(', ')} (no timer is scheduled; ` +
              `a promise waiting on real I/O or a real timer does not settle in virtual time)`
            : 'it waits on nothing that will ever happen (no timer is scheduled and no promise is pending: no deadline ends the wait)';
        return { kind: 'hang', at: ts.now(), reason };
      }
      if (next.delay > boundMs)
        return { kind: 'hang', at: boundMs, reason: `still running at the bound of ${boundMs} ms (its next timer is due at ${next.delay} ms)` };
      ts.maxFrames = next.delay;
      ts.flush();
      if (done()) return undefined;
    }
  }

  /** Lets the clock go and the event loop turn (up to {@link PATIENCE_TURNS} turns) until something moves. */
  private async patience(): Promise<boolean> {
    const before = this.fingerprint();
    this.clock.release();
    try {
      for (let i = 0; i < PATIENCE_TURNS; i++) {
        await nextTurn();
        if (this.fingerprint() !== before) return true;
      }
      return false;
    } finally {
      this.hold();
    }
  }
}

/**
 * Runs the agent once under `schedule` in virtual time (a `TestScheduler`'s clock of its own,
 * held while the run lasts) and checks the run: the built-in invariants (see
 * `builtinInvariants`) and `options.invariants`. Resolves to everything the run did
 * ({@link ChaosRun}) with its `violations` (empty: it healed).
 *
 * Promises work: a tool whose `execute` is `async`, a model or an agent factory that awaits
 * something resolve on the virtual clock (microtasks run between its steps). A run counts as hung
 * when no timer within the bound is scheduled and no promise it is waiting on settles; the
 * reason says which (`still running at the bound`, `waits on promises that never settled: …`,
 * `waits on nothing`).
 *
 * Deterministic: the same agent, schedule and `randomSeed` give the same run — rxheal's own
 * randomness is seeded; hand `chaos.random` to the agent's. Replays run one at a time (calls made
 * together wait their turn): while one runs, every RxJS scheduler of the process is on its
 * clock. Call it outside any `TestScheduler.run` of your own.
 *
 * @example
 * ```ts
 * const run = await replaySchedule(agent, { models: { primary: [{ kind: 'reset', afterEvents: 2 }] } });
 * expect(run.violations).to.deep.equal([]);
 * ```
 * @throws {ChaosInputError} (a rejection) when the schedule or an option is malformed or the
 * schedule names a model or tool the agent does not wrap; when the factory throws, rejects,
 * never settles or returns no observable; when called inside `TestScheduler.run`.
 */
export function replaySchedule(agent: AgentFactory, schedule: FaultSchedule, options: ReplayOptions = {}): Promise<ChaosRun> {
  try {
    checkClockFree();
  } catch (error) {
    return Promise.reject(error);
  }
  return oneAtATime(async () => {
    if (options.crashAt === undefined) {
      const run = await replayOnce(agent, schedule, options);
      return { ...run, violations: checkInvariants(run, [...builtinInvariants(options), ...(options.invariants ?? [])]) };
    }
    const uncrashed: ReplayOptions = { ...options, crashAt: undefined };
    return crashedOnce(agent, schedule, options, await replayOnce(agent, schedule, uncrashed));
  });
}

/** The invariants that hold across a crash (the others speak of one process's stream: its text, its hub, its budget). */
const ACROSS_A_CRASH = new Set(['ends', 'typed-outcome', 'nothing-left']);

/**
 * The run crashed at `options.crashAt` and resumed, checked against `baseline` (the same
 * schedule, never crashed: {@link crashAnywhere}) and by the invariants that hold across a crash.
 */
export function replayCrashed(agent: AgentFactory, schedule: FaultSchedule, options: ReplayOptions, baseline: Omit<ChaosRun, 'violations'>): Promise<ChaosRun> {
  try {
    checkClockFree();
  } catch (error) {
    return Promise.reject(error);
  }
  return oneAtATime(() => crashedOnce(agent, schedule, options, baseline));
}

async function crashedOnce(agent: AgentFactory, schedule: FaultSchedule, options: ReplayOptions, baseline: Omit<ChaosRun, 'violations'>): Promise<ChaosRun> {
  const run = await replayOnce(agent, schedule, options);
  const invariants: Invariant[] = [
    ...builtinInvariants(options).filter((i) => ACROSS_A_CRASH.has(i.name)),
    { name: 'side-effects-once', check: (r: Omit<ChaosRun, 'violations'>) => sideEffectsOnce(r, true) },
    ...(run.crash === undefined ? [] : [{ name: 'crash-anywhere', check: (r: Omit<ChaosRun, 'violations'>) => crashAnywhere(r, baseline, run.crash!.point) }]),
    ...(options.invariants ?? []),
  ];
  return { ...run, violations: checkInvariants(run, invariants) };
}

/** What replayOptions checks: bounds and seeds that are numbers. */
function checkReplayOptions(options: ReplayOptions): void {
  const { boundMs, randomSeed } = options;
  if (boundMs !== undefined && !(typeof boundMs === 'number' && boundMs >= 0))
    throw new ChaosInputError(`options.boundMs must be a number of ms >= 0, got ${String(boundMs)}`);
  if (randomSeed !== undefined && !Number.isSafeInteger(randomSeed))
    throw new ChaosInputError(`options.randomSeed must be a whole number, got ${String(randomSeed)}`);
  if (options.crashAt !== undefined && !(Number.isSafeInteger(options.crashAt) && options.crashAt >= 1))
    throw new ChaosInputError(`options.crashAt must be a whole number >= 1 (a crash point of the run), got ${String(options.crashAt)}`);
  if (options.invariants !== undefined && !Array.isArray(options.invariants))
    throw new ChaosInputError(`options.invariants must be an array of invariants, got ${String(options.invariants)}`);
}

async function replayOnce(agent: AgentFactory, schedule: FaultSchedule, options: ReplayOptions): Promise<Omit<ChaosRun, 'violations'>> {
  validateSchedule(schedule);
  checkReplayOptions(options);
  const seed = options.randomSeed ?? 0;
  const replay = new Replay(options.boundMs ?? 600_000);
  const { ts, recorder } = replay;
  replay.hold();
  const unseed = seedLibraryRandom(seededRandom(seed));
  const unhandled: string[] = [];
  const previous = rxConfig.onUnhandledError;
  rxConfig.onUnhandledError = (error: unknown) => unhandled.push(label(error));
  let subscription: Subscription | undefined;
  try {
    const crash$ = new Subject<void>();
    let crash: { point: string; at: number } | undefined;
    const points = new CrashPoints(
      options.crashAt,
      () => {
        crash = { point: points.seen.at(-1)!, at: ts.now() };
        crash$.next();
      },
      () => `${ts.now()}:${recorder.models.length}:${recorder.tools.length}`,
    );
    recorder.executing = (tool) => points.executing(tool);
    const chaos: Chaos = {
      schedule,
      scheduler: asyncScheduler,
      random: seededRandom(seed ^ AGENT_STREAM),
      model: (model) => chaosModel(model, schedule, { recorder }),
      tool: (tool) => chaosTool(tool, schedule, { recorder }),
      journal: points.journal(memoryJournal({ scheduler: asyncScheduler })),
      runId: 'chaos-run',
      world: new Map(),
    };
    let end: ChaosEnd | undefined;
    const life = async (): Promise<void> => {
      let source: unknown;
      try {
        source = agent(chaos);
      } catch (error) {
        throw new ChaosInputError(`the agent factory threw synchronously (before any fault could act): ${label(error)}`, { cause: error });
      }
      if (isPromiseLike(source)) source = await made(source, replay);
      if (!isObservable(source)) throw new ChaosInputError(`the agent factory returned ${typeof source}, not an Observable of agent events`);
      const misfit = misfits(schedule, recorder);
      if (misfit !== undefined) throw new ChaosInputError(misfit);
      const crashed = crash !== undefined;
      // a crash drops the run's subscription where it is, as a process's death would (its lease is given up: a restart's lapses)
      subscription = (source as Observable<AgentEvent>).pipe(takeUntil(crash$)).subscribe({
        next: (event) => {
          recorder.event(event);
          points.event(event);
        },
        error: (error: unknown) => (end = { kind: 'error', at: ts.now(), error }),
        complete: () => {
          if (crash === undefined || crashed) end = { kind: 'complete', at: ts.now() };
        },
      });
    };
    await life();
    let hung = await replay.drive(() => end !== undefined || crash !== undefined);
    if (end === undefined && crash !== undefined) {
      // the process restarted: a fresh agent from the factory, the same journal and world
      points.stop();
      subscription?.unsubscribe();
      await life();
      hung = await replay.drive(() => end !== undefined);
    }
    // what the end sets going in microtasks (a finalizer, a promise's teardown) settles first
    await replay.settle();
    const ended: ChaosEnd = end ?? hung!;
    // what is scheduled or still subscribed at its end is what it left behind
    const pending = ts.actions.length;
    const live = recorder.live();
    recorder.closed = true;
    subscription?.unsubscribe();
    return {
      schedule,
      options,
      end: ended,
      events: recorder.events,
      models: recorder.models,
      tools: recorder.tools,
      pending,
      live,
      unhandled,
      crashPoints: points.seen,
      ...(crash === undefined ? {} : { crash }),
    };
  } finally {
    subscription?.unsubscribe();
    // whatever is left would run on the clock of a replay that is over: drop it
    for (const action of [...ts.actions]) action.unsubscribe();
    ts.actions.length = 0;
    rxConfig.onUnhandledError = previous;
    unseed();
    replay.clock.end();
  }
}

/** The observable an `async` factory's promise resolves to, the clock stepping while it works. */
async function made(promise: PromiseLike<unknown>, replay: Replay): Promise<unknown> {
  let outcome: { ok: true; value: unknown } | { ok: false; error: unknown } | undefined;
  const settled = Promise.resolve(promise).then(
    (value) => void (outcome = { ok: true, value }),
    (error: unknown) => void (outcome = { ok: false, error }),
  );
  replay.recorder.track(settled, "the agent factory's promise");
  const hung = await replay.drive(() => outcome !== undefined);
  if (outcome === undefined) throw new ChaosInputError(`the agent factory's promise never settled: ${hung?.reason ?? 'nothing moved it'}`);
  if (!outcome.ok)
    throw new ChaosInputError(`the agent factory's promise rejected (before any fault could act): ${label(outcome.error)}`, { cause: outcome.error });
  return outcome.value;
}
