import { expect } from 'chai';
import * as t from 'io-ts';
import { of, throwError, VirtualTimeScheduler, type Observable, type OperatorFunction } from 'rxjs';
import { BudgetExceededError, CircuitOpenError, HttpError, InvalidOptionError, ToolError, type ToolPhase } from '../../src/core/errors/errors.js';
import {
  DEFAULT_EXHAUSTED_TEMPLATE,
  DEFAULT_REFLECTION_TEMPLATE,
  Reflection,
  reflectOnError,
  shouldReflectByDefault,
  type ReflectOnErrorOptions,
} from '../../src/operators/reflectOnError.js';
import { bindToRun, isFatal, RunScope } from '../../src/core/rx/runScope.js';
import { callTool, defineTool } from '../../src/sources/tool.js';
import { Boom, expectThrowDownstream, failingSource, KINDS, thrower } from '../support/guards.js';
import { testScheduler } from '../support/marbles.js';

interface ToolErrorFields {
  toolName?: string;
  callId?: string;
  args?: unknown;
  phase?: ToolPhase;
  idempotent?: boolean;
  message?: string;
  cause?: unknown;
}

function toolError(fields: ToolErrorFields = {}): ToolError {
  return new ToolError({
    toolName: fields.toolName ?? 'get_weather',
    callId: fields.callId ?? 'call_1',
    args: 'args' in fields ? fields.args : { city: 'nyc', units: 'kelvin' },
    phase: fields.phase ?? 'validate',
    idempotent: fields.idempotent ?? true,
    message: fields.message ?? 'Invalid units. Supported: celsius, fahrenheit',
    cause: fields.cause,
  });
}

/** An execute-phase ToolError whose cause is `cause`. */
const executeError = (cause: unknown, toolName = 'get_weather'): ToolError =>
  toolError({ toolName, phase: 'execute', message: cause instanceof Error ? cause.message : String(cause), cause });

/** Runs `source` through `operator` synchronously; returns what came out. */
function outcome<T>(source: Observable<T>, operator: OperatorFunction<T, unknown>) {
  const values: unknown[] = [];
  let error: unknown;
  let completed = false;
  operator(source).subscribe({ next: (v) => values.push(v), error: (e: unknown) => (error = e), complete: () => (completed = true) });
  return { values, error, completed };
}

/** The single Reflection produced for `error`. */
function reflect(error: unknown, operator: OperatorFunction<never, unknown>): Reflection {
  const r = outcome(throwError(() => error) as Observable<never>, operator);
  expect(r.error, 'expected a reflection, got an error').to.equal(undefined);
  expect(r.values).to.have.length(1);
  expect(r.completed).to.equal(true);
  const value = r.values[0];
  expect(value).to.be.instanceOf(Reflection);
  return value as Reflection;
}

/** What comes out for `error`: the error passed through (asserted to be the same object). */
function passesThrough(error: unknown, operator: OperatorFunction<never, unknown>): void {
  const r = outcome(throwError(() => error) as Observable<never>, operator);
  expect(r.values).to.deep.equal([]);
  expect(r.error).to.equal(error);
}

function expectInvalid(options: unknown, option: string): InvalidOptionError {
  let caught: unknown;
  try {
    reflectOnError(options as ReflectOnErrorOptions);
  } catch (e) {
    caught = e;
  }
  expect(caught, `expected InvalidOptionError for ${JSON.stringify(options)}`).to.be.instanceOf(InvalidOptionError);
  const error = caught as InvalidOptionError;
  expect(error.target).to.equal('reflectOnError');
  expect(error.option).to.equal(option);
  return error;
}

