/**
 * Runs recorded by the otel specs on the current GenAI conventions (`semconv: 'latest'`): the
 * scripted healing run, a model retried in the model pipeline, and a run written event by event
 * with what the other two lack (a resumed stream, a hedge, cache counts, an MCP tool, a run that
 * errors).
 */
import { asyncScheduler, share, Subject } from 'rxjs';
import { HttpError } from '../../src/core/errors/errors.js';
import type { AgentEvent, HealEvent } from '../../src/core/events/events.js';
import { instrument, type InstrumentOptions } from '../../src/otel/index.js';
import { hedge } from '../../src/operators/hedge.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { finish, scriptedModel, textDeltas } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';
import { runHealingRun } from '../observe/healingRun.js';

/** The providers of the healing run's models. */
export const PROVIDERS = { primary: 'openai', secondary: 'anthropic', m: 'openai', gpt: 'openai', claude: 'anthropic' };

/** The scripted healing run (fallback, reflection, retries, breaker, degradation), opted in. */
export function healingRun(options: InstrumentOptions): void {
  runHealingRun((events$) => instrument(events$, { ...options, semconv: 'latest', providers: PROVIDERS, agentName: 'weather' }));
}

/** Model `m` fails at 5 ms with a 503 and is retried by the model pipeline after 100 ms; the retry answers. */
export function pipelineRetry(options: InstrumentOptions): void {
  const model = scriptedModel('m', [
    { marbles: '5ms #', error: new HttpError(503) },
    [...textDeltas('Hi'), finish('stop', { inputTokens: 3, outputTokens: 1 })],
  ]);
  testScheduler().run(({ flush }) => {
    const run$ = new Subject<AgentEvent>();
    instrument(run$, { ...options, semconv: 'latest', providers: PROVIDERS });
    runAgent({
      model,
      messages: [{ role: 'user', content: 'hi' }],
      modelPipeline: (_req, turn$, { hub }) => turn$.pipe(retryWithBackoff({ hub, target: 'model:m', initialBackoffMs: 100, jitter: 'none' })),
    }).subscribe(run$);
    flush();
  });
}

/**
 * Written event by event: model call `step-1.1` (gpt, one provider attempt under it) whose stream
 * is cut at 40 ms and resumed, hedged at 50 ms (the hedge wins at 70 ms), that reports cache
 * counts (1000 input tokens: 600 read from the cache, 100 written to it) and 20 reasoning tokens;
 * then tool `wx_forecast` of an MCP server answers `isError` and `search` fails; the run errors
 * with a 429 at 100 ms. `usage` gives the cache counts under other names when asked.
 */
export function eventByEvent(
  options: InstrumentOptions,
  usage: Record<string, number> = { cachedInputTokens: 600, cacheWriteTokens: 100, reasoningTokens: 20 },
): void {
  testScheduler().run(({ flush }) => {
    const events$ = new Subject<HealEvent>();
    // inside run(), asyncScheduler is the virtual clock
    const at = (ms: number, events: HealEvent[]): void => void asyncScheduler.schedule(() => events.forEach((e) => events$.next(e)), ms);
    instrument(events$, { ...options, semconv: 'latest', providers: PROVIDERS, mcp: [{ prefix: 'wx_', protocolVersion: '2025-06-18', sessionId: 'sess-1' }] });
    const total = { inputTokens: 1000, outputTokens: 50, ...usage };
    at(0, [
      { type: 'call-start', kind: 'model', name: 'gpt', id: 'step-1.1', step: 1, at: 0 },
      { type: 'call-start', kind: 'model', name: 'gpt', id: 'step-1.1/1', step: 1, at: 0, parentId: 'step-1.1' },
    ]);
    at(40, [{ type: 'resume', target: 'model:gpt', responseId: 'resp_1', startingAfter: 12, attempt: 1, max: 2, reason: 'dropped', error: 'socket hang up' }]);
    at(50, [{ type: 'hedge', target: 'model:gpt', kind: 'started', attempt: 1, at: 50, afterMs: 50 }]);
    at(70, [
      { type: 'hedge', target: 'model:gpt', kind: 'won', attempt: 1, at: 70 },
      { type: 'hedge', target: 'model:gpt', kind: 'cancelled', attempt: 0, at: 70 },
      {
        type: 'call-end',
        kind: 'model',
        name: 'gpt',
        id: 'step-1.1/1',
        step: 1,
        at: 70,
        durationMs: 70,
        outcome: 'success',
        parentId: 'step-1.1',
        usage: total,
      },
      { type: 'call-end', kind: 'model', name: 'gpt', id: 'step-1.1', step: 1, at: 70, durationMs: 70, outcome: 'success', usage: total },
      { type: 'call-start', kind: 'tool', name: 'wx_forecast', id: 't1', step: 1, at: 70 },
      { type: 'call-start', kind: 'tool', name: 'search', id: 't2', step: 1, at: 70 },
    ]);
    at(90, [
      { type: 'call-end', kind: 'tool', name: 'wx_forecast', id: 't1', step: 1, at: 90, durationMs: 20, outcome: 'success', isError: true },
      {
        type: 'call-end',
        kind: 'tool',
        name: 'search',
        id: 't2',
        step: 1,
        at: 90,
        durationMs: 20,
        outcome: 'error',
        error: 'HTTP 503',
        category: 'service_unavailable',
      },
    ]);
    asyncScheduler.schedule(() => events$.error(new HttpError(429)), 100);
    flush();
  });
}

/** fallbackModel([gpt, claude]) retrying each model once: gpt 503s, is retried and 502s mid-answer, claude answers. */
export function perModelRetries(options: InstrumentOptions): void {
  const gpt = scriptedModel('gpt', [
    { marbles: '-#', error: new HttpError(503) },
    { marbles: '-a-#', values: { a: { type: 'text-delta', text: 'Hi' } }, error: new HttpError(502) },
  ]);
  const claude = scriptedModel('claude', [[...textDeltas('Hello there.'), finish('stop', { inputTokens: 10, outputTokens: 3 })]]);
  const model = fallbackModel([gpt, claude], {
    perModel: (_id, s$, { hub }) => s$.pipe(retryWithBackoff({ hub, target: `model:${_id}`, maxRetries: 1, jitter: 'none' })),
  });
  testScheduler().run(({ flush }) => {
    const run$ = runAgent({ model, messages: [{ role: 'user', content: 'hi' }] }).pipe(share());
    instrument(run$, { ...options, semconv: 'latest', providers: PROVIDERS });
    run$.subscribe();
    flush();
  });
}

/** Model `m`'s turn hedged in the model pipeline after 50 ms: the first attempt would answer at 500 ms, the hedge answers at 60 ms. */
export function hedgedTurn(options: InstrumentOptions): void {
  const model = scriptedModel('m', [
    { marbles: '500ms (ab|)', values: { a: { type: 'text-delta', text: 'slow' }, b: { type: 'finish', reason: 'stop' } } },
    {
      marbles: '10ms (ab|)',
      values: { a: { type: 'text-delta', text: 'fast' }, b: { type: 'finish', reason: 'stop', usage: { inputTokens: 4, outputTokens: 1 } } },
    },
  ]);
  testScheduler().run(({ flush }) => {
    const run$ = runAgent({
      model,
      messages: [{ role: 'user', content: 'hi' }],
      modelPipeline: (_req, turn$, { hub }) => turn$.pipe(hedge({ after: 50, target: 'model:m', hub })),
    }).pipe(share());
    instrument(run$, { ...options, semconv: 'latest', providers: PROVIDERS });
    run$.subscribe();
    flush();
  });
}
