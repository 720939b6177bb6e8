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
import { asyncScheduler } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { animationFrameProvider } from 'rxjs/internal/scheduler/animationFrameProvider';
import { dateTimestampProvider } from 'rxjs/internal/scheduler/dateTimestampProvider';
import { immediateProvider } from 'rxjs/internal/scheduler/immediateProvider';
import { intervalProvider } from 'rxjs/internal/scheduler/intervalProvider';
import { performanceTimestampProvider } from 'rxjs/internal/scheduler/performanceTimestampProvider';
import { timeoutProvider } from 'rxjs/internal/scheduler/timeoutProvider';
import type { ChaosEnd } from './invariants.js';
import { ChaosRecorder } from './recorder.js';
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

/** Event-loop turns a pending promise gets to settle once nothing is scheduled, before the run counts as hung. */
const PATIENCE_TURNS = 1_000;

/** Microtask ticks in a row that change nothing before the run counts as settled between two steps (more while a promise it follows is pending). */
const QUIET_TICKS = 32;
const QUIET_TICKS_PENDING = 512;

/**
 * One replay's clock and what moves it: {@link settle} lets microtasks run, {@link drive} steps
 * the clock until the run is done or nothing can move it.
 *
 * @example
 * ```ts
 * const replay = new Replay(600_000);
 * replay.hold();
 * const hung = await replay.drive(() => ended);
 * ```
 */
export class Replay {
  readonly ts = new TestScheduler(() => undefined);
  readonly recorder: ChaosRecorder;
  readonly clock: VirtualClock;

  constructor(
    readonly boundMs: number,
    recorder?: ChaosRecorder,
  ) {
    this.recorder = recorder ?? new ChaosRecorder(asyncScheduler);
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
