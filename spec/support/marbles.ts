import { expect } from 'chai';
import { TestScheduler, type RunHelpers } from 'rxjs/testing';

/**
 * A fresh TestScheduler whose assertions are chai deep equality. Errors compare by name and
 * message (chai's rule), so specs assert custom error fields separately.
 */
export function testScheduler(): TestScheduler {
  return new TestScheduler((actual, expected) => {
    expect(actual).to.deep.equal(expected);
  });
}

/** The helpers of one `TestScheduler.run`, its scheduler, and `at(t, fn)`: run `fn` at absolute virtual time `t`. */
export interface VirtualRun extends RunHelpers {
  readonly ts: TestScheduler;
  readonly at: (t: number, fn: () => void) => void;
}

/** Runs `body` in virtual time with a fresh {@link testScheduler}. */
export function virtual(body: (run: VirtualRun) => void): void {
  const ts = testScheduler();
  ts.run((helpers) => body({ ...helpers, ts, at: (t, fn) => void ts.schedule(fn, t - ts.now()) }));
}