describe('reflectOnError', () => {
  describe('the prompt', () => {
    it('default template: the reference text with the error JSON-quoted', () => {
      expect(DEFAULT_REFLECTION_TEMPLATE).to.equal("The tool '{tool_name}' failed with: {error}. Analyze what went wrong and provide corrected arguments.");
      const error = executeError(new Error('Invalid units. Supported: celsius, fahrenheit'));
      const r = reflect(error, reflectOnError());
      expect(r.prompt).to.equal(
        'The tool \'get_weather\' failed with: "Invalid units. Supported: celsius, fahrenheit". Analyze what went wrong and provide corrected arguments.',
      );
      expect(r.toolName).to.equal('get_weather');
      expect(r.callId).to.equal('call_1');
      expect(r.attempt).to.equal(1);
      expect(r.max).to.equal(3);
      expect(r.exhausted).to.equal(false);
      expect(r.error).to.equal(error);
    });

    it('reflects on a real callTool decode failure, quoting its problem text', () => {
      const weather = defineTool({
        name: 'get_weather',
        description: 'Current weather',
        args: t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) }),
        execute: () => [{ temperature: 22 }],
      });
      const r = reflect(null, () => callTool(weather, { id: 'call_1', name: 'get_weather', args: { city: 'nyc', units: 'kelvin' } }).pipe(reflectOnError()));
      expect(r.prompt).to.equal(
        'The tool \'get_weather\' failed with: "units: expected \\"celsius\\" | \\"fahrenheit\\", got \\"kelvin\\"". ' +
          'Analyze what went wrong and provide corrected arguments.',
      );
      expect(r.error.phase).to.equal('validate');
      expect(r.callId).to.equal('call_1');
    });

    it('JSON-escapes quotes and newlines in the error', () => {
      const r = reflect(toolError({ message: 'bad "units"\nline 2' }), reflectOnError({ template: '{error}' }));
      expect(r.prompt).to.equal('"bad \\"units\\"\\nline 2"');
    });

    it('emits the reflection where the error was, then completes (marbles)', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const error = toolError();
        const result = cold('--#', undefined, error).pipe(reflectOnError({ template: '{tool_name}:{attempt}/{max}' }));
        const expected = new Reflection('get_weather', 'call_1', 1, 3, false, 'get_weather:1/3', error);
        expectObservable(result).toBe('--(r|)', { r: expected });
      });
    });

    it('custom template: every placeholder', () => {
      const r = reflect(
        toolError({ args: { city: 'nyc', units: 'kelvin' } }),
        reflectOnError({ template: 'tool={tool_name} error={error} args={args} attempt={attempt} max={max}', maxReflections: 5 }),
      );
      expect(r.prompt).to.equal('tool=get_weather error="Invalid units. Supported: celsius, fahrenheit" args={"city":"nyc","units":"kelvin"} attempt=1 max=5');
    });

    it('fills a placeholder used twice, and leaves unknown braces alone', () => {
      const r = reflect(toolError(), reflectOnError({ template: '{tool_name}/{tool_name} {unknown} {TOOL_NAME}' }));
      expect(r.prompt).to.equal('get_weather/get_weather {unknown} {TOOL_NAME}');
    });

    it('never expands placeholders that appear inside the error text or the arguments', () => {
      const error = toolError({ message: 'use {tool_name} {args} {max}', args: { q: '{error} {attempt} {tool_name}' } });
      const r = reflect(error, reflectOnError({ template: '{tool_name}|{error}|{args}|{attempt}|{max}' }));
      expect(r.prompt).to.equal('get_weather|"use {tool_name} {args} {max}"|{"q":"{error} {attempt} {tool_name}"}|1|3');
    });

    it('never expands placeholders in a tool name either', () => {
      const r = reflect(toolError({ toolName: '{error}' }), reflectOnError({ template: '[{tool_name}] {error}' }));
      expect(r.prompt).to.equal('[{error}] "Invalid units. Supported: celsius, fahrenheit"');
    });

    it('renders args that are not JSON-serialisable without throwing', () => {
      const cyclic: Record<string, unknown> = {};
      cyclic['self'] = cyclic;
      expect(reflect(toolError({ args: cyclic }), reflectOnError({ template: '{args}' })).prompt).to.equal('[object Object]');
      expect(reflect(toolError({ args: undefined }), reflectOnError({ template: '{args}' })).prompt).to.equal('undefined');
    });

    it('caps the error text at maxErrorChars (default 2 000)', () => {
      const long = 'e'.repeat(2100);
      expect(reflect(toolError({ message: long }), reflectOnError({ template: '{error}' })).prompt).to.equal(
        JSON.stringify(`${'e'.repeat(2000)}… [100 more characters cut]`),
      );
      expect(reflect(toolError({ message: '0123456789abc' }), reflectOnError({ template: '{error}', maxErrorChars: 10 })).prompt).to.equal(
        '"0123456789… [3 more characters cut]"',
      );
    });

    it('caps the arguments too', () => {
      const r = reflect(toolError({ args: { q: 'x'.repeat(50) } }), reflectOnError({ template: '{args}', maxErrorChars: 10 }));
      expect(r.prompt).to.equal('{"q":"xxxx… [48 more characters cut]');
    });

    it('redacts secrets in the error text and in the arguments', () => {
      const error = toolError({
        message: 'denied for api_key=abc123def with Authorization: Bearer eyJhbGci',
        args: { header: 'Bearer tok123', key: 'sk-abcdef123456', url: 'https://x.io?token=t0k&city=nyc' },
      });
      const r = reflect(error, reflectOnError({ template: '{error} / {args}' }));
      expect(r.prompt).to.equal(
        '"denied for api_key=[REDACTED] with Authorization: [REDACTED]" / ' +
          '{"header":"Bearer [REDACTED]","key":"sk-[REDACTED]","url":"https://x.io?token=[REDACTED]&city=nyc"}',
      );
      expect(r.prompt).not.to.contain('abc123def');
      expect(r.prompt).not.to.contain('eyJhbGci');
      expect(r.prompt).not.to.contain('tok123');
    });
  });

  describe('counting (maxReflections, per tool)', () => {
    it('reflects up to maxReflections times, then gives the exhausted instruction', () => {
      const operator = reflectOnError({ maxReflections: 2 });
      const error = toolError();
      const first = reflect(error, operator);
      const second = reflect(error, operator);
      const third = reflect(error, operator);
      expect([first.attempt, second.attempt, third.attempt]).to.deep.equal([1, 2, 3]);
      expect([first.exhausted, second.exhausted, third.exhausted]).to.deep.equal([false, false, true]);
      expect(third.max).to.equal(2);
      expect(DEFAULT_EXHAUSTED_TEMPLATE).to.equal(
        "The tool '{tool_name}' has failed {attempt} times in a row (last error: {error}). Do not call it again. " +
          'Tell the user it is unavailable right now and continue without it.',
      );
      expect(third.prompt).to.equal(
        'The tool \'get_weather\' has failed 3 times in a row (last error: "Invalid units. Supported: celsius, fahrenheit"). ' +
          'Do not call it again. Tell the user it is unavailable right now and continue without it.',
      );
    });

    it('defaults maxReflections to 3', () => {
      const operator = reflectOnError();
      const attempts = [1, 2, 3, 4].map(() => reflect(toolError(), operator));
      expect(attempts.map((r) => r.exhausted)).to.deep.equal([false, false, false, true]);
      expect(attempts.map((r) => r.max)).to.deep.equal([3, 3, 3, 3]);
    });

    it('maxReflections 0: the first failure is already exhausted', () => {
      const r = reflect(toolError(), reflectOnError({ maxReflections: 0 }));
      expect(r.exhausted).to.equal(true);
      expect(r.attempt).to.equal(1);
    });

    it('uses a custom exhaustedTemplate with the same placeholders', () => {
      const operator = reflectOnError({ maxReflections: 0, exhaustedTemplate: 'stop {tool_name} after {attempt}/{max}: {error} {args}' });
      expect(reflect(toolError({ args: { a: 1 } }), operator).prompt).to.equal(
        'stop get_weather after 1/0: "Invalid units. Supported: celsius, fahrenheit" {"a":1}',
      );
    });

    it('counts each tool separately', () => {
      const operator = reflectOnError({ maxReflections: 1 });
      const a1 = reflect(toolError({ toolName: 'a' }), operator);
      const b1 = reflect(toolError({ toolName: 'b' }), operator);
      const a2 = reflect(toolError({ toolName: 'a' }), operator);
      const b2 = reflect(toolError({ toolName: 'b' }), operator);
      expect([a1, b1, a2, b2].map((r) => `${r.toolName}#${r.attempt}${r.exhausted ? '!' : ''}`)).to.deep.equal(['a#1', 'b#1', 'a#2!', 'b#2!']);
    });

    it("without a run scope, the operator instance's own count is used (shared by its subscriptions, not by other instances)", () => {
      const shared = reflectOnError({ maxReflections: 5 });
      const other = reflectOnError({ maxReflections: 5 });
      expect(reflect(toolError(), shared).attempt).to.equal(1);
      expect(reflect(toolError(), shared).attempt).to.equal(2);
      expect(reflect(toolError(), other).attempt).to.equal(1);
      expect(reflect(toolError(), shared).attempt).to.equal(3);
    });

    it('with a run scope, counts in the scope; a success of the tool starts the count over', () => {
      const operator = reflectOnError({ maxReflections: 5 });
      const scope = new RunScope();
      const scoped = (): ToolError => {
        const e = toolError();
        bindToRun(e, scope);
        return e;
      };
      expect(reflect(scoped(), operator).attempt).to.equal(1);
      expect(reflect(scoped(), operator).attempt).to.equal(2);
      expect(scope.toolFailures.get('get_weather')).to.equal(2);
      // another run with the same operator counts on its own
      const otherScope = new RunScope();
      const otherError = toolError();
      bindToRun(otherError, otherScope);
      expect(reflect(otherError, operator).attempt).to.equal(1);
      scope.toolSucceeded('get_weather');
      expect(reflect(scoped(), operator).attempt).to.equal(1);
    });

    it('countAcrossRuns: counts across scopes, and a success in a run resets it', () => {
      const operator = reflectOnError({ maxReflections: 5, countAcrossRuns: true });
      const inScope = (scope: RunScope): ToolError => {
        const e = toolError();
        bindToRun(e, scope);
        return e;
      };
      const run1 = new RunScope();
      const run2 = new RunScope();
      expect(reflect(inScope(run1), operator).attempt).to.equal(1);
      expect(reflect(inScope(run2), operator).attempt).to.equal(2);
      expect(run1.toolFailures.size).to.equal(0);
      run2.toolSucceeded('get_weather');
      expect(reflect(inScope(run1), operator).attempt).to.equal(1);
    });

    it("onExhausted 'error': past the limit, errors with the same ToolError, marked fatal", () => {
      const operator = reflectOnError({ maxReflections: 1, onExhausted: 'error' });
      const first = toolError();
      expect(reflect(first, operator).attempt).to.equal(1);
      expect(isFatal(first)).to.equal(false);
      const second = toolError();
      const r = outcome(throwError(() => second) as Observable<never>, operator);
      expect(r.values).to.deep.equal([]);
      expect(r.error).to.equal(second);
      expect(isFatal(second)).to.equal(true);
    });

    it("onExhausted 'error' in virtual time: the error passes at the same frame", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const error = toolError();
        expectObservable(cold('-a-#', { a: 1 }, error).pipe(reflectOnError({ maxReflections: 0, onExhausted: 'error' }))).toBe('-a-#', { a: 1 }, error);
      });
    });
  });

  describe('which errors are reflected on', () => {
    it('includeTools: only those tools; others pass through unchanged', () => {
      const operator = reflectOnError({ includeTools: ['get_weather'] });
      expect(reflect(toolError(), operator).toolName).to.equal('get_weather');
      passesThrough(toolError({ toolName: 'send_email' }), operator);
    });

    it('excludeTools: never those tools', () => {
      const operator = reflectOnError({ excludeTools: ['send_email'] });
      passesThrough(toolError({ toolName: 'send_email' }), operator);
      expect(reflect(toolError(), operator).toolName).to.equal('get_weather');
    });

    it('an excluded or non-included failure does not count', () => {
      const operator = reflectOnError({ includeTools: ['a'], maxReflections: 5 });
      passesThrough(toolError({ toolName: 'b' }), operator);
      expect(reflect(toolError({ toolName: 'a' }), operator).attempt).to.equal(1);
    });

    it('includeTools and excludeTools that overlap → InvalidOptionError', () => {
      const e = expectInvalid({ includeTools: ['a', 'b'], excludeTools: ['b', 'c'] }, 'excludeTools');
      expect(e.value).to.deep.equal(['b']);
      expect(() => reflectOnError({ includeTools: ['a'], excludeTools: ['b'] })).not.to.throw();
    });

    describe('default shouldReflect', () => {
      it('reflects on validate-phase errors', () => {
        expect(reflect(toolError({ phase: 'validate' }), reflectOnError()).attempt).to.equal(1);
      });

      it('passes execute-phase errors with a transient cause through unchanged (retryWithBackoff’s job)', () => {
        const transient = [
          new HttpError(503),
          new HttpError(429),
          Object.assign(new Error('took too long'), { name: 'TimeoutError' }),
          new Error('Request timed out'),
          Object.assign(new Error('socket closed'), { code: 'ECONNRESET' }),
        ];
        for (const cause of transient) {
          const operator = reflectOnError();
          passesThrough(executeError(cause), operator);
          expect(shouldReflectByDefault(executeError(cause)), String(cause)).to.equal(false);
        }
      });

      it('reflects on execute-phase errors with a non-transient cause (plain Error, 400)', () => {
        expect(reflect(executeError(new Error('Invalid units. Supported: celsius, fahrenheit')), reflectOnError()).attempt).to.equal(1);
        expect(reflect(executeError(new HttpError(400)), reflectOnError()).attempt).to.equal(1);
        expect(reflect(executeError('a thrown string'), reflectOnError()).attempt).to.equal(1);
      });

      it('never reflects on CircuitOpenError, AbortError or BudgetExceededError causes', () => {
        for (const cause of [
          new CircuitOpenError('tool:get_weather', 30000),
          new DOMException('The consumer unsubscribed', 'AbortError'),
          new BudgetExceededError('tokens', 100, 120),
        ]) {
          passesThrough(executeError(cause), reflectOnError());
          expect(shouldReflectByDefault(executeError(cause)), String(cause)).to.equal(false);
        }
      });

      it('uses the classifier option', () => {
        const operator = reflectOnError({ classifier: () => ({ retryable: true, fallback: true, category: 'rate_limit', strategy: 'exponential_backoff' }) });
        passesThrough(executeError(new Error('plain')), operator);
        // validate-phase errors are reflected on whatever the classifier says
        expect(reflect(toolError({ phase: 'validate' }), operator).attempt).to.equal(1);
      });
    });

    it('custom shouldReflect decides, and receives the ToolError', () => {
      const seen: ToolError[] = [];
      const operator = reflectOnError({ shouldReflect: (e) => (seen.push(e), e.toolName === 'yes') });
      const yes = executeError(new HttpError(503), 'yes');
      const no = toolError({ toolName: 'no', phase: 'validate' });
      expect(reflect(yes, operator).toolName).to.equal('yes');
      passesThrough(no, operator);
      expect(seen).to.have.length(2);
      expect(seen[0]).to.equal(yes);
      expect(seen[1]).to.equal(no);
    });

    it('a throwing shouldReflect errors with what it threw', () => {
      const bug = new Error('predicate bug');
      const r = outcome(
        throwError(() => toolError()) as Observable<never>,
        reflectOnError({
          shouldReflect: () => {
            throw bug;
          },
        }),
      );
      expect(r.error).to.equal(bug);
      expect(r.values).to.deep.equal([]);
    });

    it('passes errors that are not ToolErrors through unchanged', () => {
      for (const error of [
        new Error('plain'),
        new HttpError(400),
        'a string',
        { message: 'ToolError-looking', name: 'ToolError', toolName: 'x', phase: 'validate' },
      ]) {
        passesThrough(error, reflectOnError());
      }
      testScheduler().run(({ cold, expectObservable }) => {
        const plain = new Error('plain');
        expectObservable(cold('--#', undefined, plain).pipe(reflectOnError())).toBe('--#', undefined, plain);
      });
    });
  });

  it('passes values through untouched', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-a-b-c|', { a: 1, b: 2, c: 3 });
      expectObservable(source.pipe(reflectOnError())).toBe('-a-b-c|', { a: 1, b: 2, c: 3 });
      expectSubscriptions(source.subscriptions).toBe('^-----!');
    });
    expect(outcome(of('x'), reflectOnError()).values).to.deep.equal(['x']);
  });

  describe('option validation (at creation, never at subscription)', () => {
    it('rejects an empty template or exhaustedTemplate', () => {
      expectInvalid({ template: '' }, 'template');
      expectInvalid({ exhaustedTemplate: '' }, 'exhaustedTemplate');
      expectInvalid({ template: 3 }, 'template');
    });

    it('rejects a negative or fractional maxReflections', () => {
      const e = expectInvalid({ maxReflections: -1 }, 'maxReflections');
      expect(e.message).to.equal('reflectOnError: option "maxReflections" must be a non-negative integer, got -1');
      expectInvalid({ maxReflections: 1.5 }, 'maxReflections');
    });

    it("rejects onExhausted other than 'instruct' | 'error'", () => {
      const e = expectInvalid({ onExhausted: 'stop' }, 'onExhausted');
      expect(e.message).to.equal('reflectOnError: option "onExhausted" must be "instruct" | "error", got "stop"');
    });

    it('rejects bad includeTools / excludeTools / shouldReflect / maxErrorChars / countAcrossRuns / classifier', () => {
      expectInvalid({ includeTools: 'get_weather' }, 'includeTools');
      expectInvalid({ excludeTools: [1] }, 'excludeTools');
      expectInvalid({ shouldReflect: true }, 'shouldReflect');
      expectInvalid({ maxErrorChars: 0 }, 'maxErrorChars');
      expectInvalid({ countAcrossRuns: 'yes' }, 'countAcrossRuns');
      expectInvalid({ classifier: {} }, 'classifier');
    });

    it('rejects an unknown key, naming it', () => {
      const e = expectInvalid({ maxReflection: 3 }, 'maxReflection');
      expect(e.message).to.contain('one of the known options');
    });

    it('accepts no options, and undefined values as defaults', () => {
      expect(() => reflectOnError()).not.to.throw();
      expect(() => reflectOnError({ maxReflections: undefined, template: undefined })).not.to.throw();
    });
  });
});

