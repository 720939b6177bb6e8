import { expect } from 'chai';
import * as t from 'io-ts';
import { asyncScheduler, filter, map, NEVER, Observable, Subject, VirtualTimeScheduler } from 'rxjs';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { classifyError } from '../../src/core/errors/classify.js';
import { BudgetExceededError, HttpError, InvalidOptionError, ToolError } from '../../src/core/errors/errors.js';
import type { AgentEvent, DegradedEvent, RestoredEvent, ToolMessage, TurnEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { DEFAULT_REFLECTION_TEMPLATE, reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { validateOutput } from '../../src/operators/validateOutput.js';
import { type AgentConfig, type PipelineContext, runAgent } from '../../src/sources/runAgent.js';
import type { Model } from '../../src/core/model/model.js';
import { anthropicModel } from '../../src/providers/anthropic.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { defineTool } from '../../src/sources/tool.js';
import { describeEvent, finish, reasoning, record, scriptedModel, scriptedTool, textDeltas, toolCall } from '../../src/testing/index.js';
import { Boom, expectThrowDownstream, KINDS, type SourceKind, thrower } from '../support/guards.js';
import { testScheduler } from '../support/marbles.js';

const weatherArgs = t.type({ city: t.string, units: t.string });

/** The reference's weather tool: rejects units other than celsius and fahrenheit. */
function weatherTool() {
  const executions: unknown[] = [];
  const tool = defineTool({
    name: 'get_weather',
    description: 'Current weather for a city',
    args: weatherArgs,
    idempotent: true,
    execute: (args) => {
      executions.push(args);
      if (args.units !== 'celsius' && args.units !== 'fahrenheit') throw new Error('Invalid units. Supported: celsius, fahrenheit');
      return [{ temperature: 22, condition: 'sunny' }];
    },
  });
  return { tool, executions };
}

/** Runs to the end in virtual time; returns the events, the error and whether it completed. */
function run(events$: Observable<AgentEvent>) {
  let result!: ReturnType<typeof record<AgentEvent>>;
  testScheduler().run(({ flush }) => {
    result = record(events$);
    flush();
  });
  const all = result.events.map(([, e]) => describeEvent(e));
  // call-start / call-end (one pair per model call and tool execution) have their own spec below
  return { ...result, all, labels: all.filter((l) => !l.startsWith('call-')) };
}

const lastMessage = (request: { messages: readonly unknown[] } | undefined) => request?.messages[request.messages.length - 1];

describe('runAgent', () => {
  describe('the weather transcript (reflection)', () => {
    it('reflects on the bad call, the model corrects its arguments, and answers', () => {
      const { tool, executions } = weatherTool();
      const model = scriptedModel('fake', [
        [toolCall('call_1', 'get_weather', { city: 'nyc', units: 'kelvin' }), finish('tool-calls')],
        [toolCall('call_2', 'get_weather', { city: 'NYC', units: 'celsius' }), finish('tool-calls')],
        [...textDeltas('It is 22 °C and sunny in NYC.'), finish('stop')],
      ]);
      const result = run(
        runAgent({
          model,
          tools: [tool],
          instruction: 'You are a helpful assistant with access to external APIs.',
          messages: [{ role: 'user', content: "What's the weather in NYC?" }],
          toolPipeline: (_call, call$) => call$.pipe(reflectOnError()),
        }),
      );
      expect(result.error()).to.equal(undefined);
      expect(result.completed()).to.equal(true);
      expect(result.labels).to.deep.equal([
        'tool-call:get_weather',
        'finish:tool-calls',
        'message:assistant',
        'tool-error:get_weather',
        'reflection:get_weather#1/3',
        'message:tool',
        'tool-call:get_weather',
        'finish:tool-calls',
        'message:assistant',
        'tool-result:get_weather',
        'message:tool',
        'text:It',
        'text: is',
        'text: 22',
        'text: °C',
        'text: and',
        'text: sunny',
        'text: in',
        'text: NYC.',
        'finish:stop',
        'message:assistant',
      ]);
      const prompt =
        'The tool \'get_weather\' failed with: "Invalid units. Supported: celsius, fahrenheit". Analyze what went wrong and provide corrected arguments.';
      const reflection = result.events.map(([, e]) => e).find((e) => e.type === 'reflection');
      expect(reflection).to.deep.equal({ type: 'reflection', tool: 'get_weather', callId: 'call_1', attempt: 1, max: 3, exhausted: false, prompt });
      // what the model received
      expect(model.requests).to.have.length(3);
      expect(model.requests[0]!.messages).to.deep.equal([
        { role: 'system', content: 'You are a helpful assistant with access to external APIs.' },
        { role: 'user', content: "What's the weather in NYC?" },
      ]);
      expect(model.requests[0]!.tools.map((s) => s.name)).to.deep.equal(['get_weather']);
      expect(model.requests[1]!.messages.slice(2)).to.deep.equal([
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'get_weather', args: { city: 'nyc', units: 'kelvin' } }] },
        { role: 'tool', toolCallId: 'call_1', toolName: 'get_weather', content: prompt, isError: true },
      ]);
      expect(lastMessage(model.requests[2])).to.deep.equal({
        role: 'tool',
        toolCallId: 'call_2',
        toolName: 'get_weather',
        content: '{"temperature":22,"condition":"sunny"}',
      });
      expect(executions).to.deep.equal([
        { city: 'nyc', units: 'kelvin' },
        { city: 'NYC', units: 'celsius' },
      ]);
      const final = result.events.map(([, e]) => e).at(-1);
      expect(final).to.deep.equal({ type: 'message', message: { role: 'assistant', content: 'It is 22 °C and sunny in NYC.' } });
    });

    it('reports the reflection to the hub (events$), and the run surfaces it once', () => {
      const { tool } = weatherTool();
      const hub = new HealHub();
      const fromHub: string[] = [];
      hub.events$.subscribe((e) => fromHub.push(describeEvent(e)));
      const model = scriptedModel('fake', [
        [toolCall('call_1', 'get_weather', { city: 'nyc', units: 'kelvin' }), finish('tool-calls')],
        [...textDeltas('Sorry.'), finish('stop')],
      ]);
      const result = run(
        runAgent({
          model,
          tools: [tool],
          hub,
          messages: [{ role: 'user', content: 'weather?' }],
          toolPipeline: (_call, call$) => call$.pipe(reflectOnError()),
        }),
      );
      expect(fromHub.filter((l) => l.startsWith('reflection:'))).to.deep.equal(['reflection:get_weather#1/3']);
      expect(result.labels.filter((l) => l.startsWith('reflection:') || l.startsWith('tool-error:'))).to.deep.equal([
        'tool-error:get_weather',
        'reflection:get_weather#1/3',
      ]);
    });

    it('uses the exact default template of the reference', () => {
      expect(DEFAULT_REFLECTION_TEMPLATE).to.equal("The tool '{tool_name}' failed with: {error}. Analyze what went wrong and provide corrected arguments.");
    });

    it('sends a decode failure to the model without executing the tool, naming each bad field', () => {
      const tool = scriptedTool('get_weather', [{ result: 'never' }], {
        args: t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) }),
      });
      const model = scriptedModel('fake', [
        [toolCall('c1', 'get_weather', { units: 'kelvin' }), finish('tool-calls')],
        [...textDeltas('Sorry.'), finish()],
      ]);
      run(runAgent({ model, tools: [tool], messages: [{ role: 'user', content: 'weather?' }], toolPipeline: (_c, call$) => call$.pipe(reflectOnError()) }));
      expect(tool.executions).to.deep.equal([]);
      const content = (lastMessage(model.requests[1]) as ToolMessage).content;
      expect(content).to.contain('city: expected string, got undefined');
      expect(content).to.contain('units: expected \\"celsius\\" | \\"fahrenheit\\", got \\"kelvin\\"');
    });

    it('without reflectOnError, the sanitised error goes back to the model as the tool message', () => {
      const tool = scriptedTool('lookup', [{ error: new Error('denied for api_key=abc123def') }]);
      const model = scriptedModel('fake', [
        [toolCall('c1', 'lookup', {}), finish('tool-calls')],
        [...textDeltas('I could not look it up.'), finish()],
      ]);
      const result = run(runAgent({ model, tools: [tool], messages: [{ role: 'user', content: 'x' }] }));
      expect(lastMessage(model.requests[1])).to.deep.equal({
        role: 'tool',
        toolCallId: 'c1',
        toolName: 'lookup',
        content: 'Error: denied for api_key=[REDACTED]',
        isError: true,
      });
      expect(result.events.map(([, e]) => e).find((e) => e.type === 'tool-error')).to.deep.equal({
        type: 'tool-error',
        id: 'c1',
        name: 'lookup',
        error: 'denied for api_key=[REDACTED]',
        category: 'unknown',
      });
    });

    it('an unknown tool name is reported to the model (and reflected on)', () => {
      const model = scriptedModel('fake', [
        [toolCall('c1', 'get_wether', {}), finish('tool-calls')],
        [...textDeltas('ok'), finish()],
      ]);
      const { tool } = weatherTool();
      run(runAgent({ model, tools: [tool], messages: [{ role: 'user', content: 'x' }], toolPipeline: (_c, call$) => call$.pipe(reflectOnError()) }));
      expect((lastMessage(model.requests[1]) as ToolMessage).content).to.contain("unknown tool 'get_wether'; available: 'get_weather'");
    });
  });

  describe('a tool that keeps failing (reflection limit, then its breaker)', () => {
    const script = (n: number) => [
      ...Array.from({ length: n }, (_, i) => [toolCall(`c${i + 1}`, 'broken_api', { q: i }), finish('tool-calls')]),
      [...textDeltas('The API is down, sorry.'), finish()],
    ];

    it('reflects up to maxReflections, then tells the model to stop; the 5th failure opens the breaker and later calls fail fast', () => {
      const broken = scriptedTool('broken_api', [{ error: new Error('upstream returned garbage') }]);
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 5 });
      const model = scriptedModel('fake', script(7));
      const result = run(
        runAgent({
          model,
          tools: [broken],
          messages: [{ role: 'user', content: 'call it' }],
          toolPipeline: (call, call$, { hub }) => call$.pipe(circuitBreak(breakers.get(`tool:${call.name}`), { hub }), reflectOnError()),
        }),
      );
      expect(result.completed()).to.equal(true);
      expect(broken.executions).to.have.length(5);
      const healing = result.labels.filter((l) => /^(reflection|circuit|tool-error)/.test(l));
      expect(healing).to.deep.equal([
        'tool-error:broken_api',
        'reflection:broken_api#1/3',
        'tool-error:broken_api',
        'reflection:broken_api#2/3',
        'tool-error:broken_api',
        'reflection:broken_api#3/3',
        'tool-error:broken_api',
        'reflection:broken_api#exhausted',
        'circuit:tool:broken_api:closed>open',
        'tool-error:broken_api',
        'reflection:broken_api#exhausted',
        'circuit:tool:broken_api:rejected',
        'tool-error:broken_api',
        'circuit:tool:broken_api:rejected',
        'tool-error:broken_api',
      ]);
      const toolMessages = model.requests.slice(1).map((r) => lastMessage(r) as ToolMessage);
      expect(toolMessages[3]!.content).to.equal(
        'The tool \'broken_api\' has failed 4 times in a row (last error: "upstream returned garbage"). Do not call it again. Tell the user it is unavailable right now and continue without it.',
      );
      expect(toolMessages[5]!.content).to.match(/^Error: Circuit 'tool:broken_api' is open; next probe in \d+ ms$/);
      expect(toolMessages[5]!.isError).to.equal(true);
    });

    it("onExhausted: 'error' ends the run with the tool's error", () => {
      const boom = new Error('upstream returned garbage');
      const broken = scriptedTool('broken_api', [{ error: boom }]);
      const result = run(
        runAgent({
          model: scriptedModel('fake', script(5)),
          tools: [broken],
          messages: [{ role: 'user', content: 'call it' }],
          toolPipeline: (_call, call$) => call$.pipe(reflectOnError({ maxReflections: 2, onExhausted: 'error' })),
        }),
      );
      expect(broken.executions).to.have.length(3);
      const error = result.error();
      expect(error).to.be.instanceOf(ToolError);
      expect((error as ToolError).toolName).to.equal('broken_api');
      expect((error as ToolError).cause).to.equal(boom);
    });

    it('a success of the tool resets its count', () => {
      const flaky = scriptedTool('flaky', [
        { error: new Error('bad input') },
        { error: new Error('bad input') },
        { result: 'ok' },
        { error: new Error('bad input') },
      ]);
      const model = scriptedModel('fake', [
        ...Array.from({ length: 4 }, (_, i) => [toolCall(`c${i}`, 'flaky', {}), finish('tool-calls')]),
        [...textDeltas('done'), finish()],
      ]);
      const result = run(
        runAgent({ model, tools: [flaky], messages: [{ role: 'user', content: 'x' }], toolPipeline: (_c, call$) => call$.pipe(reflectOnError()) }),
      );
      expect(result.labels.filter((l) => l.startsWith('reflection'))).to.deep.equal(['reflection:flaky#1/3', 'reflection:flaky#2/3', 'reflection:flaky#1/3']);
    });

    it('counts per run by default, across runs with countAcrossRuns', () => {
      for (const [countAcrossRuns, second] of [
        [false, 'reflection:broken_api#1/3'],
        [true, 'reflection:broken_api#2/3'],
      ] as const) {
        const broken = scriptedTool('broken_api', [{ error: new Error('bad') }]);
        const reflect = reflectOnError({ countAcrossRuns });
        const once = () =>
          run(
            runAgent({
              model: scriptedModel('m', script(1)),
              tools: [broken],
              messages: [{ role: 'user', content: 'x' }],
              toolPipeline: (_c, call$) => call$.pipe(reflect),
            }),
          );
        expect(once().labels).to.include('reflection:broken_api#1/3');
        expect(once().labels).to.include(second);
      }
    });
  });

  describe('a non-idempotent tool is never re-executed', () => {
    it('inside retryWithBackoff, a send_email that failed after starting runs once', () => {
      const send = scriptedTool('send_email', [{ error: new HttpError(503) }, { result: 'sent' }], { idempotent: false });
      const model = scriptedModel('fake', [
        [toolCall('c1', 'send_email', { to: 'a@b.c' }), finish('tool-calls')],
        [...textDeltas('It failed.'), finish()],
      ]);
      const result = run(
        runAgent({
          model,
          tools: [send],
          messages: [{ role: 'user', content: 'mail' }],
          toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}` })),
        }),
      );
      expect(send.executions).to.have.length(1);
      expect(result.labels).not.to.include('retry:tool:send_email#1');
      expect(result.labels).to.include('tool-error:send_email');
    });

    it('while an idempotent tool with the same failure is retried and succeeds', () => {
      const read = scriptedTool('read_inbox', [{ error: new HttpError(503) }, { result: 'mail' }], { idempotent: true });
      const model = scriptedModel('fake', [
        [toolCall('c1', 'read_inbox', {}), finish('tool-calls')],
        [...textDeltas('You have mail.'), finish()],
      ]);
      const result = run(
        runAgent({
          model,
          tools: [read],
          messages: [{ role: 'user', content: 'mail?' }],
          toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, jitter: 'none' })),
        }),
      );
      expect(read.executions).to.have.length(2);
      expect(result.labels).to.include('retry:tool:read_inbox#1');
      expect(result.labels).to.include('tool-result:read_inbox');
      const retry = result.events.find(([, e]) => e.type === 'retry');
      expect(retry?.[0]).to.equal(0);
      expect(retry?.[1]).to.deep.equal({
        type: 'retry',
        target: 'tool:read_inbox',
        attempt: 1,
        max: 3,
        delayMs: 500,
        category: 'service_unavailable',
        error: 'HTTP 503',
      });
      const result$ = result.events.find(([, e]) => e.type === 'tool-result');
      expect(result$?.[0]).to.equal(500);
    });
  });

  describe('tool calls in parallel', () => {
    it('runs a turn’s calls concurrently and sends their messages in call order', () => {
      const slow = scriptedTool('slow', [{ marbles: '300ms (r|)', values: { r: 'slow result' } }]);
      const fast = scriptedTool('fast', [{ marbles: '100ms (r|)', values: { r: 'fast result' } }]);
      const model = scriptedModel('fake', [
        [toolCall('a', 'slow', {}), toolCall('b', 'fast', {}), finish('tool-calls')],
        [...textDeltas('both done'), finish()],
      ]);
      const result = run(runAgent({ model, tools: [slow, fast], messages: [{ role: 'user', content: 'x' }] }));
      const times = Object.fromEntries(result.events.filter(([, e]) => e.type === 'tool-result').map(([time, e]) => [(e as { name: string }).name, time]));
      expect(times).to.deep.equal({ fast: 100, slow: 300 });
      expect(model.requests[1]!.messages.slice(-2).map((m) => (m as ToolMessage).toolCallId)).to.deep.equal(['a', 'b']);
    });
  });

  describe('budget', () => {
    it('maxToolCalls counts every retry and ends the run with BudgetExceededError', () => {
      const read = scriptedTool('read', [{ error: new HttpError(503) }], { idempotent: true });
      const model = scriptedModel('fake', [[toolCall('c1', 'read', {}), finish('tool-calls')]]);
      const result = run(
        runAgent({
          model,
          tools: [read],
          messages: [{ role: 'user', content: 'x' }],
          budget: { maxToolCalls: 2 },
          toolPipeline: (_c, call$) => call$.pipe(retryWithBackoff({ jitter: 'none' })),
        }),
      );
      expect(read.executions).to.have.length(2);
      const error = result.error() as BudgetExceededError;
      expect(error).to.be.instanceOf(BudgetExceededError);
      expect([error.resource, error.limit, error.used]).to.deep.equal(['toolCalls', 2, 3]);
      expect(result.labels).to.include('budget-exceeded:toolCalls');
    });

    it('maxModelCalls counts retries of the model stream', () => {
      const model = scriptedModel('fake', [
        { marbles: '-#', error: new HttpError(503) },
        { marbles: '-#', error: new HttpError(503) },
        [...textDeltas('hi'), finish()],
      ]);
      const result = run(
        runAgent({
          model,
          messages: [{ role: 'user', content: 'x' }],
          budget: { maxModelCalls: 2 },
          modelPipeline: (_r, turn$) => turn$.pipe(retryWithBackoff({ jitter: 'none' })),
        }),
      );
      expect(model.calls).to.equal(2);
      expect((result.error() as BudgetExceededError).resource).to.equal('modelCalls');
    });

    it('maxModelCalls counts each model a fallbackModel tries (each provider attempt), not the composite', () => {
      const primary = scriptedModel('primary', [{ marbles: '-#', error: new HttpError(503) }]);
      const secondary = scriptedModel('secondary', [[...textDeltas('hi'), finish()]]);
      const result = run(runAgent({ model: fallbackModel([primary, secondary]), messages: [{ role: 'user', content: 'x' }], budget: { maxModelCalls: 1 } }));
      const error = result.error() as BudgetExceededError;
      expect([error.resource, error.limit, error.used]).to.deep.equal(['modelCalls', 1, 2]);
      expect(secondary.calls).to.equal(0);
    });

    it("hands the pipelines the run's budget and scheduler (a model context for fallbackTo)", () => {
      const contexts: PipelineContext[] = [];
      const model = scriptedModel('m', [
        [toolCall('c', 'read', {}), finish('tool-calls')],
        [...textDeltas('ok'), finish()],
      ]);
      const read = scriptedTool('read', [{ result: 1 }]);
      run(
        runAgent({
          model,
          tools: [read],
          messages: [{ role: 'user', content: 'x' }],
          modelPipeline: (_r, turn$, context) => (contexts.push(context), turn$),
          toolPipeline: (_c, call$, context) => (contexts.push(context), call$),
        }),
      );
      expect(contexts.map((c) => [c.step, typeof c.budget.modelCall, typeof c.budget.usage, c.scheduler === asyncScheduler])).to.deep.equal([
        [1, 'function', 'function', true],
        [1, 'function', 'function', true],
        [2, 'function', 'function', true],
      ]);
      expect(contexts[0]!.budget).to.equal(contexts[2]!.budget);
    });

    it('maxTokens reads each finish usage', () => {
      const model = scriptedModel('fake', [
        [toolCall('c', 'read', {}), finish('tool-calls', { inputTokens: 60, outputTokens: 10 })],
        [...textDeltas('hi'), finish('stop', { inputTokens: 80, outputTokens: 5 })],
      ]);
      const read = scriptedTool('read', [{ result: 1 }]);
      const result = run(runAgent({ model, tools: [read], messages: [{ role: 'user', content: 'x' }], budget: { maxTokens: 100 } }));
      const error = result.error() as BudgetExceededError;
      expect([error.resource, error.limit, error.used]).to.deep.equal(['tokens', 100, 155]);
    });

    it('maxSteps: a model that never stops gives up with BudgetExceededError (steps), never silently', () => {
      const read = scriptedTool('read', [{ result: 1 }]);
      const model = scriptedModel(
        'loop',
        Array.from({ length: 5 }, (_, i) => [toolCall(`c${i}`, 'read', {}), finish('tool-calls')]),
      );
      const result = run(runAgent({ model, tools: [read], messages: [{ role: 'user', content: 'x' }], maxSteps: 3 }));
      expect(model.calls).to.equal(3);
      const error = result.error() as BudgetExceededError;
      expect([error.resource, error.limit, error.used]).to.deep.equal(['steps', 3, 4]);
      expect(result.completed()).to.equal(false);
    });
  });

  describe('output self-correction', () => {
    const answer = t.type({ city: t.string, celsius: t.number });

    it('re-asks with the problems, tells the consumer to discard the bad answer, and accepts the corrected one', () => {
      const model = scriptedModel('fake', [
        [...textDeltas('{"city":"NYC","celsius":"22"}'), finish()],
        [...textDeltas('{"city":"NYC","celsius":22}'), finish()],
      ]);
      const result = run(runAgent({ model, messages: [{ role: 'user', content: 'x' }], output: validateOutput(answer) }));
      expect(result.labels.filter((l) => /^(validation|reset|message)/.test(l))).to.deep.equal([
        'validation:invalid',
        'message:assistant',
        'message:user',
        'reset:correction',
        'validation:valid',
        'message:assistant',
      ]);
      expect((lastMessage(model.requests[1]) as { content: string }).content).to.equal(
        'Your previous answer has a problem:\n- celsius: expected number, got "22"\nReply again with a corrected answer, and only the answer.',
      );
      const final = result.events.at(-1)?.[1];
      expect(final).to.deep.equal({ type: 'message', message: { role: 'assistant', content: '{"city":"NYC","celsius":22}', validated: true } });
    });

    it('after maxCorrections it returns the last answer marked unvalidated', () => {
      const bad = () => [...textDeltas('not json'), finish()];
      const model = scriptedModel('fake', [bad(), bad()]);
      const result = run(runAgent({ model, messages: [{ role: 'user', content: 'x' }], output: validateOutput(answer, { maxCorrections: 1 }) }));
      expect(model.calls).to.equal(2);
      expect(result.completed()).to.equal(true);
      const final = result.events.at(-1)?.[1];
      expect(final).to.deep.equal({ type: 'message', message: { role: 'assistant', content: 'not json', validated: false } });
    });
  });

  describe('streams, resets and cancellation', () => {
    it('a reset from the model pipeline discards the partial turn', () => {
      const model = scriptedModel('fake', [
        { marbles: '-a-#', values: { a: { type: 'text-delta', text: 'The wea' } }, error: new HttpError(503) },
        [...textDeltas('The weather is fine.'), finish()],
      ]);
      const result = run(
        runAgent({
          model,
          messages: [{ role: 'user', content: 'x' }],
          modelPipeline: (_r, turn$) =>
            turn$.pipe(
              retryWithBackoff<TurnEvent>({
                jitter: 'none',
                afterEmit: 'restart',
                onRestart: () => ({ type: 'reset', reason: 'retry', target: 'model:fake' }),
              }),
            ),
        }),
      );
      expect(result.labels.slice(0, 3)).to.deep.equal(['text:The wea', 'reset:retry', 'text:The']);
      expect(result.events.at(-1)?.[1]).to.deep.equal({ type: 'message', message: { role: 'assistant', content: 'The weather is fine.' } });
    });

    it('a stream that ends without finish errors the run (never a silent short answer)', () => {
      const result = run(runAgent({ model: scriptedModel('m', [textDeltas('half an ans')]), messages: [{ role: 'user', content: 'x' }] }));
      // streamModel turns it into an IncompleteStreamError: a dropped connection, retryable and fallback-able
      const error = result.error() as Error & { model?: string };
      expect(error.name).to.equal('IncompleteStreamError');
      expect(error.model).to.equal('m');
      expect(classifyError(error)).to.include({ category: 'connection', retryable: true, fallback: true });
    });

    it('a stream that ends without finish is healed by the model pipeline’s retry, like a dropped connection', () => {
      const model = scriptedModel('m', [textDeltas('half an ans'), [...textDeltas('A whole answer.'), finish('stop')]]);
      const result = run(
        runAgent({
          model,
          messages: [{ role: 'user', content: 'x' }],
          modelPipeline: (_r, turn$) =>
            turn$.pipe(
              retryWithBackoff<TurnEvent>({ jitter: 'none', afterEmit: 'restart', onRestart: () => ({ type: 'reset', reason: 'retry', target: 'model:m' }) }),
            ),
        }),
      );
      expect(result.error()).to.equal(undefined);
      expect(result.labels).to.include('reset:retry');
      expect(result.events.at(-1)?.[1]).to.deep.equal({ type: 'message', message: { role: 'assistant', content: 'A whole answer.' } });
    });

    it('unsubscribing cancels the model stream and aborts tools in flight', () => {
      const aborted: unknown[] = [];
      const tool = defineTool({
        name: 'wait',
        description: 'waits forever',
        args: t.unknown,
        execute: (_a, { signal }) => {
          signal.addEventListener('abort', () => aborted.push(signal.reason));
          return NEVER;
        },
      });
      testScheduler().run(({ expectObservable }) => {
        const model = scriptedModel('m', [[toolCall('c', 'wait', {}), finish('tool-calls')]]);
        const events$ = runAgent({ model, tools: [tool], messages: [{ role: 'user', content: 'x' }] }).pipe(
          map(describeEvent),
          filter((l) => !l.startsWith('call-')),
        );
        expectObservable(events$, '^ 50ms !').toBe('(abc)', { a: 'tool-call:wait', b: 'finish:tool-calls', c: 'message:assistant' });
      });
      expect(aborted).to.have.length(1);
      expect((aborted[0] as DOMException).name).to.equal('AbortError');

      let model!: ReturnType<typeof scriptedModel>;
      testScheduler().run(({ expectObservable }) => {
        model = scriptedModel('m', [{ marbles: '-a 100ms b', values: { a: { type: 'text-delta', text: 'x' }, b: { type: 'text-delta', text: 'y' } } }]);
        expectObservable(
          runAgent({ model, messages: [{ role: 'user', content: 'x' }] }).pipe(
            map(describeEvent),
            filter((l) => !l.startsWith('call-')),
          ),
          '^ 10ms !',
        ).toBe('-a', { a: 'text:x' });
      });
      expect(model.cancelled).to.equal(1);
    });
  });

  describe('reasoning (thinking) blocks', () => {
    it('passes reasoning on as it streams and keeps each block, signed or redacted, with the assistant message the next request carries', () => {
      const { tool } = weatherTool();
      const model = scriptedModel('claude', [
        [
          ...reasoning('The user wants NYC.', 'sig-1'),
          { type: 'reasoning-end', redactedData: 'opaque' },
          toolCall('c1', 'get_weather', { city: 'NYC', units: 'celsius' }),
          finish('tool-calls'),
        ],
        [...reasoning('22 and sunny.'), ...textDeltas('Sunny, 22 °C.'), finish('stop')],
      ]);
      const result = run(runAgent({ model, tools: [tool], messages: [{ role: 'user', content: "What's the weather in NYC?" }] }));
      expect(result.error()).to.equal(undefined);
      expect(result.labels.slice(0, 7)).to.deep.equal([
        'reasoning:The',
        'reasoning: user',
        'reasoning: wants',
        'reasoning: NYC.',
        'reasoning-end:signed',
        'reasoning-end:redacted',
        'tool-call:get_weather',
      ]);
      const assistant = { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'get_weather', args: { city: 'NYC', units: 'celsius' } }] };
      expect(model.requests[1]!.messages[1]).to.deep.equal({
        ...assistant,
        reasoning: [
          { text: 'The user wants NYC.', signature: 'sig-1' },
          { text: '', redactedData: 'opaque' },
        ],
      });
      // reasoning never ended by a reasoning-end is closed at the finish, unsigned; the text is the answer alone
      expect(result.events.at(-1)?.[1]).to.deep.equal({
        type: 'message',
        message: { role: 'assistant', content: 'Sunny, 22 °C.', reasoning: [{ text: '22 and sunny.' }] },
      });
    });

    it('a reset discards the partial turn’s reasoning with its text; a turn without reasoning has no reasoning field', () => {
      const model = scriptedModel('m', [
        {
          marbles: '-(ab)-#',
          values: { a: { type: 'reasoning-delta', text: 'first try' }, b: { type: 'text-delta', text: 'The wea' } },
          error: new HttpError(503),
        },
        [...textDeltas('The weather is fine.'), finish()],
      ]);
      const result = run(
        runAgent({
          model,
          messages: [{ role: 'user', content: 'x' }],
          modelPipeline: (_r, turn$) =>
            turn$.pipe(
              retryWithBackoff<TurnEvent>({ jitter: 'none', afterEmit: 'restart', onRestart: () => ({ type: 'reset', reason: 'retry', target: 'model:m' }) }),
            ),
        }),
      );
      expect(result.labels.slice(0, 3)).to.deep.equal(['reasoning:first try', 'text:The wea', 'reset:retry']);
      expect(result.events.at(-1)?.[1]).to.deep.equal({ type: 'message', message: { role: 'assistant', content: 'The weather is fine.' } });
    });

    it('an answer checked by output validation keeps its reasoning', () => {
      const model = scriptedModel('m', [[...reasoning('Think.', 's'), ...textDeltas('{"n":42}'), finish()]]);
      const result = run(runAgent({ model, messages: [{ role: 'user', content: 'x' }], output: validateOutput(t.type({ n: t.number })) }));
      expect(result.events.at(-1)?.[1]).to.deep.equal({
        type: 'message',
        message: { role: 'assistant', content: '{"n":42}', validated: true, reasoning: [{ text: 'Think.', signature: 's' }] },
      });
    });
  });

  describe('capabilities', () => {
    it('appends the suffix to the instruction while degraded and surfaces degraded/restored events', () => {
      const events = new Subject<DegradedEvent | RestoredEvent>();
      let suffix = 'Unavailable right now: knowledge search (slow). Tell the user.';
      const capabilities = { systemPromptSuffix: () => suffix, events$: events.asObservable() };
      const model = scriptedModel('m', [[...textDeltas('hi'), finish()]]);
      const result = run(runAgent({ model, instruction: 'Be helpful.', messages: [{ role: 'user', content: 'x' }], capabilities }));
      expect(model.requests[0]!.messages[0]).to.deep.equal({ role: 'system', content: `Be helpful.\n\n${suffix}` });
      expect(result.completed()).to.equal(true);
      suffix = '';
    });

    it('surfaces hub events once even when the same event also arrives from the capabilities', () => {
      const hub = new HealHub();
      const events = new Subject<DegradedEvent | RestoredEvent>();
      const model = scriptedModel('m', [
        (req) =>
          new Observable((s) => {
            const e: DegradedEvent = { type: 'degraded', capability: 'search', reason: 'slow' };
            hub.report(e);
            events.next(e);
            void req;
            s.next(finish());
            s.complete();
          }),
      ]);
      const result = run(runAgent({ model, hub, messages: [{ role: 'user', content: 'x' }], capabilities: { systemPromptSuffix: () => '', events$: events } }));
      expect(result.labels.filter((l) => l.startsWith('degraded'))).to.deep.equal(['degraded:search']);
    });
  });

  it('passes on a model event object emitted twice (the same constant), not deduplicating it', () => {
    const delta: TurnEvent = { type: 'text-delta', text: 'la' };
    const result = run(runAgent({ model: scriptedModel('m', [[delta, delta, finish()]]), messages: [{ role: 'user', content: 'sing' }] }));
    expect(result.labels).to.deep.equal(['text:la', 'text:la', 'finish:stop', 'message:assistant']);
  });

  describe('call lifecycle events (for tracing)', () => {
    it('reports call-start / call-end for every model call and tool execution, retries included, with durations and usage', () => {
      const read = scriptedTool('read', [{ error: new HttpError(503) }, { marbles: '20ms (r|)', values: { r: 'ok' } }], { idempotent: true });
      const model = scriptedModel('m', [
        { marbles: '5ms (ab|)', values: { a: toolCall('c1', 'read', {}), b: finish('tool-calls', { inputTokens: 7, outputTokens: 3 }) } },
        { marbles: '10ms (ab|)', values: { a: { type: 'text-delta', text: 'ok' }, b: finish() } },
      ]);
      const result = run(
        runAgent({
          model,
          tools: [read],
          messages: [{ role: 'user', content: 'x' }],
          toolPipeline: (_c, call$) => call$.pipe(retryWithBackoff({ jitter: 'none', initialBackoffMs: 100 })),
        }),
      );
      const calls = result.events.filter(([, e]) => e.type === 'call-start' || e.type === 'call-end').map(([time, e]) => [time, e]);
      expect(calls).to.deep.equal([
        [0, { type: 'call-start', kind: 'model', name: 'm', id: 'step-1.1', step: 1, at: 0 }],
        [
          5,
          {
            type: 'call-end',
            kind: 'model',
            name: 'm',
            id: 'step-1.1',
            step: 1,
            at: 5,
            durationMs: 5,
            outcome: 'success',
            usage: { inputTokens: 7, outputTokens: 3 },
          },
        ],
        [5, { type: 'call-start', kind: 'tool', name: 'read', id: 'c1', step: 1, at: 5 }],
        [
          5,
          {
            type: 'call-end',
            kind: 'tool',
            name: 'read',
            id: 'c1',
            step: 1,
            at: 5,
            durationMs: 0,
            outcome: 'error',
            error: 'HTTP 503',
            category: 'service_unavailable',
            status: 503,
          },
        ],
        [105, { type: 'call-start', kind: 'tool', name: 'read', id: 'c1', step: 1, at: 105 }],
        [125, { type: 'call-end', kind: 'tool', name: 'read', id: 'c1', step: 1, at: 125, durationMs: 20, outcome: 'success' }],
        [125, { type: 'call-start', kind: 'model', name: 'm', id: 'step-2.1', step: 2, at: 125 }],
        [135, { type: 'call-end', kind: 'model', name: 'm', id: 'step-2.1', step: 2, at: 135, durationMs: 10, outcome: 'success' }],
      ]);
    });

    it("reports a call cancelled by the consumer as outcome 'cancelled'", () => {
      let ends: unknown[] = [];
      testScheduler().run(({ expectObservable }) => {
        const model = scriptedModel('m', [{ marbles: '-a 100ms b', values: { a: { type: 'text-delta', text: 'x' }, b: finish() } }]);
        const hub = new HealHub();
        hub.events$.pipe(filter((e) => e.type === 'call-end')).subscribe((e) => (ends = [...ends, e]));
        expectObservable(runAgent({ model, hub, messages: [{ role: 'user', content: 'x' }] }).pipe(map(describeEvent)), '^ 10ms !').toBe('ab', {
          a: 'call-start:model:m',
          b: 'text:x',
        });
      });
      expect(ends).to.deep.equal([{ type: 'call-end', kind: 'model', name: 'm', id: 'step-1.1', step: 1, at: 11, durationMs: 11, outcome: 'cancelled' }]);
    });
  });

  describe('validation', () => {
    it('rejects bad config at once, naming the option', () => {
      const model = scriptedModel('m', []);
      expect(() => runAgent({ model, messages: [], maxSteps: 0 })).to.throw(InvalidOptionError, /"maxSteps"/);
      expect(() => runAgent({ model: {} as never, messages: [] })).to.throw(InvalidOptionError, /"model" must be a Model/);
      expect(() => runAgent({ model } as never)).to.throw(InvalidOptionError, /"messages"/);
      expect(() => runAgent({ model, messages: [], budget: { maxTokens: -1 } })).to.throw(InvalidOptionError, /"budget"/);
      expect(() => runAgent({ model, messages: [], tool: [] } as never)).to.throw(InvalidOptionError, /"tool"/);
    });
  });
});

describe('runAgent: a user callback that throws (the guard rule)', () => {
  const user = [{ role: 'user', content: 'x' }] as const;
  /** A model whose turns are played in order, each synchronously or 1 ms after the call. */
  const playing = (kind: SourceKind, scheduler: VirtualTimeScheduler, turns: readonly TurnEvent[][]): Model => {
    let n = 0;
    return {
      id: 'm',
      stream: () => {
        const events = turns[Math.min(n++, turns.length - 1)]!;
        return kind === 'sync' ? events : new Observable<TurnEvent>((s) => scheduler.schedule(() => (events.forEach((e) => s.next(e)), s.complete()), 1));
      },
    };
  };
  const callsTool = [toolCall('c1', 'echo', {}), finish('tool-calls')];
  const answers = [...textDeltas('done'), finish()];
  const echo = defineTool({ name: 'echo', description: 'echo', args: t.unknown, execute: () => ['ok'] });
  const cases: [string, (boom: Boom) => Partial<AgentConfig>, readonly TurnEvent[][]][] = [
    ['toolPipeline', (boom) => ({ tools: [echo], toolPipeline: thrower(boom) }), [callsTool, answers]],
    ['modelPipeline', (boom) => ({ modelPipeline: thrower(boom) }), [answers]],
    ['capabilities.systemPromptSuffix (a custom source)', (boom) => ({ capabilities: { systemPromptSuffix: thrower(boom), events$: NEVER } }), [answers]],
    [
      'capabilities.systemPromptSuffix, on the second turn',
      (boom) => {
        let calls = 0;
        return { tools: [echo], capabilities: { systemPromptSuffix: () => (calls++ === 0 ? '' : thrower(boom)()), events$: NEVER } };
      },
      [callsTool, answers],
    ],
    ['a validateOutput check', (boom) => ({ output: validateOutput([thrower(boom)]) }), [answers]],
    ['output.correction (a custom validator)', (boom) => ({ output: { maxCorrections: 1, check: () => ['too short'], correction: thrower(boom) } }), [answers]],
    ["the model's stream()", (boom) => ({ model: { id: 'm', stream: thrower(boom) } }), [answers]],
  ];
  for (const [callback, config, turns] of cases) {
    for (const kind of KINDS) {
      it(`${callback} throws → the run errors with it (${kind} model)`, () => {
        const scheduler = new VirtualTimeScheduler();
        const boom = new Boom(callback);
        const hub = new HealHub();
        const result = runAgent({ model: playing(kind, scheduler, turns), messages: [...user], hub, scheduler, ...config(boom) });
        expectThrowDownstream(result, boom, { scheduler });
        // the run's subscription to its hub ended with it
        expect((hub as unknown as { followers: unknown }).followers).to.equal(undefined);
      });
    }
  }

  for (const provider of ['openAICompatibleModel', 'anthropicModel'] as const) {
    it(`${provider}'s fetch option throws → the run errors with it`, async () => {
      const boom = new Boom('fetch');
      const options = { baseURL: 'http://127.0.0.1:9', model: 'x', fetch: thrower(boom) };
      const model = provider === 'openAICompatibleModel' ? openAICompatibleModel(options) : anthropicModel(options);
      const errors: unknown[] = [];
      runAgent({ model, messages: [...user] }).subscribe({ error: (e: unknown) => errors.push(e) });
      await new Promise((resolve) => setImmediate(resolve));
      expect(errors).to.deep.equal([boom]);
    });
  }

  for (const [part, tool] of [
    ['execute', defineTool({ name: 'echo', description: 'echo', args: t.unknown, execute: thrower(new Boom('execute')) })],
    [
      'its args codec',
      defineTool({
        name: 'echo',
        description: 'echo',
        args: new t.Type<unknown>('Hostile', (_u): _u is unknown => true, thrower(new Boom('codec')), t.identity),
        execute: () => ['ok'],
      }),
    ],
  ] as const) {
    it(`a tool whose ${part} throws: the model is told (a tool-error), the run goes on`, () => {
      const scheduler = new VirtualTimeScheduler();
      const result = record(runAgent({ model: playing('sync', scheduler, [callsTool, answers]), tools: [tool], messages: [...user], scheduler }), scheduler);
      scheduler.flush();
      expect(result.error()).to.equal(undefined);
      expect(result.completed()).to.equal(true);
      const toolError = result.events.map(([, e]) => e).find((e) => e.type === 'tool-error');
      expect(toolError && toolError.type === 'tool-error' ? toolError.error : undefined).to.contain('threw');
    });
  }
});
