/**
 * Properties of breaker snapshots (`snapshotBreaker` / `restoreBreaker`):
 *
 * 1. Round trip: a breaker driven through a random history (failures, successes, ignored
 *    errors, time passing, isolate, reset), snapshotted, sent through JSON and restored into a
 *    fresh breaker with the same options behaves exactly as the original from then on: same
 *    admissions (and rejections' `retryAfterMs`), states, transitions and snapshots.
 * 2. Odd snapshots: the same snapshot with one field changed to something odd (negative,
 *    fractional, NaN, infinite, huge, of another type, another window width, a bucket in the
 *    future…) is either refused with an `InvalidOptionError` naming that field (or the part of
 *    the snapshot it makes unreadable), or restores to a breaker that still works: it reaches
 *    half-open when its open period ends, closes on successful probes, and opens again on new
 *    failures once its window has slid past the restored counts.
 *
 * Used by `snapshots.spec.ts` (a few hundred runs) and `bench/soak.ts` (tens of thousands).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { VirtualTimeScheduler } from 'rxjs';
import { CircuitBreaker, type CircuitBreakerOptions, type CircuitSnapshot, type CircuitState } from '../../src/core/breaker/CircuitBreaker.js';
import { restoreBreaker, snapshotBreaker } from '../../src/core/breaker/persist.js';
import { CircuitOpenError, HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';

export interface BreakerConfig {
  readonly failureThreshold: number;
  readonly resetTimeoutMs: number;
  readonly halfOpenMaxCalls: number;
  readonly window: 'consecutive' | { readonly failureRateThreshold: number; readonly minimumCalls: number; readonly windowMs: number };
}

/** Breaker options; `rateWeight`: how often a failure-rate window is drawn (to 1 for consecutive). */
export const breakerConfigArb = (rateWeight = 1): fc.Arbitrary<BreakerConfig> =>
  fc.record({
    failureThreshold: fc.integer({ min: 1, max: 4 }),
    resetTimeoutMs: fc.integer({ min: 1, max: 500 }),
    halfOpenMaxCalls: fc.integer({ min: 1, max: 3 }),
    window: fc.oneof(
      { weight: 1, arbitrary: fc.constant('consecutive' as const) },
      {
        weight: rateWeight,
        arbitrary: fc.record({
          failureRateThreshold: fc.constantFrom(0.25, 0.5, 1),
          minimumCalls: fc.integer({ min: 1, max: 4 }),
          windowMs: fc.integer({ min: 10, max: 1_000 }),
        }),
      },
    ),
  });

/** One step of a history: a call settled at once, time passing, or a manual override. */
export type Step = 'fail' | 'succeed' | 'ignored' | 'isolate' | 'reset' | { readonly advance: number };

export const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom<Step>('fail', 'succeed', 'ignored') },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 700 }).map((advance): Step => ({ advance })) },
  { weight: 1, arbitrary: fc.constantFrom<Step>('isolate', 'reset') },
);

/** A breaker on its own virtual clock, moved by setting the frame (no timer needs to run). */
export function makeBreaker(config: BreakerConfig, scheduler: VirtualTimeScheduler): CircuitBreaker {
  return new CircuitBreaker({ name: 'b', ...config, halfOpenTimeoutMs: Infinity, scheduler } as CircuitBreakerOptions);
}

/** Moves virtual time on by `ms`, running what falls due on the way (half-open notices). */
export function advance(scheduler: VirtualTimeScheduler, ms: number): void {
  const target = scheduler.frame + ms;
  scheduler.maxFrames = target;
  try {
    scheduler.flush();
  } finally {
    scheduler.maxFrames = Infinity;
  }
  scheduler.frame = target;
}

/** Applies `step`; returns what the call saw (admitted / rejected with retryAfterMs), for comparison. */
export function apply(breaker: CircuitBreaker, scheduler: VirtualTimeScheduler, step: Step): string {
  if (typeof step === 'object') {
    advance(scheduler, step.advance);
    return `+${step.advance} ${breaker.state}`;
  }
  if (step === 'isolate' || step === 'reset') {
    breaker[step]();
    return `${step} ${breaker.state}`;
  }
  const permit = breaker.acquire();
  if (permit instanceof CircuitOpenError) return `rejected ${permit.retryAfterMs}`;
  if (step === 'succeed') permit.success();
  else permit.failure(new HttpError(step === 'fail' ? 503 : 400));
  return `${step} ${breaker.state}`;
}