describe('reflectOnError: a user callback that throws (the guard rule)', () => {
  const failed = (args: unknown = { city: 'NYC' }): ToolError =>
    new ToolError({ toolName: 'get_weather', callId: 'c1', args, phase: 'execute', idempotent: true, message: 'bad units', cause: new HttpError(400) });
  /** Arguments whose every rendering throws: `toJSON`, `toString` and `Symbol.toPrimitive`. */
  const hostileArgs = (boom: Boom): unknown => ({ toJSON: thrower(boom), toString: thrower(boom), [Symbol.toPrimitive]: thrower(boom) });
  const cases: [string, (boom: Boom) => { options: ReflectOnErrorOptions; error: ToolError }][] = [
    ['shouldReflect', (boom) => ({ options: { shouldReflect: thrower(boom) }, error: failed() })],
    ['classifier (read by the default shouldReflect)', (boom) => ({ options: { classifier: thrower(boom) }, error: failed() })],
    ['the template values: arguments that cannot be rendered', (boom) => ({ options: {}, error: failed(hostileArgs(boom)) })],
  ];
  for (const [callback, make] of cases) {
    for (const kind of KINDS) {
      it(`${callback} throws → the error downstream (${kind} source)`, () => {
        const scheduler = new VirtualTimeScheduler();
        const boom = new Boom(callback);
        const { options, error } = make(boom);
        const { source, live, subscriptions } = failingSource(kind, scheduler, error);
        expectThrowDownstream(source.pipe(reflectOnError(options)), boom, { scheduler, live, subscriptions });
      });
    }
  }
});
