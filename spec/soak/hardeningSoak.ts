/**
 * The hardening fault soak (the classes of failure a hardening review found: huge delays, late
 * signals, throwing callbacks, refunds, snapshots), shared by `spec/soak/hardeningSoak.spec.ts`
 * (reduced size, inside `npm test`) and `bench/soak.ts` (full size, `npm run soak`).
 *
 * Seeded agent runs in virtual time under Node's timer rule (`NodeTimerScheduler`: a timer above
 * 2³¹−1 ms would fire after 1 ms and count as a `TimeoutOverflowWarning`), each with random
 * faults of four kinds on top of ordinary ones (503s, bad requests):
 * - throwing callbacks: a classifier, `random`, `onRetry`, a breaker's `isFailure`,
 *   `shouldReflect`, the tool pipeline, the capabilities' prompt suffix or the output check
 *   throws on its n-th call;
 * - huge delays: 429s asking to wait up to months (`maxRetryAfterMs: Infinity`), budgets and
 *   tool deadlines far above 2³¹−1 ms;
 * - signals read late: tools read `signal` from code their cancellation does not stop (as after
 *   an `await`), while `degradeAfter` deadlines and budgets cancel them;
 * - odd snapshots: each run's model breaker starts from a snapshot, valid or with one field odd.
 *
 * Every run must end (an answer or an error; a throw injected where it surfaces is that error),
 * with no clamped timer, no unhandled error, nothing scheduled afterwards but an open breaker's
 * notice, no tool call left subscribed, every late read of a cancelled call's signal aborted, and
 * every odd snapshot either refused naming a `snapshot.…` field or restored.
 */
import * as t from 'io-ts';
import { config as rxConfig, Observable, type OperatorFunction } from 'rxjs';
import { CapabilityRegistry } from '../../src/core/capabilities/CapabilityRegistry.js';
import { CircuitBreaker, type CircuitSnapshot } from '../../src/core/breaker/CircuitBreaker.js';
import { restoreBreaker } from '../../src/core/breaker/persist.js';
import { classifyError, isServiceFailure } from '../../src/core/errors/classify.js';
import {
  AllFallbacksFailedError,
  BudgetExceededError,
  CircuitOpenError,
  HttpError,
  IncompleteStreamError,
  InvalidOptionError,
  RetriesExhaustedError,
  ToolError,
  TotalTimeoutError,
} from '../../src/core/errors/errors.js';
import type { AgentEvent, TurnEvent } from '../../src/core/events/events.js';
import type { Model } from '../../src/core/model/model.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { validateOutput } from '../../src/operators/validateOutput.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, textDeltas, toolCall } from '../../src/testing/index.js';
import { Boom, carries } from '../support/guards.js';
import { NODE_TIMEOUT_MAX, NodeTimerScheduler } from '../support/nodeTimers.js';
import { bump, Rng, formatReport, type Histogram, type SoakReport } from './seeded.js';

export { formatReport };

const CALLBACKS = ['none', 'classifier', 'random', 'onRetry', 'isFailure', 'shouldReflect', 'toolPipeline', 'systemPromptSuffix', 'check'] as const;
type Callback = (typeof CALLBACKS)[number];
/** Where a throw must end the run with it (elsewhere a later step may heal it: a tool error goes back to the model). */
const SURFACES: ReadonlySet<Callback> = new Set(['toolPipeline', 'systemPromptSuffix', 'check']);

type ModelStep = 'ok' | 'tool' | '503' | '400' | '429 small' | '429 huge';

/** One generated run. */
export interface HardeningScenario {
  readonly callback: Callback;
  readonly throwAt: number;
  readonly model: readonly ModelStep[];
  readonly latency: number;
  readonly retryAfterMs: number;
  readonly maxRetryAfterMs: number;
  readonly totalTimeoutMs: number | undefined;
  readonly toolLatency: number;
  /** The tool fails (a bad request: reflected on) instead of answering. */
  readonly toolFails: boolean;
  readonly toolDeadline: number;
  readonly lateReadAfter: number;
  readonly snapshot: { readonly odd: string | undefined; readonly value: unknown };
}

const HUGE = (rng: Rng): number => rng.int(NODE_TIMEOUT_MAX + 1, 1e10);

