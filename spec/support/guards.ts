/**
 * The rule every user callback follows (src/core/rx/guard.ts): a callback that throws turns into an
 * error downstream — the thrown value, or an error with it as `cause` — never a hang, never an
 * uncaught exception, and whatever the call held (a breaker's permit, a wait, a source
 * subscription) is settled and released. These helpers let each operator's spec state that as a
 * table: one row per callback, each run with a synchronous and an asynchronous source.
 */
import { expect } from 'chai';
import { config, Observable, VirtualTimeScheduler } from 'rxjs';
import { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { CircuitOpenError, HttpError } from '../../src/core/errors/errors.js';

/** How a test source fails: during `subscribe` (`sync`) or 1 ms later on the scheduler (`async`). */
export type SourceKind = 'sync' | 'async';
export const KINDS: readonly SourceKind[] = ['sync', 'async'];

/** A marked value for callbacks to throw. */
export class Boom extends Error {
  override readonly name = 'Boom';
  constructor(readonly where: string) {
    super(`${where} threw`);
  }
}

/** A callback that throws `thrown` whatever it is given (typed as whatever the option wants). */
export function thrower(thrown: unknown): () => never {
  return () => {
    throw thrown;
  };
}

/** A cold source that emits `values` then fails with `error`, synchronously or 1 ms after subscription, counting live subscriptions. */
export function failingSource<T>(
  kind: SourceKind,
  scheduler: VirtualTimeScheduler,
  error: unknown,
  values: readonly T[] = [],
): { source: Observable<T>; live: () => number; subscriptions: () => number } {
  let live = 0;
  let subscriptions = 0;
  const source = new Observable<T>((subscriber) => {
    live++;
    subscriptions++;
    const fire = (): void => {
      for (const v of values) subscriber.next(v);
      subscriber.error(error);
    };
    const action = kind === 'sync' ? (fire(), undefined) : scheduler.schedule(fire, 1);
    return () => {
      live--;
      action?.unsubscribe();
    };
  });
  return { source, live: () => live, subscriptions: () => subscriptions };
}

/** A breaker already half-open with one probe slot and no probe deadline: a permit never settled keeps the slot taken for ever. */
export function halfOpenBreaker(scheduler: VirtualTimeScheduler, options: ConstructorParameters<typeof CircuitBreaker>[0] = {}): CircuitBreaker {
  const breaker = new CircuitBreaker({
    name: 'guarded',
    failureThreshold: 1,
    halfOpenMaxCalls: 1,
    halfOpenTimeoutMs: Infinity,
    resetTimeoutMs: 1_000,
    scheduler,
    ...options,
  });
  // open it (a counted failure), then let the reset timeout pass
  const permit = breaker.acquire();
  if (permit instanceof CircuitOpenError) throw permit;
  permit.failure(new HttpError(503));
  // the half-open notice is scheduled only while someone observes: watch while time passes
  const watching = breaker.events$.subscribe();
  scheduler.flush();
  watching.unsubscribe();
  if (breaker.state !== 'half-open') throw new Error(`halfOpenBreaker: ${breaker.state}`);
  return breaker;
}

/** Whether `error` is `thrown`, or has it somewhere on its `cause` chain (or among `errors`). */
export function carries(error: unknown, thrown: unknown, depth = 0): boolean {
  if (error === thrown) return true;
  if (depth > 8 || typeof error !== 'object' || error === null) return false;
  const e = error as { cause?: unknown; errors?: unknown };
  if ('cause' in e && carries(e.cause, thrown, depth + 1)) return true;
  return Array.isArray(e.errors) && e.errors.some((x) => carries(x, thrown, depth + 1));
}

/**
 * Runs `body` with RxJS's unhandled-error and stopped-notification hooks recording what they
 * see (a callback's throw RxJS could not deliver, a notification dropped on a stopped
 * subscriber); `thrown`: what `body` itself threw (e.g. out of a scheduler's `flush()`).
 */
export function watchRxjs(body: () => void): { unhandled: unknown[]; stopped: string[]; thrown: unknown } {
  const out = { unhandled: [] as unknown[], stopped: [] as string[], thrown: undefined as unknown };
  const saved = { onUnhandledError: config.onUnhandledError, onStoppedNotification: config.onStoppedNotification };
  config.onUnhandledError = (e) => out.unhandled.push(e);
  config.onStoppedNotification = (n) => out.stopped.push(n.kind === 'E' ? `E ${String(n.error)}` : n.kind);
  try {
    body();
  } catch (e) {
    out.thrown = e;
  } finally {
    config.onUnhandledError = saved.onUnhandledError;
    config.onStoppedNotification = saved.onStoppedNotification;
  }
  return out;
}

/** What a run of a pipeline looked like. */
export interface GuardedRun {
  readonly values: unknown[];
  readonly error: unknown;
  readonly errored: boolean;
  readonly completed: boolean;
  /** Actions still scheduled when the error arrived. */
  readonly pendingAtError: number;
}

/**
 * Subscribes to `result`, runs `scheduler` to the end, and checks the rule: `result` errors with
 * `thrown` (or an error carrying it); when it does, nothing is left scheduled (but an open
 * breaker's half-open notice) and no source is subscribed again afterwards; no source
 * subscription is left (`live()`), no exception escaped
 * (`flush()` would throw) or went to RxJS's unhandled-error or stopped-notification hooks, and
 * a `breaker` given is not left holding the call's permit.
 */
export function expectThrowDownstream(
  result: Observable<unknown>,
  thrown: unknown,
  rig: { scheduler: VirtualTimeScheduler; live?: () => number; subscriptions?: () => number; breaker?: CircuitBreaker },
): GuardedRun {
  const run = { values: [] as unknown[], error: undefined as unknown, errored: false, completed: false, pendingAtError: -1 };
  let subscriptionsAtError = -1;
  let notice = 0;
  const {
    unhandled,
    stopped,
    thrown: escaped,
  } = watchRxjs(() => {
    result.subscribe({
      next: (v) => run.values.push(v),
      error: (e: unknown) => {
        run.error = e;
        run.errored = true;
        run.pendingAtError = rig.scheduler.actions.length;
        subscriptionsAtError = rig.subscriptions?.() ?? -1;
        notice = rig.breaker?.state === 'open' ? 1 : 0;
      },
      complete: () => (run.completed = true),
    });
    rig.scheduler.flush();
  });
  if (escaped !== undefined) throw escaped;
  expect(unhandled, 'no unhandled error').to.deep.equal([]);
  expect(stopped, 'no notification lost on a stopped subscriber').to.deep.equal([]);
  expect(run.completed, 'the result must not complete').to.equal(false);
  expect(run.errored, 'the result errors (never a hang)').to.equal(true);
  expect(carries(run.error, thrown), `the error downstream carries what the callback threw; got ${String(run.error)}`).to.equal(true);
  expect(run.pendingAtError, 'nothing left scheduled when the error arrives').to.be.at.most(notice);
  expect(rig.scheduler.actions.length, 'nothing left scheduled').to.equal(0);
  if (rig.subscriptions) expect(rig.subscriptions(), 'no source subscribed after the error').to.equal(subscriptionsAtError);
  if (rig.live) expect(rig.live(), 'no source subscription left').to.equal(0);
  if (rig.breaker) {
    const b = rig.breaker;
    // a permit left unsettled keeps the only probe slot of a half-open breaker taken
    const admission = b.state === 'half-open' ? b.acquire() : undefined;
    expect(admission instanceof CircuitOpenError, 'the permit was settled or released').to.equal(false);
    if (admission && !(admission instanceof CircuitOpenError)) admission.release();
  }
  return run;
}

/**
 * Runs `body` with RxJS's `config.onUnhandledError` capturing what a throwing subscriber callback
 * reported (RxJS reports it on a later tick), and returns what was captured.
 */
export async function reportedByRxjs(body: () => void | Promise<void>): Promise<unknown[]> {
  const captured: unknown[] = [];
  const saved = config.onUnhandledError;
  config.onUnhandledError = (e) => captured.push(e);
  try {
    await body();
    await new Promise((resolve) => setTimeout(resolve, 0));
  } finally {
    config.onUnhandledError = saved;
  }
  return captured;
}
