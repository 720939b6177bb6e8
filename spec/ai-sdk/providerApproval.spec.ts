/**
 * fromAiSdk with a provider's own tool that asks approval (partDecoder.ts, from.ts,
 * providerApproval.ts): the real `@ai-sdk/openai` Responses model of both majors replaying
 * vercel/ai's recorded hosted-MCP stream (spec/fixtures/openai-responses-mcp-approval.jsonl: an
 * `mcp_approval_request`) — the provider's request becomes the run's `approval-requested` and
 * suspension, and `resumeAgent`'s answer goes back as the provider's `mcp_approval_response`.
 * And the other way round: an AI SDK tool with `needsApproval` in `streamText` over `toAiSdk`.
 */
import type { ModelMessage } from 'ai';
import { expect } from 'chai';
import { lastValueFrom, toArray } from 'rxjs';
import { fromAiSdk, providerToolApproval, toAiSdk, approvalsFrom } from '../../src/ai-sdk/index.js';
import { InvalidOptionError, MalformedStreamError } from '../../src/core/errors/errors.js';
import type { AgentEvent, Message } from '../../src/core/events/events.js';
import { memoryJournal } from '../../src/durable/index.js';
import { PartDecoder } from '../../src/ai-sdk/partDecoder.js';
import { resumeAgent } from '../../src/sources/resumeAgent.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { finish, scriptedModel, textDeltas, toolCall } from '../../src/testing/index.js';
import { AI_SDK_KITS, reportSkippedMajors } from '../support/kits.js';
import { recordedResponses, replayResponses, type ResponsesReplay } from '../support/responsesReplay.js';

const APPROVAL = recordedResponses('openai-responses-mcp-approval.jsonl')[0]!;
/** The answer the provider streams once it ran the tool: a recorded text response (any will do: the request is what is checked). */
const ANSWER = recordedResponses('openai-responses-shell.jsonl')[1]!;
const answerText = ANSWER.filter((e) => e['type'] === 'response.output_text.delta')
  .map((e) => String(e['delta']))
  .join('');
const REQUEST_ID = 'mcpr_04a97b4fce127879006949a83ac9308195a7f7b69ea82e91fe';

const all = (events$: ReturnType<typeof runAgent>) => lastValueFrom(events$.pipe(toArray<AgentEvent>()));

