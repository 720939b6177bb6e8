import { expect } from 'chai';
import * as t from 'io-ts';
import { NEVER, Observable, of, Subject, throwError } from 'rxjs';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, InvalidOptionError, RetriesExhaustedError, ToolError } from '../../src/core/errors/errors.js';
import type { ToolCall } from '../../src/core/events/events.js';
import type { AbortContext } from '../../src/core/model/abortable.js';
import { RunScope, runOf } from '../../src/core/rx/runScope.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { callTool, defineTool, toJsonSchema, unknownToolError, type ToolDefinition } from '../../src/sources/tool.js';
import { countControllers } from '../support/abortControllers.js';
import { thrower } from '../support/guards.js';
import { testScheduler } from '../support/marbles.js';

const weatherArgs = t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) });

const call = (args: unknown, id = 'call_1', name = 'get_weather'): ToolCall => ({ id, name, args });

/** Subscribes and collects synchronously-delivered notifications. */
function collect<T>(source: Observable<T>): { values: T[]; error: () => unknown; completed: () => boolean } {
  const values: T[] = [];
  let error: unknown;
  let completed = false;
  source.subscribe({ next: (v) => values.push(v), error: (e: unknown) => (error = e), complete: () => (completed = true) });
  return { values, error: () => error, completed: () => completed };
}

