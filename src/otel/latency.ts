/**
 * Observed latency's quantiles as OpenTelemetry gauges.
 *
 * @module
 */
import { metrics, type ObservableResult } from '@opentelemetry/api';
import type { LatencyQuantiles, LatencySnapshot } from '../core/latency/tracker.js';
import { validateOptions } from '../core/errors/options.js';
import { InvalidOptionError } from '../core/errors/errors.js';
import { props, type InstrumentOptions } from './options.js';

/**
 * What {@link instrumentLatency} reads: a `LatencyRegistry` (every tracker it has, later ones
 * included) or anything else with a `snapshot()` of trackers' quantiles.
 *
 * @example
 * ```ts
 * const source: LatencySource = new LatencyRegistry();
 * ```
 */
export interface LatencySource {
  /** Every tracker's quantiles now (`LatencyRegistry.snapshot()`). */
  snapshot(): readonly LatencySnapshot[];
}

const QUANTILES: readonly (readonly [keyof LatencyQuantiles, string])[] = [
  ['p50', 'p50'],
  ['p90', 'p90'],
  ['p95', 'p95'],
  ['p99', 'p99'],
  ['p999', 'p99.9'],
];

/**
 * Observed latency as OpenTelemetry gauges, read from `source` each time the SDK collects: for
 * every tracker, `rxheal.latency.first_item` (time to the first item: time to first token) and
 * `rxheal.latency.gap` (between items), in ms, one data point per quantile [`rxheal.target`,
 * `rxheal.latency.quantile`: `p50`, `p90`, `p95`, `p99`, `p99.9`], and `rxheal.latency.samples`
 * [`rxheal.target`, `rxheal.latency.kind`: `first`, `gap`]. A tracker with no sample of a kind
 * gives no quantile of it. Unsubscribe to stop.
 *
 * @example
 * ```ts
 * import { instrumentLatency } from 'rxheal/otel';
 * const latency = new LatencyRegistry();
 * const gauges = instrumentLatency(latency); // the global meter
 * // at shutdown: gauges.unsubscribe();
 * ```
 * @throws {InvalidOptionError} at once, for a source without `snapshot()` or an invalid option.
 */
export function instrumentLatency(source: LatencySource, options?: Pick<InstrumentOptions, 'meter'>): { unsubscribe(): void } {
  if (typeof source !== 'object' || source === null || typeof (source as Partial<LatencySource>).snapshot !== 'function') {
    throw new InvalidOptionError('instrumentLatency', 'source', source, 'a LatencyRegistry (or an object with snapshot())');
  }
  const o = validateOptions('instrumentLatency', { meter: props.meter }, options);
  const meter = o.meter ?? metrics.getMeter('rxheal');
  const first = meter.createObservableGauge('rxheal.latency.first_item', {
    description: 'Observed time to the first item (first token) of a model or tool, by quantile',
    unit: 'ms',
  });
  const gap = meter.createObservableGauge('rxheal.latency.gap', { description: 'Observed time between the items of a model or tool, by quantile', unit: 'ms' });
  const samples = meter.createObservableGauge('rxheal.latency.samples', { description: 'Samples the latency quantiles are read from', unit: '{sample}' });
  const observe = (result: ObservableResult, target: string, q: LatencyQuantiles): void => {
    for (const [key, label] of QUANTILES) {
      const value = q[key];
      if (value !== undefined) result.observe(value, { 'rxheal.target': target, 'rxheal.latency.quantile': label });
    }
  };
  const onFirst = (result: ObservableResult): void => {
    for (const t of source.snapshot()) observe(result, t.name, t.first);
  };
  const onGap = (result: ObservableResult): void => {
    for (const t of source.snapshot()) observe(result, t.name, t.gap);
  };
  const onSamples = (result: ObservableResult): void => {
    for (const t of source.snapshot()) {
      result.observe(t.first.count, { 'rxheal.target': t.name, 'rxheal.latency.kind': 'first' });
      result.observe(t.gap.count, { 'rxheal.target': t.name, 'rxheal.latency.kind': 'gap' });
    }
  };
  first.addCallback(onFirst);
  gap.addCallback(onGap);
  samples.addCallback(onSamples);
  return {
    unsubscribe: () => {
      first.removeCallback(onFirst);
      gap.removeCallback(onGap);
      samples.removeCallback(onSamples);
    },
  };
}
