/**
 * `rxheal/events`: the event model alone — conversation messages, what a model stream emits,
 * what the agent loop reports — as TypeScript types and io-ts codecs, for code that reads
 * rxheal's events (a log shipper, a UI) without the operators. The model itself lives in
 * `core/events/events.ts`; this entry only re-exports it.
 *
 * @example
 * ```ts
 * import { AgentEventCodec } from 'rxheal/events';
 * const ok = AgentEventCodec.is(JSON.parse(line));
 * ```
 *
 * @module
 */
export * from '../core/events/events.js';
