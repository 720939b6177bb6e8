/**
 * toAiSdkAgent (src/ai-sdk/agent.ts, runWriter.ts, collect.ts) and approvalsFrom (approvals.ts):
 * a journaled rxheal run as an AI SDK model under the real `streamText` / `generateText` of both
 * majors — its tools provider-executed, a call that needs approval a `tool-approval-request` that
 * ends the stream (in the UI message stream too), the answer (`tool-approval-response`, from model
 * messages or from answered UI messages) resuming the run.
 */
import type { ModelMessage, UIMessage } from 'ai';
import * as ai6 from 'ai';
import * as t from 'io-ts';
import { expect } from 'chai';
import { approvalsFrom, toAiSdkAgent } from '../../src/ai-sdk/index.js';
import { InvalidOptionError } from '../../src/core/errors/errors.js';
import type { Message } from '../../src/core/events/events.js';
import type { ModelRequest } from '../../src/core/model/model.js';
import { memoryJournal } from '../../src/durable/index.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, scriptedModel, textDeltas, toolCall } from '../../src/testing/index.js';
import { AI_SDK_KITS, reportSkippedMajors, type AiSdkKit } from '../support/kits.js';
import { nextMajors } from '../support/nextMajors.js';
import { fullStream } from './fakes.js';

const next = await nextMajors();
/** The UI helpers of a kit's major: `readUIMessageStream`, `convertToModelMessages`. */
const uiOf = (kit: AiSdkKit): Pick<typeof ai6, 'readUIMessageStream' | 'convertToModelMessages'> => (kit.major === 7 && next.ok ? next.majors.ai : ai6);

/** A model that books what it is asked to (`call_1`, and `call_2` of a lookup first when asked), then answers with what the tools said; the requests it got kept. */
function travelModel(lookupFirst = false) {
  const requests: ModelRequest[] = [];
  const turns = [
    ...(lookupFirst ? [() => [toolCall('call_0', 'find_flight', { to: 'Tokyo' }), finish('tool-calls', { inputTokens: 5, outputTokens: 2 })]] : []),
    () => [toolCall('call_1', 'book_flight', { flight: 'LH 400' }), finish('tool-calls', { inputTokens: 10, outputTokens: 4 })],
    (request: ModelRequest) => {
      const last = request.messages.at(-1) as Extract<Message, { role: 'tool' }>;
      return [...textDeltas(`Done: ${last.content}`), finish('stop', { inputTokens: 20, outputTokens: 6 })];
    },
  ];
  const model = scriptedModel(
    'travel',
    turns.map((turn) => (request: ModelRequest) => {
      requests.push(request);
      return turn(request);
    }),
  );
  return { model, requests };
}

function travelTools() {
  const booked: string[] = [];
  const book = defineTool({
    name: 'book_flight',
    description: 'Books a flight',
    args: t.type({ flight: t.string }),
    needsApproval: true,
    execute: async ({ flight }) => {
      booked.push(flight);
      return `booked ${flight}`;
    },
  });
  const find = defineTool({ name: 'find_flight', description: 'Finds a flight', args: t.type({ to: t.string }), execute: async () => ({ flight: 'LH 400' }) });
  return { tools: [book, find], booked };
}

const approve = (approvalId: string): ModelMessage => ({
  role: 'tool',
  content: [{ type: 'tool-approval-response', approvalId, approved: true, providerExecuted: true }],
});

