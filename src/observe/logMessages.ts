/**
 * The messages `logEvents` writes that another part reads back (rxheal/chaos's `recordIncident`
 * parses a production log): kept apart from the logger so that reading them costs no logger.
 *
 * @module
 */
import type { CircuitAgentEvent, HedgeEvent, PoolEvent, ResumeEvent, TaskEvent } from '../core/events/events.js';

type CircuitState = Extract<CircuitAgentEvent, { kind: 'transition' }>['to'];

/** What a hedge event is logged as, by kind (read back by rxheal/chaos's recordIncident). */
export const HEDGE_MESSAGES: Readonly<Record<HedgeEvent['kind'], string>> = {
  started: 'hedge started',
  won: 'hedge won',
  cancelled: 'hedge cancelled',
  failed: 'hedge failed',
  skipped: 'hedge skipped: circuit open',
  denied: 'hedge denied: budget spent',
};

/** What a pool event is logged as, by kind (read back by rxheal/chaos's recordIncident). */
export const POOL_MESSAGES: Readonly<Record<PoolEvent['kind'], string>> = {
  wait: 'pool waits for member',
  move: 'pool moved conversation',
  return: 'pool returned conversation',
};

/** What a task event is logged as, by kind (rxheal/chaos's recordIncident knows them, and keeps none: a task is no fault). */
export const TASK_MESSAGES: Readonly<Record<TaskEvent['kind'], string>> = {
  created: 'tool call runs as a task',
  resumed: 'task picked up again',
  status: 'task status changed',
  cancel: 'task cancel sent',
};

/** A pool record's optional fields, as logged → as in the event. */
const POOL_FIELDS = {
  to: 'to',
  reason: 'reason',
  wait_ms: 'waitMs',
  deadline_left_ms: 'deadlineLeftMs',
  cached_tokens: 'cachedTokens',
  move_usd: 'moveUsd',
  wait_usd: 'waitUsd',
};
const POOL_KINDS = new Map(Object.entries(POOL_MESSAGES).map(([kind, message]) => [message, kind as PoolEvent['kind']]));

/**
 * The pool event a log record of `message` with `fields` was written for (the logger's
 * `POOL_MESSAGES` read back), or undefined for another message.
 *
 * @example
 * ```ts
 * poolEventOf('pool returned conversation', { pool: 'p', key: 'k', from: 'model:b', to: 'model:a' });
 * // { type: 'pool', pool: 'p', kind: 'return', key: 'k', from: 'model:b', to: 'model:a' }
 * ```
 */
export function poolEventOf(message: string, fields: Readonly<Record<string, unknown>>): PoolEvent | undefined {
  const kind = POOL_KINDS.get(message);
  if (kind === undefined) return undefined;
  const event: Record<string, unknown> = {
    type: 'pool',
    pool: String(fields['pool'] ?? ''),
    kind,
    key: String(fields['key'] ?? ''),
    from: String(fields['from'] ?? ''),
  };
  for (const [field, name] of Object.entries(POOL_FIELDS)) {
    const value = fields[field];
    if (typeof value === (name === 'to' || name === 'reason' ? 'string' : 'number')) event[name] = value;
  }
  return event as PoolEvent;
}

/** What a resumed stream is logged as, by why it was resumed (read back by rxheal/chaos's recordIncident). */
export const RESUME_MESSAGES: Readonly<Record<ResumeEvent['reason'], string>> = {
  dropped: 'stream dropped, resuming',
  stalled: 'stream stalled, resuming',
};

/**
 * How a breaker usually comes into each state: its transition is logged without `from` when it
 * came this way (the reference's `circuit breaker opened tool_name=… failures=… reset_ms=…`),
 * with `from` otherwise (a failed probe: half-open → open). recordIncident reads a record
 * without `from` as this.
 */
export const USUAL_CIRCUIT_FROM: Readonly<Record<CircuitState, CircuitState>> = { open: 'closed', 'half-open': 'open', closed: 'half-open' };
