/**
 * A minimal fake clock for the peers (cockatiel, opossum), which read `Date.now()` and wait with
 * the global `setTimeout` / `setInterval`: replaces those globals, and advances time from timer
 * to timer, draining promise reactions after each one. rxheal does not need it (its time is a
 * scheduler's, virtualised by `TestScheduler`), but runs under it as a cross-check.
 */

interface FakeTimer {
  id: number;
  at: number;
  fn: (...args: unknown[]) => void;
  args: unknown[];
  interval: number | undefined;
}

/** What `setTimeout` returns here: enough of Node's `Timeout` for the peers. */
class Handle {
  constructor(readonly id: number) {}
  unref(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  hasRef(): boolean {
    return true;
  }
  [Symbol.toPrimitive](): number {
    return this.id;
  }
}

const realSetImmediate = setImmediate;
const EPOCH = Date.UTC(2026, 0, 1);

export class FakeClock {
  /** Milliseconds since the clock was installed. */
  elapsed = 0;
  private seq = 0;
  private readonly timers = new Map<number, FakeTimer>();
  private saved: Record<string, unknown> | undefined;

  /** Replaces the globals; call {@link uninstall} in a `finally`. */
  install(): void {
    const g = globalThis as unknown as Record<string, unknown>;
    this.saved = {
      setTimeout: g['setTimeout'],
      clearTimeout: g['clearTimeout'],
      setInterval: g['setInterval'],
      clearInterval: g['clearInterval'],
      now: Date.now,
    };
    const schedule =
      (interval: boolean) =>
      (fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]): Handle => {
        const id = ++this.seq;
        const delay = Math.max(1, Math.floor(ms ?? 0));
        this.timers.set(id, { id, at: this.elapsed + delay, fn, args, interval: interval ? delay : undefined });
        return new Handle(id);
      };
    const clear = (handle: unknown): void => {
      if (handle !== undefined && handle !== null) this.timers.delete(Number(handle));
    };
    g['setTimeout'] = schedule(false);
    g['setInterval'] = schedule(true);
    g['clearTimeout'] = clear;
    g['clearInterval'] = clear;
    Date.now = () => EPOCH + this.elapsed;
  }

  uninstall(): void {
    const g = globalThis as unknown as Record<string, unknown>;
    const s = this.saved;
    if (!s) return;
    g['setTimeout'] = s['setTimeout'];
    g['clearTimeout'] = s['clearTimeout'];
    g['setInterval'] = s['setInterval'];
    g['clearInterval'] = s['clearInterval'];
    Date.now = s['now'] as () => number;
    this.timers.clear();
    this.saved = undefined;
  }

  /** Runs every promise reaction queued so far (and those they queue). */
  static drain(): Promise<void> {
    return new Promise((resolve) => realSetImmediate(resolve));
  }

  /** Advances to `elapsed = target`, firing timers in order (ties in creation order). */
  async advanceTo(target: number): Promise<void> {
    await FakeClock.drain();
    for (;;) {
      let next: FakeTimer | undefined;
      for (const t of this.timers.values()) if (t.at <= target && (!next || t.at < next.at || (t.at === next.at && t.id < next.id))) next = t;
      if (!next) break;
      this.elapsed = next.at;
      if (next.interval === undefined) this.timers.delete(next.id);
      else next.at += next.interval;
      next.fn(...next.args);
      await FakeClock.drain();
    }
    this.elapsed = target;
  }

  /** Timers pending now. */
  get pending(): number {
    return this.timers.size;
  }
}