export const roundTripProperty = fc.property(
  breakerConfigArb(),
  fc.array(stepArb, { maxLength: 25 }),
  fc.array(stepArb, { minLength: 1, maxLength: 25 }),
  (config, before, afterward) => {
    const scheduler = new VirtualTimeScheduler();
    const original = makeBreaker(config, scheduler);
    for (const step of before) apply(original, scheduler, step);
    const snapshot = JSON.parse(JSON.stringify(snapshotBreaker(original))) as CircuitSnapshot;
    const restored = makeBreaker(config, scheduler);
    restoreBreaker(restored, snapshot);
    const log = (b: CircuitBreaker): string[] => {
      const events: string[] = [];
      b.events$.subscribe((e) => events.push(`${e.at} ${e.from}>${e.to} ${e.reason} ${e.failures}`));
      return events;
    };
    const events = [log(original), log(restored)];
    expect(snapshotBreaker(restored), 'restored at once').to.deep.equal(snapshotBreaker(original));
    for (const step of afterward) {
      // both see each step at the same moment: time moves once, for both
      if (typeof step === 'object') {
        advance(scheduler, step.advance);
        expect(restored.state, `after +${step.advance}`).to.equal(original.state);
      } else {
        expect(apply(restored, scheduler, step), `step ${String(step)}`).to.equal(apply(original, scheduler, step));
      }
      expect(snapshotBreaker(restored)).to.deep.equal(snapshotBreaker(original));
    }
    expect(events[1]).to.deep.equal(events[0]);
  },
);

// ------------------------------------------------------------------------------ odd snapshots

/** Odd values for a field, given its current value. */
const oddValue = (current: unknown): fc.Arbitrary<unknown> =>
  fc.oneof(
    fc.constantFrom<unknown>(-1, 0.5, -0.5, NaN, Infinity, -Infinity, 1e15, 0, 1, 2, 7, null, undefined, 'x', '3', true, [], {}),
    typeof current === 'number' ? fc.constantFrom(current + 1, current - 1, current * 10, current + 1e6, current + 0.5, -current) : fc.constant(current),
  );

/** Field paths of a snapshot (window ones only when it has a window). */
function paths(s: CircuitSnapshot): string[] {
  const top = ['version', 'name', 'state', 'isolated', 'openUntil', 'consecutiveFailures', 'halfOpenSuccesses', 'window'];
  if (!s.window) return top;
  const buckets = Array.from({ length: 10 }, (_, i) => [`window.calls[${i}]`, `window.failures[${i}]`]).flat();
  return [...top, 'window.bucketMs', 'window.latest', 'window.calls', 'window.failures', ...buckets];
}

/** A deep copy of `s` with `value` at `path` (`undefined` deletes the field). */
function mutate(s: CircuitSnapshot, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(s) as unknown as Record<string, unknown>;
  const keys = path.replace(/\[(\d+)\]/g, '.$1').split('.');
  let target = copy as Record<string, unknown>;
  for (const key of keys.slice(0, -1)) target = target[key] as Record<string, unknown>;
  const last = keys[keys.length - 1]!;
  if (value === undefined) Reflect.deleteProperty(target, last);
  else target[last] = value;
  return copy;
}

