/**
 * Node's timer rule in virtual time: `setTimeout`/`setInterval` clamp a delay above 2³¹−1 ms
 * (or `Infinity`, or `NaN`) to 1 ms and print a `TimeoutOverflowWarning`. `asyncScheduler` hands
 * its delays straight to `setInterval`, so an operator that schedules such a delay fires after
 * ~1 ms in production while a plain `TestScheduler` waits the whole delay. This scheduler clamps
 * the same way (and counts each clamp as a warning), so a spec can show, deterministically and in
 * virtual time, what a huge delay really does under Node.
 */
import { VirtualTimeScheduler, type SchedulerAction, type Subscription } from 'rxjs';

/** Node's TIMEOUT_MAX. */
export const NODE_TIMEOUT_MAX = 2 ** 31 - 1;

export class NodeTimerScheduler extends VirtualTimeScheduler {
  /** Delays Node would have clamped (one `TimeoutOverflowWarning` each). */
  readonly warnings: number[] = [];

  /** @param maxWarnings past this many clamps the scheduler throws: a re-arming loop ends the spec instead of spinning. */
  constructor(private readonly maxWarnings = 100) {
    super();
  }

  override schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay = 0, state?: T): Subscription {
    if (!(delay <= NODE_TIMEOUT_MAX)) {
      this.warnings.push(delay);
      if (this.warnings.length > this.maxWarnings) {
        throw new Error(
          `${this.warnings.length} TimeoutOverflowWarning(s) (delays ${this.warnings.slice(0, 3).join(', ')}…): more than ${this.maxWarnings} timers clamped to 1 ms`,
        );
      }
      delay = 1;
    }
    return super.schedule(work, delay, state);
  }

  /** Runs every action due up to `frame` (virtual ms), then stops the clock there. */
  advanceTo(frame: number): void {
    const max = this.maxFrames;
    this.maxFrames = frame;
    try {
      this.flush();
    } finally {
      this.maxFrames = max;
    }
    this.frame = Math.max(this.frame, frame);
  }
}
