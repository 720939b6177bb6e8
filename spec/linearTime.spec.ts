/**
 * Linear time on untrusted text: every function of src/ that applies a regex or a scanning loop
 * to model, tool or network text, run on adversarial input of 256 KiB (runs of spaces, repeated
 * keywords, unterminated quotes and markers) — sizes at which a quadratic path takes a minute or
 * more (the old fence regex: 77 s) and a linear one a few milliseconds. Each case gets a generous bound (3 s) so a loaded
 * machine never fails it, while a super-linear regression cannot pass. The structural guard is
 * eslint-plugin-regexp (no-super-linear-backtracking, no-super-linear-move) on every regex of src/.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { classifyError } from '../src/core/errors/classify.js';
import { OverlapTrimmer } from '../src/core/model/overlap.js';
import { errorText, isSecretName, sanitizeText } from '../src/core/errors/sanitize.js';
import { validateOutput } from '../src/operators/validateOutput.js';
import { cityOf, tokenize } from '../src/server/assistant.js';
import { anthropicStreamDecoder } from '../src/providers/anthropic.js';
import { openAIStreamDecoder } from '../src/providers/openai.js';
import { openAIResponsesStreamDecoder } from '../src/providers/responsesDecoder.js';
import { SseParser, parseSse } from '../src/providers/sseParser.js';
import { withoutTrailingSlashes } from '../src/providers/providerOptions.js';
import { decodeChunks } from './support/decodeChunks.js';

const N = 256 * 1024;
const BOUND_MS = 3000;
const spaces = ' '.repeat(N);
const repeat = (unit: string): string => unit.repeat(Math.ceil(N / unit.length)).slice(0, N);

function finishes(label: string, work: () => unknown): void {
  const started = performance.now();
  work();
  const ms = performance.now() - started;
  expect(ms, `${label}: ${ms.toFixed(0)} ms on 256 KiB`).to.be.below(BOUND_MS);
}

describe('linear time on untrusted text (256 KiB of adversarial input per case)', function () {
  this.timeout(60_000);

  it('sanitizeText / errorText (maxChars Infinity: the whole text) on every format’s worst case', () => {
    for (const [label, text] of [
      ['spaces', spaces],
      ['a secret name, then spaces', `token${spaces}`],
      ['secret names, repeated', repeat('password ')],
      ['an unterminated quoted value', `password: "${repeat('a')}`],
      ['quotes and escapes', repeat('secret:"\\')],
      ['an unterminated PEM block', `-----BEGIN ${repeat('A')}`],
      ['PEM markers, repeated', repeat('-----BEGIN RSA PRIVATE KEY-----')],
      ['URL credentials without @', repeat('://user:')],
      ['scheme-like words', repeat('a.b+c-')],
      ['JWT-like runs without dots', repeat('eyJ-')],
      ['Bearer then spaces', `Bearer${spaces}`],
      ['header names, repeated', repeat('authorization cookie x-api-key ')],
      ['query parameters without values', repeat('?key=&sig=')],
      ['token-like prefixes', repeat('sk-ghp_xoxb-AIza')],
    ] as const) {
      finishes(label, () => sanitizeText(text, Infinity));
    }
    finishes('errorText of a huge Error', () => errorText(new Error(`password=${spaces}`), Infinity));
    finishes('isSecretName of a huge name', () => isSecretName(repeat('a_')));
  });

  it('validateOutput’s fence stripping', () => {
    const validator = validateOutput(t.type({ a: t.number }));
    for (const text of [`{${spaces}x`, `\`\`\`json${spaces}`, `${spaces}\`\`\``, repeat('`` ')]) finishes('fence', () => validator.check(text));
  });

  it('classifyError on huge messages', () => {
    for (const text of [spaces, repeat('time '), repeat('connection '), repeat('rate '), repeat('server ')])
      finishes('classify', () => classifyError(new Error(text)));
  });

  it('the local provider’s assistant: cityOf and tokenize on a question', () => {
    for (const text of [`in a${spaces}1`, repeat('in '), repeat('for at '), `weather in Paris${spaces}right now`]) finishes('cityOf', () => cityOf(text));
    for (const text of [spaces, repeat(' a'), `a${spaces}`]) finishes('tokenize', () => tokenize(text));
  });

  it('SSE: a long line in small chunks, many short lines, base URLs', () => {
    finishes('an 8 MiB line in 16 KiB chunks', () => {
      const parser = new SseParser();
      const chunk = 'x'.repeat(16 * 1024);
      parser.push('data: ');
      for (let i = 0; i < 512; i++) parser.push(chunk);
      parser.push('\n\n');
    });
    finishes('lines of one character', () => parseSse(repeat('\n')));
    finishes('CRs split across chunks', () => {
      const parser = new SseParser();
      for (let i = 0; i < 100_000; i++) parser.push('\r');
    });
    finishes('trailing slashes', () => withoutTrailingSlashes(`${repeat('/')}a${repeat('/')}`));
  });

  it('the decoders: a huge text delta, huge tool arguments in pieces', () => {
    const text = repeat('é ');
    finishes('openai', () =>
      decodeChunks(
        [`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text }, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`],
        openAIStreamDecoder('m'),
      ),
    );
    const pieces = Array.from(
      { length: 20_000 },
      (_, i) =>
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: i === 0 ? '{"a":"' : 'xxxxxxxxxx' } }] } }] })}\n\n`,
    );
    finishes('openai tool arguments', () =>
      decodeChunks(
        [
          ...pieces,
          'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"}"}}]},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n',
        ],
        openAIStreamDecoder('m'),
      ),
    );
    const json = Array.from(
      { length: 20_000 },
      () => `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"xxxxxxxxxx"}}\n\n`,
    );
    finishes('anthropic tool input', () =>
      decodeChunks(
        [
          'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}\n\n',
          ...json,
          'data: {"type":"content_block_stop","index":0}\n\ndata: {"type":"message_stop"}\n\n',
        ],
        anthropicStreamDecoder('m'),
      ),
    );
    const sse = (e: Record<string, unknown>) => `event: ${String(e['type'])}\ndata: ${JSON.stringify(e)}\n\n`;
    const completed = sse({ type: 'response.completed', response: { usage: { input_tokens: 1, output_tokens: 1 } } });
    finishes('responses text', () =>
      decodeChunks(
        [
          sse({ type: 'response.output_item.added', output_index: 0, item: { type: 'message' } }),
          sse({ type: 'response.output_text.delta', output_index: 0, delta: text }),
          completed,
        ],
        openAIResponsesStreamDecoder('m'),
      ),
    );
    const args = Array.from({ length: 20_000 }, (_, i) =>
      sse({ type: 'response.function_call_arguments.delta', output_index: 0, sequence_number: i + 1, delta: i === 0 ? '{"a":"' : 'xxxxxxxxxx' }),
    );
    const call = { type: 'function_call', id: 'fc', call_id: 'c', name: 'f' };
    finishes('responses tool arguments', () =>
      decodeChunks(
        [
          sse({ type: 'response.output_item.added', output_index: 0, sequence_number: 0, item: call }),
          ...args,
          sse({ type: 'response.output_item.done', output_index: 0, sequence_number: 20_001, item: call }),
          completed,
        ],
        openAIResponsesStreamDecoder('m'),
      ),
    );
  });

  it('continuation trimming on a repetitive tail', () => {
    finishes('overlap', () => {
      const trimmer = new OverlapTrimmer(repeat('ab'), N, 16);
      for (let i = 0; i < 10_000; i++) trimmer.push('a');
      trimmer.end();
    });
  });
});
