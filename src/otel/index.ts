/**
 * `rxheal/otel`: OpenTelemetry traces and metrics from the resilience events. Needs
 * `@opentelemetry/api` (an optional peer of rxheal) and an SDK you set up; without an SDK the API
 * is a no-op. Nothing is recorded unless you call {@link instrument}. It speaks the GenAI
 * semantic conventions of before the opt-in by default, the current ones when you opt in
 * (`OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`, or `semconv: 'latest'`).
 *
 * @module
 */
export { instrument } from './instrument.js';
export { GEN_AI_OPT_IN, type InstrumentOptions, type McpServerTelemetry, type Semconv } from './options.js';
export { BACKOFF_BUCKETS_MS } from './metrics.js';
export { instrumentLatency, type LatencySource } from './latency.js';
export type { LatencyQuantiles, LatencySnapshot } from '../core/latency/tracker.js';
