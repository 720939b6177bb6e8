import { expect } from 'chai';
import { isLeft, isRight } from 'fp-ts/lib/Either.js';
import type * as t from 'io-ts';
import {
  AgentEventCodec,
  HealEventCodec,
  MessageCodec,
  ModelEventCodec,
  ToolCallCodec,
  TurnEventCodec,
  type AgentEvent,
  type Message,
  type ModelEvent,
  type TurnEvent,
} from '../../../src/core/events/events.js';

function accepts(codec: t.Mixed, value: unknown): void {
  const result = codec.decode(value);
  expect(isRight(result), `${codec.name} should accept ${JSON.stringify(value)}`).to.equal(true);
  if (isRight(result)) expect(result.right).to.deep.equal(value);
}

function rejects(codec: t.Mixed, value: unknown): void {
  expect(isLeft(codec.decode(value)), `${codec.name} should reject ${JSON.stringify(value)}`).to.equal(true);
}

const validMessages: Message[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: "What's the weather in NYC?" },
  { role: 'assistant', content: '' },
  {
    role: 'assistant',
    content: 'Let me check.',
    toolCalls: [{ id: 'call_1', name: 'get_weather', args: { city: 'NYC', units: 'celsius' } }],
    model: 'gpt-4o',
    validated: false,
  },
  {
    role: 'assistant',
    content: '',
    toolCalls: [{ id: 'toolu_1', name: 'get_weather', args: { city: 'NYC' } }],
    reasoning: [{ text: 'The user wants NYC.', signature: 'EqQBCkgIARABGAIiQL' }, { text: '', redactedData: 'EmwKAhgBEgy3' }, { text: 'unsigned' }],
  },
  { role: 'tool', toolCallId: 'call_1', toolName: 'get_weather', content: '{"temperature":22}' },
  { role: 'tool', toolCallId: 'call_1', toolName: 'get_weather', content: 'failed', isError: true },
];

const validModelEvents: ModelEvent[] = [
  { type: 'text-delta', text: 'Hello' },
  { type: 'text-delta', text: '' },
  { type: 'reasoning-delta', text: 'Let me think.' },
  { type: 'reasoning-end' },
  { type: 'reasoning-end', signature: 'EqQBCkgIARABGAIiQL' },
  { type: 'reasoning-end', redactedData: 'EmwKAhgBEgy3' },
  { type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'nyc' } },
  { type: 'tool-call', id: 'c1', name: 'noop', args: null },
  { type: 'finish', reason: 'stop' },
  { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 12, outputTokens: 3 } },
  { type: 'finish', reason: 'length' },
  { type: 'finish', reason: 'content-filter' },
  { type: 'finish', reason: 'error' },
  { type: 'finish', reason: 'other' },
];

