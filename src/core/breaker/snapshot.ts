/**
 * A breaker's state as plain JSON: the snapshot types, the reading of one back — field by field,
 * naming the first that cannot be restored — for `restoreBreaker` (persist.ts).
 *
 * @module
 */
import type { CircuitState } from '../circuit/state.js';
import { InvalidOptionError } from '../errors/errors.js';
import { BUCKETS } from './rateWindow.js';

/**
 * A breaker's state as plain JSON, from `snapshotBreaker`, for `restoreBreaker` (both rxheal/fleet's).
 *
 * @example
 * ```ts
 * const saved: CircuitSnapshot = snapshotBreaker(breaker);
 * localStorage.setItem('breaker', JSON.stringify(saved));
 * ```
 */
export interface CircuitSnapshot {
  /** 2 since the window records its bucket width (`restoreBreaker` still takes 1 where unambiguous). */
  readonly version: 2;
  readonly name: string;
  readonly state: CircuitState;
  readonly isolated: boolean;
  /** Scheduler time at which an open breaker admits a probe; `null` unless open. */
  readonly openUntil: number | null;
  readonly consecutiveFailures: number;
  /** Probes of the current half-open period that succeeded (0 unless half-open); taken as 0 when absent. */
  readonly halfOpenSuccesses?: number;
  /** Failure-rate window contents, when the breaker uses one. */
  readonly window: CircuitSnapshotWindow | null;
}

/**
 * A failure-rate window in a {@link CircuitSnapshot}: 10 buckets of `bucketMs` each (`windowMs /
 * 10`), the newest numbered `latest` (scheduler time / `bucketMs`, rounded down; `null` before
 * any call), and the calls and failures counted in each (bucket `b` at index `b mod 10`).
 *
 * @example
 * ```ts
 * const w: CircuitSnapshotWindow = { bucketMs: 1_000, latest: 1_700_000_000, calls: [0, 0, 0, 0, 0, 0, 0, 0, 0, 3], failures: [0, 0, 0, 0, 0, 0, 0, 0, 0, 1] };
 * ```
 */
export interface CircuitSnapshotWindow {
  readonly bucketMs: number;
  readonly latest: number | null;
  readonly calls: readonly number[];
  readonly failures: readonly number[];
}

/**
 * A version-1 snapshot (before the window recorded its bucket width). `restoreBreaker`
 * takes it when it is unambiguous: no window, an empty one, or a breaker without a failure-rate
 * window.
 *
 * @example
 * ```ts
 * restoreBreaker(breaker, { version: 1, name: 'svc', state: 'closed', isolated: false, openUntil: null, consecutiveFailures: 2, window: null });
 * ```
 */
export interface CircuitSnapshotV1 extends Omit<CircuitSnapshot, 'version' | 'window'> {
  readonly version: 1;
  readonly window: Omit<CircuitSnapshotWindow, 'bucketMs'> | null;
}

/** A snapshot field that cannot be restored, named by its path. */
export function badSnapshot(field: string, value: unknown, expected: string): InvalidOptionError {
  return new InvalidOptionError('restoreBreaker', field, value, expected);
}

const isCount = (u: unknown): u is number => Number.isSafeInteger(u) && (u as number) >= 0;

/** 10 bucket counts, each a non-negative integer (`failures` also at most the bucket's calls). */
function readBuckets(field: string, u: unknown, calls?: readonly number[]): number[] {
  if (!Array.isArray(u) || u.length !== BUCKETS) throw badSnapshot(field, u, `an array of ${BUCKETS} counts`);
  u.forEach((n: unknown, i) => {
    if (!isCount(n)) throw badSnapshot(`${field}[${i}]`, n, 'a non-negative integer');
    if (calls && n > calls[i]!) throw badSnapshot(`${field}[${i}]`, n, `at most calls[${i}] (${calls[i]})`);
  });
  return [...(u as number[])];
}

/** A restorable window, or why not: `bucketMs` must be this breaker's, `latest` not past now's bucket. */
export function readWindow(u: unknown, version: 1 | 2, bucketMs: number, now: number): { latest: number; calls: number[]; failures: number[] } {
  if (typeof u !== 'object' || u === null || Array.isArray(u)) throw badSnapshot('snapshot.window', u, 'null or { bucketMs, latest, calls, failures }');
  const w = u as Record<string, unknown>;
  const calls = readBuckets('snapshot.window.calls', w['calls']);
  const failures = readBuckets('snapshot.window.failures', w['failures'], calls);
  const empty = calls.every((n) => n === 0);
  if (version === 1) {
    // the width is unknown: bucket numbers could mean anything, unless there is nothing in them
    if (!empty) throw badSnapshot('snapshot.window', u, `version 2 (bucketMs: ${bucketMs}) or empty: a version-1 window does not record its bucket width`);
    return { latest: -Infinity, calls, failures };
  }
  if (w['bucketMs'] !== bucketMs)
    throw badSnapshot(
      'snapshot.window.bucketMs',
      w['bucketMs'],
      `${bucketMs} (this breaker's windowMs / ${BUCKETS}): windows of other widths cannot be restored`,
    );
  const latest = w['latest'];
  if (latest === null) return { latest: -Infinity, calls, failures };
  const nowBucket = Math.floor(now / bucketMs);
  if (!Number.isSafeInteger(latest) || (latest as number) > nowBucket) {
    throw badSnapshot('snapshot.window.latest', latest, `null or an integer bucket number <= ${nowBucket} (now's bucket)`);
  }
  return { latest: latest as number, calls, failures };
}

/** A snapshot's fields checked one by one, naming the first that cannot be restored. */
export function readSnapshot(u: unknown): CircuitSnapshot | CircuitSnapshotV1 {
  if (typeof u !== 'object' || u === null || Array.isArray(u)) throw badSnapshot('snapshot', u, 'a CircuitSnapshot (from snapshotBreaker())');
  const s = u as Record<string, unknown>;
  if (s['version'] !== 1 && s['version'] !== 2) throw badSnapshot('snapshot.version', s['version'], '2 (or 1)');
  if (typeof s['name'] !== 'string') throw badSnapshot('snapshot.name', s['name'], 'a string');
  if (s['state'] !== 'closed' && s['state'] !== 'open' && s['state'] !== 'half-open')
    throw badSnapshot('snapshot.state', s['state'], '"closed" | "open" | "half-open"');
  if (typeof s['isolated'] !== 'boolean') throw badSnapshot('snapshot.isolated', s['isolated'], 'a boolean');
  if (s['openUntil'] !== null && !Number.isFinite(s['openUntil']))
    throw badSnapshot('snapshot.openUntil', s['openUntil'], 'a finite number (scheduler time) or null');
  if (!isCount(s['consecutiveFailures'])) throw badSnapshot('snapshot.consecutiveFailures', s['consecutiveFailures'], 'a non-negative integer');
  if (s['halfOpenSuccesses'] !== undefined && !isCount(s['halfOpenSuccesses']))
    throw badSnapshot('snapshot.halfOpenSuccesses', s['halfOpenSuccesses'], 'a non-negative integer');
  return u as CircuitSnapshot | CircuitSnapshotV1;
}
