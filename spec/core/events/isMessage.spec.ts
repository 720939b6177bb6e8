import { expect } from 'chai';
import fc from 'fast-check';
import { MessageCodec } from '../../../src/core/events/events.js';
import { isMessage } from '../../../src/core/events/isMessage.js';

/** Values near a message's shape: each field absent, right or wrong in type, plus junk. */
const field = fc.oneof(fc.constant(undefined), fc.string(), fc.boolean(), fc.integer(), fc.constant(null), fc.anything());
const toolCall = fc.oneof(
  fc.record(
    { id: field, name: field, args: fc.anything(), providerMetadata: fc.oneof(field, fc.dictionary(fc.string(), fc.anything())) },
    { requiredKeys: [] },
  ),
  fc.anything(),
);
const reasoningPart = fc.oneof(
  fc.record(
    { text: field, signature: field, redactedData: field, providerMetadata: fc.oneof(field, fc.dictionary(fc.string(), fc.anything())) },
    { requiredKeys: [] },
  ),
  fc.anything(),
);
const nearMessage = fc.record(
  {
    role: fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool', 'bot', ''), fc.anything()),
    content: field,
    toolCalls: fc.oneof(fc.array(toolCall, { maxLength: 3 }), fc.anything()),
    model: field,
    validated: field,
    reasoning: fc.oneof(fc.array(reasoningPart, { maxLength: 3 }), fc.anything()),
    toolCallId: field,
    toolName: field,
    isError: field,
    extra: fc.anything(),
  },
  { requiredKeys: [] },
);

describe('isMessage (the predicate runAgent checks messages with)', () => {
  it('agrees with MessageCodec.is on arbitrary message-like values and on junk', () => {
    fc.assert(
      fc.property(fc.oneof(nearMessage, fc.anything({ withBoxedValues: true, withNullPrototype: true })), (u) => {
        expect(isMessage(u), JSON.stringify(u) ?? String(u)).to.equal(MessageCodec.is(u));
      }),
      { numRuns: 3_000 },
    );
  });

  it('accepts each kind of message and rejects a missing field', () => {
    expect(isMessage({ role: 'system', content: 's' })).to.equal(true);
    expect(isMessage({ role: 'assistant', content: '', toolCalls: [{ id: '1', name: 'f', args: {} }], model: 'm', validated: true })).to.equal(true);
    expect(isMessage({ role: 'tool', toolCallId: '1', toolName: 'f', content: 'x', isError: true })).to.equal(true);
    expect(isMessage({ role: 'tool', content: 'x' })).to.equal(false);
    expect(isMessage({ role: 'assistant', content: 'x', toolCalls: [{ id: 1, name: 'f' }] })).to.equal(false);
    expect(
      isMessage({
        role: 'assistant',
        content: '',
        reasoning: [
          { text: 'hm', signature: 's' },
          { text: '', redactedData: 'd' },
        ],
      }),
    ).to.equal(true);
    expect(isMessage({ role: 'assistant', content: '', reasoning: [{ signature: 's' }] })).to.equal(false);
    expect(isMessage([{ role: 'user', content: 'x' }])).to.equal(false);
  });
});
