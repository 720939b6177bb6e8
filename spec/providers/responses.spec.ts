/**
 * OpenAI's Responses API: the request body (openAIResponsesBody), the decoder's state table
 * (ResponsesDecoder: each state × event), recorded streams of vercel/ai (spec/fixtures, see
 * SOURCES.md) replayed whole, in both framings and cut at every awkward byte, and
 * openAIResponsesModel over real HTTP on loopback (runAgent: a reasoning model's tool turn, the
 * reasoning item sent back with its encrypted content).
 *
 * The decoder's states, by output item (keyed by `output_index`: item ids may change from event
 * to event) — and what each event does in each:
 *
 * | event \ state                      | no item at that index        | message item | reasoning item (streaming / waiting)       | function_call item      | client-run item (declared / not) | hosted item | after a terminal event |
 * |------------------------------------|------------------------------|--------------|--------------------------------------------|-------------------------|----------------------------------|-------------|------------------------|
 * | output_item.added                  | opens it                     | —            | —                                          | —                       | —                                | —           | ignored                |
 * | output_text.delta / refusal.delta  | text-delta                   | text-delta   | text-delta                                 | text-delta              | text-delta                       | text-delta  | ignored                |
 * | reasoning_*_text.delta             | Malformed                    | (as its own) | reasoning-delta / waits                    | —                       | —                                | —           | ignored                |
 * | function_call_arguments.delta      | Malformed                    | —            | —                                          | appends                 | appends                          | appends     | ignored                |
 * | output_item.done                   | reads the done item alone    | nothing      | [waiting text] reasoning-end (done's blob) | tool-call (done's args) | tool-call / Malformed            | nothing     | ignored                |
 * | completed / incomplete             | finish                       | finish       | its waiting text, then finish              | Malformed (still open)  | Malformed (still open)           | finish      | ignored                |
 * | failed / error                     | HttpError                    | HttpError    | HttpError                                  | HttpError               | HttpError                        | HttpError   | ignored                |
 * | sequence_number ≤ the last         | Malformed, in every state before a terminal event                                                                                                                   | ignored                |
 * | body ends                          | IncompleteStreamError, in every state before a terminal event                                                                                                       | fine                   |
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { lastValueFrom, toArray } from 'rxjs';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, IncompleteStreamError, InvalidOptionError, MalformedStreamError } from '../../src/core/errors/errors.js';
import type { Message, TurnEvent } from '../../src/core/events/events.js';
import { openAIResponsesBody, openAIResponsesModel, responsesDeclaredTools } from '../../src/providers/responses.js';
import { openAIResponsesStreamDecoder } from '../../src/providers/responsesDecoder.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { awkwardCuts, cutAt, decodeChunks, LINE_ENDINGS, RESPONSES_DECLARED, responsesSse } from '../support/decodeChunks.js';
import { ask, turn, turnError, WEATHER_TOOL } from '../support/interop.js';
import { fixtureFetch } from '../support/providerFakes.js';
import { recordedResponses, replayResponses, type ResponseEvents } from '../support/responsesReplay.js';

type Event = Record<string, unknown>;

/** Every event through a fresh decoder: its events, then how it ended. */
function decode(events: readonly Event[], tools: readonly Event[] = []): { events: TurnEvent[]; error?: unknown } {
  const decoder = openAIResponsesStreamDecoder('m', responsesDeclaredTools({ tools }));
  const out: TurnEvent[] = [];
  try {
    for (const event of events) out.push(...decoder.pushEvent(event));
    decoder.end();
    return { events: out };
  } catch (error) {
    return { events: out, error };
  }
}

const usage = { input_tokens: 10, output_tokens: 4, total_tokens: 14 };
const completed = (extra: Event = {}): Event => ({ type: 'response.completed', response: { status: 'completed', usage, ...extra } });
const added = (output_index: number, item: Event): Event => ({ type: 'response.output_item.added', output_index, item });
const done = (output_index: number, item: Event): Event => ({ type: 'response.output_item.done', output_index, item });
const textDelta = (output_index: number, delta: string): Event => ({
  type: 'response.output_text.delta',
  output_index,
  content_index: 0,
  item_id: 'msg',
  delta,
});
const summary = (output_index: number, delta: string, summary_index = 0): Event => ({
  type: 'response.reasoning_summary_text.delta',
  output_index,
  summary_index,
  item_id: 'rs',
  delta,
});
const FINISH = { type: 'finish', reason: 'stop', usage: { inputTokens: 10, outputTokens: 4 } } as const;

const asSse = responsesSse;