/** One valid example of every agent event type. */
const everyAgentEvent: Record<AgentEvent['type'], AgentEvent[]> = {
  'text-delta': [{ type: 'text-delta', text: 'Hi' }],
  'reasoning-delta': [{ type: 'reasoning-delta', text: 'Hm.' }],
  'reasoning-end': [{ type: 'reasoning-end', signature: 'sig' }],
  'tool-call': [{ type: 'tool-call', id: 'c1', name: 'get_weather', args: {} }],
  finish: [{ type: 'finish', reason: 'stop', usage: { inputTokens: 1, outputTokens: 2 } }],
  'tool-result': [{ type: 'tool-result', id: 'c1', name: 'get_weather', result: { temperature: 22 } }],
  'tool-error': [{ type: 'tool-error', id: 'c1', name: 'get_weather', error: 'Invalid units', category: 'unknown' }],
  validation: [{ type: 'validation', valid: false, attempt: 1, problems: ['city: expected string, got 1'] }],
  message: [{ type: 'message', message: { role: 'assistant', content: 'Done.' } }],
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
    { type: 'call-end', kind: 'model', name: 'gpt-4o', id: 'step-1.1', step: 1, at: 120, durationMs: 120, outcome: 'success', usage: { inputTokens: 10, outputTokens: 5 } },
    { type: 'call-end', kind: 'model', name: 'claude', id: 'step-1.1/2', step: 1, at: 120, durationMs: 60, outcome: 'success', parentId: 'step-1.1' },
    { type: 'call-end', kind: 'tool', name: 'get_weather', id: 'c1', step: 1, at: 3, durationMs: 3, outcome: 'error', error: 'HTTP 503', category: 'service_unavailable' },
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
  'budget-exceeded': [{ type: 'budget-exceeded', resource: 'tokens', limit: 100, used: 120 }],
  'rate-limited': [
    { type: 'rate-limited', limiter: 'openai:prod', waitMs: 1200, cost: 800 },
    { type: 'rate-limited', limiter: 'openai:prod', waitMs: 42_000, cost: 800, rejected: true, local: true },
  ],
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

describe('event codecs', () => {
  describe('ToolCallCodec', () => {
    it('accepts any args, requires id and name', () => {
      accepts(ToolCallCodec, { id: 'c1', name: 'x', args: [1, 2] });
      accepts(ToolCallCodec, { id: 'c1', name: 'x', args: undefined });
      rejects(ToolCallCodec, { name: 'x', args: {} });
      rejects(ToolCallCodec, { id: 1, name: 'x', args: {} });
    });
  });

  describe('MessageCodec', () => {
    it('accepts every message role', () => {
      for (const message of validMessages) accepts(MessageCodec, message);
    });

    it('rejects malformed messages', () => {
      rejects(MessageCodec, { role: 'bot', content: 'hi' });
      rejects(MessageCodec, { role: 'user' });
      rejects(MessageCodec, { role: 'user', content: 42 });
      rejects(MessageCodec, { role: 'tool', content: 'x', toolName: 'get_weather' }); // no toolCallId
      rejects(MessageCodec, { role: 'tool', toolCallId: 'c', toolName: 't', content: 'x', isError: 'yes' });
      rejects(MessageCodec, { role: 'assistant', content: 'x', toolCalls: [{ id: 'c', args: {} }] });
      rejects(MessageCodec, { role: 'assistant', content: 'x', validated: 'no' });
      rejects(MessageCodec, { role: 'assistant', content: 'x', reasoning: [{ signature: 's' }] }); // a part without text
      rejects(MessageCodec, { role: 'assistant', content: 'x', reasoning: [{ text: 't', signature: 1 }] });
      rejects(MessageCodec, { role: 'assistant', content: 'x', reasoning: 'thought' });
      rejects(MessageCodec, null);
      rejects(MessageCodec, 'hello');
    });
  });

  describe('ModelEventCodec', () => {
    it('accepts text-delta, reasoning, tool-call and finish (with and without usage, every reason)', () => {
      for (const event of validModelEvents) accepts(ModelEventCodec, event);
    });

    it('rejects malformed model events and unknown types', () => {
      rejects(ModelEventCodec, { type: 'text-delta' });
      rejects(ModelEventCodec, { type: 'text-delta', text: 3 });
      rejects(ModelEventCodec, { type: 'tool-call', id: 'c', args: {} });
      rejects(ModelEventCodec, { type: 'finish', reason: 'done' });
      rejects(ModelEventCodec, { type: 'finish', reason: 'stop', usage: { inputTokens: 1 } });
      rejects(ModelEventCodec, { type: 'reset', reason: 'retry', target: 'x' }); // only turns carry reset
      rejects(ModelEventCodec, { type: 'thinking', text: 'hmm' });
      rejects(ModelEventCodec, { type: 'reasoning-delta' });
      rejects(ModelEventCodec, { type: 'reasoning-end', signature: 7 });
      rejects(ModelEventCodec, { text: 'no type' });
    });
  });

  describe('TurnEventCodec', () => {
    it('accepts model events and reset', () => {
      const turn: TurnEvent[] = [...validModelEvents, ...(everyAgentEvent.reset as TurnEvent[])];
      for (const event of turn) accepts(TurnEventCodec, event);
    });

    it('rejects agent-only events, bad reset reasons and unknown types', () => {
      rejects(TurnEventCodec, { type: 'reset', reason: 'restart', target: 'x' });
      rejects(TurnEventCodec, { type: 'reset', reason: 'retry' });
      rejects(TurnEventCodec, { type: 'tool-result', id: 'c', name: 'x', result: 1 });
      rejects(TurnEventCodec, { type: 'message', message: { role: 'user', content: 'x' } });
      rejects(TurnEventCodec, { type: 'bogus' });
    });
  });

  describe('AgentEventCodec', () => {
    for (const [type, examples] of Object.entries(everyAgentEvent)) {
      it(`accepts ${type}`, () => {
        for (const event of examples) accepts(AgentEventCodec, event);
      });
    }

    it('rejects unknown types', () => {
      rejects(AgentEventCodec, { type: 'bogus' });
      rejects(AgentEventCodec, { type: 'tool-results', id: 'c', name: 'x', result: 1 });
      rejects(AgentEventCodec, {});
      rejects(AgentEventCodec, undefined);
    });

    it('rejects malformed agent events', () => {
      rejects(AgentEventCodec, { type: 'tool-error', id: 'c', name: 'x', error: 'boom' }); // no category
      rejects(AgentEventCodec, { type: 'reflection', tool: 'x', callId: 'c', attempt: 1, max: 3, prompt: 'p' }); // no exhausted
      rejects(AgentEventCodec, { type: 'retry', target: 't', attempt: 1, max: 3, delayMs: '500', category: 'x' });
      rejects(AgentEventCodec, { type: 'circuit', breaker: 'b', kind: 'transition', from: 'closed', to: 'ajar', reason: 'r', failures: 1 });
      rejects(AgentEventCodec, { type: 'circuit', breaker: 'b', kind: 'rejected' });
      rejects(AgentEventCodec, { type: 'circuit', breaker: 'b', kind: 'opened', retryAfterMs: 1 });
      rejects(AgentEventCodec, { type: 'fallback', from: 'a', to: 'b', reason: 'r' }); // no midStream
      rejects(AgentEventCodec, { type: 'degraded', capability: 'x' });
      rejects(AgentEventCodec, { type: 'budget-exceeded', resource: 'tokens', limit: '100', used: 120 });
      rejects(AgentEventCodec, { type: 'validation', valid: false, attempt: 1, problems: [1] });
      rejects(AgentEventCodec, { type: 'message', message: { role: 'robot', content: 'x' } });
    });
  });

  describe('HealEventCodec', () => {
    it('accepts the healing events and nothing else', () => {
      for (const type of ['retry', 'circuit', 'fallback', 'reflection', 'degraded', 'restored', 'budget-exceeded', 'reset'] as const) {
        for (const event of everyAgentEvent[type]) accepts(HealEventCodec, event);
      }
      for (const type of ['text-delta', 'tool-call', 'finish', 'tool-result', 'tool-error', 'validation', 'message'] as const) {
        for (const event of everyAgentEvent[type]) rejects(HealEventCodec, event);
      }
    });
  });
});
