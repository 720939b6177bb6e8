/**
 * Hostile tool errors into reflection, end to end: a tool fails with something nasty, runAgent
 * and reflectOnError turn it into the tool message the model receives next, and the run's events
 * (`tool-error`, `reflection`, `call-end`, `retry`) show it. Whatever the tool throws — 1 MB of
 * text, placeholders, secrets, objects whose getters throw, things that are not errors — the run
 * goes on, the prompt is bounded and readable, placeholders stay literal, secrets are redacted.
 * (Operator-level cases of the same rules: reflectOnError.spec.ts, sanitize.spec.ts.)
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { config as rxConfig } from 'rxjs';
import { HttpError } from '../../src/core/errors/errors.js';
import type { AgentEvent, ReflectionEvent, ToolErrorEvent, ToolMessage } from '../../src/core/events/events.js';
import { DEFAULT_EXHAUSTED_TEMPLATE, DEFAULT_REFLECTION_TEMPLATE, reflectOnError, type ReflectOnErrorOptions } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { finish, record, scriptedModel, scriptedTool, textDeltas, toolCall } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';

const CUT_NOTE = '… [1234567 more characters cut]'.length;

interface HostileRun {
  readonly completed: boolean;
  readonly error: unknown;
  readonly events: AgentEvent[];
  /** The tool message the model received on its next turn. */
  readonly toolMessage: ToolMessage | undefined;
  readonly reflection: ReflectionEvent | undefined;
  readonly toolError: ToolErrorEvent | undefined;
  /** Errors RxJS could not deliver (thrown inside a callback). */
  readonly unhandled: unknown[];
  readonly wallMs: number;
}

/**
 * One run: the model calls `get_weather` with `args`; the tool throws `thrown` (`failures` times,
 * default once), then succeeds; the pipeline retries transient failures once and reflects on the
 * rest.
 */
function hostileRun(
  thrown: unknown,
  options: { args?: unknown; codec?: t.Mixed; reflect?: ReflectOnErrorOptions; toolName?: string; failures?: number } = {},
): HostileRun {
  const args = 'args' in options ? options.args : { city: 'Paris', units: 'celsius' };
  const outcomes = [...Array.from({ length: options.failures ?? 1 }, () => ({ error: thrown })), { result: { temperature: 22 } }];
  const tool = scriptedTool('get_weather', outcomes, { idempotent: true, ...(options.codec ? { args: options.codec } : {}) });
  const model = scriptedModel('m', [
    [toolCall('c1', options.toolName ?? 'get_weather', args), finish('tool-calls')],
    [...textDeltas('Sorry, the weather service failed.'), finish()],
  ]);
  const unhandled: unknown[] = [];
  const previous = rxConfig.onUnhandledError;
  rxConfig.onUnhandledError = (e: unknown) => unhandled.push(e);
  let log: ReturnType<typeof record<AgentEvent>> | undefined;
  const t0 = performance.now();
  try {
    testScheduler().run(({ flush }) => {
      log = record(
        runAgent({
          model,
          tools: [tool],
          messages: [{ role: 'user', content: 'Weather in Paris?' }],
          toolPipeline: (call, call$, { hub }) =>
            call$.pipe(
              retryWithBackoff({ hub, target: `tool:${call.name}`, maxRetries: 1, initialBackoffMs: 10, jitter: 'none' }),
              reflectOnError(options.reflect),
            ),
        }),
      );
      flush();
    });
  } finally {
    rxConfig.onUnhandledError = previous;
  }
  const wallMs = performance.now() - t0;
  const events = log!.events.map(([, e]) => e);
  const toolMessage = model.requests[1]?.messages.find((m): m is ToolMessage => m.role === 'tool');
  return {
    completed: log!.completed(),
    error: log!.error(),
    events,
    toolMessage,
    reflection: events.find((e): e is ReflectionEvent => e.type === 'reflection'),
    toolError: events.find((e): e is ToolErrorEvent => e.type === 'tool-error'),
    unhandled,
    wallMs,
  };
}

/** The run went on: no unhandled error, the model got a tool message marked as an error, the run answered. */
function expectRunWentOn(run: HostileRun): ToolMessage {
  expect(run.unhandled.map(String), 'errors RxJS could not deliver').to.deep.equal([]);
  expect(run.error, 'the run errored').to.equal(undefined);
  expect(run.completed, 'the run ended').to.equal(true);
  expect(run.toolMessage, 'the model received a tool message').not.to.equal(undefined);
  expect(run.toolMessage!.isError).to.equal(true);
  expect(run.events.at(-1)).to.deep.equal({ type: 'message', message: { role: 'assistant', content: 'Sorry, the weather service failed.' } });
  return run.toolMessage!;
}