/** A snapshot to start the model's breaker from: valid, or with one field odd. */
function snapshotFor(rng: Rng): HardeningScenario['snapshot'] {
  const valid: CircuitSnapshot = {
    version: 2,
    name: 'model',
    state: rng.pick(['closed', 'open', 'half-open'] as const),
    isolated: false,
    openUntil: null,
    consecutiveFailures: rng.int(0, 2),
    halfOpenSuccesses: 0,
    window: null,
  };
  const odd = rng.pick([undefined, undefined, 'consecutiveFailures', 'openUntil', 'state', 'version', 'halfOpenSuccesses', 'window'] as const);
  if (odd === undefined) return { odd, value: valid };
  const value = rng.pick<unknown>([-1, 0.5, NaN, Infinity, 1e15, null, 'x', {}, 3]);
  return { odd, value: { ...valid, [odd]: value } };
}

export function generateHardening(rng: Rng): HardeningScenario {
  const callback = rng.chance(0.4) ? 'none' : rng.pick(CALLBACKS.slice(1));
  const model = Array.from({ length: rng.int(1, 4) }, () => rng.weighted<ModelStep>({ ok: 3, tool: 3, '503': 2, '400': 1, '429 small': 1, '429 huge': 2 }));
  return {
    callback,
    throwAt: rng.int(1, 3),
    model,
    latency: rng.int(0, 50),
    retryAfterMs: HUGE(rng),
    maxRetryAfterMs: rng.chance(0.7) ? Infinity : 60_000,
    totalTimeoutMs: rng.pick([undefined, 5_000, HUGE(rng)]),
    toolLatency: rng.int(1, 200),
    toolFails: rng.chance(0.3),
    toolDeadline: rng.pick([rng.int(1, 200), HUGE(rng)]),
    lateReadAfter: rng.int(1, 300),
    snapshot: snapshotFor(rng),
  };
}

/** The errors a run may end with, besides a thrown callback's. */
const ALLOWED = [
  RetriesExhaustedError,
  TotalTimeoutError,
  CircuitOpenError,
  AllFallbacksFailedError,
  BudgetExceededError,
  HttpError,
  IncompleteStreamError,
  ToolError,
];

interface Trace {
  readonly events: AgentEvent[];
  error: unknown;
  errored: boolean;
  completed: boolean;
  threw: boolean;
  readonly boom: Boom;
  /** Tool calls: when each was cancelled (unsubscribed before finishing), and its late reads. */
  readonly calls: { cancelledAt: number | undefined; reads: { at: number; aborted: boolean }[]; live: boolean }[];
  readonly problems: string[];
  restore: string;
}

