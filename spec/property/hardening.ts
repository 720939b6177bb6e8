/**
 * The classes of failure a hardening review found, as properties, for `bench/soak.ts` (tens of
 * thousands of runs each): throwing user callbacks, huge delays, signals read late, odd breaker
 * snapshots.
 * Each also runs a few hundred times in its own spec file next to this one.
 */
import type fc from 'fast-check';
import { hugeDelaysProperty } from './hugeDelays.js';
import { lateSignalsProperty } from './lateSignals.js';
import { oddSnapshotsProperty, roundTripProperty } from './snapshots.js';
import { throwingCallbacksProperty } from './throwingCallbacks.js';

export const hardeningProperties: [string, fc.IProperty<never>][] = [
  ['a user callback that throws never hangs a pipeline', throwingCallbacksProperty as unknown as fc.IProperty<never>],
  ['every wait fires when due, whatever its size (no timer above 2³¹−1 ms)', hugeDelaysProperty as unknown as fc.IProperty<never>],
  ['a signal read late is aborted exactly when the consumer left first', lateSignalsProperty as unknown as fc.IProperty<never>],
  ['breaker snapshots restore to the same behaviour', roundTripProperty as unknown as fc.IProperty<never>],
  ['odd breaker snapshots: refused naming the field, or a breaker that still works', oddSnapshotsProperty as unknown as fc.IProperty<never>],
];
