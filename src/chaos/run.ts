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
import type { AgentEvent } from '../core/events/events.js';
import type { JournalStore } from '../core/journal/journal.js';
import { memoryJournal } from '../core/journal/memoryJournal.js';
import { durableJournal } from '../sources/durableJournal.js';
import type { Model } from '../core/model/model.js';
import { seedLibraryRandom } from '../core/rx/random.js';
import type { AnyTool } from '../sources/agentConfig.js';
import { fc } from './fastCheck.js';
import { chaosModel, chaosTool } from './inject.js';
import { ChaosRecorder } from './recorder.js';
import { CrashPoints, crashAnywhere, isPlainData, restoreJournal, type JournalCopy } from './crash.js';
import { builtinInvariants, checkInvariants, sideEffectsOnce, type ChaosEnd, type ChaosRun, type Invariant, type ReplayOptions } from './invariants.js';
import { ChaosInputError, validateSchedule, type FaultSchedule } from './schedule.js';
import { checkClockFree, Replay } from './virtualTime.js';

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

/** Replays run one after another: while one runs, it owns the clock of RxJS's schedulers. */
let queue: Promise<unknown> = Promise.resolve();

/** `work` in its turn (see {@link oneAtATime}), refused inside a `TestScheduler.run`. */
function queued<T>(work: () => Promise<T>): Promise<T> {
  try {
    checkClockFree();
  } catch (error) {
    return Promise.reject(error);
  }
  return oneAtATime(work);
}

function oneAtATime<T>(work: () => Promise<T>): Promise<T> {
  const run = queue.then(work, work);
  queue = run.then(
    () => undefined,
    () => undefined,
  );
  return run;
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
  return queued(async () => {
    if (options.crashAt === undefined) {
      const run = await replayOnce(agent, schedule, options);
      return { ...run, violations: checkInvariants(run, [...builtinInvariants(options), ...(options.invariants ?? [])]) };
    }
    const uncrashed: ReplayOptions = { ...options, crashAt: undefined };
    return crashedOnce(agent, schedule, options, { baseline: await replayOnce(agent, schedule, uncrashed) });
  });
}

/** The invariants that hold across a crash (the others speak of one process's stream: its text, its hub, its budget). */
const ACROSS_A_CRASH = new Set(['ends', 'typed-outcome', 'nothing-left']);

/**
 * The run crashed at `options.crashAt` and resumed, checked against `baseline` (the same
 * schedule, never crashed: {@link crashAnywhere}) and by the invariants that hold across a crash;
 * `healthy` is the answer of the run with no fault (what a crash that helped must answer).
 */
export function replayCrashed(
  agent: AgentFactory,
  schedule: FaultSchedule,
  options: ReplayOptions,
  baseline: Omit<ChaosRun, 'violations'>,
  from?: CrashFork,
  healthy?: string,
): Promise<ChaosRun> {
  return queued(() =>
    crashedOnce(agent, schedule, options, { baseline, ...(from === undefined ? {} : { from }), ...(healthy === undefined ? {} : { healthy }) }),
  );
}

/**
 * {@link replaySchedule} of the run that never crashes, in crash mode: with the forks taken at
 * its crash points (see {@link CrashFork}), by point.
 */
export function replayForCrashes(
  agent: AgentFactory,
  schedule: FaultSchedule,
  options: ReplayOptions,
): Promise<{ readonly run: ChaosRun; readonly forks: ReadonlyMap<number, CrashFork> }> {
  return queued(async () => {
    const forks = new Map<number, CrashFork>();
    const run = await replayOnce(agent, schedule, options, { forks });
    return { run: { ...run, violations: checkInvariants(run, [...builtinInvariants(options), ...(options.invariants ?? [])]) }, forks };
  });
}

/** The run crashed and resumed (restarted from `crash.from` when given), checked against `crash.baseline`. */
async function crashedOnce(
  agent: AgentFactory,
  schedule: FaultSchedule,
  options: ReplayOptions,
  crash: { readonly baseline: Omit<ChaosRun, 'violations'>; readonly from?: CrashFork; readonly healthy?: string },
): Promise<ChaosRun> {
  const { baseline, from, healthy } = crash;
  const run = await replayOnce(agent, schedule, options, { ...(from === undefined ? {} : { from }) });
  const invariants: Invariant[] = [
    ...builtinInvariants(options)
      .filter((i) => ACROSS_A_CRASH.has(i.name))
      .map((i) => (i.name === 'typed-outcome' ? { name: i.name, check: (r: Omit<ChaosRun, 'violations'>) => replaysError(r, baseline, i) } : i)),
    { name: 'side-effects-once', check: (r: Omit<ChaosRun, 'violations'>) => sideEffectsOnce(r, true) },
    ...(run.crash === undefined
      ? []
      : [{ name: 'crash-anywhere', check: (r: Omit<ChaosRun, 'violations'>) => crashAnywhere(r, baseline, run.crash!.point, healthy) }]),
    ...(options.invariants ?? []),
  ];
  return { ...run, violations: checkInvariants(run, invariants) };
}