/** Runs one scenario to its end; problems are collected on the trace. */
export function runHardening(s: HardeningScenario): Trace & { scheduler: NodeTimerScheduler; breaker: CircuitBreaker } {
  const scheduler = new NodeTimerScheduler(0);
  const boom = new Boom(s.callback);
  const trace: Trace = { events: [], error: undefined, errored: false, completed: false, threw: false, boom, calls: [], problems: [], restore: 'valid' };
  let calls = 0;
  const cb = <A extends unknown[], R>(name: Callback, normal: (...args: A) => R): ((...args: A) => R) =>
    name !== s.callback
      ? normal
      : (...args: A): R => {
          if (++calls >= s.throwAt) {
            trace.threw = true;
            throw boom;
          }
          return normal(...args);
        };

  const breaker = new CircuitBreaker({
    name: 'model',
    failureThreshold: 3,
    resetTimeoutMs: 1_000,
    halfOpenTimeoutMs: 5_000,
    scheduler,
    isFailure: cb('isFailure', (e: unknown) => isServiceFailure(classifyError(e))),
  });
  try {
    restoreBreaker(breaker, s.snapshot.value as CircuitSnapshot);
    trace.restore = s.snapshot.odd ? `odd ${s.snapshot.odd} taken` : 'valid';
  } catch (e) {
    if (!(e instanceof InvalidOptionError) || !e.option.startsWith('snapshot')) trace.problems.push(`restore threw ${String(e)}`);
    trace.restore = s.snapshot.odd ? `odd ${s.snapshot.odd} refused` : 'valid refused';
    if (!s.snapshot.odd) trace.problems.push(`a valid snapshot was refused: ${String(e)}`);
  }

  /** The tools' late reads: user code the run does not own, left out of "what the run left". */
  const lateReads = new Set<unknown>();
  let turn = 0;
  const model: Model = {
    id: 'm',
    stream: () =>
      new Observable<TurnEvent>((subscriber) => {
        const step = s.model[Math.min(turn++, s.model.length - 1)]!;
        const play = (): void => {
          switch (step) {
            case 'ok':
              for (const e of [...textDeltas('all good'), finish()]) subscriber.next(e);
              return subscriber.complete();
            case 'tool':
              subscriber.next(toolCall(`c${turn}`, 'lookup', {}));
              subscriber.next(finish('tool-calls'));
              return subscriber.complete();
            case '503':
            case '400':
              return subscriber.error(new HttpError(Number(step)));
            case '429 small':
              return subscriber.error(new HttpError(429, { 'retry-after-ms': '1500' }));
            case '429 huge':
              return subscriber.error(new HttpError(429, { 'retry-after-ms': String(s.retryAfterMs) }));
          }
        };
        const action = scheduler.schedule(play, s.latency);
        return () => action.unsubscribe();
      }),
  };

  const lookup = defineTool({
    name: 'lookup',
    description: 'reads its signal late',
    args: t.unknown,
    idempotent: true,
    execute: (_args, context) => {
      const call: Trace['calls'][number] = { cancelledAt: undefined, reads: [], live: true };
      trace.calls.push(call);
      // code after an await: not cancelled with the subscription
      lateReads.add(scheduler.schedule(() => call.reads.push({ at: scheduler.now(), aborted: context.signal.aborted }), s.lateReadAfter));
      return new Observable<string>((subscriber) => {
        let done = false;
        const action = scheduler.schedule(() => {
          done = true;
          if (s.toolFails) return subscriber.error(new HttpError(400));
          subscriber.next('found');
          subscriber.complete();
        }, s.toolLatency);
        return () => {
          call.live = false;
          if (!done) call.cancelledAt = scheduler.now();
          action.unsubscribe();
        };
      });
    },
  });

  const modelRetry = retryWithBackoff<TurnEvent>({
    scheduler,
    maxRetries: 3,
    initialBackoffMs: 100,
    jitter: 'full',
    maxRetryAfterMs: s.maxRetryAfterMs,
    ...(s.totalTimeoutMs === undefined ? {} : { totalTimeoutMs: s.totalTimeoutMs }),
    classifier: cb('classifier', classifyError),
    random: cb('random', () => 0.5),
    onRetry: cb('onRetry', () => undefined),
  });
  const toolOps: OperatorFunction<unknown, unknown> = (call$) =>
    call$.pipe(
      degradeAfter(s.toolDeadline, 'degraded', { scheduler }),
      retryWithBackoff({ scheduler, maxRetries: 1, initialBackoffMs: 10 }),
      reflectOnError({ shouldReflect: cb('shouldReflect', () => true) }),
    );

  const unhandled: unknown[] = [];
  const saved = rxConfig.onUnhandledError;
  rxConfig.onUnhandledError = (e) => unhandled.push(e);
  try {
    runAgent({
      model,
      tools: [lookup],
      messages: [{ role: 'user', content: 'go' }],
      maxSteps: 4,
      scheduler,
      modelPipeline: (_req, turn$) => turn$.pipe(modelRetry, circuitBreak(breaker)),
      toolPipeline: cb('toolPipeline', (_call, call$) => call$.pipe(toolOps)),
      capabilities: { systemPromptSuffix: cb('systemPromptSuffix', () => ''), events$: new CapabilityRegistry().events$ },
      output: validateOutput([cb('check', () => undefined)]),
    }).subscribe({
      next: (e) => trace.events.push(e),
      error: (e: unknown) => {
        trace.error = e;
        trace.errored = true;
      },
      complete: () => (trace.completed = true),
    });
    // step from action to action: a hang shows as nothing left to run before the end
    let steps = 0;
    while (!trace.errored && !trace.completed && scheduler.actions.length > 0) {
      scheduler.advanceTo(scheduler.actions[0]!.delay);
      if (++steps > 100_000) {
        trace.problems.push('runaway: 100 000 scheduler steps');
        break;
      }
    }
    if (!trace.errored && !trace.completed) trace.problems.push('HUNG: the run never ended');
    // what the run left: only the breaker's half-open notice may remain (and the tools' late reads)
    const notice = breaker.state === 'open' && !breaker.isolated ? 1 : 0;
    const live = trace.calls.filter((c) => c.live).length;
    if (live > 0) trace.problems.push(`${live} tool calls still subscribed after the run ended`);
    const pending = scheduler.actions.filter((a) => !lateReads.has(a)).length;
    if (pending > notice) trace.problems.push(`${pending} actions scheduled after the run ended (${notice} half-open notice)`);
    breaker.reset();
    scheduler.flush(); // the late reads
  } catch (e) {
    trace.problems.push(`thrown out of the scheduler: ${String((e as Error).stack ?? e)}`);
  } finally {
    rxConfig.onUnhandledError = saved;
  }
  if (scheduler.warnings.length > 0) trace.problems.push(`timers clamped by Node: ${scheduler.warnings.join(', ')}`);
  for (const e of unhandled) trace.problems.push(`RxJS unhandled error: ${String(e)}`);
  if (trace.errored) {
    const e = trace.error;
    if (trace.threw && SURFACES.has(s.callback) && !carries(e, boom)) trace.problems.push(`${s.callback} threw but the run failed with ${String(e)}`);
    if (!carries(e, boom) && !ALLOWED.some((k) => e instanceof k)) trace.problems.push(`unexpected terminal error ${String(e)}`);
  } else if (trace.threw && SURFACES.has(s.callback)) {
    trace.problems.push(`${s.callback} threw but the run completed`);
  }
  for (const [i, call] of trace.calls.entries()) {
    for (const read of call.reads) {
      if (read.at === call.cancelledAt) continue; // the same moment: either order is right
      const expected = call.cancelledAt !== undefined && read.at > call.cancelledAt;
      if (read.aborted !== expected)
        trace.problems.push(`tool call ${i}: signal read at ${read.at} aborted=${read.aborted}, cancelled at ${String(call.cancelledAt)}`);
    }
  }
  return { ...trace, scheduler, breaker };
}