/** Resolves after pending promise callbacks (and the microtasks they queue) have run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function invalidDefinition(patch: Record<string, unknown>): ToolDefinition<unknown, unknown> {
  return {
    name: 'get_weather',
    description: 'Current weather',
    args: t.unknown,
    execute: () => [1],
    ...patch,
  } as unknown as ToolDefinition<unknown, unknown>;
}

function expectInvalidOption(fn: () => unknown, option: string): InvalidOptionError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught, `expected InvalidOptionError for ${option}`).to.be.instanceOf(InvalidOptionError);
  const error = caught as InvalidOptionError;
  expect(error.target).to.equal('defineTool');
  expect(error.option).to.equal(option);
  expect(error.message).to.contain(`option "${option}"`);
  return error;
}

describe('defineTool', () => {
  describe('validates its definition', () => {
    it('rejects a missing, empty or non-string name', () => {
      expectInvalidOption(() => defineTool(invalidDefinition({ name: undefined })), 'name');
      const empty = expectInvalidOption(() => defineTool(invalidDefinition({ name: '' })), 'name');
      expect(empty.value).to.equal('');
      expect(empty.message).to.equal('defineTool: option "name" must be a non-empty string, got ""');
      expectInvalidOption(() => defineTool(invalidDefinition({ name: 42 })), 'name');
    });

    it('rejects a missing or non-string description', () => {
      expectInvalidOption(() => defineTool(invalidDefinition({ description: undefined })), 'description');
      expectInvalidOption(() => defineTool(invalidDefinition({ description: 3 })), 'description');
    });

    it('accepts an empty description', () => {
      expect(defineTool(invalidDefinition({ description: '' })).description).to.equal('');
    });

    it('rejects args that are not an io-ts codec', () => {
      const e = expectInvalidOption(() => defineTool(invalidDefinition({ args: { city: 'string' } })), 'args');
      expect(e.message).to.contain('an io-ts codec');
      expectInvalidOption(() => defineTool(invalidDefinition({ args: undefined })), 'args');
      expectInvalidOption(() => defineTool(invalidDefinition({ args: (u: unknown) => u })), 'args');
    });

    it('rejects an execute that is not a function', () => {
      const e = expectInvalidOption(() => defineTool(invalidDefinition({ execute: 'run' })), 'execute');
      expect(e.value).to.equal('run');
      expect(e.message).to.contain('a function');
      expectInvalidOption(() => defineTool(invalidDefinition({ execute: undefined })), 'execute');
    });

    it('rejects a non-boolean idempotent', () => {
      expectInvalidOption(() => defineTool(invalidDefinition({ idempotent: 'yes' })), 'idempotent');
    });

    it('rejects an unknown key, naming it', () => {
      const e = expectInvalidOption(() => defineTool(invalidDefinition({ retries: 3 })), 'retries');
      expect(e.value).to.equal(3);
      expect(e.message).to.contain('one of the known options');
    });

    it('rejects a definition that is not an object', () => {
      let caught: unknown;
      try {
        defineTool(null as unknown as ToolDefinition<unknown, unknown>);
      } catch (e) {
        caught = e;
      }
      expect(caught).to.be.instanceOf(InvalidOptionError);
      expect((caught as InvalidOptionError).option).to.equal('options');
    });
  });

  it('keeps name, description, args and execute, and defaults idempotent to false', () => {
    const execute = () => [1];
    const tool = defineTool({ name: 'get_weather', description: 'Current weather', args: weatherArgs, execute });
    expect(tool.name).to.equal('get_weather');
    expect(tool.description).to.equal('Current weather');
    expect(tool.args).to.equal(weatherArgs);
    expect(tool.execute).to.equal(execute);
    expect(tool.idempotent).to.equal(false);
    expect(defineTool({ name: 'x', description: '', args: t.unknown, execute, idempotent: true }).idempotent).to.equal(true);
    expect(defineTool({ name: 'x', description: '', args: t.unknown, execute, idempotent: undefined }).idempotent).to.equal(false);
  });

  it('renders parameters with toJsonSchema(args)', () => {
    const tool = defineTool({ name: 'get_weather', description: 'd', args: weatherArgs, execute: () => [1] });
    expect(tool.parameters).to.deep.equal(toJsonSchema(weatherArgs));
    expect(tool.parameters).to.deep.equal({
      type: 'object',
      properties: { city: { type: 'string' }, units: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city', 'units'],
      additionalProperties: false,
    });
  });
});

describe('callTool', () => {
  function weather(execute: ToolDefinition<t.TypeOf<typeof weatherArgs>, unknown>['execute'] = () => [{ temperature: 22 }], idempotent = false) {
    const seen: unknown[] = [];
    const tool = defineTool({
      name: 'get_weather',
      description: 'Current weather',
      args: weatherArgs,
      idempotent,
      execute: (args, context) => {
        seen.push(args);
        return execute(args, context);
      },
    });
    return { tool, seen };
  }

  describe('argument decoding', () => {
    it('decodes the arguments before execute sees them', () => {
      const Trimmed = new t.Type<string, string, unknown>(
        'Trimmed',
        (u): u is string => typeof u === 'string',
        (u, c) => (typeof u === 'string' ? t.success(u.trim()) : t.failure(u, c)),
        t.identity,
      );
      const seen: unknown[] = [];
      const tool = defineTool({ name: 'at', description: '', args: t.exact(t.type({ city: Trimmed })), execute: (args) => (seen.push(args), [args.city]) });
      const r = collect(callTool(tool, call({ city: '  NYC ', extra: true }, 'c', 'at')));
      expect(seen).to.deep.equal([{ city: 'NYC' }]);
      expect(r.values).to.deep.equal(['NYC']);
      expect(r.completed()).to.equal(true);
    });

    it('a bad field is a validate-phase ToolError naming the field, what was expected and what came; execute never runs', () => {
      const { tool, seen } = weather();
      const r = collect(callTool(tool, call({ city: 'nyc', units: 'kelvin' })));
      expect(seen).to.deep.equal([]);
      expect(r.values).to.deep.equal([]);
      const error = r.error() as ToolError;
      expect(error).to.be.instanceOf(ToolError);
      expect(error.name).to.equal('ToolError');
      expect(error.phase).to.equal('validate');
      expect(error.message).to.equal('units: expected "celsius" | "fahrenheit", got "kelvin"');
      expect(error.toolName).to.equal('get_weather');
      expect(error.callId).to.equal('call_1');
      expect(error.args).to.deep.equal({ city: 'nyc', units: 'kelvin' });
      expect(error.idempotent).to.equal(false);
      expect(error.cause).to.equal(undefined);
    });

    it('names every bad field, nested ones by dotted path, missing ones as got undefined', () => {
      const args = t.type({ location: t.type({ city: t.string, zip: t.string }), units: t.keyof({ celsius: null, fahrenheit: null }), days: t.number });
      const seen: unknown[] = [];
      const tool = defineTool({ name: 'forecast', description: '', args, execute: (a) => (seen.push(a), [a]) });
      const r = collect(callTool(tool, call({ location: { city: 7, zip: '10001' }, units: 'kelvin' }, 'c2', 'forecast')));
      const error = r.error() as ToolError;
      expect(error.phase).to.equal('validate');
      expect(error.message.split('; ')).to.deep.equal([
        'location.city: expected string, got 7',
        'units: expected "celsius" | "fahrenheit", got "kelvin"',
        'days: expected number, got undefined',
      ]);
      expect(seen).to.deep.equal([]);
    });

    it('reports a missing field as got undefined', () => {
      const { tool } = weather();
      const r = collect(callTool(tool, call({ units: 'celsius' })));
      expect((r.error() as ToolError).message).to.equal('city: expected string, got undefined');
    });

    it('reports non-object arguments against the whole codec', () => {
      for (const bad of ['nyc', null, 42, undefined]) {
        const { tool, seen } = weather();
        const error = collect(callTool(tool, call(bad))).error() as ToolError;
        expect(error.phase).to.equal('validate');
        expect(error.message).to.match(/^expected \{ city: string, units: "celsius" \| "fahrenheit" \}, got /);
        expect(error.message.endsWith(`got ${bad === undefined ? 'undefined' : JSON.stringify(bad)}`)).to.equal(true);
        expect(seen).to.deep.equal([]);
      }
    });

    it('names fields by their own names in an intersection of required and optional fields', () => {
      // t.intersection([t.type, t.partial]) is io-ts's idiom for optional fields: the member index must not leak into the path
      const args = t.intersection([t.type({ city: t.string }), t.partial({ units: t.keyof({ celsius: null, fahrenheit: null }) })]);
      const tool = defineTool({ name: 'get_weather', description: '', args, execute: () => [1] });
      const error = collect(callTool(tool, call({ units: 'kelvin' }))).error() as ToolError;
      expect(error.phase).to.equal('validate');
      expect(error.message).to.equal('city: expected string, got undefined; units: expected "celsius" | "fahrenheit", got "kelvin"');
    });
  });

  describe('execute failures', () => {
    const cases: [string, (boom: unknown) => ToolDefinition<unknown, unknown>['execute']][] = [
      [
        'thrown synchronously',
        (boom) => () => {
          throw boom;
        },
      ],
      ['a rejected promise', (boom) => () => Promise.reject(boom)],
      ['an emitted observable error', (boom) => () => throwError(() => boom)],
    ];
    for (const [label, make] of cases) {
      it(`become an execute-phase ToolError carrying the original as cause: ${label}`, async () => {
        const boom = new Error('Invalid units. Supported: celsius, fahrenheit');
        const tool = defineTool({ name: 'get_weather', description: '', args: t.unknown, idempotent: true, execute: make(boom) });
        const args = { city: 'nyc', units: 'kelvin' };
        const r = collect(callTool(tool, call(args, 'call_9')));
        await settle();
        const error = r.error() as ToolError;
        expect(error).to.be.instanceOf(ToolError);
        expect(error.phase).to.equal('execute');
        expect(error.toolName).to.equal('get_weather');
        expect(error.callId).to.equal('call_9');
        expect(error.args).to.equal(args);
        expect(error.idempotent).to.equal(true);
        expect(error.cause).to.equal(boom);
        expect(error.message).to.equal('Invalid units. Supported: celsius, fahrenheit');
      });
    }

    it('a thrown string becomes the cause and the message', () => {
      const tool = defineTool({
        name: 'get_weather',
        description: '',
        args: t.unknown,
        execute: () => {
          throw 'quota gone';
        },
      });
      const error = collect(callTool(tool, call({}))).error() as ToolError;
      expect(error.phase).to.equal('execute');
      expect(error.cause).to.equal('quota gone');
      expect(error.message).to.equal('quota gone');
      expect(error.idempotent).to.equal(false);
    });

    it('a huge error message is capped early: the ToolError keeps its first 16 000 characters, redacted, and says how many were cut (it sanitised all 32 MiB)', () => {
      const huge = `denied, password=hunter2 ${'x'.repeat(32 * 1024 * 1024)}`;
      const tool = defineTool({
        name: 'dump',
        description: '',
        args: t.unknown,
        execute: () => {
          throw new Error(huge);
        },
      });
      const error = collect(callTool(tool, call({}))).error() as ToolError;
      expect(error.message.startsWith('denied, password=[REDACTED] xxx')).to.equal(true);
      expect(error.message).to.have.length.below(16_100);
      expect(error.message).to.match(/… \[\d+ more characters cut\]$/);
      expect((error.cause as Error).message).to.equal(huge);
    });

    it('values emitted before an error still pass through', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const boom = new Error('mid-way');
        const tool = defineTool({ name: 'x', description: '', args: t.unknown, execute: () => cold('-a-#', { a: 1 }, boom) });
        const expected = new ToolError({ toolName: 'x', callId: 'c', args: null, phase: 'execute', idempotent: false, message: 'mid-way', cause: boom });
        expectObservable(callTool(tool, call(null, 'c', 'x'))).toBe('-a-#', { a: 1 }, expected);
      });
    });
  });

  it('passes values through and completes', async () => {
    const { tool, seen } = weather(async ({ city }) => ({ city, temperature: 22 }));
    const r = collect(callTool(tool, call({ city: 'NYC', units: 'celsius' })));
    await settle();
    expect(seen).to.deep.equal([{ city: 'NYC', units: 'celsius' }]);
    expect(r.values).to.deep.equal([{ city: 'NYC', temperature: 22 }]);
    expect(r.completed()).to.equal(true);
    expect(r.error()).to.equal(undefined);
  });

  it('passes several values through in virtual time', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tool = defineTool({ name: 'x', description: '', args: t.unknown, execute: () => cold('-a--b|', { a: 'x', b: 'y' }) });
      expectObservable(callTool(tool, call(1, 'c', 'x'))).toBe('-a--b|', { a: 'x', b: 'y' });
    });
  });

  it('a string returned by execute is one value, the whole string (not one value per character)', () => {
    testScheduler().run(({ expectObservable }) => {
      const tool = defineTool({ name: 'x', description: '', args: t.unknown, execute: () => 'Sunny in Paris' });
      expectObservable(callTool(tool, call(1, 'c', 'x'))).toBe('(a|)', { a: 'Sunny in Paris' });
    });
  });

  it('is cold: nothing runs until subscribe, and each subscription runs again', () => {
    let decodes = 0;
    const counting = new t.Type<unknown, unknown, unknown>(
      'counting',
      (_u): _u is unknown => true,
      (u) => (decodes++, t.success(u)),
      t.identity,
    );
    let runs = 0;
    const tool = defineTool({ name: 'x', description: '', args: counting, execute: () => (runs++, of(runs)) });
    const call$ = callTool(tool, call({}, 'c', 'x'));
    expect(runs).to.equal(0);
    expect(decodes).to.equal(0);
    expect(collect(call$).values).to.deep.equal([1]);
    expect(collect(call$).values).to.deep.equal([2]);
    expect(runs).to.equal(2);
    expect(decodes).to.equal(2);
  });

  describe('cancellation', () => {
    it('unsubscribing before completion aborts the signal with an AbortError DOMException', () => {
      let signal: AbortSignal | undefined;
      const tool = defineTool({ name: 'x', description: '', args: t.unknown, execute: (_a, context) => ((signal = context.signal), NEVER) });
      const subscription = callTool(tool, call({}, 'c', 'x')).subscribe();
      expect(signal?.aborted).to.equal(false);
      subscription.unsubscribe();
      expect(signal?.aborted).to.equal(true);
      expect(signal?.reason).to.be.instanceOf(DOMException);
      expect((signal?.reason as DOMException).name).to.equal('AbortError');
    });

    it('does not abort after completion', async () => {
      let signal: AbortSignal | undefined;
      const tool = defineTool({ name: 'x', description: '', args: t.unknown, execute: async (_a, context) => ((signal = context.signal), 'done') });
      const r: string[] = [];
      const subscription = callTool(tool, call({}, 'c', 'x')).subscribe((v) => r.push(v));
      await settle();
      expect(r).to.deep.equal(['done']);
      subscription.unsubscribe();
      expect(signal?.aborted).to.equal(false);
    });

    it('does not abort after an error', () => {
      let signal: AbortSignal | undefined;
      const failures = new Subject<never>();
      const tool = defineTool({ name: 'x', description: '', args: t.unknown, execute: (_a, context) => ((signal = context.signal), failures) });
      const subscription = callTool(tool, call({}, 'c', 'x')).subscribe({ error: () => undefined });
      failures.error(new Error('boom'));
      subscription.unsubscribe();
      expect(signal?.aborted).to.equal(false);
    });

    it('creates the AbortController lazily: a tool that never reads signal works and constructs none', () => {
      const Original = globalThis.AbortController;
      const quiet = countControllers(() => {
        callTool(defineTool({ name: 'quiet', description: '', args: t.unknown, execute: () => NEVER }), call({}, 'c', 'quiet'))
          .subscribe()
          .unsubscribe();
        const done = defineTool({ name: 'done', description: '', args: t.unknown, execute: () => ['ok'] });
        return collect(callTool(done, call({}, 'c', 'done'))).values;
      });
      expect(quiet).to.deep.equal({ result: ['ok'], constructed: 0 });
      let signal: AbortSignal | undefined;
      const reader = defineTool({
        name: 'reader',
        description: '',
        args: t.unknown,
        execute: (_a, context: AbortContext) => ((signal = context.signal), NEVER),
      });
      expect(
        countControllers(() =>
          callTool(reader, call({}, 'c', 'reader'))
            .subscribe()
            .unsubscribe(),
        ).constructed,
      ).to.equal(1);
      expect(signal?.aborted).to.equal(true);
      expect(globalThis.AbortController).to.equal(Original);
    });
  });

  describe('RunScope binding', () => {
    it('binds execute and validate errors to the given scope', () => {
      const scope = new RunScope();
      const failing = defineTool({
        name: 'x',
        description: '',
        args: t.type({ a: t.string }),
        execute: () => {
          throw new Error('boom');
        },
      });
      const execute = collect(callTool(failing, call({ a: 'ok' }, 'c', 'x'), { scope })).error();
      const validate = collect(callTool(failing, call({ a: 1 }, 'c', 'x'), { scope })).error();
      expect((execute as ToolError).phase).to.equal('execute');
      expect((validate as ToolError).phase).to.equal('validate');
      expect(runOf(execute)).to.equal(scope);
      expect(runOf(validate)).to.equal(scope);
      const unscoped = collect(callTool(failing, call({ a: 'ok' }, 'c', 'x'))).error();
      expect(runOf(unscoped)).to.equal(undefined);
    });
  });

  describe('classifyError on ToolError', () => {
    const toolError = (phase: 'validate' | 'execute', idempotent: boolean, cause?: unknown) =>
      new ToolError({ toolName: 't', callId: 'c', args: {}, phase, idempotent, message: 'm', cause });

    it('validate phase: validation_error, not retryable, no fallback', () => {
      expect(classifyError(toolError('validate', true))).to.deep.equal({
        retryable: false,
        fallback: false,
        category: 'validation_error',
        strategy: 'fail_fast',
      });
    });

    it("execute phase of an idempotent tool: the cause's classification", () => {
      expect(classifyError(toolError('execute', true, new HttpError(503)))).to.deep.equal(classifyError(new HttpError(503)));
      expect(classifyError(toolError('execute', true, new HttpError(503))).retryable).to.equal(true);
      expect(classifyError(toolError('execute', true, new HttpError(400))).retryable).to.equal(false);
    });

    it('execute phase of a non-idempotent tool: never retryable, even for a 503; the category is kept', () => {
      const c = classifyError(toolError('execute', false, new HttpError(503)));
      expect(c.retryable).to.equal(false);
      expect(c.category).to.equal('service_unavailable');
      expect(c.fallback).to.equal(true);
      expect(c.strategy).to.equal('fallback');
    });

    it("marks the retry withheld (withheld: 'not_idempotent') on every failure of a non-idempotent tool that ran, whatever the error, saying whether the error itself was worth one", () => {
      expect(classifyError(toolError('execute', false, new HttpError(503)))).to.include({
        retryable: false,
        withheld: 'not_idempotent',
        retryableIfIdempotent: true,
      });
      for (const cause of [new HttpError(400), new Error('seat taken'), new TypeError('x is not a function'), undefined]) {
        expect(classifyError(toolError('execute', false, cause)), String(cause)).to.include({
          retryable: false,
          withheld: 'not_idempotent',
          retryableIfIdempotent: false,
        });
      }
      expect(classifyError(toolError('execute', true, new HttpError(503)))).not.to.have.any.keys('withheld', 'retryableIfIdempotent');
      expect(classifyError(toolError('execute', true, new Error('seat taken')))).not.to.have.any.keys('withheld', 'retryableIfIdempotent');
      expect(classifyError(toolError('validate', false))).not.to.have.any.keys('withheld', 'retryableIfIdempotent');
    });

    it("a real non-idempotent callTool failing with a plain Error, a 400 or a TypeError runs once under retryWithBackoff({ retryOn: 'all' }); an idempotent one is retried", () => {
      for (const failure of [new Error('seat taken'), new HttpError(400), new TypeError('x is not a function')]) {
        const runs = { book_seat: 0, read_seat: 0 };
        const errors: unknown[] = [];
        for (const [name, idempotent] of [
          ['book_seat', false],
          ['read_seat', true],
        ] as const) {
          const tool = defineTool({ name, description: '', args: t.unknown, idempotent, execute: () => (runs[name]++, throwError(() => failure)) });
          testScheduler().run(({ flush }) => {
            callTool(tool, call({}, 'c', name))
              .pipe(retryWithBackoff({ retryOn: 'all', maxRetries: 2, jitter: 'none' }))
              .subscribe({ error: (e: unknown) => errors.push(e) });
            flush();
          });
        }
        expect(runs, String(failure)).to.deep.equal({ book_seat: 1, read_seat: 3 });
        expect(errors[0]).to.be.instanceOf(ToolError).and.to.include({ toolName: 'book_seat', cause: failure });
        expect(errors[1]).to.be.instanceOf(RetriesExhaustedError);
      }
    });

    it('classifies a real callTool failure the same way', () => {
      const send = defineTool({ name: 'send_email', description: '', args: t.unknown, execute: () => throwError(() => new HttpError(503)) });
      const read = defineTool({ name: 'read', description: '', args: t.unknown, idempotent: true, execute: () => throwError(() => new HttpError(503)) });
      expect(classifyError(collect(callTool(send, call({}, 'c', 'send_email'))).error()).retryable).to.equal(false);
      expect(classifyError(collect(callTool(read, call({}, 'c', 'read'))).error()).retryable).to.equal(true);
    });
  });
});

describe('unknownToolError', () => {
  it('is a validate-phase ToolError listing the available tools', () => {
    const scope = new RunScope();
    const e = unknownToolError(call({ q: 1 }, 'c7', 'get_wether'), ['get_weather', 'search'], scope);
    expect(e).to.be.instanceOf(ToolError);
    expect(e.message).to.equal("unknown tool 'get_wether'; available: 'get_weather', 'search'");
    expect(e.phase).to.equal('validate');
    expect(e.toolName).to.equal('get_wether');
    expect(e.callId).to.equal('c7');
    expect(e.args).to.deep.equal({ q: 1 });
    expect(runOf(e)).to.equal(scope);
  });

  it("says 'none' when there are no tools", () => {
    expect(unknownToolError(call({}, 'c', 'x'), []).message).to.equal("unknown tool 'x'; available: none");
  });
});

describe('toJsonSchema', () => {
  it('renders primitives', () => {
    expect(toJsonSchema(t.string)).to.deep.equal({ type: 'string' });
    expect(toJsonSchema(t.number)).to.deep.equal({ type: 'number' });
    expect(toJsonSchema(t.boolean)).to.deep.equal({ type: 'boolean' });
    expect(toJsonSchema(t.null)).to.deep.equal({ type: 'null' });
  });

  it('renders literals and keyof enums', () => {
    expect(toJsonSchema(t.literal('celsius'))).to.deep.equal({ const: 'celsius', type: 'string' });
    expect(toJsonSchema(t.literal(3))).to.deep.equal({ const: 3, type: 'number' });
    expect(toJsonSchema(t.literal(true))).to.deep.equal({ const: true, type: 'boolean' });
    expect(toJsonSchema(t.keyof({ a: null, b: null }))).to.deep.equal({ type: 'string', enum: ['a', 'b'] });
  });

  it('renders arrays', () => {
    expect(toJsonSchema(t.array(t.string))).to.deep.equal({ type: 'array', items: { type: 'string' } });
    expect(toJsonSchema(t.readonlyArray(t.number))).to.deep.equal({ type: 'array', items: { type: 'number' } });
  });

  it('renders t.type with every field required, t.partial with none', () => {
    expect(toJsonSchema(t.type({ city: t.string, days: t.number }))).to.deep.equal({
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'number' } },
      required: ['city', 'days'],
      additionalProperties: false,
    });
    expect(toJsonSchema(t.partial({ units: t.string }))).to.deep.equal({
      type: 'object',
      properties: { units: { type: 'string' } },
      required: [],
      additionalProperties: false,
    });
  });

  it('merges an intersection of t.type and t.partial into one object', () => {
    expect(toJsonSchema(t.intersection([t.type({ city: t.string }), t.partial({ units: t.keyof({ c: null, f: null }) })]))).to.deep.equal({
      type: 'object',
      properties: { city: { type: 'string' }, units: { type: 'string', enum: ['c', 'f'] } },
      required: ['city'],
      additionalProperties: false,
    });
  });

  it('renders other intersections as allOf', () => {
    expect(toJsonSchema(t.intersection([t.type({ a: t.string }), t.string]))).to.deep.equal({
      allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false }, { type: 'string' }],
    });
  });

  it('renders a union of string literals as an enum, other unions as anyOf', () => {
    expect(toJsonSchema(t.union([t.literal('celsius'), t.literal('fahrenheit')]))).to.deep.equal({ type: 'string', enum: ['celsius', 'fahrenheit'] });
    expect(toJsonSchema(t.union([t.string, t.number]))).to.deep.equal({ anyOf: [{ type: 'string' }, { type: 'number' }] });
    expect(toJsonSchema(t.union([t.literal('a'), t.literal(1)]))).to.deep.equal({
      anyOf: [
        { const: 'a', type: 'string' },
        { const: 1, type: 'number' },
      ],
    });
  });

  it('renders refinements, brands, exact and strict types by their base type', () => {
    expect(toJsonSchema(t.Int)).to.deep.equal({ type: 'number' });
    const object = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false };
    expect(toJsonSchema(t.exact(t.type({ a: t.string })))).to.deep.equal(object);
    expect(toJsonSchema(t.strict({ a: t.string }))).to.deep.equal(object);
    expect(toJsonSchema(t.readonly(t.type({ a: t.string })))).to.deep.equal(object);
  });

  it('renders anything else as {} (any)', () => {
    expect(toJsonSchema(t.unknown)).to.deep.equal({});
    expect(toJsonSchema(t.UnknownRecord)).to.deep.equal({});
  });

  it('recurses into nested objects and arrays of objects', () => {
    expect(toJsonSchema(t.type({ stops: t.array(t.type({ city: t.string })) }))).to.deep.equal({
      type: 'object',
      properties: {
        stops: { type: 'array', items: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } },
      },
      required: ['stops'],
      additionalProperties: false,
    });
  });
});

describe('callTool: a signal read late (after an await in execute)', () => {
  it('is aborted when the consumer left during the await', async () => {
    let late: AbortSignal | undefined;
    const tool = defineTool({
      name: 'x',
      description: '',
      args: t.unknown,
      execute: async (_a, context) => {
        await settle();
        late = context.signal;
        return 'done';
      },
    });
    callTool(tool, call({}, 'c', 'x'))
      .subscribe()
      .unsubscribe();
    await settle();
    await settle();
    expect(late?.aborted).to.equal(true);
  });
});

describe('callTool: a user callback that throws (the guard rule)', () => {
  const boom = new Error('tool bug');
  const cases: [string, ToolDefinition<unknown, unknown>, (error: unknown) => void][] = [
    ['execute, synchronously', { name: 'x', description: '', args: t.unknown, execute: thrower(boom) }, (e) => expect((e as ToolError).cause).to.equal(boom)],
    [
      'execute, later (a rejected promise)',
      { name: 'x', description: '', args: t.unknown, execute: () => Promise.reject(boom) },
      (e) => expect((e as ToolError).cause).to.equal(boom),
    ],
    [
      'execute, returning no ObservableInput',
      { name: 'x', description: '', args: t.unknown, execute: () => undefined as never },
      (e) => expect((e as ToolError).cause).to.be.instanceOf(TypeError),
    ],
    [
      'the args codec',
      { name: 'x', description: '', args: new t.Type<unknown>('Hostile', (_u): _u is unknown => true, thrower(boom), t.identity), execute: () => ['ok'] },
      (e) => expect(e).to.equal(boom),
    ],
  ];
  for (const [part, definition, check] of cases) {
    it(`${part} throws → the error downstream`, async () => {
      const errors: unknown[] = [];
      callTool(defineTool(definition), call({}, 'c', 'x')).subscribe({ error: (e: unknown) => errors.push(e) });
      await settle();
      expect(errors).to.have.length(1);
      check(errors[0]);
    });
  }
});
