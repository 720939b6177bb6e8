/**
 * docs/local-provider.md, "Pointing a client at it": every client the table names answers
 * through the base URL the table gives it (a real request to a local provider, with the real
 * client package), every client the project pairs with the server has a row, and what the table
 * says goes wrong (`@ai-sdk/anthropic` on `anthropicBaseURL` alone: a bare "Not Found") does.
 */
import Anthropic from '@anthropic-ai/sdk';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { expect } from 'chai';
import { generateText } from 'ai';
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { streamModel } from '../../src/core/model/model.js';
import { anthropicModel } from '../../src/providers/anthropic.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { openAIResponsesModel } from '../../src/providers/responses.js';
import { fromOpenAIResponses } from '../../src/openai/index.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import { ROOT } from '../package/npmPack.js';

/** The table's rows: the clients (the first code span of each comma-separated part of the first cell) and the base URL (the second cell's code). */
function table(): { clients: string[]; baseURL: string }[] {
  const doc = readFileSync(join(ROOT, 'docs/local-provider.md'), 'utf8');
  const section = /^### Pointing a client at it\n([\s\S]*?)(?=^#)/m.exec(doc)?.[1] ?? '';
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [, first = '', second = ''] = line.split(/ \| |^\| | \|$/);
      // a part: "`name` (…)", parts split on the commas outside parentheses
      const parts = first.split(/,(?![^(]*\))/).map((part) => /`([^`]+)`/.exec(part)?.[1] ?? '');
      const url = /``\s*`?([^`]+?)`?\s*``|`([^`]+)`/.exec(second);
      return { clients: parts, baseURL: (url?.[1] ?? url?.[2] ?? '').trim() };
    });
}

const QUESTION = 'Hi';
const ANSWER = /^I am the local rxheal assistant\. You said: "Hi"/;

/** Each client, asked one question through `baseURL`: the answer's text. */
const clients: Record<string, (baseURL: string) => Promise<string>> = {
  openAICompatibleModel: async (baseURL) =>
    text(
      await lastValueFrom(
        streamModel(openAICompatibleModel({ baseURL, model: 'local' }), { messages: [{ role: 'user', content: QUESTION }], tools: [] }).pipe(toArray()),
      ),
    ),
  openAIResponsesModel: async (baseURL) =>
    text(
      await lastValueFrom(
        streamModel(openAIResponsesModel({ baseURL, model: 'local' }), { messages: [{ role: 'user', content: QUESTION }], tools: [] }).pipe(toArray()),
      ),
    ),
  fromOpenAIResponses: async (baseURL) =>
    text(
      await lastValueFrom(
        streamModel(fromOpenAIResponses(new OpenAI({ baseURL, apiKey: 'local' }), { model: 'local' }), {
          messages: [{ role: 'user', content: QUESTION }],
          tools: [],
        }).pipe(toArray()),
      ),
    ),
  anthropicModel: async (baseURL) =>
    text(
      await lastValueFrom(
        streamModel(anthropicModel({ baseURL, model: 'local' }), { messages: [{ role: 'user', content: QUESTION }], tools: [] }).pipe(toArray()),
      ),
    ),
  openai: async (baseURL) =>
    (await new OpenAI({ baseURL, apiKey: 'local', maxRetries: 0 }).chat.completions.create({ model: 'local', messages: [{ role: 'user', content: QUESTION }] }))
      .choices[0]?.message.content ?? '',
  '@langchain/openai': async (baseURL) =>
    String((await new ChatOpenAI({ model: 'local', apiKey: 'local', configuration: { baseURL }, maxRetries: 0 }).invoke(QUESTION)).content),
  '@anthropic-ai/sdk': async (baseURL) => {
    const message = await new Anthropic({ baseURL, apiKey: 'local', maxRetries: 0 }).messages.create({
      model: 'local',
      max_tokens: 200,
      messages: [{ role: 'user', content: QUESTION }],
    });
    return message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  },
  '@ai-sdk/openai-compatible': async (baseURL) =>
    (await generateText({ model: createOpenAICompatible({ name: 'local', baseURL })('local'), prompt: QUESTION, maxRetries: 0 })).text,
  '@ai-sdk/openai': async (baseURL) =>
    (await generateText({ model: createOpenAI({ baseURL, apiKey: 'local' }).chat('local'), prompt: QUESTION, maxRetries: 0 })).text,
  '@ai-sdk/anthropic': async (baseURL) =>
    (await generateText({ model: createAnthropic({ baseURL, apiKey: 'local' })('local'), prompt: QUESTION, maxOutputTokens: 200, maxRetries: 0 })).text,
};

function text(events: { type: string; text?: string }[]): string {
  return events
    .filter((e) => e.type === 'text-delta')
    .map((e) => e.text)
    .join('');
}

describe('docs/local-provider.md: the base URL each client takes', function () {
  this.timeout(30_000);
  let server: LocalProvider;
  const rows = table();
  const urlOf = (expression: string): string =>
    ({ openAIBaseURL: server.openAIBaseURL, anthropicBaseURL: server.anthropicBaseURL, '${anthropicBaseURL}/v1': `${server.anthropicBaseURL}/v1` })[
      expression
    ] ?? `unknown base URL ${expression}`;

  before(async () => {
    server = await startLocalProvider({ tokenDelayMs: 1 });
    // the AI SDK logs its compatibility warnings (maxOutputTokens on an unknown model) to the console
    (globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;
  });
  after(() => server.close());

  it('has a row for every client the project pairs with the server, and names only those', () => {
    expect(rows.flatMap((r) => r.clients).sort()).to.deep.equal(Object.keys(clients).sort());
    for (const row of rows) expect(['openAIBaseURL', 'anthropicBaseURL', '${anthropicBaseURL}/v1'], row.clients.join(', ')).to.include(row.baseURL);
  });

  for (const row of table()) {
    for (const client of row.clients) {
      it(`${client}, with ${row.baseURL}: answers`, async () => {
        expect(clients[client], `a client named ${client}`).to.be.a('function');
        expect(await clients[client]!(urlOf(row.baseURL))).to.match(ANSWER);
      });
    }
  }

  it('@ai-sdk/anthropic with anthropicBaseURL alone: the bare "Not Found" the table warns of', async () => {
    const error = await clients['@ai-sdk/anthropic']!(server.anthropicBaseURL).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as Error | undefined)?.message).to.equal('Not Found');
  });
});
