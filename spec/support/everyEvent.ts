/**
 * One valid example (or several) of every agent event type: what the event codecs accept, and
 * what the logger and rxheal/chaos's recordIncident must read back, every type of it.
 */
import type { AgentEvent } from '../../src/core/events/events.js';

/** One valid example of every agent event type. */
export const everyAgentEvent: Record<AgentEvent['type'], AgentEvent[]> = {
  'text-delta': [{ type: 'text-delta', text: 'Hi' }],
  'reasoning-delta': [{ type: 'reasoning-delta', text: 'Hm.' }],
  'reasoning-end': [{ type: 'reasoning-end', signature: 'sig' }],
  'tool-call': [{ type: 'tool-call', id: 'c1', name: 'get_weather', args: {} }],
  finish: [{ type: 'finish', reason: 'stop', usage: { inputTokens: 1, outputTokens: 2 } }],
  'tool-result': [{ type: 'tool-result', id: 'c1', name: 'get_weather', result: { temperature: 22 } }],
  'tool-error': [{ type: 'tool-error', id: 'c1', name: 'get_weather', error: 'Invalid units', category: 'unknown' }],
  validation: [{ type: 'validation', valid: false, attempt: 1, problems: ['city: expected string, got 1'] }],
  message: [
    { type: 'message', message: { role: 'assistant', content: 'Done.' } },
    { type: 'message', message: { role: 'user', content: 'Hi' }, replayed: true },
  ],
  'approval-requested': [{ type: 'approval-requested', callId: 'c1', tool: 'book_flight', args: { flight: 'LH 400' } }],
  suspended: [{ type: 'suspended', runId: 'order-7421' }],
  'tool-outcome-unknown': [{ type: 'tool-outcome-unknown', callId: 'c1', tool: 'book_flight' }],
  'turn-resume': [
    { type: 'turn-resume', target: 'model:openai-responses:gpt-5-mini', responseId: 'resp_1', sequence: 41, outcome: 'resumed' },
    { type: 'turn-resume', target: 'model:openai-responses:gpt-5-mini', responseId: 'resp_1', sequence: 41, outcome: 'gone', error: 'HTTP 404' },
  ],
  'tool-deduplicated': [{ type: 'tool-deduplicated', callId: 'c1', tool: 'charge', key: 'order-7421/3/0/charge' }],
  retry: [
    { type: 'retry', target: 'tool:get_weather', attempt: 1, max: 3, delayMs: 500, category: 'rate_limit' },
    { type: 'retry', target: 'model:gpt-4o', attempt: 2, max: 3, delayMs: 1000, category: 'server_error', error: 'HTTP 500' },
  ],
  'retry-succeeded': [{ type: 'retry-succeeded', target: 'tool:get_weather', attempt: 2 }],
  'retry-withheld': [
    { type: 'retry-withheld', target: 'tool:send_email', reason: 'not_idempotent', category: 'service_unavailable' },
    { type: 'retry-withheld', target: 'tool:send_email', reason: 'not_idempotent', category: 'connection', error: 'ECONNRESET' },
  ],
  'call-start': [
    { type: 'call-start', kind: 'model', name: 'gpt-4o', id: 'step-1.1', step: 1, at: 0 },
    { type: 'call-start', kind: 'model', name: 'gpt-4o', id: 'step-1.1/1', step: 1, at: 0, parentId: 'step-1.1' },
  ],
  'call-end': [
    {
      type: 'call-end',
      kind: 'model',
      name: 'gpt-4o',
      id: 'step-1.1',
      step: 1,
      at: 120,
      durationMs: 120,
      outcome: 'success',
      usage: { inputTokens: 10, outputTokens: 5 },
    },
    { type: 'call-end', kind: 'model', name: 'claude', id: 'step-1.1/2', step: 1, at: 120, durationMs: 60, outcome: 'success', parentId: 'step-1.1' },
    {
      type: 'call-end',
      kind: 'tool',
      name: 'get_weather',
      id: 'c1',
      step: 1,
      at: 3,
      durationMs: 3,
      outcome: 'error',
      error: 'HTTP 503',
      category: 'service_unavailable',
    },
    { type: 'call-end', kind: 'tool', name: 'search', id: 'c2', step: 2, at: 9, durationMs: 4, outcome: 'cancelled' },
  ],
  circuit: [
    { type: 'circuit', breaker: 'tool:x', kind: 'transition', from: 'closed', to: 'open', reason: 'failure_threshold', failures: 5 },
    { type: 'circuit', breaker: 'tool:x', kind: 'transition', from: 'open', to: 'half-open', reason: 'timeout', failures: 0 },
    { type: 'circuit', breaker: 'tool:x', kind: 'rejected', retryAfterMs: 30000 },
  ],
  fallback: [{ type: 'fallback', from: 'model:primary', to: 'model:secondary', reason: 'HTTP 503', midStream: true }],
  reflection: [{ type: 'reflection', tool: 'get_weather', callId: 'c1', attempt: 1, max: 3, exhausted: false, prompt: 'The tool…' }],
  degraded: [{ type: 'degraded', capability: 'knowledge_search', reason: 'no result within 3000 ms' }],
  restored: [{ type: 'restored', capability: 'knowledge_search' }],
  'budget-exceeded': [
    { type: 'budget-exceeded', resource: 'tokens', limit: 100, used: 120 },
    { type: 'budget-exceeded', resource: 'usd', limit: 0.5, used: 0.5012, model: 'gpt-5', cut: true, limiter: 'team' },
  ],
  spend: [{ type: 'spend', model: 'gpt-5', usd: 0.0125, totalUsd: 0.25, estimated: false }],
  'rate-limited': [
    { type: 'rate-limited', limiter: 'openai:prod', waitMs: 1200, cost: 800 },
    { type: 'rate-limited', limiter: 'openai:prod', waitMs: 42_000, cost: 800, rejected: true, local: true },
  ],
  'spend-refused': [{ type: 'spend-refused', limiter: 'team', key: 'team:search', usd: 0.02, limitUsd: 50, usedUsd: 50.01 }],
  'spend-local': [{ type: 'spend-local', limiter: 'team', key: 'team:search', share: 16.666666666 }],
  bulkhead: [
    { type: 'bulkhead', bulkhead: 'model:gpt', kind: 'queued', active: 2, queued: 1 },
    { type: 'bulkhead', bulkhead: 'model:gpt', kind: 'admitted', active: 2, queued: 0, waitMs: 40 },
    { type: 'bulkhead', bulkhead: 'tool:search', kind: 'rejected', active: 2, queued: 0, reason: 'full' },
    { type: 'bulkhead', bulkhead: 'tool:search', kind: 'rejected', active: 2, queued: 0, reason: 'queue_timeout', waitMs: 500 },
  ],
  hedge: [
    { type: 'hedge', target: 'model:gpt', kind: 'started', attempt: 1, at: 950, afterMs: 950 },
    { type: 'hedge', target: 'model:gpt', kind: 'won', attempt: 1, at: 1200 },
    { type: 'hedge', target: 'model:gpt', kind: 'cancelled', attempt: 0, at: 1200 },
    { type: 'hedge', target: 'model:claude', kind: 'failed', attempt: 1, at: 1300, category: 'server_error' },
    { type: 'hedge', target: 'model:claude', kind: 'skipped', attempt: 2, at: 1900 },
    { type: 'hedge', target: 'model:gpt', kind: 'denied', attempt: 1, at: 950 },
  ],
  latency: [{ type: 'latency', target: 'model:gpt', kind: 'first', count: 100, p50: 410, p95: 950, p99: 1800 }],
  resume: [
    { type: 'resume', target: 'model:gpt', responseId: 'resp_1', startingAfter: 12, attempt: 1, max: 2, reason: 'dropped', error: 'connection reset' },
    { type: 'resume', target: 'model:gpt', responseId: 'resp_1', startingAfter: 30, attempt: 2, max: 2, reason: 'stalled' },
  ],
  reset: [
    { type: 'reset', reason: 'retry', target: 'model:a' },
    { type: 'reset', reason: 'fallback', target: 'model:b' },
    { type: 'reset', reason: 'correction', target: 'output' },
  ],
};
