import { expect } from 'chai';
import type { JournalEntry } from '../../src/core/journal/journal.js';
import { JournalCorruptError } from '../../src/core/journal/errors.js';
import { resumePlan } from '../../src/sources/resumePlan.js';

const fingerprint = { instruction: 'Be brief.', tools: [{ name: 'book', schema: { type: 'object' } }], models: ['fake'] };
const used = (modelCalls: number, toolCalls = 0, tokens = 0) => ({ modelCalls, toolCalls, tokens });
const user = { role: 'user' as const, content: 'Book LH 400' };
const call = { id: 'c1', name: 'book', args: { flight: 'LH 400' } };
const call2 = { id: 'c2', name: 'book', args: { flight: 'LH 401' } };
const turn = { role: 'assistant' as const, content: '', toolCalls: [call, call2] };
const toolMessage = (id: string, content: string) => ({ role: 'tool' as const, toolCallId: id, toolName: 'book', content });
const answer = { role: 'assistant' as const, content: 'Booked both.' };

const start = { v: 1, type: 'start', fingerprint, messages: [user] };
const turnRecord = { v: 1, type: 'message', messages: [turn], events: [{ type: 'message', message: turn }], used: used(1, 0, 15) };
const started = (callId: string, toolCalls: number) => ({ v: 1, type: 'tool-start', callId, tool: 'book', used: used(1, toolCalls, 15) });
const result = (callId: string) => ({
  v: 1,
  type: 'message',
  callId,
  messages: [toolMessage(callId, `booked ${callId}`)],
  events: [{ type: 'tool-result', id: callId, name: 'book', result: `booked ${callId}` }],
  used: used(1, 2, 15),
});
const answerRecord = { v: 1, type: 'message', messages: [answer], events: [{ type: 'message', message: answer }], used: used(2, 2, 40) };

const entries = (...data: object[]): JournalEntry[] => data.map((d, seq) => ({ seq, data: d as JournalEntry['data'] }));

