import { expect } from 'chai';
import { metrics, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { of, Subject } from 'rxjs';
import { HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { AgentEvent, HealEvent } from '../../src/core/events/events.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { instrument, instrumentLatency } from '../../src/otel/index.js';
import { ms, plain, sdk } from './sdk.js';
import { LatencyRegistry } from '../../src/core/latency/registry.js';
import { VirtualTimeScheduler } from 'rxjs';
import { finish, scriptedModel, textDeltas } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';
import { runHealingRun } from '../observe/healingRun.js';

const chat = (id: string, step: number, [start, end]: [number, number], usage: [number, number], events: unknown[] = []) => ({
  name: 'chat fallback(primary, secondary)',
  kind: SpanKind.CLIENT,
  time: [start, end],
  attributes: {
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': 'fallback(primary, secondary)',
    'rxheal.call.id': id,
    'rxheal.step': step,
    'rxheal.call.outcome': 'success',
    'gen_ai.usage.input_tokens': usage[0],
    'gen_ai.usage.output_tokens': usage[1],
  },
  status: { code: SpanStatusCode.UNSET },
  events,
});

/** A provider attempt under a run's model call (a model fallbackModel tried): a child span. */
const attempt = (
  model: string,
  id: string,
  parentId: string,
  step: number,
  [start, end]: [number, number],
  usage: [number, number] | undefined,
  events: unknown[] = [],
  error?: [string, string],
) => ({
  name: `chat ${model}`,
  kind: SpanKind.CLIENT,
  time: [start, end],
  attributes: {
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': model,
    'rxheal.call.id': id,
    'rxheal.step': step,
    'rxheal.call.parent_id': parentId,
    'rxheal.call.outcome': error ? 'error' : 'success',
    ...(usage ? { 'gen_ai.usage.input_tokens': usage[0], 'gen_ai.usage.output_tokens': usage[1] } : {}),
    ...(error ? { 'error.type': error[0] } : {}),
  },
  status: error ? { code: SpanStatusCode.ERROR, message: error[1] } : { code: SpanStatusCode.UNSET },
  events,
});

const tool = (name: string, id: string, step: number, [start, end]: [number, number], outcome: string, events: unknown[] = [], error?: [string, string]) => ({
  name: `execute_tool ${name}`,
  kind: SpanKind.INTERNAL,
  time: [start, end],
  attributes: {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': name,
    'gen_ai.tool.call.id': id,
    'rxheal.call.id': id,
    'rxheal.step': step,
    'rxheal.call.outcome': outcome,
    ...(error ? { 'error.type': error[0] } : {}),
  },
  status: error ? { code: SpanStatusCode.ERROR, message: error[1] } : { code: SpanStatusCode.UNSET },
  events,
});

const HTTP_503: [string, string] = ['service_unavailable', 'HTTP 503: Service Unavailable'];
const retryEvent = (at: number, attempt: number, max: number, delay: number) => [
  'rxheal.retry',
  at,
  {
    'rxheal.retry.attempt': attempt,
    'rxheal.retry.max': max,
    'rxheal.retry.delay_ms': delay,
    'error.type': 'service_unavailable',
    'rxheal.error': 'HTTP 503: Service Unavailable',
  },
];

describe('rxheal/otel instrument()', () => {
  describe('the scripted healing run (retry, breaker, fallback, reflection, degradation)', () => {
    it('a span per model call and per tool execution, GenAI attributes, healing as span events', () => {
      const { exporter, options } = sdk();
      runHealingRun((events$) => instrument(events$, options));
      expect(exporter.getFinishedSpans().map(plain)).to.deep.equal([
        // one child span per provider attempt: the fallback goes on the primary's, which it is about
        attempt(
          'primary',
          'step-1.1/1',
          'step-1.1',
          1,
          [0, 10],
          undefined,
          [
            [
              'rxheal.fallback',
              10,
              {
                'rxheal.fallback.from': 'model:primary',
                'rxheal.fallback.to': 'model:secondary',
                'rxheal.fallback.reason': 'service_unavailable',
                'rxheal.fallback.mid_stream': false,
              },
            ],
          ],
          HTTP_503,
        ),
        attempt('secondary', 'step-1.1/2', 'step-1.1', 1, [10, 30], [120, 30]),
        chat('step-1.1', 1, [0, 30], [120, 30]),
        tool(
          'get_weather',
          'c1',
          1,
          [30, 30],
          'error',
          [
            [
              'rxheal.reflection',
              30,
              { 'gen_ai.tool.name': 'get_weather', 'rxheal.reflection.attempt': 1, 'rxheal.reflection.max': 3, 'rxheal.reflection.exhausted': false },
            ],
          ],
          ['validation_error', 'units: expected "celsius" | "fahrenheit", got "kelvin"'],
        ),
        tool('broken_api', 'c2', 1, [30, 30], 'error', [retryEvent(30, 1, 5, 100)], HTTP_503),
        tool('broken_api', 'c2', 1, [130, 130], 'error', [retryEvent(130, 2, 5, 100)], HTTP_503),
        tool('broken_api', 'c2', 1, [230, 230], 'error', [retryEvent(230, 3, 5, 100)], HTTP_503),
        tool('broken_api', 'c2', 1, [330, 330], 'error', [retryEvent(330, 4, 5, 100)], HTTP_503),
        tool(
          'broken_api',
          'c2',
          1,
          [430, 430],
          'error',
          [
            [
              'rxheal.circuit.transition',
              430,
              {
                'rxheal.breaker': 'tool:broken_api',
                'rxheal.circuit.from': 'closed',
                'rxheal.circuit.to': 'open',
                'rxheal.circuit.reason': 'failure_threshold',
                'rxheal.circuit.failures': 5,
              },
            ],
            retryEvent(430, 5, 5, 100),
          ],
          HTTP_503,
        ),
        // the rejection at 530 has no call (the source was never subscribed): counted only
        tool('knowledge_search', 'c3', 1, [30, 3030], 'cancelled', [
          ['rxheal.degraded', 3030, { 'rxheal.capability': 'knowledge-search', 'rxheal.degraded.reason': 'no result within 3000 ms' }],
        ]),
        attempt('primary', 'step-2.1/1', 'step-2.1', 2, [3030, 3040], [200, 25]),
        chat('step-2.1', 2, [3030, 3040], [200, 25]),
        tool('get_weather', 'c4', 2, [3040, 3040], 'error', [retryEvent(3040, 1, 3, 500)], HTTP_503),
        tool('knowledge_search', 'c5', 2, [3040, 3240], 'success', [['rxheal.restored', 3240, { 'rxheal.capability': 'knowledge-search' }]]),
        tool('get_weather', 'c4', 2, [3540, 3540], 'success', [['rxheal.retry.succeeded', 3540, { 'rxheal.retry.attempt': 2 }]]),
        attempt('primary', 'step-3.1/1', 'step-3.1', 3, [3540, 3550], [300, 12]),
        chat('step-3.1', 3, [3540, 3550], [300, 12]),
      ]);
    });

    it("each provider attempt's span is a child of the run's model call span, in the same trace", () => {
      const { exporter, options } = sdk();
      runHealingRun((events$) => instrument(events$, options));
      const spans = exporter.getFinishedSpans();
      const byCallId = new Map(spans.map((span) => [span.attributes['rxheal.call.id'], span]));
      const parentOf = (id: string) => byCallId.get(id)!.parentSpanContext?.spanId;
      const run = byCallId.get('step-1.1')!.spanContext();
      expect(parentOf('step-1.1/1')).to.equal(run.spanId);
      expect(parentOf('step-1.1/2')).to.equal(run.spanId);
      expect(byCallId.get('step-1.1/2')!.spanContext().traceId).to.equal(run.traceId);
      expect(parentOf('step-1.1')).to.equal(undefined);
      expect(parentOf('step-2.1/1')).to.equal(byCallId.get('step-2.1')!.spanContext().spanId);
    });

    it('metrics: retries, backoff histogram, circuit transitions and rejections, fallbacks, reflections, degradations', async () => {
      const { options, collect } = sdk();
      runHealingRun((events$) => instrument(events$, options));
      expect(await collect()).to.deep.equal({
        'rxheal.retries': [
          [{ 'rxheal.target': 'tool:broken_api', 'error.type': 'service_unavailable' }, 5],
          [{ 'rxheal.target': 'tool:get_weather', 'error.type': 'service_unavailable' }, 1],
        ],
        'rxheal.retry.backoff': [
          [
            { 'rxheal.target': 'tool:broken_api', 'error.type': 'service_unavailable' },
            { count: 5, sum: 500, min: 100, max: 100 },
          ],
          [
            { 'rxheal.target': 'tool:get_weather', 'error.type': 'service_unavailable' },
            { count: 1, sum: 500, min: 500, max: 500 },
          ],
        ],
        'rxheal.circuit.transitions': [[{ 'rxheal.breaker': 'tool:broken_api', 'rxheal.circuit.from': 'closed', 'rxheal.circuit.to': 'open' }, 1]],
        'rxheal.circuit.rejections': [[{ 'rxheal.breaker': 'tool:broken_api' }, 1]],
        'rxheal.fallbacks': [
          [{ 'rxheal.fallback.from': 'model:primary', 'rxheal.fallback.to': 'model:secondary', 'rxheal.fallback.reason': 'service_unavailable' }, 1],
        ],
        'rxheal.reflections': [[{ 'gen_ai.tool.name': 'get_weather', 'rxheal.reflection.exhausted': false }, 1]],
        'rxheal.degradations': [[{ 'rxheal.capability': 'knowledge-search' }, 1]],
      });
    });

    it("the hub's events$ also carries the breaker turning half-open after the run (60 430 ms)", async () => {
      const { options, collect, exporter } = sdk();
      runHealingRun((_events$, hub) => instrument(hub.events$, options));
      const collected = await collect();
      expect(collected['rxheal.circuit.transitions']).to.deep.equal([
        [{ 'rxheal.breaker': 'tool:broken_api', 'rxheal.circuit.from': 'closed', 'rxheal.circuit.to': 'open' }, 1],
        [{ 'rxheal.breaker': 'tool:broken_api', 'rxheal.circuit.from': 'open', 'rxheal.circuit.to': 'half-open' }, 1],
      ]);
      expect(exporter.getFinishedSpans()).to.have.length(17); // 3 model calls, 4 provider attempts, 10 tool executions
      expect(collected['rxheal.retries']).to.have.length(2);
    });

    it('the histogram buckets backoff delays in ms', async () => {
      const { options, reader } = sdk();
      runHealingRun((events$) => instrument(events$, options));
      const { resourceMetrics } = await reader.collect();
      const backoff = resourceMetrics.scopeMetrics[0]!.metrics.find((m) => m.descriptor.name === 'rxheal.retry.backoff')!;
      expect(backoff.descriptor.unit).to.equal('ms');
      const point = backoff.dataPoints[0]!.value as { buckets: { boundaries: number[]; counts: number[] } };
      expect(point.buckets.boundaries).to.deep.equal([0, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000]);
      expect(point.buckets.counts[2]).to.equal(5); // (50, 100]
    });
  });

  describe('retries withheld for a tool that is not idempotent', () => {
    it('a span event on the tool call that failed, and a counter', async () => {
      const { exporter, options, collect } = sdk();
      const events$ = new Subject<AgentEvent>();
      testScheduler().run(({ flush }) => {
        instrument(events$, options);
        events$.next({ type: 'call-start', kind: 'tool', name: 'send_email', id: 'e1', step: 1, at: 0 });
        events$.next({
          type: 'call-end',
          kind: 'tool',
          name: 'send_email',
          id: 'e1',
          step: 1,
          at: 0,
          durationMs: 0,
          outcome: 'error',
          error: 'HTTP 503',
          category: 'service_unavailable',
        });
        events$.next({ type: 'retry-withheld', target: 'tool:send_email', reason: 'not_idempotent', category: 'service_unavailable', error: 'HTTP 503' });
        flush();
      });
      const attributes = { 'rxheal.target': 'tool:send_email', 'error.type': 'service_unavailable', 'rxheal.retry.withheld_reason': 'not_idempotent' };
      expect(exporter.getFinishedSpans().map(plain)[0]!.events).to.deep.equal([['rxheal.retry.withheld', 0, attributes]]);
      expect((await collect())['rxheal.retries.withheld']).to.deep.equal([[attributes, 1]]);
    });
  });

  describe('which span an event goes on', () => {
    it('a model retried in the model pipeline: the retry goes on the failed call, retry-succeeded on the next', () => {
      const { exporter, options } = sdk();
      const model = scriptedModel('m', [
        { marbles: '5ms #', error: new HttpError(503) },
        [...textDeltas('Hi'), finish('stop', { inputTokens: 3, outputTokens: 1 })],
      ]);
      testScheduler().run(({ flush }) => {
        const run$ = new Subject<AgentEvent>();
        instrument(run$, options);
        runAgent({
          model,
          messages: [{ role: 'user', content: 'hi' }],
          modelPipeline: (_req, turn$, { hub }) => turn$.pipe(retryWithBackoff({ hub, target: 'model:m', initialBackoffMs: 100, jitter: 'none' })),
        }).subscribe(run$);
        flush();
      });
      const spans = exporter.getFinishedSpans().map(plain);
      expect(spans.map((s) => [s.name, s.time, s.attributes['rxheal.call.outcome'], s.attributes['error.type'], s.events.map((e) => e[0])])).to.deep.equal([
        ['chat m', [0, 5], 'error', 'service_unavailable', ['rxheal.retry']],
        ['chat m', [105, 105], 'success', undefined, ['rxheal.retry.succeeded']],
      ]);
      expect(spans[0]!.status).to.deep.equal({ code: SpanStatusCode.ERROR, message: 'HTTP 503' });
      expect(spans[1]!.attributes).to.deep.include({ 'gen_ai.usage.input_tokens': 3, 'gen_ai.usage.output_tokens': 1, 'rxheal.call.id': 'step-1.2' });
    });

    it('two calls of one tool in flight: a retry goes on the one that just failed, not the other', () => {
      const { exporter, options } = sdk();
      const start = (id: string): HealEvent => ({ type: 'call-start', kind: 'tool', name: 'search', id, step: 1, at: 0 });
      testScheduler().run(({ flush }) => {
        const events$ = new Subject<HealEvent>();
        instrument(events$, options);
        events$.next(start('a'));
        events$.next(start('b'));
        events$.next({
          type: 'call-end',
          kind: 'tool',
          name: 'search',
          id: 'a',
          step: 1,
          at: 0,
          durationMs: 0,
          outcome: 'error',
          error: 'HTTP 503',
          category: 'service_unavailable',
        });
        events$.next({ type: 'retry', target: 'tool:search', attempt: 1, max: 3, delayMs: 500, category: 'service_unavailable' });
        events$.next({ type: 'call-end', kind: 'tool', name: 'search', id: 'b', step: 1, at: 0, durationMs: 0, outcome: 'success' });
        flush();
      });
      expect(exporter.getFinishedSpans().map((s) => [s.attributes['gen_ai.tool.call.id'], s.events.map((e) => e.name)])).to.deep.equal([
        ['a', ['rxheal.retry']],
        ['b', []],
      ]);
    });

    it('a span ends at its call-end time, but only at the end of the instant, so healing reported right after lands on it', () => {
      const { exporter, options } = sdk();
      let endedBeforeFlush = -1;
      testScheduler().run(({ flush }) => {
        const events$ = new Subject<HealEvent>();
        instrument(events$, options);
        events$.next({ type: 'call-start', kind: 'tool', name: 'search', id: 's1', step: 1, at: 0 });
        events$.next({ type: 'call-end', kind: 'tool', name: 'search', id: 's1', step: 1, at: 0, durationMs: 0, outcome: 'cancelled' });
        endedBeforeFlush = exporter.getFinishedSpans().length;
        events$.next({ type: 'degraded', capability: 'knowledge', reason: 'no result within 3000 ms' });
        flush();
      });
      expect(endedBeforeFlush).to.equal(0);
      expect(exporter.getFinishedSpans().map((s) => s.events.map((e) => e.name))).to.deep.equal([['rxheal.degraded']]);
    });

    it('events naming no call in flight are only counted; a degradation long after a call is not put on it', async () => {
      const { exporter, options, collect } = sdk();
      testScheduler().run(({ flush }) => {
        const events$ = new Subject<HealEvent>();
        instrument(events$, options);
        events$.next({ type: 'call-start', kind: 'tool', name: 'other', id: 'o1', step: 1, at: 0 });
        events$.next({ type: 'circuit', breaker: 'tool:broken_api', kind: 'rejected', retryAfterMs: 1000 });
        events$.next({ type: 'retry', target: 'tool:broken_api', attempt: 1, max: 3, delayMs: 100, category: 'circuit_open' });
        events$.next({ type: 'budget-exceeded', resource: 'tokens', limit: 10, used: 12 });
        events$.next({ type: 'call-end', kind: 'tool', name: 'other', id: 'o1', step: 1, at: 0, durationMs: 0, outcome: 'success' });
        flush();
        events$.next({ type: 'degraded', capability: 'knowledge', reason: 'later' });
        flush();
      });
      expect(exporter.getFinishedSpans().map((s) => s.events.length)).to.deep.equal([0]);
      const collected = await collect();
      expect(collected['rxheal.circuit.rejections']).to.deep.equal([[{ 'rxheal.breaker': 'tool:broken_api' }, 1]]);
      expect(collected['rxheal.budget.exceeded']).to.deep.equal([[{ 'rxheal.budget.resource': 'tokens' }, 1]]);
      expect(collected['rxheal.degradations']).to.deep.equal([[{ 'rxheal.capability': 'knowledge' }, 1]]);
    });
  });

  describe('hedges and bulkheads', () => {
    it('are counted, and go on the span of the call they name', async () => {
      const { exporter, options, collect } = sdk();
      testScheduler().run(({ flush }) => {
        const events$ = new Subject<HealEvent>();
        instrument(events$, options);
        events$.next({ type: 'call-start', kind: 'model', name: 'gpt', id: 'step-1.1', step: 1, at: 0 });
        events$.next({ type: 'bulkhead', bulkhead: 'model:gpt', kind: 'admitted', active: 1, queued: 0, waitMs: 4 });
        events$.next({ type: 'hedge', target: 'model:gpt', kind: 'started', attempt: 1, at: 950, afterMs: 950 });
        events$.next({ type: 'hedge', target: 'model:gpt', kind: 'won', attempt: 1, at: 1200 });
        events$.next({ type: 'hedge', target: 'model:gpt', kind: 'cancelled', attempt: 0, at: 1200 });
        events$.next({ type: 'call-end', kind: 'model', name: 'gpt', id: 'step-1.1', step: 1, at: 1500, durationMs: 1500, outcome: 'success' });
        events$.next({ type: 'bulkhead', bulkhead: 'tool:search', kind: 'rejected', active: 8, queued: 0, reason: 'full' });
        flush();
      });
      const [span] = exporter.getFinishedSpans();
      expect(span!.events.map((e) => [e.name, e.attributes, ms(e.time)])).to.deep.equal([
        [
          'rxheal.bulkhead',
          {
            'rxheal.bulkhead': 'model:gpt',
            'rxheal.bulkhead.kind': 'admitted',
            'rxheal.bulkhead.active': 1,
            'rxheal.bulkhead.queued': 0,
            'rxheal.bulkhead.wait_ms': 4,
          },
          0,
        ],
        ['rxheal.hedge', { 'rxheal.hedge.kind': 'started', 'rxheal.hedge.attempt': 1, 'rxheal.hedge.after_ms': 950 }, 950],
        ['rxheal.hedge', { 'rxheal.hedge.kind': 'won', 'rxheal.hedge.attempt': 1 }, 1200],
        ['rxheal.hedge', { 'rxheal.hedge.kind': 'cancelled', 'rxheal.hedge.attempt': 0 }, 1200],
      ]);
      const collected = await collect();
      expect(collected['rxheal.hedges']).to.deep.equal([
        [{ 'rxheal.target': 'model:gpt', 'rxheal.hedge.kind': 'started' }, 1],
        [{ 'rxheal.target': 'model:gpt', 'rxheal.hedge.kind': 'won' }, 1],
        [{ 'rxheal.target': 'model:gpt', 'rxheal.hedge.kind': 'cancelled' }, 1],
      ]);
      expect(collected['rxheal.bulkhead.calls']).to.deep.equal([
        [{ 'rxheal.bulkhead': 'model:gpt', 'rxheal.bulkhead.kind': 'admitted' }, 1],
        [{ 'rxheal.bulkhead': 'tool:search', 'rxheal.bulkhead.kind': 'rejected', 'rxheal.bulkhead.reason': 'full' }, 1],
      ]);
    });
  });

  describe('resumes', () => {
    it('are counted by target and reason, and go on the span of the model call they healed', async () => {
      const { exporter, options, collect } = sdk();
      testScheduler().run(({ flush }) => {
        const events$ = new Subject<HealEvent>();
        instrument(events$, options);
        events$.next({ type: 'call-start', kind: 'model', name: 'gpt', id: 'step-1.1', step: 1, at: 0 });
        flush();
        events$.next({ type: 'resume', target: 'model:gpt', responseId: 'resp_1', startingAfter: 12, attempt: 1, max: 2, reason: 'dropped', error: 'reset' });
        events$.next({ type: 'call-end', kind: 'model', name: 'gpt', id: 'step-1.1', step: 1, at: 40, durationMs: 40, outcome: 'success' });
        flush();
      });
      const [span] = exporter.getFinishedSpans();
      expect(span!.events.map((e) => [e.name, e.attributes])).to.deep.equal([
        [
          'rxheal.resume',
          {
            'rxheal.resume.reason': 'dropped',
            'rxheal.resume.attempt': 1,
            'rxheal.resume.max': 2,
            'rxheal.resume.response_id': 'resp_1',
            'rxheal.resume.starting_after': 12,
            'rxheal.error': 'reset',
          },
        ],
      ]);
      const collected = await collect();
      expect(collected['rxheal.resumes']).to.deep.equal([[{ 'rxheal.target': 'model:gpt', 'rxheal.resume.reason': 'dropped' }, 1]]);
    });
  });

  describe('money', () => {
    it('dollars charged are summed by model (rxheal.spend, USD); a budget refusal or cut is counted with its limiter and whether it cut', async () => {
      const { options, collect } = sdk();
      testScheduler().run(({ flush }) => {
        const events$ = new Subject<HealEvent>();
        instrument(events$, options);
        events$.next({ type: 'spend', model: 'gpt-5-mini', usd: 0.25, totalUsd: 0.25, estimated: false });
        events$.next({ type: 'spend', model: 'gpt-5-mini', usd: 0.5, totalUsd: 0.75, estimated: false });
        events$.next({ type: 'spend', model: 'gpt-5-mini', usd: 0.125, totalUsd: 0.875, estimated: true });
        events$.next({ type: 'budget-exceeded', resource: 'usd', limit: 1, used: 1.2, cut: true, model: 'gpt-5-mini', limiter: 'team' });
        flush();
      });
      const collected = await collect();
      expect(collected['rxheal.spend']).to.deep.equal([
        [{ 'gen_ai.request.model': 'gpt-5-mini', 'rxheal.spend.estimated': false }, 0.75],
        [{ 'gen_ai.request.model': 'gpt-5-mini', 'rxheal.spend.estimated': true }, 0.125],
      ]);
      expect(collected['rxheal.budget.exceeded']).to.deep.equal([
        [{ 'rxheal.budget.resource': 'usd', 'rxheal.budget.cut': true, 'rxheal.budget.limiter': 'team' }, 1],
      ]);
    });
  });

  describe('instrumentLatency(): observed latency as gauges', () => {
    it('each tracker’s quantiles of time to first item and gaps, and its sample counts, read at each collection', async () => {
      const { options, collect } = sdk();
      const latency = new LatencyRegistry({ scheduler: new VirtualTimeScheduler() });
      const gauges = instrumentLatency(latency, { meter: options.meter });
      for (let ms = 1; ms <= 100; ms++) latency.get('model:gpt').record('first', ms);
      latency.get('tool:search').record('gap', 7);
      const collected = await collect();
      expect(collected['rxheal.latency.first_item']).to.deep.equal(
        (['p50', 'p90', 'p95', 'p99', 'p99.9'] as const).map((q, i) => [
          { 'rxheal.target': 'model:gpt', 'rxheal.latency.quantile': q },
          [50, 90, 95, 99, 100][i],
        ]),
      );
      expect(collected['rxheal.latency.gap']).to.deep.equal(
        (['p50', 'p90', 'p95', 'p99', 'p99.9'] as const).map((q) => [{ 'rxheal.target': 'tool:search', 'rxheal.latency.quantile': q }, 7]),
      );
      expect(collected['rxheal.latency.samples']).to.deep.equal([
        [{ 'rxheal.target': 'model:gpt', 'rxheal.latency.kind': 'first' }, 100],
        [{ 'rxheal.target': 'model:gpt', 'rxheal.latency.kind': 'gap' }, 0],
        [{ 'rxheal.target': 'tool:search', 'rxheal.latency.kind': 'first' }, 0],
        [{ 'rxheal.target': 'tool:search', 'rxheal.latency.kind': 'gap' }, 1],
      ]);
      // unsubscribed: the gauges are no longer read (the SDK may still export the last points)
      gauges.unsubscribe();
      for (let i = 0; i < 1000; i++) latency.get('model:gpt').record('first', 5000);
      expect((await collect())['rxheal.latency.first_item']?.find(([a]) => a['rxheal.latency.quantile'] === 'p50')?.[1] ?? 50).to.equal(50);
    });

    it('rejects a source without snapshot() and a bad meter', () => {
      expect(() => instrumentLatency({} as never)).to.throw(InvalidOptionError, /source/);
      expect(() => instrumentLatency(new LatencyRegistry(), { meter: {} as never })).to.throw(InvalidOptionError, /meter/);
    });
  });

  describe('lifecycle', () => {
    it('a call that ended without its start being seen gets a span from at - durationMs', () => {
      const { exporter, options } = sdk();
      testScheduler().run(({ flush }) => {
        instrument(
          of<HealEvent[]>({ type: 'call-end', kind: 'model', name: 'gpt-4o', id: 'step-1.1', step: 1, at: 900, durationMs: 400, outcome: 'success' }),
          options,
        );
        flush();
      });
      expect(exporter.getFinishedSpans().map((s) => [s.name, ms(s.startTime), ms(s.endTime)])).to.deep.equal([['chat gpt-4o', 500, 900]]);
    });

    it("unsubscribing ends the spans of calls still in flight, marked 'unfinished'", () => {
      const { exporter, options } = sdk();
      testScheduler().run(({ flush }) => {
        const events$ = new Subject<HealEvent>();
        const subscription = instrument(events$, options);
        events$.next({ type: 'call-start', kind: 'tool', name: 'slow', id: 'x', step: 1, at: 0 });
        flush();
        subscription.unsubscribe();
        events$.next({ type: 'call-end', kind: 'tool', name: 'slow', id: 'x', step: 1, at: 0, durationMs: 0, outcome: 'success' });
        flush();
      });
      const spans = exporter.getFinishedSpans();
      expect(spans.map((s) => [s.name, s.attributes['rxheal.call.outcome']])).to.deep.equal([['execute_tool slow', 'unfinished']]);
    });

    it("without options it uses the global tracer and meter ('rxheal')", async () => {
      const { exporter, tracerProvider, meterProvider, reader } = sdk();
      trace.setGlobalTracerProvider(tracerProvider);
      metrics.setGlobalMeterProvider(meterProvider);
      try {
        testScheduler().run(({ flush }) => {
          instrument(
            of<HealEvent[]>(
              { type: 'call-start', kind: 'tool', name: 'get_weather', id: 'c1', step: 1, at: 0 },
              {
                type: 'call-end',
                kind: 'tool',
                name: 'get_weather',
                id: 'c1',
                step: 1,
                at: 0,
                durationMs: 0,
                outcome: 'error',
                error: 'HTTP 503',
                category: 'service_unavailable',
              },
              { type: 'retry', target: 'tool:get_weather', attempt: 1, max: 3, delayMs: 500, category: 'service_unavailable' },
            ),
          );
          flush();
        });
        expect(exporter.getFinishedSpans().map((s) => [s.name, s.instrumentationScope.name, s.events.length])).to.deep.equal([
          ['execute_tool get_weather', 'rxheal', 1],
        ]);
        const { resourceMetrics } = await reader.collect();
        expect(resourceMetrics.scopeMetrics.map((s) => s.scope.name)).to.deep.equal(['rxheal']);
      } finally {
        trace.disable();
        metrics.disable();
      }
    });

    it('invalid options throw InvalidOptionError at once', () => {
      for (const options of [{ tracer: {} }, { meter: { createCounter: () => undefined } }, { scheduler: 1 }, { exporter: {} }, 'otel']) {
        expect(() => instrument(of(), options as never), JSON.stringify(options)).to.throw(InvalidOptionError);
      }
    });
  });

  it('records nothing unless called: the healing run alone leaves the global SDK empty (no operator exports on its own)', async () => {
    const { exporter, tracerProvider, meterProvider, collect } = sdk();
    trace.setGlobalTracerProvider(tracerProvider);
    metrics.setGlobalMeterProvider(meterProvider);
    try {
      const log = runHealingRun();
      expect(log.completed()).to.equal(true);
      expect(exporter.getFinishedSpans()).to.deep.equal([]);
      expect(await collect()).to.deep.equal({});
    } finally {
      trace.disable();
      metrics.disable();
    }
  });
});