describe('rxheal/ai-sdk', function () {
  this.timeout(20_000);

  for (const kit of AI_SDK_KITS)
    describe(`toAiSdkAgent: a journaled run as an AI SDK model, approvals both ways — ${kit.label}`, () => {
      const { streamText, generateText } = kit;
      const prompt: ModelMessage[] = [{ role: 'user', content: 'Book LH 400' }];
      // the warnings are asserted, not printed
      const logs = globalThis as { AI_SDK_LOG_WARNINGS?: boolean };
      let logging: boolean | undefined;
      before(() => {
        logging = logs.AI_SDK_LOG_WARNINGS;
        logs.AI_SDK_LOG_WARNINGS = false;
      });
      after(() => {
        logs.AI_SDK_LOG_WARNINGS = logging;
      });

      it("approval-requested → the AI SDK's tool-approval-request for the provider-executed call, and the suspension finishes the stream ('tool-calls', raw 'suspended')", async () => {
        const { model } = travelModel();
        const { tools, booked } = travelTools();
        const agent = toAiSdkAgent({ model, tools, journal: memoryJournal() }, { newRunId: () => 'order-7421' });
        const result = streamText({ model: agent, messages: prompt, maxRetries: 0 });
        const parts = await fullStream(result);
        const call = { type: 'tool-call', toolCallId: 'call_1', toolName: 'book_flight', input: { flight: 'LH 400' }, providerExecuted: true, dynamic: true };
        expect(parts.find((p) => p.type === 'tool-call')).to.deep.include(call);
        const request = parts.find((p) => p.type === 'tool-approval-request') as { approvalId: string; toolCall: unknown } | undefined;
        expect(request?.approvalId).to.equal('call_1');
        expect(request?.toolCall).to.deep.include(call);
        expect(parts.map((p) => p.type).slice(-2)).to.deep.equal(['finish-step', 'finish']);
        expect(await result.finishReason).to.equal('tool-calls');
        expect(await result.rawFinishReason).to.equal('suspended');
        expect(await result.providerMetadata).to.deep.equal({ rxheal: { runId: 'order-7421' } });
        expect(await result.totalUsage).to.deep.include({ inputTokens: 10, outputTokens: 4 });
        // the conversation to send back holds the call (with its run) and the request
        const [assistant] = (await result.response).messages;
        // eslint-disable-next-line @typescript-eslint/no-unused-vars -- the flag the response messages leave off
        const { dynamic: _dynamic, ...sentBack } = call;
        const content = assistant?.content as Record<string, unknown>[];
        expect(content).to.have.length(2);
        expect(content[0]).to.deep.include({ ...sentBack, providerOptions: { rxheal: { runId: 'order-7421' } } });
        expect(content[1]).to.deep.include({ type: 'tool-approval-request', approvalId: 'call_1', toolCallId: 'call_1' });
        expect(booked).to.deep.equal([]);
      });

      it('the answer (tool-approval-response) resumes the run: the call runs once, the stream goes on from there and nothing streamed before comes again', async () => {
        const { model, requests } = travelModel(true);
        const { tools, booked } = travelTools();
        const agent = toAiSdkAgent({ model, tools, journal: memoryJournal() }, { newRunId: () => 'order-7421' });
        const first = streamText({ model: agent, messages: prompt, maxRetries: 0 });
        const firstParts = await fullStream(first);
        // the lookup needed no approval: it ran in the first stream, its result a tool-result part
        expect(firstParts.find((p) => p.type === 'tool-result')).to.deep.include({
          toolCallId: 'call_0',
          output: { flight: 'LH 400' },
          providerExecuted: true,
        });
        const answered = [...prompt, ...(await first.response).messages, approve('call_1')];
        expect(approvalsFrom(answered)).to.deep.equal({ call_1: { approved: true } });

        const second = streamText({ model: agent, messages: answered, maxRetries: 0 });
        const parts = await fullStream(second);
        expect(await second.text).to.equal('Done: booked LH 400');
        expect(booked).to.deep.equal(['LH 400']);
        // the resumed call's part again, then its result; the lookup (streamed before) not again
        const calls = parts
          .filter((p) => p.type === 'tool-call' || p.type === 'tool-result')
          .map((p) => `${p.type}:${(p as { toolCallId: string }).toolCallId}`);
        expect(calls).to.deep.equal(['tool-call:call_1', 'tool-result:call_1']);
        expect(await second.finishReason).to.equal('stop');
        expect(await second.totalUsage).to.deep.include({ inputTokens: 20, outputTokens: 6 });
        // the model was asked three times in all: the journal answered the first two turns on resume
        expect(requests).to.have.length(3);
        expect(requests[0]!.messages).to.deep.equal([{ role: 'user', content: 'Book LH 400' }]);
      });

      it('a denial (with its reason) tells the model, and the call never runs', async () => {
        const { model, requests } = travelModel();
        const { tools, booked } = travelTools();
        const agent = toAiSdkAgent({ model, tools, journal: memoryJournal() });
        const first = streamText({ model: agent, messages: prompt, maxRetries: 0 });
        await first.consumeStream();
        const denied: ModelMessage = {
          role: 'tool',
          content: [{ type: 'tool-approval-response', approvalId: 'call_1', approved: false, reason: 'over the travel budget', providerExecuted: true }],
        };
        const second = streamText({ model: agent, messages: [...prompt, ...(await first.response).messages, denied], maxRetries: 0 });
        const parts = await fullStream(second);
        expect(booked).to.deep.equal([]);
        expect(parts.find((p) => p.type === 'tool-error' || p.type === 'tool-result')).to.deep.include({ toolCallId: 'call_1' });
        const told = requests[1]!.messages.at(-1);
        expect(told).to.deep.include({ role: 'tool', toolCallId: 'call_1', isError: true });
        expect((told as { content: string }).content).to.contain('over the travel budget');
        expect(await second.text).to.contain('denied');
      });

      it("the UI message stream: a tool-approval-request chunk; answered UI messages (addToolApprovalResponse's state) resume the run through convertToModelMessages", async () => {
        const { readUIMessageStream, convertToModelMessages } = uiOf(kit);
        const { model } = travelModel();
        const { tools, booked } = travelTools();
        const agent = toAiSdkAgent({ model, tools, journal: memoryJournal() });
        const user: UIMessage = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Book LH 400' }] };
        const first = streamText({ model: agent, messages: await convertToModelMessages([user]), maxRetries: 0 });
        const chunks: unknown[] = [];
        let assistant: UIMessage | undefined;
        const stream = first.toUIMessageStream().pipeThrough(
          new TransformStream({
            transform(chunk, controller) {
              chunks.push(chunk);
              controller.enqueue(chunk);
            },
          }),
        );
        for await (const message of readUIMessageStream({ stream })) assistant = message;
        expect(chunks).to.deep.include({ type: 'tool-approval-request', approvalId: 'call_1', toolCallId: 'call_1' });
        const part = assistant!.parts.find((p) => 'toolCallId' in p) as { state: string; approval?: { id: string } } & Record<string, unknown>;
        expect(part.state).to.equal('approval-requested');
        expect(part.approval?.id).to.equal('call_1');
        // what useChat's addToolApprovalResponse({ id, approved }) does to the part
        const answered: UIMessage = {
          ...assistant!,
          parts: assistant!.parts.map((p) =>
            p === part ? ({ ...part, state: 'approval-responded', approval: { id: 'call_1', approved: true } } as never) : p,
          ),
        };
        expect(approvalsFrom([user, answered])).to.deep.equal({ call_1: { approved: true } });
        const second = streamText({ model: agent, messages: await convertToModelMessages([user, answered]), maxRetries: 0 });
        expect(await second.text).to.equal('Done: booked LH 400');
        expect(booked).to.deep.equal(['LH 400']);
      });

      it('generateText (doGenerate): the call, the approval request and the finish as content; the answer resumes it', async () => {
        const { model } = travelModel();
        const { tools, booked } = travelTools();
        const agent = toAiSdkAgent({ model, tools, journal: memoryJournal() });
        const first = await generateText({ model: agent, messages: prompt, maxRetries: 0 });
        expect(first.content.map((p) => p.type)).to.deep.equal(['tool-call', 'tool-approval-request']);
        expect(first.finishReason).to.equal('tool-calls');
        const second = await generateText({ model: agent, messages: [...prompt, ...first.response.messages, approve('call_1')], maxRetries: 0 });
        expect(second.text).to.equal('Done: booked LH 400');
        expect(booked).to.deep.equal(['LH 400']);
      });

      it("a run that needs no approval streams to its answer: calls and results provider-executed, every turn's usage, the call's own tools reported unsupported", async () => {
        const model = scriptedModel('m', [
          [toolCall('c1', 'find_flight', { to: 'Tokyo' }), finish('tool-calls', { inputTokens: 5, outputTokens: 2 })],
          [...textDeltas('LH 400 it is.'), finish('stop', { inputTokens: 9, outputTokens: 4 })],
        ]);
        const { tools } = travelTools();
        const agent = toAiSdkAgent({ model, tools: tools.slice(1), journal: memoryJournal() });
        const result = streamText({
          model: agent,
          prompt: 'Find me a flight',
          tools: { other: kit.tool({ description: 'x', inputSchema: kit.jsonSchema({ type: 'object' }) }) },
          maxRetries: 0,
        });
        const parts = await fullStream(result);
        expect(parts.filter((p) => p.type === 'tool-call' || p.type === 'tool-result').map((p) => p.type)).to.deep.equal(['tool-call', 'tool-result']);
        expect(await result.text).to.equal('LH 400 it is.');
        expect(await result.finishReason).to.equal('stop');
        expect(await result.totalUsage).to.deep.include({ inputTokens: 14, outputTokens: 6 });
        expect((await result.warnings)?.map((w) => (w as { feature?: string }).feature)).to.deep.equal(['tool other']);
      });

      it('approvals of calls no rxheal run asked about reject the call (InvalidOptionError), nothing run', async () => {
        const { model, requests } = travelModel();
        const { tools } = travelTools();
        const agent = toAiSdkAgent({ model, tools, journal: memoryJournal() });
        const stray: ModelMessage[] = [
          ...prompt,
          { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'x1', toolName: 'book_flight', input: {}, providerExecuted: true }] },
          approve('x1'),
        ];
        const error = await agent.doStream({ prompt: stray.map((m) => ({ ...m, content: m.content })) as never }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).to.be.instanceOf(InvalidOptionError);
        expect((error as Error).message).to.contain('prompt');
        expect(requests).to.have.length(0);
      });
    });
  reportSkippedMajors('toAiSdkAgent');

  describe('approvalsFrom', () => {
    it("reads the last tool message's tool-approval-response parts, each approval id mapped to its call by the request; a denial without a reason gets the empty one", () => {
      const messages = [
        { role: 'user', content: 'Book both' },
        {
          role: 'assistant',
          content: [
            { type: 'tool-call', toolCallId: 'c1', toolName: 'book', input: {} },
            { type: 'tool-approval-request', approvalId: 'a1', toolCallId: 'c1' },
            { type: 'tool-call', toolCallId: 'c2', toolName: 'book', input: {} },
            { type: 'tool-approval-request', approvalId: 'a2', toolCallId: 'c2' },
          ],
        },
        {
          role: 'tool',
          content: [
            { type: 'tool-approval-response', approvalId: 'a1', approved: true },
            { type: 'tool-approval-response', approvalId: 'a2', approved: false },
          ],
        },
      ];
      expect(approvalsFrom(messages)).to.deep.equal({ c1: { approved: true }, c2: { approved: false, reason: '' } });
    });

    it('only the last message counts: answers a run already went past are not given again; none gives {}', () => {
      const old = { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: 'c1', approved: true }] };
      expect(approvalsFrom([old, { role: 'assistant', content: 'Booked.' }, { role: 'user', content: 'Thanks' }])).to.deep.equal({});
      expect(approvalsFrom([])).to.deep.equal({});
      expect(approvalsFrom([{ role: 'user', content: 'Hi' }])).to.deep.equal({});
    });

    it("reads a UI message's tool parts in the state approval-responded (with the denial's reason)", () => {
      const ui = {
        id: 'a',
        role: 'assistant',
        parts: [
          { type: 'tool-book', toolCallId: 'c1', state: 'approval-responded', input: {}, approval: { id: 'c1', approved: false, reason: 'too dear' } },
          { type: 'dynamic-tool', toolName: 'x', toolCallId: 'c2', state: 'approval-requested', input: {}, approval: { id: 'c2' } },
        ],
      };
      expect(approvalsFrom([ui])).to.deep.equal({ c1: { approved: false, reason: 'too dear' } });
    });
  });

  describe('toAiSdkAgent: options', () => {
    it('refuses a configuration without a journal, and invalid options, naming them', () => {
      const { model } = travelModel();
      expect(() => toAiSdkAgent({ model } as never))
        .to.throw(InvalidOptionError)
        .with.property('message')
        .that.contains('config.journal');
      expect(() => toAiSdkAgent({ model, journal: memoryJournal() }, { newRunId: 'r1' as never }))
        .to.throw(InvalidOptionError)
        .with.property('message')
        .that.contains('newRunId');
    });
  });
});