describe('rxheal/ai-sdk', function () {
  this.timeout(20_000);

  for (const kit of AI_SDK_KITS)
    describe(`a provider's own tool that asks approval, and AI SDK tools with needsApproval — ${kit.label}`, () => {
      let replay: ResponsesReplay | undefined;
      afterEach(async () => {
        await replay?.close();
        replay = undefined;
      });

      const config = (baseURL: string, tools = [providerToolApproval('mcp.create_short_url')]) => {
        const openai = kit.createOpenAI({ baseURL, apiKey: 'k' });
        const mcp = (openai.tools as unknown as { mcp: (args: object) => { type: 'provider'; id: string; args: unknown } }).mcp({
          serverLabel: 'zip1',
          serverUrl: 'https://zip1.io/mcp',
          requireApproval: 'always',
        });
        const model = fromAiSdk(openai.responses('gpt-5-mini'), { id: 'gpt', providerTools: { mcp } });
        const messages: Message[] = [{ role: 'user', content: 'Shorten https://ai-sdk.dev/' }];
        return { model, tools, messages, runId: 'link-1', journal: memoryJournal() };
      };

      it("hosted MCP's approval request → the run's approval-requested and suspension; approved on resume → the provider gets mcp_approval_response { approve: true } and answers", async () => {
        const r = (replay = await replayResponses([APPROVAL, ANSWER]));
        const c = config(r.baseURL);
        const first = await all(runAgent(c));
        const requested = first.find((e) => e.type === 'approval-requested') as Extract<AgentEvent, { type: 'approval-requested' }> | undefined;
        expect(requested).to.deep.include({ tool: 'mcp.create_short_url' });
        expect(requested!.args).to.deep.include({ url: 'https://ai-sdk.dev/', max_clicks: 100 });
        expect(first.at(-1)).to.deep.include({ type: 'suspended', runId: 'link-1' });
        // the provider got its MCP tool, and no function tool for the approval
        const tools = r.requests[0]!.body['tools'] as { type: string }[];
        expect(tools.map((t) => t.type)).to.deep.equal(['mcp']);

        const second = await all(resumeAgent({ ...c, approvals: { [requested!.callId]: { approved: true } } }));
        const input = r.requests[1]!.body['input'] as Record<string, unknown>[];
        expect(input).to.deep.include({ type: 'mcp_approval_response', approval_request_id: REQUEST_ID, approve: true });
        const text = second
          .filter((e) => e.type === 'text-delta' && e.replayed !== true)
          .map((e) => (e as { text: string }).text)
          .join('');
        expect(text).to.equal(answerText);
        expect(r.requests).to.have.length(2);
      });

      it('denied on resume → mcp_approval_response { approve: false }; without a providerToolApproval tool the request is denied at once (nobody to ask)', async () => {
        const r = (replay = await replayResponses([APPROVAL, ANSWER]));
        const c = config(r.baseURL);
        const first = await all(runAgent(c));
        const requested = first.find((e) => e.type === 'approval-requested') as Extract<AgentEvent, { type: 'approval-requested' }>;
        await all(resumeAgent({ ...c, approvals: { [requested.callId]: { approved: false, reason: 'not that link' } } }));
        expect(r.requests[1]!.body['input'] as unknown[]).to.deep.include({
          type: 'mcp_approval_response',
          approval_request_id: REQUEST_ID,
          approve: false,
        });
        await r.close();

        const again = (replay = await replayResponses([APPROVAL, ANSWER]));
        const none = config(again.baseURL, []);
        const events = await all(runAgent(none));
        expect(events.some((e) => e.type === 'approval-requested')).to.equal(false);
        expect(events.find((e) => e.type === 'tool-error')).to.deep.include({ name: 'mcp.create_short_url' });
        expect(again.requests[1]!.body['input'] as unknown[]).to.deep.include({
          type: 'mcp_approval_response',
          approval_request_id: REQUEST_ID,
          approve: false,
        });
      });

      it("an AI SDK tool with needsApproval over toAiSdk: streamText asks, approvalsFrom reads the answer, the model gets the tool's result (or the denial) next", async () => {
        const model = scriptedModel('m', [
          [toolCall('c1', 'pay', { amount: 70 }), finish('tool-calls')],
          (request) => [...textDeltas(`Paid: ${(request.messages.at(-1) as { content: string }).content}`), finish()],
        ]);
        let paid = 0;
        const pay = kit.tool({
          description: 'Pays',
          inputSchema: kit.jsonSchema<{ amount: number }>({ type: 'object', properties: { amount: { type: 'number' } } }),
          needsApproval: true,
          execute: async ({ amount }) => `paid ${amount} (${++paid})`,
        });
        const prompt: ModelMessage[] = [{ role: 'user', content: 'Pay 70' }];
        const first = kit.streamText({ model: toAiSdk(model), messages: prompt, tools: { pay }, maxRetries: 0 });
        const request = (await first.content).find((p) => p.type === 'tool-approval-request') as { approvalId: string } | undefined;
        expect(request).to.not.equal(undefined);
        const answered: ModelMessage[] = [
          ...prompt,
          ...(await first.response).messages,
          { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request!.approvalId, approved: true }] },
        ];
        expect(approvalsFrom(answered)).to.deep.equal({ c1: { approved: true } });
        const second = kit.streamText({ model: toAiSdk(model), messages: answered, tools: { pay }, maxRetries: 0 });
        expect(await second.text).to.equal('Paid: paid 70 (1)');
        expect(paid).to.equal(1);
      });
    });
  reportSkippedMajors("a provider's own tool that asks approval");

  it('providerToolApproval refuses an empty name and invalid options, naming them', () => {
    expect(() => providerToolApproval('')).to.throw(InvalidOptionError, /providerToolApproval.*name/);
    expect(() => providerToolApproval('mcp.x', { needsApproval: 'yes' as never })).to.throw(InvalidOptionError, /providerToolApproval.*needsApproval/);
    expect(providerToolApproval('mcp.x', { needsApproval: false }).needsApproval).to.equal(false);
  });

  it('an approval request for a call the stream never made is malformed', () => {
    const decoder = new PartDecoder('m');
    expect(() => decoder.push({ type: 'tool-approval-request', approvalId: 'a1', toolCallId: 'nope' }, { next: () => undefined })).to.throw(
      MalformedStreamError,
    );
  });
});