/** Every text the run exposes about the failure: what the model receives and what the events carry. */
function exposedTexts(run: HostileRun): string[] {
  const out: string[] = [];
  if (run.toolMessage) out.push(run.toolMessage.content);
  for (const e of run.events) {
    if (e.type === 'reflection') out.push(e.prompt);
    if (e.type === 'tool-error') out.push(e.error);
    if (e.type === 'call-end' && e.error !== undefined) out.push(e.error);
    if (e.type === 'retry' && e.error !== undefined) out.push(e.error);
    if (e.type === 'message' && e.message.role === 'tool') out.push(e.message.content);
  }
  return out;
}

const MB = 1 << 20;

describe('reflectOnError end to end: hostile tool errors (runAgent)', () => {
  describe('a 1 MB error message', () => {
    const huge = `Upstream failed: ${'x'.repeat(MB)} (end of the message)`;

    it('the prompt, the tool message and every event are bounded (default maxErrorChars 2 000); the run answers; under a second', () => {
      const run = hostileRun(new Error(huge));
      const message = expectRunWentOn(run);
      const bound = DEFAULT_REFLECTION_TEMPLATE.length + 2 + 2_000 + CUT_NOTE;
      expect(message.content.length).to.be.at.most(bound);
      expect(message.content).to.match(/^The tool 'get_weather' failed with: "Upstream failed: x{100}/);
      expect(message.content).to.contain('more characters cut]');
      expect(run.reflection!.prompt).to.equal(message.content);
      expect(run.toolError!.error.length).to.be.at.most(2_000 + CUT_NOTE);
      for (const text of exposedTexts(run)) expect(text.length).to.be.at.most(bound);
      expect(run.wallMs).to.be.below(1_000);
    });

    it('maxErrorChars bounds it tighter (100), the exhausted instruction too', () => {
      const tool = (n: number) => hostileRun(new Error(huge), { reflect: { maxErrorChars: 100, maxReflections: n } });
      const reflected = expectRunWentOn(tool(3));
      expect(reflected.content.length).to.be.at.most(DEFAULT_REFLECTION_TEMPLATE.length + 2 + 100 + CUT_NOTE);
      const exhausted = expectRunWentOn(tool(0));
      expect(exhausted.content).to.contain('Do not call it again');
      expect(exhausted.content.length).to.be.at.most(DEFAULT_EXHAUSTED_TEMPLATE.length + 2 + 100 + CUT_NOTE);
    });

    it('1 MB of arguments and a 1 MB message with {args} in the template: both parts capped', () => {
      const run = hostileRun(new Error(huge), {
        args: { city: 'y'.repeat(MB), units: 'celsius' },
        reflect: { template: '{error} / {args}', maxErrorChars: 500 },
      });
      const message = expectRunWentOn(run);
      expect(message.content.length).to.be.at.most(2 + 500 + CUT_NOTE + 3 + 500 + CUT_NOTE);
    });

    it('a 1 MB message of control characters: capped before JSON quoting, so at most 6 characters per kept one', () => {
      const run = hostileRun(new Error('\u0001'.repeat(MB)), { reflect: { maxErrorChars: 100 } });
      const message = expectRunWentOn(run);
      // each kept \u0001 becomes the six characters `\u0001` inside the JSON-quoted error
      expect(message.content.length).to.be.at.most(DEFAULT_REFLECTION_TEMPLATE.length + 2 + 6 * 100 + CUT_NOTE);
      expect(message.content).not.to.contain('\u0001');
    });

    it('a 1 MB transient error (retried, then given up: not reflected) reaches the model bounded too', () => {
      const run = hostileRun(new HttpError(503, {}, huge, { message: huge }), { failures: 2 });
      const content = expectRunWentOn(run).content;
      expect(run.events.some((e) => e.type === 'retry')).to.equal(true);
      expect(run.reflection).to.equal(undefined);
      expect(content).to.match(/^Error: Gave up after 2 attempts: ToolError: Upstream failed: x{100}/);
      for (const text of exposedTexts(run)) expect(text.length).to.be.at.most('Error: '.length + 2_000 + CUT_NOTE);
    });
  });

  describe('placeholders in the error text, the arguments and the tool name are never expanded', () => {
    const message = 'bad {tool_name} {args} {error} {attempt} {max} $& $1 $$ {unknown}';
    const args = { city: '{error} {tool_name} {attempt}', units: '{max} {args}' };
    const template = 'tool={tool_name} error={error} args={args} try={attempt}/{max}';

    it('the tool message is the template filled once: the error and the arguments appear literally', () => {
      const run = hostileRun(new Error(message), { args, reflect: { template } });
      const content = expectRunWentOn(run).content;
      expect(content).to.equal(`tool=get_weather error=${JSON.stringify(message)} args=${JSON.stringify(args)} try=1/3`);
      expect(run.reflection!.prompt).to.equal(content);
      expect(run.toolError!.error).to.equal(message);
    });

    it('the exhausted instruction too', () => {
      const run = hostileRun(new Error(message), { args, reflect: { exhaustedTemplate: template, maxReflections: 0 } });
      expect(expectRunWentOn(run).content).to.equal(`tool=get_weather error=${JSON.stringify(message)} args=${JSON.stringify(args)} try=1/0`);
    });

    it('a tool name the model made up, full of placeholders: reflected on (unknown tool), named literally', () => {
      const run = hostileRun(new Error('never thrown'), { toolName: '{error}{args}', reflect: { template } });
      const content = expectRunWentOn(run).content;
      expect(content.startsWith("tool={error}{args} error=\"unknown tool '{error}{args}'; available: 'get_weather'\"")).to.equal(true);
    });
  });

  describe('secrets in the error and in the arguments are redacted wherever the failure is shown', () => {
    const secrets = {
      bearer: 'eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.SIGNATURE',
      sk: 'sk-live0123456789abcdef',
      apiKey: 'AKIASECRET123',
      password: 'hunter2-pw',
      xApiKey: 'XKEY-SECRET-42',
      token: 'TOKSECRET99',
      argKey: 'ARGKEY-SECRET',
      argBearer: 'ARGBEARER123',
      argPassword: 'ARGPASS-secret',
      argSk: 'sk-argsecret12345',
    };
    const errorMessage =
      `401 from https://api.example.com/v1?api_key=${secrets.apiKey}&q=1 (Authorization: Bearer ${secrets.bearer}) ` +
      `key ${secrets.sk}; body {"password":"${secrets.password}","user":"bob"}; x-api-key: ${secrets.xApiKey}; token=${secrets.token}`;
    const args = { city: 'Paris', api_key: secrets.argKey, auth: `Bearer ${secrets.argBearer}`, password: secrets.argPassword, note: `use ${secrets.argSk}` };

    const expectNoSecret = (run: HostileRun): void => {
      for (const text of exposedTexts(run)) for (const [name, secret] of Object.entries(secrets)) expect(text, `${name} leaked`).not.to.contain(secret);
      // what the model receives next, apart from the arguments it sent itself
      const sent = JSON.stringify(run.toolMessage);
      for (const secret of Object.values(secrets)) expect(sent).not.to.contain(secret);
    };

    it('reflected (execute phase, non-transient): tool message, reflection event, tool-error event', () => {
      const run = hostileRun(new Error(errorMessage), { args, reflect: { template: '{error} / {args}' } });
      const content = expectRunWentOn(run).content;
      expectNoSecret(run);
      expect(content).to.contain('[REDACTED]');
      expect(content).to.contain('"city":"Paris"');
      expect(run.toolError!.error).to.contain('[REDACTED]');
    });

    it('not reflected (transient: retried, then reported as a tool error): retry, call-end and tool-error events, tool message', () => {
      const tool = scriptedTool('get_weather', [{ error: new HttpError(503, {}, errorMessage, { message: errorMessage }) }], { idempotent: true });
      const model = scriptedModel('m', [
        [toolCall('c1', 'get_weather', args), finish('tool-calls')],
        [...textDeltas('Sorry, the weather service failed.'), finish()],
      ]);
      let log: ReturnType<typeof record<AgentEvent>> | undefined;
      testScheduler().run(({ flush }) => {
        log = record(
          runAgent({
            model,
            tools: [tool],
            messages: [{ role: 'user', content: 'Weather in Paris?' }],
            toolPipeline: (_call, call$, { hub }) =>
              call$.pipe(retryWithBackoff({ hub, target: 'tool:get_weather', maxRetries: 1, initialBackoffMs: 10, jitter: 'none' }), reflectOnError()),
          }),
        );
        flush();
      });
      const events = log!.events.map(([, e]) => e);
      const toolMessage = model.requests[1]?.messages.find((m): m is ToolMessage => m.role === 'tool');
      const run: HostileRun = {
        completed: log!.completed(),
        error: log!.error(),
        events,
        toolMessage,
        reflection: undefined,
        toolError: events.find((e): e is ToolErrorEvent => e.type === 'tool-error'),
        unhandled: [],
        wallMs: 0,
      };
      expectRunWentOn(run);
      expect(events.some((e) => e.type === 'retry')).to.equal(true);
      expect(toolMessage!.content.startsWith('Error: ')).to.equal(true);
      expectNoSecret(run);
    });

    it('the exhausted instruction redacts them too', () => {
      const run = hostileRun(new Error(errorMessage), { args, reflect: { maxReflections: 0, exhaustedTemplate: '{error} / {args}' } });
      expectRunWentOn(run);
      expectNoSecret(run);
    });

    // BUG (kept failing): sanitizeText's `authorization` rule wants `authorization:` or `=` right
    // after the word (header form). In JSON — tool arguments and HTTP error bodies are rendered as
    // JSON — the key is followed by a quote (`"Authorization":"Basic …"`), so a Basic (or any
    // non-Bearer) credential passes unredacted (src/core/errors/sanitize.ts, SECRETS[0]). Fix: allow an
    // optional closing quote after the key, as the key/value rule does (`["']?\s*[:=]`), and
    // redact the quoted value.
    it('an Authorization value in JSON (tool arguments, error bodies) is redacted', () => {
      const basic = 'Basic dXNlcjpwYXNzd29yZA==';
      const run = hostileRun(new Error(`403: {"headers":{"Authorization":"${basic}"}}`), {
        args: { city: 'Paris', headers: { Authorization: basic } },
        reflect: { template: '{error} / {args}' },
      });
      expectRunWentOn(run);
      for (const text of exposedTexts(run)) expect(text).not.to.contain('dXNlcjpwYXNzd29yZA');
    });

    // BUG (kept failing): the key/value rule starts with `\b`, and `_` is a word character, so a
    // secret key with a prefix — `db_password`, `client_secret`, `refresh_token`,
    // `openai_api_key`, `x_auth_token` — never matches and its value is kept (src/core/errors/sanitize.ts,
    // SECRETS[4]). Fix: match the key names after any non-letter (e.g. `(?<![A-Za-z0-9])` on the
    // whole key, or `(?:\w*[_-])?` before the names).
    it('secret keys with a prefix (db_password, client_secret, refresh_token, openai_api_key) are redacted', () => {
      const values = { db_password: 'DBPASS-1', client_secret: 'CLIENT-SECRET-2', refresh_token: 'REFRESH-3', openai_api_key: 'OPENAI-KEY-4' };
      const run = hostileRun(
        new Error(
          `config rejected: ${Object.entries(values)
            .map(([k, v]) => `${k}=${v}`)
            .join('&')}`,
        ),
        { args: { city: 'Paris', ...values }, reflect: { template: '{error} / {args}' } },
      );
      expectRunWentOn(run);
      for (const text of exposedTexts(run)) for (const v of Object.values(values)) expect(text, v).not.to.contain(v);
    });

    // BUG (kept failing): a JSON string value is matched as `"[^"]*"`, which stops at an escaped
    // quote: `{"password":"ab\"SECRET-TAIL"}` becomes `{"password":"[REDACTED]"SECRET-TAIL"}` —
    // the tail of the secret is kept (src/core/errors/sanitize.ts, SECRETS[4]). Fix: match JSON strings
    // with escapes, `"(?:[^"\\]|\\.)*"`.
    it('a secret JSON value containing an escaped quote is redacted whole', () => {
      const run = hostileRun(new Error('denied'), { args: { city: 'Paris', password: 'ab"SECRET-TAIL' }, reflect: { template: '{args}' } });
      const content = expectRunWentOn(run).content;
      expect(content).not.to.contain('SECRET-TAIL');
    });

    // BUG (kept failing): bad arguments are reported as `path: expected T, got <value>`
    // (src/core/errors/options.ts formatProblem, via callTool). For a secret-named field the key/value
    // rule then redacts the word after the colon — `password: [REDACTED] number, got "…"` — and
    // keeps the rejected value, the secret itself, in the reflection prompt, the tool message and
    // the tool-error event. Fix: render validation problems as `path: got <value>, expected T`
    // or redact `got <value>` when the path names a secret (or never echo string values of
    // secret-named paths).
    it('a secret the model put in a field of the wrong type is not echoed by the validation problem', () => {
      const run = hostileRun(new Error('never thrown'), {
        args: { city: 'Paris', password: 'PLAIN-SECRET-PW' },
        codec: t.type({ city: t.string, password: t.number }),
        reflect: { template: '{error} / {args}' },
      });
      expectRunWentOn(run);
      for (const text of exposedTexts(run)) expect(text).not.to.contain('PLAIN-SECRET-PW');
    });
  });

  describe('things that are not errors, and errors that fight back: a bounded, readable prompt; the run goes on', () => {
    const cyclic: Record<string, unknown> = { name: 'cyclic' };
    cyclic['self'] = cyclic;
    const throwingGetters = new Error('hidden');
    Object.defineProperty(throwingGetters, 'message', {
      get() {
        throw new Error('message getter');
      },
    });
    Object.defineProperty(throwingGetters, 'name', {
      get() {
        throw new Error('name getter');
      },
    });
    Object.defineProperty(throwingGetters, 'cause', {
      get() {
        throw new Error('cause getter');
      },
    });
    const hostileProxy = new Proxy(
      {},
      {
        get: () => {
          throw new Error('get trap');
        },
        getPrototypeOf: () => {
          throw new Error('getPrototypeOf trap');
        },
        has: () => {
          throw new Error('has trap');
        },
        ownKeys: () => {
          throw new Error('ownKeys trap');
        },
        getOwnPropertyDescriptor: () => {
          throw new Error('getOwnPropertyDescriptor trap');
        },
      },
    );
    const cyclicCause = new Error('outer');
    (cyclicCause as { cause?: unknown }).cause = cyclicCause;
    // what was thrown, and what the prompt's error part says
    const throwables: [string, unknown, string][] = [
      ['a string', 'the weather backend said no', '"the weather backend said no"'],
      ['a 1 MB string', 's'.repeat(MB), '"sssss'],
      ['a number', 42, '"42"'],
      ['null', null, '"null"'],
      ['undefined', undefined, '"undefined"'],
      ['a plain object', { code: 'E_WEATHER', detail: 'no such city' }, '"{\\"code\\":\\"E_WEATHER\\"'],
      ['a symbol', Symbol('boom'), '"Symbol(boom)"'],
      ['a bigint', 10n, '"10n"'],
      ['a function', function weatherFailed() {}, '"function weatherFailed"'],
      ['a cyclic object', cyclic, '"[object Object]"'],
      [
        'an object whose toJSON throws',
        {
          toJSON: () => {
            throw new Error('toJSON');
          },
        },
        '"[object Object]"',
      ],
      ['an object with a 1 MB toJSON', { toJSON: () => 'j'.repeat(MB) }, '"\\"jjjj'],
      ['an Error whose message, name and cause getters throw', throwingGetters, '"unknown error"'],
      ['a Proxy whose every trap throws', hostileProxy, '"unknown error"'],
      ['an Error that is its own cause', cyclicCause, '"outer"'],
      ['a frozen Error', Object.freeze(new Error('frozen')), '"frozen"'],
      ['an Error with an empty message', new Error(''), '"Error"'],
    ];
    for (const [label, thrown, shown] of throwables) {
      it(`${label} → ${shown}`, () => {
        const run = hostileRun(thrown);
        const content = expectRunWentOn(run).content;
        expect(content).to.contain(`failed with: ${shown}`);
        expect(content.length).to.be.at.most(DEFAULT_REFLECTION_TEMPLATE.length + 2 + 2_000 + CUT_NOTE);
        expect(content).to.match(/^The tool 'get_weather' failed with: "[^"]/);
        for (const text of exposedTexts(run)) expect(text.length).to.be.at.most(DEFAULT_REFLECTION_TEMPLATE.length + 2 + 2_000 + CUT_NOTE);
      });
    }

    // BUG (kept failing): errorText (src/core/errors/sanitize.ts) takes `error.message || error.name`
    // for an Error without checking it is a string, then calls `.replace` on it outside its
    // try/catch. An Error whose `message` is a number or an object (some libraries set one) makes
    // errorText throw a TypeError — inside callTool's error callback (src/sources/tool.ts), where
    // RxJS can only report it as unhandled: the tool call never settles and the run hangs (here:
    // no completion, no error, the TypeError reported to config.onUnhandledError). Fix: in
    // errorText, use the message only when it is a string (else showValue it), inside the try.
    it('an Error whose message is not a string (a number, an object)', () => {
      for (const message of [404, { code: 'E_WEATHER' }]) {
        const error = new Error('placeholder');
        Object.defineProperty(error, 'message', { value: message });
        const run = hostileRun(error);
        const content = expectRunWentOn(run).content;
        expect(content).to.match(/^The tool 'get_weather' failed with: "[^"]/);
      }
    });
  });
});
