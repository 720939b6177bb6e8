/**
 * A replay's virtual clock, held across `await`s. `TestScheduler.run` makes every RxJS scheduler
 * virtual only while its callback runs — synchronously — so a promise a tool returns, or an
 * `async` agent factory, would resume on the real clock. A replay needs the clock virtual while
 * microtasks run between its steps: it takes the delegates `TestScheduler.run` installs (RxJS's
 * own) and installs them again whenever it holds the clock. The providers are RxJS's own
 * (`rxjs/internal/scheduler/*`, what `TestScheduler.run` sets); a spec checks that
 * `asyncScheduler` is virtual across an `await` with them.
 *
 * The clock is held only while nothing but the replay's own work can run (its steps and the
 * microtasks between them): a timer of other code, or its I/O, never lands on it. When the run
 * waits on a promise that needs real I/O, the clock is let go while the event loop turns.
 *
 * @module
 */
import type { TestScheduler } from 'rxjs/testing';
import { animationFrameProvider } from 'rxjs/internal/scheduler/animationFrameProvider';
import { dateTimestampProvider } from 'rxjs/internal/scheduler/dateTimestampProvider';
import { immediateProvider } from 'rxjs/internal/scheduler/immediateProvider';
import { intervalProvider } from 'rxjs/internal/scheduler/intervalProvider';
import { performanceTimestampProvider } from 'rxjs/internal/scheduler/performanceTimestampProvider';
import { timeoutProvider } from 'rxjs/internal/scheduler/timeoutProvider';
import { ChaosInputError } from './schedule.js';

/** Every provider `TestScheduler.run` gives a delegate. */
const PROVIDERS: readonly { delegate: unknown }[] = [
  animationFrameProvider,
  dateTimestampProvider,
  immediateProvider,
  intervalProvider,
  performanceTimestampProvider,
  timeoutProvider,
];

/**
 * A replay's clock: `ts`'s virtual time, given to every RxJS scheduler of the process while it is
 * held. A replay holds it while its own code runs — the steps of the clock, and the microtasks
 * between them, during which no other code of the process can run — and lets it go while the
 * event loop turns for a promise that waits on real I/O (other code may run then, on real time).
 *
 * @example
 * ```ts
 * const clock = new VirtualClock(ts);
 * clock.hold();
 * try { await microtasks(); } finally { clock.end(); }
 * ```
 * @throws {ChaosInputError} inside `TestScheduler.run` (or another virtual clock): the clock is
 * virtual already.
 */
export class VirtualClock {
  /** The delegates `TestScheduler.run` installs for `ts`, one per provider. */
  private readonly delegates: readonly unknown[];
  private holding = false;

  constructor(readonly ts: TestScheduler) {
    checkClockFree();
    let delegates: unknown[] = [];
    ts.run(() => {
      delegates = PROVIDERS.map((p) => p.delegate);
    });
    this.delegates = delegates;
    claim(this);
  }

  /** Whether RxJS's schedulers are on this clock now. */
  get held(): boolean {
    return this.holding;
  }

  /** RxJS's schedulers on this clock. */
  hold(): void {
    if (this.holding) return;
    PROVIDERS.forEach((p, i) => (p.delegate = this.delegates[i]));
    this.holding = true;
  }

  /** RxJS's schedulers on real time again (the event loop is about to turn). */
  release(): void {
    if (!this.holding) return;
    PROVIDERS.forEach((p) => (p.delegate = undefined));
    this.holding = false;
  }

  /** The replay is over: real time, and the clock free for the next. */
  end(): void {
    this.release();
    if (owner === this) owner = undefined;
  }
}

/** The clock of the replay running now, if one is. */
let owner: VirtualClock | undefined;

/** The clock of the replay starting now owns RxJS's schedulers until it ends. */
function claim(clock: VirtualClock): void {
  owner = clock;
}

/**
 * Throws when RxJS's schedulers are virtual and no replay owns the clock: the caller is inside
 * `TestScheduler.run` (or another virtual clock), where a replay cannot run its own.
 *
 * @example
 * ```ts
 * checkClockFree(); // outside TestScheduler.run: nothing happens
 * ```
 * @throws {ChaosInputError} inside `TestScheduler.run`.
 */
export function checkClockFree(): void {
  if (owner === undefined && PROVIDERS.some((p) => p.delegate !== undefined)) {
    throw new ChaosInputError('a replay runs its own virtual clock: call it outside TestScheduler.run (RxJS timers are virtual already)');
  }
}

/** One turn of the event loop: every microtask queued before it has run, and ready I/O. */
export function nextTurn(): Promise<void> {
  if (typeof setImmediate === 'function') return new Promise((resolve) => setImmediate(resolve));
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(undefined);
  });
}