export function runHardeningSoak(options: { runs: number; seed: number }): SoakReport {
  const { runs, seed } = options;
  const outcomes: Histogram = {};
  const faults: Histogram = {};
  const healing: Histogram = {};
  const problems: string[] = [];
  let virtualMs = 0;
  let lateReads = 0;
  const started = performance.now();
  for (let i = 0; i < runs; i++) {
    const s = generateHardening(new Rng(Rng.derive(seed, i)));
    const r = runHardening(s);
    virtualMs += r.scheduler.now();
    bump(outcomes, r.completed ? 'answer' : r.errored ? (carries(r.error, r.boom) ? 'thrown callback' : (r.error as Error).name) : 'HUNG');
    if (s.callback !== 'none') bump(faults, `throwing ${s.callback}${r.threw ? '' : ' (never reached)'}`);
    for (const step of new Set(s.model)) if (step !== 'ok' && step !== 'tool') bump(faults, `model ${step}`);
    if (s.totalTimeoutMs !== undefined && s.totalTimeoutMs > NODE_TIMEOUT_MAX) bump(faults, 'huge budget');
    if (s.toolDeadline > NODE_TIMEOUT_MAX) bump(faults, 'huge tool deadline');
    bump(faults, `snapshot ${r.restore}`);
    const cancelled = r.calls.filter((c) => c.cancelledAt !== undefined);
    if (cancelled.length > 0) bump(healing, 'tool call cancelled');
    lateReads += cancelled.flatMap((c) => c.reads.filter((x) => x.aborted)).length;
    if (r.events.some((e) => e.type === 'reflection')) bump(healing, 'reflection');
    if (r.events.some((e) => e.type === 'tool-result' && e.result === 'degraded')) bump(healing, 'tool degraded');
    for (const p of r.problems) problems.push(`[seed ${seed}, run ${i}] ${p} — scenario ${JSON.stringify(s)}`);
  }
  return {
    name: 'hardening fault soak (throwing callbacks, huge delays, late signals, odd snapshots)',
    seed,
    runs,
    elapsedMs: performance.now() - started,
    outcomes,
    faults,
    healing,
    problems,
    leaks: { breakerObserversMax: 0, breakerObserversTotal: 0 },
    figures: { 'virtual time simulated (days)': (virtualMs / 86_400_000).toFixed(0), 'late reads seen aborted': lateReads },
  };
}
