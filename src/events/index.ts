/**
 * `rxheal/events`: the event model alone — conversation messages, what a model stream emits,
 * what the agent loop reports — as TypeScript types and io-ts codecs, for code that reads
 * rxheal's events (a log shipper, a UI) without the operators; and what turns events into log
 * records, lines and summaries ({@link tapLogs}, {@link logRecord}, {@link formatLogLine},
 * {@link summarizeEvents}; `logEvents` and `summarize` are the root's). The model itself lives in
 * `core/events/events.ts`; this entry re-exports it.
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
export { formatLogLine, logRecord, tapLogs } from '../observe/logger.js';
export type { LogEventsOptions, LoggerLike, LogLevel, LogRecord, LogValue } from '../observe/logger.js';
export { summarizeEvents } from '../observe/summarize.js';
export type { ResilienceSummary, TimedEvent } from '../observe/summarize.js';