/** The fields an error may name for a change at `path`: it, what holds it, and what it must agree with. */
export function related(path: string): string[] {
  const names = [`snapshot.${path}`];
  // a parent: `window.calls[3]` → `window.calls` → `window`
  let p = path;
  while (/[.[]/.test(p)) {
    p = p.replace(/(\.[^.[]+|\[\d+\])$/, '');
    names.push(`snapshot.${p}`);
  }
  const bucket = /^window\.calls\[(\d+)\]$/.exec(path);
  if (bucket) names.push(`snapshot.window.failures[${bucket[1]}]`); // fewer calls than failures
  if (path === 'window.calls') names.push('snapshot.window.failures');
  if (path === 'version') names.push('snapshot.window'); // version 1: a window of unknown width
  return names;
}

export interface OddOutcome {
  readonly accepted: boolean;
  readonly error?: unknown;
  readonly problems: string[];
}

/** Restores `odd` into a fresh breaker and, if taken, drives it to check it still works. */
export function restoreOdd(config: BreakerConfig, scheduler: VirtualTimeScheduler, odd: unknown): OddOutcome {
  const breaker = makeBreaker(config, scheduler);
  try {
    restoreBreaker(breaker, odd as CircuitSnapshot);
  } catch (error) {
    return { accepted: false, error, problems: [] };
  }
  const problems: string[] = [];
  // read through a function: TypeScript would narrow the getter after the first comparison
  const state = (): CircuitState => breaker.state;
  if (breaker.isolated) breaker.reset();
  // open: half-open when the period ends (however far: the clock jumps)
  if (breaker.state === 'open') {
    const rejection = breaker.acquire();
    if (!(rejection instanceof CircuitOpenError)) problems.push('an open breaker admitted a call');
    else {
      scheduler.frame += rejection.retryAfterMs - 1;
      if (rejection.retryAfterMs > 0 && state() !== 'open') problems.push(`half-open before the open period ended (${rejection.retryAfterMs} ms)`);
      scheduler.frame += 1;
      if (state() !== 'half-open') problems.push(`${state()} when the open period ended`);
    }
  }
  // half-open: closes on at most halfOpenMaxCalls successful probes
  for (let i = 0; i < config.halfOpenMaxCalls && breaker.state === 'half-open'; i++) {
    const permit = breaker.acquire();
    if (permit instanceof CircuitOpenError) {
      problems.push('a half-open breaker with a free slot rejected a probe');
      break;
    }
    permit.success();
  }
  if (breaker.state !== 'closed') problems.push(`${breaker.state} after the probes succeeded`);
  // closed: once the window has slid past the restored counts, new failures open it
  scheduler.frame += config.window === 'consecutive' ? 0 : config.window.windowMs;
  const needed = config.window === 'consecutive' ? config.failureThreshold : config.window.minimumCalls;
  for (let i = 0; i < needed && breaker.state === 'closed'; i++) {
    const permit = breaker.acquire();
    if (permit instanceof CircuitOpenError) problems.push('a closed breaker rejected a call');
    else permit.failure(new HttpError(503));
  }
  if (breaker.state !== 'open') problems.push(`${breaker.state} after ${needed} failures`);
  return { accepted: true, problems };
}

const oddCaseArb = fc
  .tuple(breakerConfigArb(3), fc.array(stepArb, { maxLength: 20 }))
  .chain(([config, history]) => {
    const scheduler = new VirtualTimeScheduler();
    const breaker = makeBreaker(config, scheduler);
    for (const step of history) apply(breaker, scheduler, step);
    const snapshot = snapshotBreaker(breaker);
    return fc.record({
      config: fc.constant(config),
      history: fc.constant(history),
      now: fc.constant(scheduler.now()),
      snapshot: fc.constant(snapshot),
      // the window's fields are where most can go wrong: drawn as often as the rest together
      path: snapshot.window
        ? fc.oneof(
            fc.constantFrom(...paths(snapshot).filter((p) => !p.startsWith('window'))),
            fc.constantFrom(...paths(snapshot).filter((p) => p.startsWith('window'))),
          )
        : fc.constantFrom(...paths(snapshot)),
    });
  })
  .chain((c) => oddValue(mutateValue(c.snapshot, c.path)).map((value) => ({ ...c, value })));

function mutateValue(s: CircuitSnapshot, path: string): unknown {
  const keys = path.replace(/\[(\d+)\]/g, '.$1').split('.');
  let v: unknown = s;
  for (const key of keys) v = (v as Record<string, unknown> | null)?.[key];
  return v;
}

export const oddSnapshotsProperty = fc.property(oddCaseArb, ({ config, now, snapshot, path, value }) => {
  const scheduler = new VirtualTimeScheduler();
  scheduler.frame = now;
  const odd = mutate(snapshot, path, value);
  const outcome = restoreOdd(config, scheduler, odd);
  if (!outcome.accepted) {
    const error = outcome.error;
    expect(error, `${path} = ${String(value)}: refused with InvalidOptionError`).to.be.instanceOf(InvalidOptionError);
    const e = error as InvalidOptionError;
    expect(e.target).to.equal('restoreBreaker');
    // the field itself, what holds it, what it must agree with, or a field inside it (`window: {}` → window.calls)
    const inside = e.option.startsWith(`snapshot.${path}.`) || e.option.startsWith(`snapshot.${path}[`);
    expect(inside || related(path).includes(e.option), `${path} = ${String(value)}: the error names "${e.option}"`).to.equal(true);
  } else {
    expect(outcome.problems, `${path} = ${String(value)} was taken: the breaker must still work`).to.deep.equal([]);
  }
});
