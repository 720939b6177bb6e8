/**
 * Structured logs of what the healing did, through a pluggable logger: `console` (one line per
 * event, `LEVEL prefix: message key=value …`) or any pino-compatible logger
 * (`logger.warn(fields, message)`). Off by default: nothing is logged unless you subscribe an
 * events stream with {@link logEvents} or pipe it through {@link tapLogs}.
 *
 * @module
 */
import { tap, type MonoTypeOperatorFunction, type Observable, type Subscription } from 'rxjs';
import type { AgentEvent, HealEvent, HedgeEvent } from '../core/events/events.js';
import { check, oneOf, validateOptions } from '../core/errors/options.js';
import { HEDGE_MESSAGES, POOL_MESSAGES, RESUME_MESSAGES, TASK_MESSAGES, USUAL_CIRCUIT_FROM } from './logMessages.js';

/**
 * Log levels, lowest first.
 *
 * @example
 * ```ts
 * logEvents(hub.events$, { level: 'debug' }); // also each model call and tool execution
 * ```
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/**
 * A field's value in a log record.
 *
 * @example
 * ```ts
 * const fields: Record<string, LogValue> = { tool_name: 'get_weather', attempt: 1, mid_stream: false };
 * ```
 */
export type LogValue = string | number | boolean;

/**
 * One log record: its level, the message (without the prefix) and the fields, in order.
 * What {@link logRecord} returns for an event.
 *
 * @example
 * ```ts
 * const record: LogRecord = { level: 'info', message: 'retry succeeded', fields: { tool_name: 'get_weather', attempt: 2 } };
 * formatLogLine(record); // 'INFO rxheal: retry succeeded tool_name=get_weather attempt=2'
 * ```
 */
export interface LogRecord {
  readonly level: LogLevel;
  readonly message: string;
  readonly fields: Readonly<Record<string, LogValue>>;
}

/**
 * What a logger needs: `info` and `warn` (and, if it has them, `debug` and `error`; without them
 * debug records are dropped and error records go to `warn`). `console`, pino, bunyan and most
 * others fit.
 *
 * @example
 * ```ts
 * const lines: string[] = [];
 * const logger: LoggerLike = { info: (l) => lines.push(String(l)), warn: (l) => lines.push(String(l)) };
 * logEvents(hub.events$, { logger, format: 'text' });
 * ```
 */
export interface LoggerLike {
  debug?(first: unknown, ...rest: unknown[]): void;
  info(first: unknown, ...rest: unknown[]): void;
  warn(first: unknown, ...rest: unknown[]): void;
  error?(first: unknown, ...rest: unknown[]): void;
}

/**
 * Options of {@link logEvents} and {@link tapLogs}.
 *
 * @example
 * ```ts
 * const options: LogEventsOptions = { logger: pino(), level: 'warn', prefix: 'agent' };
 * logEvents(hub.events$, options);
 * ```
 */
export interface LogEventsOptions {
  /** Where records go. Defaults to `console`. */
  readonly logger?: LoggerLike;
  /**
   * `'text'`: one string per record, `WARN rxheal: tool call failed, retrying tool_name=x …`.
   * `'object'` (pino style): `logger.warn({ tool_name: 'x', … }, 'rxheal: tool call failed, retrying')`.
   * Defaults to `'text'` for `console` (and when no logger is given), `'object'` for any other logger.
   */
  readonly format?: 'text' | 'object';
  /**
   * The lowest level logged. Defaults to `'info'`: every healing action, but not the `debug`
   * records of each model call and tool execution (`call-start` / `call-end`) nor `reset`.
   */
  readonly level?: LogLevel;
  /** Put before each message, followed by `': '`; `''` for none. Defaults to `'rxheal'`. */
  readonly prefix?: string;
}

const props = {
  logger: check(
    'a logger with info() and warn() (console, pino, …)',
    (u): u is LoggerLike => typeof u === 'object' && u !== null && typeof (u as LoggerLike).info === 'function' && typeof (u as LoggerLike).warn === 'function',
  ),
  format: oneOf('text', 'object'),
  level: oneOf(...LEVELS),
  prefix: check('a string', (u): u is string => typeof u === 'string'),
};

/**
 * `tool:get_weather` → `{ tool_name: 'get_weather' }`, `model:gpt-4o` → `{ model: 'gpt-4o' }`,
 * anything else → `{ [key]: name }`.
 */
function who(name: string, key: string): Record<string, string> {
  if (name.startsWith('tool:')) return { tool_name: name.slice(5) };
  if (name.startsWith('model:')) return { model: name.slice(6) };
  return { [key]: name };
}