/**
 * `typed-outcome` across a crash: a run resumed after its end was journaled replays its error
 * from the journal, which keeps the error's name and message, not its class — the same name as
 * the uncrashed run's documented error is that error.
 */
function replaysError(run: Omit<ChaosRun, 'violations'>, baseline: Omit<ChaosRun, 'violations'>, typed: Invariant): ReturnType<Invariant['check']> {
  const found = typed.check(run);
  if (found === undefined || run.end.kind !== 'error' || baseline.end.kind !== 'error') return found;
  const name = (u: unknown): string | undefined => (u instanceof Error ? u.name : undefined);
  return name(run.end.error) !== undefined && name(run.end.error) === name(baseline.end.error) && typed.check(baseline) === undefined ? undefined : found;
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

/**
 * The state of a run that never crashed at one of its crash points, copied there: what a crash
 * there leaves to the restart (the journal's records, the world, what was written down, the
 * clock, the seeded streams' draws) — taken only where the crash's own teardown leaves nothing
 * else behind (no call running, no promise pending: see `ChaosRecorder.fork`; a world of plain
 * data). Crash mode restarts the crashed run from it instead of running the agent up to the point
 * again: the run up to point k is the same for every crash at k.
 */
export interface CrashFork {
  readonly at: number;
  readonly time: number;
  readonly recorder: ChaosRecorder;
  readonly journal: JournalCopy;
  readonly world: Map<string, unknown>;
  /** Numbers drawn so far from the library's seeded stream and from `chaos.random`. */
  readonly draws: { readonly library: number; readonly agent: number };
  readonly unhandled: readonly string[];
  readonly seen: readonly string[];
}

/** How {@link replayOnce} runs: collecting forks at its points (the run that never crashes, in crash mode), or restarted from one. */
interface Lives {
  readonly forks?: Map<number, CrashFork>;
  readonly from?: CrashFork;
}

/** A seeded stream that counts its draws, `skip` of them drawn already. */
function countedRandom(seed: number, skip = 0): { draw: () => number; readonly drawn: () => number } {
  const random = seededRandom(seed);
  for (let i = 0; i < skip; i++) random();
  let drawn = skip;
  return {
    draw: () => {
      drawn++;
      return random();
    },
    drawn: () => drawn,
  };
}

async function replayOnce(agent: AgentFactory, schedule: FaultSchedule, options: ReplayOptions, lives: Lives = {}): Promise<Omit<ChaosRun, 'violations'>> {
  validateSchedule(schedule);
  checkReplayOptions(options);
  const { from } = lives;
  const seed = options.randomSeed ?? 0;
  const replay = new Replay(options.boundMs ?? 600_000, from?.recorder.fork());
  const { ts, recorder } = replay;
  // restarted from a fork: the clock where the crash was
  if (from !== undefined) ts.frame = from.time;
  replay.hold();
  const library = countedRandom(seed, from?.draws.library);
  const agentRandom = countedRandom(seed ^ AGENT_STREAM, from?.draws.agent);
  const unseed = seedLibraryRandom(library.draw);
  const unhandled: string[] = [...(from?.unhandled ?? [])];
  const previous = rxConfig.onUnhandledError;
  rxConfig.onUnhandledError = (error: unknown) => unhandled.push(label(error));
  let subscription: Subscription | undefined;
  try {
    const crash$ = new Subject<void>();
    let crash: { point: string; at: number } | undefined = from === undefined ? undefined : { point: from.seen.at(-1)!, at: from.time };
    const points = new CrashPoints(
      options.crashAt,
      () => {
        crash = { point: points.seen.at(-1)!, at: ts.now() };
        crash$.next();
      },
      () => `${ts.now()}:${recorder.models.length}:${recorder.tools.length}`,
    );
    if (from !== undefined) {
      points.seen.push(...from.seen);
      points.stop();
    }
    recorder.executing = (tool) => points.executing(tool);
    const store = memoryJournal({ scheduler: asyncScheduler });
    if (from !== undefined && !restoreJournal(store, from.journal)) throw new Error("rxheal/chaos: a crash fork's journal could not be restored at once");
    const world = from === undefined ? new Map<string, unknown>() : structuredClone(from.world);
    const chaos: Chaos = {
      schedule,
      scheduler: asyncScheduler,
      random: agentRandom.draw,
      model: (model) => chaosModel(model, schedule, { recorder }),
      tool: (tool) => chaosTool(tool, schedule, { recorder }),
      journal: durableJournal(points.journal(store)),
      runId: 'chaos-run',
      world,
    };
    const { forks } = lives;
    if (forks !== undefined)
      points.passed = (at) => {
        const forked = recorder.fork();
        if (forked === undefined || !isPlainData(world)) return;
        const journal = points.journalCopy();
        const draws = { library: library.drawn(), agent: agentRandom.drawn() };
        forks.set(at, {
          at,
          time: ts.now(),
          recorder: forked,
          journal,
          world: structuredClone(world),
          draws,
          unhandled: [...unhandled],
          seen: [...points.seen],
        });
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
    // restarted from a fork, the run is its resumed life: it goes on to its end
    let hung = await replay.drive(() => end !== undefined || (from === undefined && crash !== undefined));
    if (end === undefined && crash !== undefined && from === undefined) {
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