describe('resumePlan (a journal read as what to do next; pure)', () => {
  it('an empty journal is a new run', () => {
    const plan = resumePlan('r1', []);
    expect(plan.status).to.equal('new');
    expect(plan.records).to.equal(0);
  });

  it('a start alone: in progress, the first turn next, from the journaled conversation', () => {
    const plan = resumePlan('r1', entries(start));
    expect(plan).to.deep.include({ status: 'in-progress', next: { kind: 'turn' }, steps: 0, history: [user], initial: [user], fingerprint });
  });

  it('a turn with tool calls and none run: a tool round with every call not started; its message replayed, its usage counted', () => {
    const plan = resumePlan('r1', entries(start, turnRecord));
    expect(plan.status).to.equal('in-progress');
    expect(plan.next).to.deep.equal({
      kind: 'tools',
      calls: [
        { call, state: 'not-started' },
        { call: call2, state: 'not-started' },
      ],
    });
    expect(plan.history).to.deep.equal([user, turn]);
    expect(plan.replay).to.deep.equal([{ type: 'message', message: turn }]);
    expect(plan.steps).to.equal(1);
    expect(plan.used).to.deep.equal(used(1, 0, 15));
  });

  it('one call done, one started and never finished: done (its message kept apart) and interrupted', () => {
    const plan = resumePlan('r1', entries(start, turnRecord, started('c1', 1), started('c2', 2), result('c1')));
    expect(plan.next).to.deep.equal({
      kind: 'tools',
      calls: [
        { call, state: 'done', message: toolMessage('c1', 'booked c1') },
        { call: call2, state: 'interrupted' },
      ],
    });
    // the round's tool messages join the history only once the round is whole, in call order
    expect(plan.history).to.deep.equal([user, turn]);
    expect(plan.used).to.deep.equal(used(1, 2, 15));
  });

  it('a whole round: the next turn, with the tool messages in call order', () => {
    const plan = resumePlan('r1', entries(start, turnRecord, started('c2', 1), result('c2'), started('c1', 2), result('c1')));
    expect(plan).to.deep.include({ status: 'in-progress', next: { kind: 'turn' } });
    expect(plan.history).to.deep.equal([user, turn, toolMessage('c1', 'booked c1'), toolMessage('c2', 'booked c2')]);
  });

  it('an answer: answered (with or without its end record), nothing next', () => {
    const records = [start, turnRecord, result('c1'), result('c2'), answerRecord];
    for (const plan of [resumePlan('r1', entries(...records)), resumePlan('r1', entries(...records, { v: 1, type: 'end', outcome: 'answer' }))]) {
      expect(plan.status).to.equal('answered');
      expect(plan.next).to.equal(undefined);
      expect(plan.steps).to.equal(2);
      expect(plan.used).to.deep.equal(used(2, 2, 40));
    }
  });

  it('an answer that failed its check, journaled with its correction: a turn next, one correction counted', () => {
    const bad = { role: 'assistant' as const, content: 'nope', validated: false };
    const correction = { role: 'user' as const, content: 'Answer in JSON.' };
    const plan = resumePlan('r1', entries(start, { v: 1, type: 'message', correction: true, messages: [bad, correction], events: [], used: used(1) }));
    expect(plan).to.deep.include({ status: 'in-progress', next: { kind: 'turn' }, corrections: 1, steps: 1, history: [user, bad, correction] });
  });

  it('a failed run: failed, with its error', () => {
    const plan = resumePlan('r1', entries(start, { v: 1, type: 'end', outcome: 'error', error: { name: 'BudgetExceededError', message: 'over' } }));
    expect(plan.status).to.equal('failed');
    expect(plan.error).to.deep.equal({ name: 'BudgetExceededError', message: 'over' });
  });

  it('suspended: the waiting calls, their approval-requested events replayed; a decision makes a call approved or denied', () => {
    const suspended = { v: 1, type: 'suspended', pending: [{ callId: 'c2', tool: 'book', args: call2.args }] };
    const plan = resumePlan('r1', entries(start, turnRecord, started('c1', 1), result('c1'), suspended));
    expect(plan.status).to.equal('suspended');
    expect(plan.pending).to.deep.equal([{ callId: 'c2', tool: 'book', args: call2.args }]);
    expect(plan.replay.at(-1)).to.deep.equal({ type: 'approval-requested', callId: 'c2', tool: 'book', args: call2.args });
    const approved = resumePlan(
      'r1',
      entries(start, turnRecord, started('c1', 1), result('c1'), suspended, { v: 1, type: 'decision', callId: 'c2', approved: true }),
    );
    expect(approved.status).to.equal('in-progress');
    expect(approved.next).to.deep.include({ kind: 'tools' });
    expect((approved.next as { readonly calls: readonly { state: string }[] }).calls.map((c) => c.state)).to.deep.equal(['done', 'approved']);
    const denied = resumePlan('r1', entries(start, turnRecord, suspended, { v: 1, type: 'decision', callId: 'c2', approved: false, reason: 'too dear' }));
    expect((denied.next as { readonly calls: readonly unknown[] }).calls[1]).to.deep.equal({ call: call2, state: 'denied', reason: 'too dear' });
    // an approved call that started and never finished is interrupted like any other
    const cut = resumePlan('r1', entries(start, turnRecord, suspended, { v: 1, type: 'decision', callId: 'c2', approved: true }, started('c2', 1)));
    expect((cut.next as { readonly calls: readonly { state: string }[] }).calls[1]!.state).to.equal('interrupted');
  });

  it("a checkpoint of the interrupted turn is the plan's; one of a turn journaled since, or cleared (null), is not; it replays nothing", () => {
    const checkpoint = (step: number, sequence: number | null) => ({
      v: 1,
      type: 'checkpoint',
      step,
      checkpoint: sequence === null ? null : { model: 'fake', responseId: `resp_${step}`, sequence },
    });
    const round = [turnRecord, started('c1', 1), started('c2', 2), result('c1'), result('c2')];
    expect(resumePlan('r1', entries(start, checkpoint(1, 0), checkpoint(1, 7))).checkpoint).to.deep.equal({ model: 'fake', responseId: 'resp_1', sequence: 7 });
    expect(resumePlan('r1', entries(start, checkpoint(1, 0), checkpoint(1, null))).checkpoint).to.equal(undefined);
    // turn 1's checkpoint, then its message: superseded; turn 2's is the plan's
    expect(resumePlan('r1', entries(start, checkpoint(1, 3), ...round)).checkpoint).to.equal(undefined);
    const second = resumePlan('r1', entries(start, checkpoint(1, 3), ...round, checkpoint(2, 5)));
    expect(second).to.deep.include({ status: 'in-progress', next: { kind: 'turn' }, checkpoint: { model: 'fake', responseId: 'resp_2', sequence: 5 } });
    expect(second.replay).to.deep.equal(resumePlan('r1', entries(start, ...round)).replay);
    // a tool round next: no turn to resume
    expect(resumePlan('r1', entries(start, turnRecord, checkpoint(2, 1))).checkpoint).to.equal(undefined);
  });

  it('refuses a journal that is not an rxheal run (first record not a v: 1 start), a record of a newer version, a record that does not decode', () => {
    const refused = (data: object[], reason: RegExp) => {
      expect(() => resumePlan('r1', entries(...data)))
        .to.throw(JournalCorruptError, reason)
        .with.property('store', 'run');
    };
    refused([{ hello: 'world' }], /not an rxheal run journal/);
    refused([{ v: 2, type: 'start' }], /version 2: this rxheal reads version 1/);
    refused([start, { v: 7, type: 'message' }], /version 7/);
    refused([start, { v: 1, type: 'message', messages: 'no' }], /not an rxheal run record/);
    refused([start, start], /a second start/);
  });

  it('is pure: the same entries, the same plan', () => {
    const e = entries(start, turnRecord, started('c1', 1));
    expect(resumePlan('r1', e)).to.deep.equal(resumePlan('r1', e));
  });
});