/** 'tool call', 'model call' or 'call', from a target's prefix. */
function callOf(target: string): string {
  return target.startsWith('tool:') ? 'tool call' : target.startsWith('model:') ? 'model call' : 'call';
}

/**
 * The log record for one event: level, message and fields (the reference's names: `tool_name`,
 * `attempt`, `max`, `backoff_ms`, `error`, `failures`, `reset_ms`, …). Targets and breaker
 * names are split: `tool:x` gives `tool_name=x`, `model:y` gives `model=y`, others
 * `target=…` / `breaker=…`. Events that are not resilience events (text deltas, messages,
 * tool results…) give `undefined`.
 *
 * | event | level | message |
 * | --- | --- | --- |
 * | `retry` | warn | tool call failed, retrying |
 * | `retry-succeeded` | info | retry succeeded |
 * | `retry-withheld` | warn | retry withheld: tool not idempotent |
 * | `circuit` to open / half-open / closed | warn / info / info | circuit breaker opened / half-open / closed |
 * | `circuit` rejected | warn | call rejected by open circuit |
 * | `fallback` | warn | fallback activated |
 * | `reflection` (exhausted) | info (warn) | reflection injected (reflections exhausted, tool abandoned) |
 * | `degraded` / `restored` | warn / info | capability degraded / restored |
 * | `budget-exceeded` (cut) | error | budget exceeded (budget exceeded, call cut) |
 * | `spend` | info | spend charged |
 * | `tool-deduplicated` | info | tool call answered from the effect ledger |
 * | `rate-limited` (rejected) | info (warn) | call waited for rate limit (call refused by rate limit) |
 * | `spend-refused` / `spend-local` | warn / warn | spend refused by limit / spend decided on local share |
 * | `bulkhead` queued / admitted / rejected | info / info / warn | call queued by bulkhead / call admitted by bulkhead / call refused by bulkhead |
 * | `hedge` started / won / cancelled | info / info / debug | hedge started / hedge won / hedge cancelled |
 * | `hedge` failed / skipped / denied | warn / info / info | hedge failed / hedge skipped: circuit open / hedge denied: budget spent |
 * | `latency` | debug | latency observed |
 * | `call-start` / `call-end` | debug | tool call started / finished / failed / cancelled (model call …) |
 * | `reset` | debug | partial output discarded |
 *
 * @example
 * ```ts
 * logRecord({ type: 'retry-succeeded', target: 'tool:get_weather', attempt: 2 });
 * // { level: 'info', message: 'retry succeeded', fields: { tool_name: 'get_weather', attempt: 2 } }
 * ```
 */
