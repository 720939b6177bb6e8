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
  type Message,
  type ModelEvent,
  type TurnEvent,
} from '../../../src/core/events/events.js';
import { everyAgentEvent } from '../../support/everyEvent.js';

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
