import { expect } from 'chai';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Subject } from 'rxjs';
import type { HealEvent } from '../../src/core/events/events.js';
import { GEN_AI_OPT_IN, instrument } from '../../src/otel/index.js';
import { InvalidOptionError } from '../../src/core/errors/errors.js';
import { testScheduler } from '../support/marbles.js';
import { ms, sdk } from './sdk.js';
import { eventByEvent, healingRun, hedgedTurn, perModelRetries, pipelineRetry } from './scenarios.js';

/** Each span: name, its parent's name (or '-'), start and end in ms. */
function tree(spans: readonly ReadableSpan[]) {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  return spans.map((s) => [s.name, byId.get(s.parentSpanContext?.spanId ?? '')?.name ?? '-', ms(s.startTime), ms(s.endTime)]);
}
const pick = (span: ReadableSpan | undefined, ...keys: string[]) => Object.fromEntries(keys.map((k) => [k, span?.attributes[k]]));
const byCallId = (spans: readonly ReadableSpan[], id: string) => spans.filter((s) => s.attributes['rxheal.call.id'] === id);

describe('rxheal/otel on the current GenAI conventions (semconv: latest)', () => {
  describe('the scripted healing run', () => {
    it('one invoke_agent span for the run; a logical chat span per step, one child span per provider attempt; tools under the run', () => {
      const { exporter, options } = sdk();
      healingRun(options);
      const spans = exporter.getFinishedSpans();
      const run = spans.find((s) => s.name === 'invoke_agent weather')!;
      expect([run.kind, ms(run.startTime), ms(run.endTime), run.parentSpanContext]).to.deep.equal([SpanKind.INTERNAL, 0, 3550, undefined]);
      expect(run.attributes).to.deep.equal({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'weather' });
      // step 1: primary 503s at 10 ms, the fallback to secondary answers at 30 ms
      expect(tree(spans).filter(([name, , start]) => String(name).startsWith('chat') && (start as number) < 30)).to.deep.equal([
        ['chat primary', 'chat fallback(primary, secondary)', 0, 10],
        ['chat secondary', 'chat fallback(primary, secondary)', 10, 30],
        ['chat fallback(primary, secondary)', 'invoke_agent weather', 0, 30],
      ]);
      const [primary] = byCallId(spans, 'step-1.1/1');
      const [secondary] = byCallId(spans, 'step-1.1/2');
      expect(pick(primary, 'gen_ai.provider.name', 'gen_ai.request.model', 'rxheal.attempt.number', 'rxheal.attempt.reason', 'error.type')).to.deep.equal({
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'primary',
        'rxheal.attempt.number': 1,
        'rxheal.attempt.reason': undefined,
        'error.type': 'service_unavailable',
      });
      expect(primary!.events.map((e) => e.name)).to.deep.equal(['rxheal.fallback']);
      expect(
        pick(secondary, 'gen_ai.provider.name', 'rxheal.attempt.number', 'rxheal.attempt.reason', 'gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens'),
      ).to.deep.equal({
        'gen_ai.provider.name': 'anthropic',
        'rxheal.attempt.number': 2,
        'rxheal.attempt.reason': 'fallback',
        'gen_ai.usage.input_tokens': 120,
        'gen_ai.usage.output_tokens': 30,
      });
      expect(spans.filter((s) => s.name.startsWith('execute_tool')).every((s) => s.parentSpanContext?.spanId === run.spanContext().spanId)).to.equal(true);
      expect(spans.filter((s) => s.name.startsWith('execute_tool'))).to.have.length(10);
      expect(spans.filter((s) => s.name === 'chat fallback(primary, secondary)').map((s) => [ms(s.startTime), ms(s.endTime)])).to.deep.equal([
        [0, 30],
        [3030, 3040],
        [3540, 3550],
      ]);
      // a chain's span names a provider only when all its attempts went to one
      expect(spans.filter((s) => s.name === 'chat fallback(primary, secondary)').map((s) => s.attributes['gen_ai.provider.name'])).to.deep.equal([
        undefined,
        'openai',
        'openai',
      ]);
      expect(new Set(spans.map((s) => s.spanContext().traceId)).size).to.equal(1);
      expect(spans.some((s) => 'gen_ai.system' in s.attributes)).to.equal(false);
    });

    it('metrics: gen_ai.client.operation.duration per logical chat, gen_ai.client.token.usage per provider attempt', async () => {
      const { options, collect } = sdk();
      healingRun(options);
      const collected = await collect();
      const chat = { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'fallback(primary, secondary)' };
      // step 1 tried two providers: the chain's span names none; steps 2 and 3 went to openai only
      expect(collected['gen_ai.client.operation.duration']).to.deep.equal([
        [chat, { count: 1, sum: 0.03, min: 0.03, max: 0.03 }],
        [
          { ...chat, 'gen_ai.provider.name': 'openai' },
          { count: 2, sum: 0.02, min: 0.01, max: 0.01 },
        ],
      ]);
      const attempt = (model: string, provider: string, type: string) => ({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': model,
        'gen_ai.provider.name': provider,
        'gen_ai.token.type': type,
      });
      // the failed primary attempt of step 1 reported no usage; the run's calls are not counted again
      expect(collected['gen_ai.client.token.usage']).to.deep.equal([
        [attempt('secondary', 'anthropic', 'output'), { count: 1, sum: 30, min: 30, max: 30 }],
        [attempt('secondary', 'anthropic', 'input'), { count: 1, sum: 120, min: 120, max: 120 }],
        [attempt('primary', 'openai', 'output'), { count: 2, sum: 37, min: 12, max: 25 }],
        [attempt('primary', 'openai', 'input'), { count: 2, sum: 500, min: 200, max: 300 }],
      ]);
      expect(collected['rxheal.fallbacks']).to.have.length(1);
    });
  });

  it('a model retried in the model pipeline: one logical chat covering both attempts, the second one a retry', async () => {
    const { exporter, options, collect } = sdk();
    pipelineRetry(options);
    const spans = exporter.getFinishedSpans();
    expect(tree(spans)).to.deep.equal([
      ['chat m', 'chat m', 0, 5],
      ['chat m', 'chat m', 105, 105],
      ['chat m', 'invoke_agent', 0, 105],
      ['invoke_agent', '-', 0, 105],
    ]);
    expect(spans.slice(0, 2).map((s) => pick(s, 'rxheal.call.id', 'rxheal.attempt.number', 'rxheal.attempt.reason', 'rxheal.call.outcome'))).to.deep.equal([
      { 'rxheal.call.id': 'step-1.1', 'rxheal.attempt.number': 1, 'rxheal.attempt.reason': undefined, 'rxheal.call.outcome': 'error' },
      { 'rxheal.call.id': 'step-1.2', 'rxheal.attempt.number': 2, 'rxheal.attempt.reason': 'retry', 'rxheal.call.outcome': 'success' },
    ]);
    expect(spans[0]!.events.map((e) => e.name)).to.deep.equal(['rxheal.retry']);
    expect(spans[2]!.status).to.deep.equal({ code: SpanStatusCode.UNSET });
    const collected = await collect();
    const chat = { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'm', 'gen_ai.provider.name': 'openai' };
    expect(collected['gen_ai.client.operation.duration']).to.deep.equal([[chat, { count: 1, sum: 0.105, min: 0.105, max: 0.105 }]]);
    expect(collected['gen_ai.client.token.usage']).to.deep.equal([
      [
        { ...chat, 'gen_ai.token.type': 'output' },
        { count: 1, sum: 1, min: 1, max: 1 },
      ],
      [
        { ...chat, 'gen_ai.token.type': 'input' },
        { count: 1, sum: 3, min: 3, max: 3 },
      ],
    ]);
  });

  it('a fallbackModel retrying each model: the attempts under one logical chat, reasons retry then fallback', () => {
    const { exporter, options } = sdk();
    perModelRetries(options);
    const spans = exporter.getFinishedSpans();
    const op = spans.find((s) => s.name === 'chat fallback(gpt, claude)')!;
    const attempts = spans.filter((s) => s.parentSpanContext?.spanId === op.spanContext().spanId);
    expect(
      attempts.map((s) => pick(s, 'gen_ai.request.model', 'gen_ai.provider.name', 'rxheal.attempt.number', 'rxheal.attempt.reason', 'error.type')),
    ).to.deep.equal([
      {
        'gen_ai.request.model': 'gpt',
        'gen_ai.provider.name': 'openai',
        'rxheal.attempt.number': 1,
        'rxheal.attempt.reason': undefined,
        'error.type': 'service_unavailable',
      },
      {
        'gen_ai.request.model': 'gpt',
        'gen_ai.provider.name': 'openai',
        'rxheal.attempt.number': 2,
        'rxheal.attempt.reason': 'retry',
        'error.type': 'bad_gateway',
      },
      {
        'gen_ai.request.model': 'claude',
        'gen_ai.provider.name': 'anthropic',
        'rxheal.attempt.number': 3,
        'rxheal.attempt.reason': 'fallback',
        'error.type': undefined,
      },
    ]);
    expect(op.attributes['gen_ai.provider.name']).to.equal(undefined);
  });

  it("a run's turn hedged: the hedge's traced call is the attempt with reason hedge (no span made up for it); the operation answers with the winner", async () => {
    const { exporter, options, collect } = sdk();
    hedgedTurn(options);
    const spans = exporter.getFinishedSpans();
    expect(tree(spans)).to.deep.equal([
      ['chat m', 'chat m', 0, 60],
      ['chat m', 'chat m', 50, 60],
      ['chat m', 'invoke_agent', 0, 60],
      ['invoke_agent', '-', 0, 60],
    ]);
    expect(
      spans.map((s) => pick(s, 'rxheal.call.id', 'rxheal.attempt.number', 'rxheal.attempt.reason', 'rxheal.call.outcome', 'gen_ai.usage.output_tokens')),
    ).to.deep.equal([
      {
        'rxheal.call.id': 'step-1.1',
        'rxheal.attempt.number': 1,
        'rxheal.attempt.reason': undefined,
        'rxheal.call.outcome': 'cancelled',
        'gen_ai.usage.output_tokens': undefined,
      },
      {
        'rxheal.call.id': 'step-1.2',
        'rxheal.attempt.number': 2,
        'rxheal.attempt.reason': 'hedge',
        'rxheal.call.outcome': 'success',
        'gen_ai.usage.output_tokens': 1,
      },
      {
        'rxheal.call.id': 'step-1.1',
        'rxheal.attempt.number': undefined,
        'rxheal.attempt.reason': undefined,
        'rxheal.call.outcome': 'success',
        'gen_ai.usage.output_tokens': 1,
      },
      {
        'rxheal.call.id': undefined,
        'rxheal.attempt.number': undefined,
        'rxheal.attempt.reason': undefined,
        'rxheal.call.outcome': undefined,
        'gen_ai.usage.output_tokens': undefined,
      },
    ]);
    const duration = (await collect())['gen_ai.client.operation.duration']!;
    expect(duration.map(([a, v]) => [a['error.type'], (v as { sum: number }).sum])).to.deep.equal([[undefined, 0.06]]);
  });

  describe('event by event: a resumed stream, a hedge, cache counts, an MCP tool, a run that errors', () => {
    it('a resume ends the cut connection’s span and starts the next attempt; a hedge is an attempt of its own', () => {
      const { exporter, options } = sdk();
      eventByEvent(options);
      const spans = exporter.getFinishedSpans();
      const attempts = spans.filter((s) => s.name === 'chat gpt' && s.attributes['rxheal.attempt.number'] !== undefined);
      expect(
        attempts.map((s) => [
          ms(s.startTime),
          ms(s.endTime),
          s.attributes['rxheal.attempt.number'],
          s.attributes['rxheal.attempt.reason'],
          s.attributes['rxheal.call.outcome'],
        ]),
      ).to.deep.equal([
        [0, 40, 1, undefined, 'error'],
        [50, 70, 3, 'hedge', 'success'],
        [40, 70, 2, 'resume', 'success'],
      ]);
      expect([attempts[0]!.attributes['error.type'], attempts[0]!.status, attempts[0]!.events.map((e) => e.name)]).to.deep.equal([
        'dropped',
        { code: SpanStatusCode.ERROR, message: 'socket hang up' },
        ['rxheal.resume'],
      ]);
      const op = spans.find((s) => s.name === 'chat gpt' && s.attributes['rxheal.attempt.number'] === undefined)!;
      expect(attempts.every((s) => s.parentSpanContext?.spanId === op.spanContext().spanId)).to.equal(true);
      expect(op.events.map((e) => [e.name, e.attributes?.['rxheal.hedge.kind']])).to.deep.equal([
        ['rxheal.hedge', 'started'],
        ['rxheal.hedge', 'won'],
        ['rxheal.hedge', 'cancelled'],
      ]);
    });

    it('cache and reasoning counts on the attempt span, and input tokens split by cache on the token metric (adding up to the input)', async () => {
      const { exporter, options, collect } = sdk();
      eventByEvent(options);
      const attempt = exporter.getFinishedSpans().find((s) => s.attributes['rxheal.attempt.reason'] === 'resume')!;
      expect(
        pick(
          attempt,
          'gen_ai.usage.input_tokens',
          'gen_ai.usage.cache_read.input_tokens',
          'gen_ai.usage.cache_creation.input_tokens',
          'gen_ai.usage.output_tokens',
          'gen_ai.usage.reasoning.output_tokens',
        ),
      ).to.deep.equal({
        'gen_ai.usage.input_tokens': 1000,
        'gen_ai.usage.cache_read.input_tokens': 600,
        'gen_ai.usage.cache_creation.input_tokens': 100,
        'gen_ai.usage.output_tokens': 50,
        'gen_ai.usage.reasoning.output_tokens': 20,
      });
      const points = (await collect())['gen_ai.client.token.usage']!.map(([a, v]) => [
        a['gen_ai.token.type'],
        a['rxheal.token.cache'],
        (v as { sum: number }).sum,
      ]);
      expect(points).to.deep.equal([
        ['output', undefined, 50],
        ['input', 'none', 300],
        ['input', 'read', 600],
        ['input', 'creation', 100],
      ]);
    });

    it('cache counts are read under the names adapters may give them', async () => {
      const { options, collect } = sdk();
      eventByEvent(options, { cacheReadInputTokens: 10, cacheCreationInputTokens: 5 });
      const points = (await collect())['gen_ai.client.token.usage']!.map(([a, v]) => [a['rxheal.token.cache'], (v as { sum: number }).sum]);
      expect(points).to.deep.equal([
        [undefined, 50],
        ['none', 985],
        ['read', 10],
        ['creation', 5],
      ]);
    });

    it('an MCP server’s tool: mcp.* attributes on its execute_tool span, error.type tool_error for an isError result; another tool has none', () => {
      const { exporter, options } = sdk();
      eventByEvent(options);
      const spans = exporter.getFinishedSpans();
      const forecast = spans.find((s) => s.name === 'execute_tool wx_forecast')!;
      expect(forecast.attributes).to.deep.equal({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'wx_forecast',
        'gen_ai.tool.call.id': 't1',
        'rxheal.call.id': 't1',
        'rxheal.step': 1,
        'mcp.method.name': 'tools/call',
        'mcp.protocol.version': '2025-06-18',
        'mcp.session.id': 'sess-1',
        'rxheal.call.outcome': 'success',
        'error.type': 'tool_error',
      });
      expect(forecast.status.code).to.equal(SpanStatusCode.ERROR);
      const search = spans.find((s) => s.name === 'execute_tool search')!;
      expect(Object.keys(search.attributes).filter((k) => k.startsWith('mcp.'))).to.deep.equal([]);
      expect(search.attributes['error.type']).to.equal('service_unavailable');
    });

    it('a run that errors: its invoke_agent span ends then, status ERROR with the error’s name', () => {
      const { exporter, options } = sdk();
      eventByEvent(options);
      const run = exporter.getFinishedSpans().find((s) => s.name === 'invoke_agent')!;
      expect([ms(run.startTime), ms(run.endTime), run.attributes['error.type'], run.status.code]).to.deep.equal([0, 100, 'HttpError', SpanStatusCode.ERROR]);
    });
  });

  describe('lifecycle', () => {
    it("unsubscribing ends the run, its logical chat and the attempt in flight, marked 'unfinished', and records no duration", async () => {
      const { exporter, options, collect } = sdk();
      testScheduler().run(({ flush }) => {
        const events$ = new Subject<HealEvent>();
        const subscription = instrument(events$, { ...options, semconv: 'latest' });
        events$.next({ type: 'call-start', kind: 'model', name: 'gpt', id: 'step-1.1', step: 1, at: 0 });
        flush();
        subscription.unsubscribe();
        events$.next({ type: 'call-end', kind: 'model', name: 'gpt', id: 'step-1.1', step: 1, at: 0, durationMs: 0, outcome: 'success' });
        flush();
      });
      expect(exporter.getFinishedSpans().map((s) => [s.name, s.attributes['rxheal.call.outcome'], s.attributes['rxheal.attempt.number']])).to.deep.equal([
        ['chat gpt', 'unfinished', 1],
        ['chat gpt', 'unfinished', undefined],
        ['invoke_agent', undefined, undefined],
      ]);
      expect((await collect())['gen_ai.client.operation.duration']).to.equal(undefined);
    });

    it('a model call that ended without its start being seen: its operation and attempt from at - durationMs', () => {
      const { exporter, options } = sdk();
      testScheduler().run(({ flush }) => {
        const events$ = new Subject<HealEvent>();
        instrument(events$, { ...options, semconv: 'latest' });
        events$.next({ type: 'call-end', kind: 'model', name: 'gpt', id: 'step-1.1', step: 1, at: 900, durationMs: 400, outcome: 'success' });
        events$.complete();
        flush();
      });
      expect(tree(exporter.getFinishedSpans())).to.deep.equal([
        ['chat gpt', 'chat gpt', 500, 900],
        ['chat gpt', 'invoke_agent', 500, 900],
        ['invoke_agent', '-', 0, 900],
      ]);
    });
  });

  describe('the opt-in', () => {
    const env = process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
    afterEach(() => {
      if (env === undefined) delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
      else process.env.OTEL_SEMCONV_STABILITY_OPT_IN = env;
    });

    /** The span names and provider attribute keys of one model call, instrumented with `semconv`. */
    const oneCall = (semconv?: 'legacy' | 'latest') => {
      const { exporter, options } = sdk();
      testScheduler().run(({ flush }) => {
        const events$ = new Subject<HealEvent>();
        instrument(events$, { ...options, providers: { gpt: 'openai' }, ...(semconv ? { semconv } : {}) });
        events$.next({ type: 'call-start', kind: 'model', name: 'gpt', id: 'step-1.1', step: 1, at: 0 });
        events$.next({ type: 'call-end', kind: 'model', name: 'gpt', id: 'step-1.1', step: 1, at: 0, durationMs: 0, outcome: 'success' });
        events$.complete();
        flush();
      });
      return exporter.getFinishedSpans().map((s) => [s.name, Object.keys(s.attributes).filter((k) => k === 'gen_ai.system' || k === 'gen_ai.provider.name')]);
    };
    const LEGACY = [['chat gpt', ['gen_ai.system']]];
    const LATEST = [
      ['chat gpt', ['gen_ai.provider.name']],
      ['chat gpt', ['gen_ai.provider.name']],
      ['invoke_agent', []],
    ];

    it(`the old names by default; OTEL_SEMCONV_STABILITY_OPT_IN=${GEN_AI_OPT_IN} (among others) opts in, read when instrument() is called`, () => {
      delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
      expect(oneCall()).to.deep.equal(LEGACY);
      process.env.OTEL_SEMCONV_STABILITY_OPT_IN = `http, ${GEN_AI_OPT_IN}`;
      expect(oneCall()).to.deep.equal(LATEST);
      process.env.OTEL_SEMCONV_STABILITY_OPT_IN = 'http,gen_ai_latest';
      expect(oneCall()).to.deep.equal(LEGACY);
    });

    it('the semconv option wins over the environment', () => {
      process.env.OTEL_SEMCONV_STABILITY_OPT_IN = GEN_AI_OPT_IN;
      expect(oneCall('legacy')).to.deep.equal(LEGACY);
      delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
      expect(oneCall('latest')).to.deep.equal(LATEST);
    });

    it('invalid new options throw InvalidOptionError naming the option', () => {
      const cases: [unknown, RegExp][] = [
        [{ semconv: 'newest' }, /semconv/],
        [{ providers: { gpt: 1 } }, /providers/],
        [{ agentName: '' }, /agentName/],
        [{ mcp: [{}] }, /mcp/],
        [{ mcp: [{ prefix: 'wx_', port: 1 }] }, /mcp/],
        [{ mcp: { prefix: 'wx_' } }, /mcp/],
      ];
      for (const [options, name] of cases)
        expect(() => instrument(new Subject<HealEvent>(), options as never), JSON.stringify(options)).to.throw(InvalidOptionError, name);
    });
  });
});