export function logRecord(event: AgentEvent): LogRecord | undefined {
  const e = event as HealEvent;
  switch (e.type) {
    case 'retry':
      return toRecord('warn', `${callOf(e.target)} failed, retrying`, {
        ...who(e.target, 'target'),
        attempt: e.attempt,
        max: e.max,
        backoff_ms: e.delayMs,
        error: e.error,
        category: e.category,
      });
    case 'retry-succeeded':
      return toRecord('info', 'retry succeeded', { ...who(e.target, 'target'), attempt: e.attempt });
    case 'retry-withheld':
      return toRecord('warn', 'retry withheld: tool not idempotent', { ...who(e.target, 'target'), reason: e.reason, category: e.category, error: e.error });
    case 'circuit': {
      const name = who(e.breaker, 'breaker');
      const from = e.kind === 'transition' && e.from !== USUAL_CIRCUIT_FROM[e.to] ? e.from : undefined;
      if (e.kind === 'rejected') return toRecord('warn', 'call rejected by open circuit', { ...name, retry_after_ms: e.retryAfterMs });
      if (e.to === 'half-open' || e.to === 'closed') return toRecord('info', `circuit breaker ${e.to}`, { ...name, from, reason: e.reason });
      // on a transition to open, `retryAfterMs` (when the event has it) is the breaker's reset timeout
      const resetMs = (e as { retryAfterMs?: unknown }).retryAfterMs;
      return toRecord('warn', 'circuit breaker opened', {
        ...name,
        failures: e.failures,
        reset_ms: typeof resetMs === 'number' ? resetMs : undefined,
        from,
        reason: e.reason,
      });
    }
    case 'fallback':
      return toRecord('warn', 'fallback activated', { from: e.from, to: e.to, reason: e.reason, mid_stream: e.midStream });
    case 'reflection':
      return toRecord(e.exhausted ? 'warn' : 'info', e.exhausted ? 'reflections exhausted, tool abandoned' : 'reflection injected', {
        tool_name: e.tool,
        call_id: e.callId,
        attempt: e.attempt,
        max: e.max,
      });
    case 'degraded':
      return toRecord('warn', 'capability degraded', { capability: e.capability, reason: e.reason });
    case 'restored':
      return toRecord('info', 'capability restored', { capability: e.capability });
    case 'budget-exceeded':
      return toRecord('error', e.cut === true ? 'budget exceeded, call cut' : 'budget exceeded', {
        resource: e.resource,
        limit: e.limit,
        used: e.used,
        model: e.model,
        limiter: e.limiter,
      });
    case 'spend':
      return toRecord('info', 'spend charged', { model: e.model, usd: e.usd, total_usd: e.totalUsd, estimated: e.estimated || undefined });
    case 'rate-limited':
      return toRecord(e.rejected === true ? 'warn' : 'info', e.rejected === true ? 'call refused by rate limit' : 'call waited for rate limit', {
        limiter: e.limiter,
        wait_ms: e.waitMs,
        cost: e.cost,
        local: e.local,
      });
    case 'spend-refused':
      return toRecord('warn', 'spend refused by limit', { limiter: e.limiter, key: e.key, usd: e.usd, limit_usd: e.limitUsd, used_usd: e.usedUsd });
    case 'spend-local':
      return toRecord('warn', 'spend decided on local share', { limiter: e.limiter, key: e.key, share_usd: e.share });
    case 'bulkhead':
      return toRecord(e.kind === 'rejected' ? 'warn' : 'info', `call ${e.kind === 'rejected' ? 'refused' : e.kind} by bulkhead`, {
        bulkhead: e.bulkhead,
        active: e.active,
        queued: e.queued,
        wait_ms: e.waitMs,
        reason: e.reason,
      });
    case 'hedge':
      return toRecord(HEDGE_LEVELS[e.kind], HEDGE_MESSAGES[e.kind], {
        ...who(e.target, 'target'),
        attempt: e.attempt,
        after_ms: e.afterMs,
        category: e.category,
      });
    case 'task':
      return toRecord(e.kind === 'cancel' || e.status === 'failed' ? 'warn' : 'info', TASK_MESSAGES[e.kind], {
        ...who(e.target, 'target'),
        task_id: e.taskId,
        status: e.status,
        status_message: e.message,
      });
    case 'pool':
      return toRecord(e.kind === 'move' ? 'warn' : 'info', POOL_MESSAGES[e.kind], {
        pool: e.pool,
        key: e.key,
        from: e.from,
        to: e.to,
        reason: e.reason,
        wait_ms: e.waitMs,
        deadline_left_ms: e.deadlineLeftMs,
        cached_tokens: e.cachedTokens,
        move_usd: e.moveUsd,
        wait_usd: e.waitUsd,
      });
    case 'latency':
      return toRecord('debug', 'latency observed', { ...who(e.target, 'target'), kind: e.kind, count: e.count, p50_ms: e.p50, p95_ms: e.p95, p99_ms: e.p99 });
    case 'resume':
      return toRecord('warn', RESUME_MESSAGES[e.reason], {
        ...who(e.target, 'target'),
        response_id: e.responseId,
        starting_after: e.startingAfter,
        attempt: e.attempt,
        max: e.max,
        error: e.error,
      });
    case 'tool-deduplicated':
      return toRecord('info', 'tool call answered from the effect ledger', { tool_name: e.tool, call_id: e.callId, idempotency_key: e.key });
    case 'reset':
      return toRecord('debug', 'partial output discarded', { reason: e.reason, ...who(e.target, 'target') });
    case 'call-start':
      return toRecord('debug', `${e.kind} call started`, { ...who(`${e.kind}:${e.name}`, 'target'), call_id: e.id, parent_id: e.parentId, step: e.step });
    case 'call-end':
      return toRecord('debug', `${e.kind} call ${e.outcome === 'success' ? 'finished' : e.outcome === 'error' ? 'failed' : 'cancelled'}`, {
        ...who(`${e.kind}:${e.name}`, 'target'),
        call_id: e.id,
        parent_id: e.parentId,
        step: e.step,
        duration_ms: e.durationMs,
        error: e.error,
        category: e.category,
        status: e.status,
        is_error: e.isError,
        input_tokens: e.usage?.inputTokens,
        output_tokens: e.usage?.outputTokens,
      });
    default:
      return undefined;
  }
}

const HEDGE_LEVELS: Readonly<Record<HedgeEvent['kind'], LogLevel>> = {
  started: 'info',
  won: 'info',
  cancelled: 'debug',
  failed: 'warn',
  skipped: 'info',
  denied: 'info',
};

