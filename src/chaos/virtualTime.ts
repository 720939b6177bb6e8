/**
 * A replay's virtual clock, held across `await`s. `TestScheduler.run` makes every RxJS scheduler
 * virtual only while its callback runs — synchronously — so a promise a tool returns, or an
 * `async` agent factory, would resume on the real clock. A replay needs the clock to stay
 * virtual while it lets microtasks run between its steps: it takes the delegates
 * `TestScheduler.run` installs (its own, made by RxJS) and keeps them installed until the replay
 * ends. The providers are RxJS's own (`rxjs/internal/scheduler/*`, what `TestScheduler.run`
 * sets); a spec checks that `asyncScheduler` is virtual across an `await` with them.
 *
 * While one is installed every RxJS scheduler of the process is virtual: replays run one at a
 * time (see `replaySchedule`), and nothing else in the process should use RxJS timers meanwhile.
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
const PROVIDERS: readonly { delegate: unknown }[] = [animationFrameProvider, dateTimestampProvider, immediateProvider, intervalProvider, performanceTimestampProvider, timeoutProvider];

/**
 * Makes every RxJS scheduler run on `ts`'s virtual clock until the returned function is called.
 *
 * @example
 * ```ts
 * const leave = holdVirtualTime(ts);
 * try { await work(); } finally { leave(); }
 * ```
 * @throws {ChaosInputError} inside `TestScheduler.run` (or another replay): the clock is already virtual.
 */
export function holdVirtualTime(ts: TestScheduler): () => void {
  checkClockFree();
  let delegates: unknown[] = [];
  ts.run(() => {
    delegates = PROVIDERS.map((p) => p.delegate);
  });
  PROVIDERS.forEach((p, i) => (p.delegate = delegates[i]));
  held = true;
  return () => {
    held = false;
    PROVIDERS.forEach((p) => (p.delegate = undefined));
  };
}

/** Whether a replay holds the clock now (a second replay then waits its turn; it is no `TestScheduler.run`). */
let held = false;

/**
 * Throws when the clock is virtual and no replay holds it: the caller is inside
 * `TestScheduler.run` (or another virtual clock), where a replay cannot run its own.
 *
 * @example
 * ```ts
 * checkClockFree(); // outside TestScheduler.run: nothing happens
 * ```
 * @throws {ChaosInputError} inside `TestScheduler.run`.
 */
export function checkClockFree(): void {
  if (!held && PROVIDERS.some((p) => p.delegate !== undefined)) {
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
