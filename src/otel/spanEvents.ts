/**
 * The span events of `instrument()`: what each healing event says on the span of the call it is
 * about, and which call that is.
 *
 * @module
 */
import type { Attributes } from '@opentelemetry/api';
import type { HealEvent } from '../core/events/events.js';

/**
 * One span event: its name and attributes, its time when the event has one, and the target it is about.
 *
 * @example
 * ```ts
 * const event: SpanEvent = { name: 'rxheal.retry', attributes: { 'rxheal.retry.attempt': 1 }, about: 'tool:search' };
 * ```
 */
export interface SpanEvent {
  readonly name: string;
  readonly attributes: Attributes;
  /** The event's own scheduler time (hedges); otherwise the scheduler's now. */
  readonly at?: number;
  /** The target, breaker or bulkhead named (the call the event goes on); none for reflections, degradations, restorations. */
  readonly about?: string;
}

/**
 * The span event of a healing event; `undefined` for calls, resets, budgets and the others only counted.
 *
 * @example
 * ```ts
 * spanEventOf({ type: 'retry-succeeded', target: 'tool:search', attempt: 2 }); // { name: 'rxheal.retry.succeeded', … }
 * ```
 */
export function spanEventOf(e: HealEvent): SpanEvent | undefined {
  switch (e.type) {
    case 'retry': {
      const attributes: Attributes = {
        'rxheal.retry.attempt': e.attempt,
        'rxheal.retry.max': e.max,
        'rxheal.retry.delay_ms': e.delayMs,
        'error.type': e.category,
      };
      if (e.error !== undefined) attributes['rxheal.error'] = e.error;
      return { name: 'rxheal.retry', attributes, about: e.target };
    }
    case 'retry-succeeded':
      return { name: 'rxheal.retry.succeeded', attributes: { 'rxheal.retry.attempt': e.attempt }, about: e.target };
    case 'retry-withheld':
      return {
        name: 'rxheal.retry.withheld',
        attributes: { 'rxheal.target': e.target, 'error.type': e.category, 'rxheal.retry.withheld_reason': e.reason },
        about: e.target,
      };
    case 'circuit':
      return e.kind === 'transition'
        ? {
            name: 'rxheal.circuit.transition',
            attributes: {
              'rxheal.breaker': e.breaker,
              'rxheal.circuit.from': e.from,
              'rxheal.circuit.to': e.to,
              'rxheal.circuit.reason': e.reason,
              'rxheal.circuit.failures': e.failures,
            },
            about: e.breaker,
          }
        : { name: 'rxheal.circuit.rejected', attributes: { 'rxheal.breaker': e.breaker, 'rxheal.circuit.retry_after_ms': e.retryAfterMs }, about: e.breaker };
    case 'fallback':
      return {
        name: 'rxheal.fallback',
        attributes: {
          'rxheal.fallback.from': e.from,
          'rxheal.fallback.to': e.to,
          'rxheal.fallback.reason': e.reason,
          'rxheal.fallback.mid_stream': e.midStream,
        },
        about: e.from,
      };
    case 'reflection':
      return {
        name: 'rxheal.reflection',
        attributes: {
          'gen_ai.tool.name': e.tool,
          'rxheal.reflection.attempt': e.attempt,
          'rxheal.reflection.max': e.max,
          'rxheal.reflection.exhausted': e.exhausted,
        },
      };
    case 'degraded':
      return { name: 'rxheal.degraded', attributes: { 'rxheal.capability': e.capability, 'rxheal.degraded.reason': e.reason } };
    case 'restored':
      return { name: 'rxheal.restored', attributes: { 'rxheal.capability': e.capability } };
    case 'hedge': {
      const attributes: Attributes = { 'rxheal.hedge.kind': e.kind, 'rxheal.hedge.attempt': e.attempt };
      if (e.afterMs !== undefined) attributes['rxheal.hedge.after_ms'] = e.afterMs;
      if (e.category !== undefined) attributes['error.type'] = e.category;
      return { name: 'rxheal.hedge', attributes, at: e.at, about: e.target };
    }
    case 'bulkhead': {
      const attributes: Attributes = { 'rxheal.bulkhead': e.bulkhead, 'rxheal.bulkhead.kind': e.kind };
      if (e.reason !== undefined) attributes['rxheal.bulkhead.reason'] = e.reason;
      attributes['rxheal.bulkhead.active'] = e.active;
      attributes['rxheal.bulkhead.queued'] = e.queued;
      if (e.waitMs !== undefined) attributes['rxheal.bulkhead.wait_ms'] = e.waitMs;
      return { name: 'rxheal.bulkhead', attributes, about: e.bulkhead };
    }
    case 'resume': {
      const attributes: Attributes = {
        'rxheal.resume.reason': e.reason,
        'rxheal.resume.attempt': e.attempt,
        'rxheal.resume.max': e.max,
        'rxheal.resume.response_id': e.responseId,
        'rxheal.resume.starting_after': e.startingAfter,
      };
      if (e.error !== undefined) attributes['rxheal.error'] = e.error;
      return { name: 'rxheal.resume', attributes, about: e.target };
    }
    case 'pool': {
      const attributes: Attributes = { 'rxheal.pool.kind': e.kind, 'rxheal.pool.key': e.key, 'rxheal.pool.from': e.from };
      if (e.to !== undefined) attributes['rxheal.pool.to'] = e.to;
      if (e.reason !== undefined) attributes['rxheal.pool.reason'] = e.reason;
      if (e.waitMs !== undefined) attributes['rxheal.pool.wait_ms'] = e.waitMs;
      if (e.cachedTokens !== undefined) attributes['rxheal.pool.cached_tokens'] = e.cachedTokens;
      if (e.moveUsd !== undefined) attributes['rxheal.pool.move_usd'] = e.moveUsd;
      if (e.waitUsd !== undefined) attributes['rxheal.pool.wait_usd'] = e.waitUsd;
      return { name: 'rxheal.pool', attributes, about: `model:${e.pool}` };
    }
    case 'task': {
      const attributes: Attributes = { 'rxheal.task.kind': e.kind, 'rxheal.task.id': e.taskId, 'rxheal.task.status': e.status };
      if (e.message !== undefined) attributes['rxheal.task.message'] = e.message;
      return { name: 'rxheal.task', attributes, about: e.target };
    }
    case 'tool-deduplicated':
      return {
        name: 'rxheal.tool.deduplicated',
        attributes: { 'gen_ai.tool.name': e.tool, 'gen_ai.tool.call.id': e.callId, 'rxheal.idempotency_key': e.key },
        about: `tool:${e.tool}`,
      };
    default:
      return undefined;
  }
}