/** A record without its undefined fields. */
function toRecord(level: LogLevel, message: string, fields: Readonly<Record<string, LogValue | undefined>>): LogRecord {
  const kept: Record<string, LogValue> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) kept[k] = v;
  return { level, message, fields: kept };
}

/** logfmt: bare when safe, JSON-quoted otherwise; `error` is always quoted, as in the reference. */
function formatValue(key: string, value: LogValue): string {
  if (typeof value !== 'string') return String(value);
  return key === 'error' || value === '' || /[\s"=\\]/.test(value) ? JSON.stringify(value) : value;
}

/**
 * One record as a text line: `WARN rxheal: tool call failed, retrying tool_name=get_weather
 * attempt=1 max=3 backoff_ms=500 error="Invalid units" category=validation_error`.
 *
 * @example
 * ```ts
 * formatLogLine({ level: 'info', message: 'retry succeeded', fields: { tool_name: 'get_weather', attempt: 2 } });
 * // 'INFO rxheal: retry succeeded tool_name=get_weather attempt=2'
 * ```
 */
export function formatLogLine(record: LogRecord, prefix = 'rxheal'): string {
  const fields = Object.entries(record.fields).map(([k, v]) => `${k}=${formatValue(k, v)}`);
  return [`${record.level.toUpperCase()} ${prefix === '' ? '' : `${prefix}: `}${record.message}`, ...fields].join(' ');
}

/** Validated options → a function logging one event. */
function makeLog(name: string, options: LogEventsOptions | undefined): (event: AgentEvent) => void {
  const o = validateOptions(name, props, options);
  const logger = o.logger ?? console;
  const format = o.format ?? (logger === console ? 'text' : 'object');
  const min = LEVELS.indexOf(o.level ?? 'info');
  const prefix = o.prefix ?? 'rxheal';
  return (event) => {
    const record = logRecord(event);
    if (!record || LEVELS.indexOf(record.level) < min) return;
    const method = record.level === 'error' ? (logger.error ?? logger.warn) : record.level === 'debug' ? logger.debug : logger[record.level];
    if (!method) return;
    if (format === 'text') method.call(logger, formatLogLine(record, prefix));
    else method.call(logger, { ...record.fields }, prefix === '' ? record.message : `${prefix}: ${record.message}`);
  };
}

/**
 * Logs every resilience event of a stream — a hub's `events$` or a `runAgent` run's events
 * (non-resilience events are skipped) — until you unsubscribe (or the stream ends). Records are
 * given by {@link logRecord}; with a console they are lines, with a pino-compatible logger a
 * fields object and a message. A logger that throws is not shielded: the error ends the
 * subscription, as with any RxJS observer.
 *
 * ```
 * WARN rxheal: tool call failed, retrying tool_name=get_weather attempt=1 max=3 backoff_ms=500 error="HTTP 503" category=service_unavailable
 * INFO rxheal: retry succeeded tool_name=get_weather attempt=2
 * WARN rxheal: circuit breaker opened tool_name=broken_api failures=5 reset_ms=60000 reason=failure_threshold
 * ```
 *
 * @example Console, the run's hub
 * ```ts
 * const hub = new HealHub();
 * const logging = logEvents(hub.events$);
 * runAgent({ model, tools, messages, hub }).subscribe(render);
 * // later: logging.unsubscribe();
 * ```
 * @example pino
 * ```ts
 * logEvents(hub.events$, { logger: pino(), level: 'debug' });
 * // {"level":40,"tool_name":"get_weather","attempt":1,…,"msg":"rxheal: tool call failed, retrying"}
 * ```
 * @throws {InvalidOptionError} at once, for an invalid option.
 */
export function logEvents(events$: Observable<AgentEvent>, options?: LogEventsOptions): Subscription {
  const log = makeLog('logEvents', options);
  return events$.subscribe(log);
}

/**
 * The operator form of {@link logEvents}: logs each resilience event as it passes, and passes
 * every event on unchanged. For a cold stream such as `runAgent(…)`, so the run is not
 * subscribed twice.
 *
 * @example
 * ```ts
 * runAgent(config).pipe(tapLogs({ logger: pino() })).subscribe(render);
 * ```
 * @throws {InvalidOptionError} at once, for an invalid option.
 */
export function tapLogs<T extends AgentEvent>(options?: LogEventsOptions): MonoTypeOperatorFunction<T> {
  const log = makeLog('tapLogs', options);
  return tap<T>(log);
}