const RECORDED = [
  'codex-calculator',
  'web-search',
  'custom-tool',
  'shell',
  'mcp-approval',
  'id-rotation',
  'code-interpreter',
  'image-generation',
  'apply-patch',
  'local-shell',
  'failed',
  'compaction',
] as const;
/** The client tools each recording's request declared. */
const DECLARED = RESPONSES_DECLARED as Partial<Record<(typeof RECORDED)[number], Event[]>>;

describe('providers: OpenAI Responses API', function () {
  this.timeout(30_000);

  describe('the decoder, state by event', () => {
    it('text deltas (and refusal deltas) → text-delta; completed → one finish with the usage', () => {
      const { events, error } = decode([
        { type: 'response.created', sequence_number: 0, response: { status: 'in_progress' } },
        added(0, { type: 'message', id: 'msg', role: 'assistant', content: [] }),
        textDelta(0, 'Hello'),
        textDelta(0, ''),
        { type: 'response.refusal.delta', output_index: 0, delta: ' — no.' },
        { type: 'response.output_text.done', output_index: 0, text: 'Hello' },
        done(0, { type: 'message', id: 'msg' }),
        completed(),
      ]);
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal([{ type: 'text-delta', text: 'Hello' }, { type: 'text-delta', text: ' — no.' }, FINISH]);
    });

    it("reasoning: summary deltas (a second part after a blank line) and reasoning_text deltas, then one reasoning-end with the done item's id and encrypted content — not the partial blob at added", () => {
      const { events } = decode([
        added(0, { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'partial' }),
        summary(0, 'First.'),
        summary(0, 'Second.', 1),
        { type: 'response.reasoning_text.delta', output_index: 0, content_index: 1, delta: ' More.' },
        done(0, { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAA-whole' }),
        completed(),
      ]);
      expect(events).to.deep.equal([
        { type: 'reasoning-delta', text: 'First.' },
        { type: 'reasoning-delta', text: '\n\nSecond.' },
        { type: 'reasoning-delta', text: ' More.' },
        { type: 'reasoning-end', providerMetadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'gAAAA-whole' } } },
        FINISH,
      ]);
    });

    it("two reasoning items open at once: the second's text waits for the first to end — blocks never interleave", () => {
      const { events } = decode([
        added(0, { type: 'reasoning', id: 'a' }),
        added(1, { type: 'reasoning', id: 'b' }),
        summary(0, 'A1'),
        summary(1, 'B1'),
        summary(0, 'A2'),
        done(0, { type: 'reasoning', id: 'a', encrypted_content: 'ea' }),
        summary(1, 'B2'),
        done(1, { type: 'reasoning', id: 'b', encrypted_content: 'eb' }),
        completed(),
      ]);
      expect(events.slice(0, -1)).to.deep.equal([
        { type: 'reasoning-delta', text: 'A1' },
        { type: 'reasoning-delta', text: 'A2' },
        { type: 'reasoning-end', providerMetadata: { openai: { itemId: 'a', reasoningEncryptedContent: 'ea' } } },
        { type: 'reasoning-delta', text: 'B1' },
        { type: 'reasoning-delta', text: 'B2' },
        { type: 'reasoning-end', providerMetadata: { openai: { itemId: 'b', reasoningEncryptedContent: 'eb' } } },
      ]);
    });

    it("a function call: one tool-call at its done item — the done item's call_id (it may differ from added's) and arguments, parsed; finish 'tool-calls'", () => {
      const { events } = decode([
        added(0, { type: 'function_call', id: 'fc_1', call_id: 'call_added', name: 'get_weather', arguments: '' }),
        { type: 'response.function_call_arguments.delta', output_index: 0, item_id: 'fc_1', delta: '{"city":' },
        { type: 'response.function_call_arguments.delta', output_index: 0, item_id: 'fc_rotated', delta: '"Paris"}' },
        { type: 'response.function_call_arguments.done', output_index: 0, item_id: 'fc_1', arguments: '{"city":"Paris"}' },
        done(0, { type: 'function_call', id: 'fc_1', call_id: 'call_done', name: 'get_weather', arguments: '{"city":"Paris","units":"celsius"}' }),
        completed(),
      ]);
      expect(events).to.deep.equal([
        {
          type: 'tool-call',
          id: 'call_done',
          name: 'get_weather',
          args: { city: 'Paris', units: 'celsius' },
          providerMetadata: { openai: { itemId: 'fc_1' } },
        },
        { ...FINISH, reason: 'tool-calls' },
      ]);
    });

    it("a done item without arguments takes the deltas' text; arguments that are not JSON are kept as text (the tool's codec rejects them, reflection corrects them)", () => {
      const { events } = decode([
        added(0, { type: 'function_call', id: 'fc', call_id: 'c', name: 'get_weather' }),
        { type: 'response.function_call_arguments.delta', output_index: 0, delta: '{"city":"Par' },
        done(0, { type: 'function_call', id: 'fc', call_id: 'c', name: 'get_weather' }),
        completed(),
      ]);
      expect(events[0]).to.deep.include({ type: 'tool-call', id: 'c', args: '{"city":"Par' });
    });

    it('items the client must run: a tool-call with the raw input and the whole item when the request declared the tool; a MalformedStreamError naming the item type when it did not — never dropped', () => {
      const custom = [
        added(0, { type: 'custom_tool_call', id: 'ct', call_id: 'call_sql', name: 'write_sql', input: '' }),
        { type: 'response.custom_tool_call_input.delta', output_index: 0, delta: 'SELECT 1' },
        done(0, { type: 'custom_tool_call', id: 'ct', call_id: 'call_sql', name: 'write_sql' }),
        completed(),
      ];
      expect(decode(custom, [{ type: 'custom', name: 'write_sql' }]).events[0]).to.deep.equal({
        type: 'tool-call',
        id: 'call_sql',
        name: 'write_sql',
        args: 'SELECT 1',
        providerMetadata: {
          openai: { itemId: 'ct', itemType: 'custom_tool_call', item: { type: 'custom_tool_call', id: 'ct', call_id: 'call_sql', name: 'write_sql' } },
        },
      });
      const undeclared = decode(custom);
      expect(undeclared.error).to.be.instanceOf(MalformedStreamError).with.property('message').that.contains('custom_tool_call').and.contains('write_sql');
      const shell = [
        added(0, { type: 'shell_call', id: 'sh', call_id: 'call_sh' }),
        done(0, { type: 'shell_call', id: 'sh', call_id: 'call_sh', action: { commands: ['ls'] } }),
        completed(),
      ];
      expect(decode(shell, [{ type: 'shell' }]).events[0]).to.deep.include({ type: 'tool-call', id: 'call_sh', name: 'shell', args: { commands: ['ls'] } });
      expect(decode(shell, [{ type: 'function', name: 'other' }]).error)
        .to.be.instanceOf(MalformedStreamError)
        .with.property('message')
        .that.contains('shell_call');
      const search = (execution: string) => [
        added(0, { type: 'tool_search_call', id: 'ts' }),
        done(0, { type: 'tool_search_call', id: 'ts', call_id: 'call_ts', execution, arguments: { goal: 'weather' } }),
        completed(),
      ];
      expect(decode(search('client'), [{ type: 'tool_search' }]).events[0]).to.deep.include({ name: 'tool_search', args: { goal: 'weather' } });
      expect(decode(search('server')).events).to.deep.equal([FINISH]);
    });

    it('items the provider runs itself (web search, code interpreter, hosted MCP, image generation…) and their progress events never break the stream and never become tool calls', () => {
      const { events, error } = decode([
        added(0, { type: 'web_search_call', id: 'ws', status: 'in_progress' }),
        { type: 'response.web_search_call.searching', output_index: 0, item_id: 'ws' },
        done(0, { type: 'web_search_call', id: 'ws', status: 'completed', action: { type: 'search', query: 'news' } }),
        added(1, { type: 'code_interpreter_call', id: 'ci' }),
        { type: 'response.code_interpreter_call_code.delta', output_index: 1, delta: 'print(1)' },
        done(1, { type: 'code_interpreter_call', id: 'ci' }),
        added(2, { type: 'mcp_call', id: 'mcp' }),
        { type: 'response.mcp_call_arguments.delta', output_index: 2, delta: '{}' },
        done(2, { type: 'mcp_call', id: 'mcp', output: 'ok' }),
        added(3, { type: 'message', id: 'msg' }),
        textDelta(3, 'Found it.'),
        { type: 'response.output_text.annotation.added', output_index: 3, annotation: { type: 'url_citation', url: 'https://example.com' } },
        done(3, { type: 'message', id: 'msg' }),
        completed(),
      ]);
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal([{ type: 'text-delta', text: 'Found it.' }, FINISH]);
    });

    for (const [why, reason] of [
      ['max_output_tokens', 'length'],
      ['content_filter', 'content-filter'],
      ['something_new', 'other'],
    ] as const) {
      it(`response.incomplete (${why}) → finish '${reason}'`, () => {
        const { events } = decode([
          added(0, { type: 'message' }),
          textDelta(0, 'Par'),
          { type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: why }, usage } },
        ]);
        expect(events.at(-1)).to.deep.equal({ ...FINISH, reason });
      });
    }

    for (const [code, status, verdict] of [
      ['server_error', 500, { category: 'server_error', retryable: true, fallback: true }],
      ['rate_limit_exceeded', 429, { category: 'rate_limit', retryable: true, fallback: true }],
      ['invalid_prompt', 400, { category: 'bad_request', retryable: false, fallback: true }],
    ] as const) {
      it(`response.failed with error code ${code} → HttpError ${status} (${verdict.retryable ? 'retryable' : 'not retryable'}); no finish after it`, () => {
        const { events, error } = decode([
          added(0, { type: 'message' }),
          textDelta(0, 'Hel'),
          { type: 'response.failed', response: { status: 'failed', error: { code, message: `failed: ${code}` } } },
          completed(),
        ]);
        expect(events).to.deep.equal([{ type: 'text-delta', text: 'Hel' }]);
        expect(error).to.be.instanceOf(HttpError).with.property('status', status);
        expect(classifyError(error)).to.deep.include(verdict);
      });
    }

    it("the top-level error event (after the 200: 'service_unavailable_error', 'invalid_request_error', its code on the event or under error) → HttpError with the status it implies", () => {
      const unavailable = decode([
        { type: 'error', sequence_number: 3, code: 'service_unavailable_error', message: 'The server is overloaded', param: null },
      ]).error;
      expect(unavailable).to.be.instanceOf(HttpError).with.property('status', 503);
      expect(classifyError(unavailable)).to.deep.include({ retryable: true, fallback: true });
      const invalid = decode([{ type: 'error', error: { type: 'invalid_request_error', code: null, message: 'bad' } }]).error;
      expect(classifyError(invalid)).to.deep.include({ category: 'bad_request', retryable: false });
    });

    it('a sequence_number that repeats or goes back is a MalformedStreamError; events after a terminal event are ignored', () => {
      const repeated = decode([
        { type: 'response.created', sequence_number: 0, response: {} },
        { ...added(0, { type: 'message' }), sequence_number: 1 },
        { ...textDelta(0, 'a'), sequence_number: 2 },
        { ...textDelta(0, 'a'), sequence_number: 2 },
      ]);
      expect(repeated.events).to.deep.equal([{ type: 'text-delta', text: 'a' }]);
      expect(repeated.error).to.be.instanceOf(MalformedStreamError).with.property('message').that.contains('sequence_number 2 after 2');
      expect(
        decode([
          { type: 'response.created', sequence_number: 5, response: {} },
          { type: 'response.in_progress', sequence_number: 4, response: {} },
        ]).error,
      ).to.be.instanceOf(MalformedStreamError);
      expect(decode([completed(), textDelta(0, 'late'), { type: 'error', code: 'server_error' }]).events).to.deep.equal([FINISH]);
    });

    it('a call still open at the completion, a delta for an item never added, an event without a type or output_index, a field of the wrong type: MalformedStreamError', () => {
      const cases: Event[][] = [
        [added(0, { type: 'function_call', id: 'fc', call_id: 'c', name: 'f' }), completed()],
        [summary(4, 'orphan')],
        [{ type: 'response.function_call_arguments.delta', output_index: 9, delta: '{}' }],
        [{ delta: 'x' }],
        [{ type: 'response.output_item.added', item: { type: 'message' } }],
        [added(0, { type: 'message' }), { type: 'response.output_text.delta', output_index: 0, delta: 42 }],
        [added(0, { type: 'function_call' }), done(0, { type: 'function_call', id: 'fc', name: 'f', arguments: '{}' })],
        [{ type: 'response.completed' }],
        [completed({ usage: { input_tokens: '10' } })],
      ];
      for (const events of cases) expect(decode(events).error, JSON.stringify(events)).to.be.instanceOf(MalformedStreamError);
    });

    it('the body ending before response.completed, response.incomplete or response.failed: an IncompleteStreamError (retryable, fallback), never a short answer', () => {
      const { events, error } = decode([added(0, { type: 'message' }), textDelta(0, 'Hel')]);
      expect(events).to.deep.equal([{ type: 'text-delta', text: 'Hel' }]);
      expect(error).to.be.instanceOf(IncompleteStreamError);
      expect(classifyError(error)).to.deep.include({ retryable: true, fallback: true });
    });
  });

  describe('the request body', () => {
    const conversation: Message[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: "What's the weather in Paris?" },
      {
        role: 'assistant',
        content: '',
        reasoning: [
          { text: 'Need the tool.', providerMetadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'gAAAA' } } },
          { text: 'Anthropic thinking', signature: 'sig' },
          { text: '', providerMetadata: { openai: { itemId: 'rs_stored', reasoningEncryptedContent: null } } },
        ],
        toolCalls: [{ id: 'call_1', name: 'get_weather', args: { city: 'Paris' }, providerMetadata: { openai: { itemId: 'fc_1' } } }],
      },
      { role: 'tool', toolCallId: 'call_1', toolName: 'get_weather', content: '{"temperature":22}' },
    ];

    it('stateless by default: store false, include reasoning.encrypted_content; input items with the reasoning the API produced (encrypted content carried), the call as function_call, its result as function_call_output; tools as function tools (strict false), tool_choice', () => {
      const body = openAIResponsesBody(
        'gpt-5-mini',
        { messages: conversation, tools: [WEATHER_TOOL], toolChoice: { tool: 'get_weather' } },
        { reasoning: { effort: 'low' }, include: ['file_search_call.results'] },
      );
      expect(body).to.deep.equal({
        reasoning: { effort: 'low' },
        include: ['file_search_call.results', 'reasoning.encrypted_content'],
        model: 'gpt-5-mini',
        stream: true,
        store: false,
        input: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: "What's the weather in Paris?" },
          { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Need the tool.' }], encrypted_content: 'gAAAA' },
          { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output', call_id: 'call_1', output: '{"temperature":22}' },
        ],
        tools: [{ type: 'function', name: 'get_weather', description: WEATHER_TOOL.description, parameters: WEATHER_TOOL.parameters, strict: false }],
        tool_choice: { type: 'function', name: 'get_weather' },
      });
    });

    it('store: true keeps no include of its own and sends stored reasoning by id; body.tools (hosted tools) go before the function tools', () => {
      const body = openAIResponsesBody('m', { messages: conversation, tools: [WEATHER_TOOL] }, { store: true, tools: [{ type: 'web_search' }] });
      expect(body).to.not.have.property('include');
      expect((body['input'] as Event[]).filter((i) => i['type'] === 'reasoning')).to.deep.equal([
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Need the tool.' }], encrypted_content: 'gAAAA' },
        { type: 'reasoning', id: 'rs_stored', summary: [] },
      ]);
      expect((body['tools'] as Event[]).map((tool) => tool['type'])).to.deep.equal(['web_search', 'function']);
      expect(openAIResponsesBody('m', ask('Hi'), { tools: [{ type: 'web_search' }] })['tools']).to.deep.equal([{ type: 'web_search' }]);
      expect(openAIResponsesBody('m', ask('Hi'))).to.not.have.property('tools');
    });

    it("client-run calls go back as the items they came as, each result as its call type's output item", () => {
      const call = (id: string, itemType: string, args: unknown, item: Event = { type: itemType, id: `i_${id}`, call_id: id, status: 'completed' }) => ({
        id,
        name: itemType,
        args,
        providerMetadata: { openai: { itemId: `i_${id}`, itemType, item } },
      });
      const messages: Message[] = [
        {
          role: 'assistant',
          content: '',
          toolCalls: [
            call('c_sql', 'custom_tool_call', 'SELECT 1'),
            call('c_sh', 'shell_call', { commands: ['ls'] }),
            call('c_patch', 'apply_patch_call', { type: 'create_file' }),
            call('mcpr_1', 'mcp_approval_request', '{}', { type: 'mcp_approval_request', id: 'mcpr_1', name: 'short', server_label: 'zip1', arguments: '{}' }),
            call('c_local', 'local_shell_call', { type: 'exec' }),
          ],
        },
        { role: 'tool', toolCallId: 'c_sql', toolName: 'write_sql', content: '1 row' },
        { role: 'tool', toolCallId: 'c_sh', toolName: 'shell', content: 'a.txt' },
        { role: 'tool', toolCallId: 'c_patch', toolName: 'apply_patch', content: 'no such file', isError: true },
        { role: 'tool', toolCallId: 'mcpr_1', toolName: 'mcp_approval_request', content: 'approved' },
        { role: 'tool', toolCallId: 'c_local', toolName: 'local_shell', content: 'b.txt' },
      ];
      expect(openAIResponsesBody('m', { messages, tools: [] })['input']).to.deep.equal([
        { type: 'custom_tool_call', call_id: 'c_sql', name: 'custom_tool_call', input: 'SELECT 1' },
        { type: 'shell_call', id: 'i_c_sh', call_id: 'c_sh' },
        { type: 'apply_patch_call', id: 'i_c_patch', call_id: 'c_patch' },
        { type: 'mcp_approval_request', id: 'mcpr_1', name: 'short', server_label: 'zip1', arguments: '{}' },
        { type: 'local_shell_call', id: 'i_c_local', call_id: 'c_local' },
        { type: 'custom_tool_call_output', call_id: 'c_sql', output: '1 row' },
        { type: 'shell_call_output', call_id: 'c_sh', output: [{ stdout: 'a.txt', stderr: '', outcome: { type: 'exit', exit_code: 0 } }] },
        { type: 'apply_patch_call_output', call_id: 'c_patch', status: 'failed', output: 'no such file' },
        { type: 'mcp_approval_response', approval_request_id: 'mcpr_1', approve: true },
        { type: 'local_shell_call_output', call_id: 'c_local', output: 'b.txt' },
      ]);
    });

    it("maxOutputTokens → max_output_tokens, over the body option's; absent without one; a bad one: InvalidOptionError, nothing sent", async () => {
      expect(openAIResponsesBody('m', { ...ask('Hi'), maxOutputTokens: 256 }, { max_output_tokens: 4096 })['max_output_tokens']).to.equal(256);
      expect(openAIResponsesBody('m', ask('Hi'), { max_output_tokens: 4096 })['max_output_tokens']).to.equal(4096);
      expect(openAIResponsesBody('m', ask('Hi'))).to.not.have.property('max_output_tokens');
      const events = recordedResponses('openai-responses-codex-calculator.jsonl')[3]!;
      const { fetch, calls } = fixtureFetch(asSse(events, 'data'));
      const model = openAIResponsesModel({ baseURL: 'http://x.test/v1', model: 'm', body: { max_output_tokens: 4096 }, fetch });
      await turn(model, { ...ask('Hi'), maxOutputTokens: 300 });
      expect(calls[0]?.body).to.deep.include({ max_output_tokens: 300 });
      for (const bad of [0, 2.5, '300']) {
        const error = await turnError(model, { ...ask('Hi'), maxOutputTokens: bad as number });
        expect(error, String(bad)).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.maxOutputTokens', value: bad });
      }
      const resumable = openAIResponsesModel({ baseURL: 'http://x.test/v1', model: 'm', resume: {}, fetch });
      expect(await turnError(resumable, { ...ask('Hi'), maxOutputTokens: -1 })).to.be.instanceOf(InvalidOptionError);
      expect(calls).to.have.length(1);
    });

    it("promptCacheKey → prompt_cache_key on the wire, over promptCache.key (which stays for a request without one) and the body's; resumed calls alike; a bad one: InvalidOptionError, nothing sent", async () => {
      expect(openAIResponsesBody('m', { ...ask('Hi'), promptCacheKey: 'c-1' }, { prompt_cache_key: 'body' })['prompt_cache_key']).to.equal('c-1');
      expect(openAIResponsesBody('m', ask('Hi'))).to.not.have.property('prompt_cache_key');
      const events = recordedResponses('openai-responses-codex-calculator.jsonl')[3]!;
      const { fetch, calls } = fixtureFetch(asSse(events, 'data'));
      const promptCache = { key: 'option-key', retention: '24h' } as const;
      const model = openAIResponsesModel({ baseURL: 'http://x.test/v1', model: 'm', promptCache, fetch });
      await turn(model, { ...ask('Hi'), promptCacheKey: 'conversation-42' });
      await turn(model, ask('Hi'));
      await turn(openAIResponsesModel({ baseURL: 'http://x.test/v1', model: 'm', fetch }), ask('Hi'));
      await turn(openAIResponsesModel({ baseURL: 'http://x.test/v1', model: 'm', resume: true, fetch }), { ...ask('Hi'), promptCacheKey: 'resumed-42' });
      const keys = calls.map((c) => (c.body as Record<string, unknown>)['prompt_cache_key']);
      expect(keys).to.deep.equal(['conversation-42', 'option-key', undefined, 'resumed-42']);
      // the rest of the cache option stays with the request's key
      expect(calls[0]?.body).to.deep.include({ prompt_cache_retention: '24h' });
      for (const bad of ['', 7]) {
        const error = await turnError(model, { ...ask('Hi'), promptCacheKey: bad as string });
        expect(error, String(bad)).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.promptCacheKey', value: bad });
      }
      expect(calls).to.have.length(4);
    });

    it('bad options at once, naming the option', () => {
      expect(() => openAIResponsesModel({ baseURL: 'not a url', model: 'm' })).to.throw(InvalidOptionError, /baseURL/);
      expect(() => openAIResponsesModel({ baseURL: 'http://127.0.0.1/v1', model: '' })).to.throw(InvalidOptionError, /model/);
      expect(() => openAIResponsesModel({ baseURL: 'http://127.0.0.1/v1', model: 'm', retries: 2 } as never)).to.throw(InvalidOptionError, /retries/);
    });
  });

  describe('recorded streams (vercel/ai fixtures, spec/fixtures/SOURCES.md)', () => {
    const recordings = Object.fromEntries(RECORDED.map((name) => [name, recordedResponses(`openai-responses-${name}.jsonl`)])) as Record<
      (typeof RECORDED)[number],
      ResponseEvents[]
    >;
    /** The outcome of each response of a recording, decoded from its events. */
    const outcomes = (name: (typeof RECORDED)[number]) => recordings[name].map((events) => decode(events, DECLARED[name] ?? []));
    const textOf = (events: readonly TurnEvent[]) => events.flatMap((e) => (e.type === 'text-delta' ? [e.text] : [])).join('');

    it('replay exactly: text, reasoning ends with encrypted content, tool calls, finishes and usage', () => {
      const codex = outcomes('codex-calculator');
      expect(codex.map((o) => o.events.filter((e) => e.type === 'tool-call').map((e) => e.type === 'tool-call' && [e.name, e.args]))).to.deep.equal([
        [['calculator', { a: 12, b: 7, op: 'add' }]],
        [['calculator', { a: 19, b: 3, op: 'multiply' }]],
        [['calculator', { a: 57, b: 10, op: 'multiply' }]],
        [],
      ]);
      expect(textOf(codex[3]!.events)).to.equal('The final result is **570**.');
      const end = codex[0]!.events.find((e) => e.type === 'reasoning-end');
      expect(end).to.have.nested.property('providerMetadata.openai.itemId').that.matches(/^rs_/);
      expect(end)
        .to.have.nested.property('providerMetadata.openai.reasoningEncryptedContent')
        .that.matches(/^gAAAA/);
      expect(codex.map((o) => o.events.at(-1))).to.deep.equal([
        { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 134, outputTokens: 28 } },
        { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 221, outputTokens: 26 } },
        { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 260, outputTokens: 26 } },
        { type: 'finish', reason: 'stop', usage: { inputTokens: 299, outputTokens: 12 } },
      ]);
      // hosted tools: web search (seven reasoning items between searches), code interpreter, image generation
      const web = outcomes('web-search')[0]!;
      expect(web.error).to.equal(undefined);
      expect(web.events.filter((e) => e.type === 'reasoning-end')).to.have.length(7);
      expect(textOf(web.events)).to.match(/^I checked today’s tech headlines/);
      expect(web.events.at(-1)).to.deep.equal({
        type: 'finish',
        reason: 'stop',
        usage: { inputTokens: 31073, outputTokens: 4416, cachedInputTokens: 3712, reasoningTokens: 3712 },
      });
      expect(outcomes('code-interpreter')[0]!.events.filter((e) => e.type === 'tool-call')).to.deep.equal([]);
      expect(outcomes('image-generation')[0]!.events.at(-1)).to.deep.include({ type: 'finish', reason: 'stop' });
      // item ids that change on every event (a GitHub Copilot recording): read by output_index
      const rotating = outcomes('id-rotation')[0]!;
      expect(rotating.error).to.equal(undefined);
      expect(textOf(rotating.events)).to.contain('There are');
      // the client-run items, declared: a tool-call each with its raw input
      expect(outcomes('custom-tool')[0]!.events[0]).to.deep.include({
        type: 'tool-call',
        id: 'call_custom_sql_001',
        name: 'write_sql',
        args: 'SELECT * FROM users WHERE age > 25',
      });
      expect(outcomes('shell')[0]!.events[0]).to.deep.include({
        name: 'shell',
        args: { commands: ['ls -a ~/Desktop'], max_output_length: 8912, timeout_ms: null },
      });
      expect(outcomes('apply-patch')[0]!.events[0]).to.deep.include({ name: 'apply_patch' }).and.have.nested.property('args.path', 'shopping-checklist.md');
      expect(outcomes('local-shell')[0]!.events.find((e) => e.type === 'tool-call')).to.deep.include({
        name: 'local_shell',
        args: { type: 'exec', command: ['ls', '-a', '~'], env: {} },
      });
      expect(outcomes('mcp-approval')[0]!.events.find((e) => e.type === 'tool-call')).to.deep.include({ name: 'mcp_approval_request' });
      // an error event (insufficient_quota), then response.failed: the first one ends it
      const failed = outcomes('failed')[0]!;
      expect(failed.error).to.be.instanceOf(HttpError).with.property('status', 429);
      expect(classifyError(failed.error)).to.deep.include({ category: 'rate_limit', retryable: false, fallback: true });
    });

    it('the client-run items of a request that did not declare them: a MalformedStreamError naming the item type', () => {
      for (const [name, type] of [
        ['custom-tool', 'custom_tool_call'],
        ['shell', 'shell_call'],
        ['apply-patch', 'apply_patch_call'],
        ['local-shell', 'local_shell_call'],
        ['mcp-approval', 'mcp_approval_request'],
      ] as const) {
        expect(decode(recordings[name][0]!).error, name).to.be.instanceOf(MalformedStreamError).with.property('message').that.contains(type);
      }
    });

    for (const name of RECORDED) {
      it(`${name}: both framings (event: + data:, data: alone) and every line ending decode alike; cut at awkward bytes (around line breaks and field names, inside multi-byte characters: 160 spread over each stream; npm run soak cuts at random through all of them), the same events and end`, () => {
        recordings[name].forEach((events, i) => {
          const decoder = () => openAIResponsesStreamDecoder('m', responsesDeclaredTools({ tools: DECLARED[name] ?? [] }));
          const whole = decodeChunks([asSse(events, 'event+data')], decoder());
          expect(JSON.stringify(whole.events)).to.equal(JSON.stringify(decode(events, DECLARED[name] ?? []).events));
          expect(decodeChunks([asSse(events, 'data')], decoder()), 'data: alone').to.deep.equal(whole);
          for (const convert of Object.values(LINE_ENDINGS)) {
            const bytes = new TextEncoder().encode(convert(asSse(events, 'event+data')));
            for (const cut of awkwardCuts(bytes)) {
              const outcome = decodeChunks(cutAt(bytes, [cut]), decoder());
              if (JSON.stringify(outcome) !== JSON.stringify(whole)) expect(outcome, `response ${i}, cut at byte ${cut}`).to.deep.equal(whole);
            }
          }
        });
      });
    }
  });

  describe('openAIResponsesModel over HTTP on loopback', () => {
    it("runAgent: a reasoning model's tool turns (the codex recording) — each request carries the reasoning item with its encrypted content, the calls and their outputs; the answer", async () => {
      const replay = await replayResponses(recordedResponses('openai-responses-codex-calculator.jsonl'));
      try {
        const calculator = defineTool({
          name: 'calculator',
          description: 'Arithmetic',
          args: t.type({ a: t.number, b: t.number, op: t.keyof({ add: null, multiply: null }) }),
          execute: ({ a, b, op }) => [op === 'add' ? a + b : a * b],
        });
        const model = openAIResponsesModel({ baseURL: replay.baseURL, model: 'gpt-5.1-codex-max', apiKey: 'k' });
        const events = await lastValueFrom(
          runAgent({ model, tools: [calculator], messages: [{ role: 'user', content: 'Compute (12 + 7) × 3 × 10 with the calculator.' }] }).pipe(toArray()),
        );
        const last = events.at(-1);
        expect(last?.type === 'message' && last.message.content).to.equal('The final result is **570**.');
        expect(replay.requests.map((r) => r.path)).to.deep.equal(['/v1/responses', '/v1/responses', '/v1/responses', '/v1/responses']);
        const second = replay.requests[1]!.body;
        expect(second).to.include({ model: 'gpt-5.1-codex-max', stream: true, store: false });
        expect(second['include']).to.deep.equal(['reasoning.encrypted_content']);
        const input = second['input'] as Event[];
        expect(input.map((i) => i['type'] ?? i['role'])).to.deep.equal(['user', 'reasoning', 'function_call', 'function_call_output']);
        expect(input[1])
          .to.have.property('encrypted_content')
          .that.matches(/^gAAAA/);
        expect(input[3]).to.deep.equal({ type: 'function_call_output', call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', output: '19' });
        expect((replay.requests[3]!.body['input'] as Event[]).filter((i) => i['type'] === 'function_call_output')).to.have.length(3);
      } finally {
        await replay.close();
      }
    });

    it("a cut body (the recording's events up to its middle): IncompleteStreamError; a 429 before the stream: HttpError with retry-after", async () => {
      const events = recordedResponses('openai-responses-codex-calculator.jsonl')[3]!;
      const cut = asSse(events.slice(0, Math.floor(events.length / 2)), 'event+data');
      const model = (text: string, options: Parameters<typeof fixtureFetch>[1] = {}) =>
        openAIResponsesModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fixtureFetch(text, options).fetch });
      expect(await turnError(model(cut), ask('Hi'))).to.be.instanceOf(IncompleteStreamError);
      const limited = await turnError(
        model(JSON.stringify({ error: { message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' } }), {
          status: 429,
          headers: { 'content-type': 'application/json', 'retry-after': '2' },
        }),
        ask('Hi'),
      );
      expect(classifyError(limited)).to.deep.include({ category: 'rate_limit', retryable: true, retryAfterMs: 2000 });
      const whole = await turn(model(asSse(events, 'data')), ask('Hi'));
      expect(whole.at(-1)).to.deep.equal({ type: 'finish', reason: 'stop', usage: { inputTokens: 299, outputTokens: 12 } });
    });
  });
});
