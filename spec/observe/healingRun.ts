/**
 * The scripted run behind the adapter specs (logs, OpenTelemetry, summary): ONE runAgent run, in
 * virtual time, that falls back, reflects, retries, opens a breaker and degrades.
 *
 * ```
 * step 1   0 ms    model call: primary 503s at 10 ms → fallback to secondary, which asks at 30 ms for
 *                  c1 get_weather (units: kelvin), c2 broken_api, c3 knowledge_search
 *   c1     30      bad arguments → reflection 1/3 (validation_error)
 *   c2     30…430  503 × 5, retried every 100 ms; the 5th failure (430) opens tool:broken_api
 *                  (reset 60 000 ms); the 5th retry (530) is rejected by the open circuit
 *   c3     30      no result within 3000 ms → degraded knowledge-search (3030)
 * step 2   3030    model call: primary asks at 3040 for c4 get_weather (celsius), c5 knowledge_search
 *   c4     3040    503 → retry 1/3 after 500 ms → ok at 3540 (retry succeeded, attempt 2)
 *   c5     3040    answers in 200 ms → restored knowledge-search (3240)
 * step 3   3540    model call: primary answers at 3550; the run completes
 *          60430   tool:broken_api turns half-open (reported on the hub only: the run has ended)
 * ```
 */
import * as t from 'io-ts';
import { Subject, type Observable } from 'rxjs';
import { CapabilityRegistry } from '../../src/core/capabilities/CapabilityRegistry.js';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { HttpError } from '../../src/core/errors/errors.js';
import type { AgentEvent, ToolCall, TurnEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent, type PipelineContext } from '../../src/sources/runAgent.js';
import { finish, record, scriptedModel, scriptedTool, textDeltas, toolCall } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';

/** Turn events as a marble script: all of them at once after `ms`. */
const at = (ms: number, events: readonly TurnEvent[]) => ({
  marbles: `${ms}ms (${events.map((_, i) => String.fromCharCode(97 + i)).join('')}|)`,
  values: Object.fromEntries(events.map((e, i) => [String.fromCharCode(97 + i), e])),
});

/** The run's config, fresh fakes each time, on the given hub. */
export function healingRunConfig(hub: HealHub) {
  const capabilities = new CapabilityRegistry({ hub });
  const breakers = new CircuitBreakerRegistry({ failureThreshold: 5, resetTimeoutMs: 60_000 });
  const primary = scriptedModel('primary', [
    { marbles: '10ms #', error: new HttpError(503, {}, 'Service Unavailable') },
    at(10, [
      toolCall('c4', 'get_weather', { city: 'NYC', units: 'celsius' }),
      toolCall('c5', 'knowledge_search', { query: 'umbrella policy' }),
      finish('tool-calls', { inputTokens: 200, outputTokens: 25 }),
    ]),
    at(10, [...textDeltas('It is 22 °C and sunny in NYC.'), finish('stop', { inputTokens: 300, outputTokens: 12 })]),
  ]);
  const secondary = scriptedModel('secondary', [
    at(20, [
      toolCall('c1', 'get_weather', { city: 'NYC', units: 'kelvin' }),
      toolCall('c2', 'broken_api', {}),
      toolCall('c3', 'knowledge_search', { query: 'umbrella policy' }),
      finish('tool-calls', { inputTokens: 120, outputTokens: 30 }),
    ]),
  ]);
  const weather = scriptedTool('get_weather', [{ error: new HttpError(503, {}, 'Service Unavailable') }, { result: { temperature: 22, condition: 'sunny' } }], {
    args: t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) }),
    idempotent: true,
  });
  const broken = scriptedTool('broken_api', [{ error: new HttpError(503, {}, 'Service Unavailable') }], { idempotent: true });
  const search = scriptedTool(
    'knowledge_search',
    [
      { marbles: '5000ms (r|)', values: { r: 'slow docs' } },
      { marbles: '200ms (r|)', values: { r: 'umbrella policy: free' } },
    ],
    { args: t.type({ query: t.string }), idempotent: true },
  );

  const toolPipeline = (call: ToolCall, call$: Observable<unknown>, { hub }: PipelineContext): Observable<unknown> => {
    switch (call.name) {
      case 'get_weather':
        return call$.pipe(retryWithBackoff({ hub, target: 'tool:get_weather', maxRetries: 3, initialBackoffMs: 500, jitter: 'none' }), reflectOnError());
      case 'broken_api':
        return call$.pipe(
          circuitBreak(breakers.get('tool:broken_api'), { hub }),
          retryWithBackoff({ hub, target: 'tool:broken_api', maxRetries: 5, initialBackoffMs: 100, backoffMultiplier: 1, jitter: 'none' }),
        );
      default:
        return call$.pipe(degradeAfter(3000, 'Knowledge search is unavailable right now.', { capability: 'knowledge-search', capabilities, hub }));
    }
  };
  return {
    hub,
    model: fallbackModel([primary, secondary], { hub }),
    tools: [weather, broken, search],
    capabilities,
    instruction: 'You are a helpful assistant.',
    messages: [{ role: 'user' as const, content: "What's the weather in NYC, and may I bring an umbrella?" }],
    toolPipeline,
  };
}

/**
 * Runs the healing run in virtual time. `attach` subscribes the adapters under test to the run's
 * events (a hot Subject the run is subscribed into) before the run starts; the virtual clock is
 * flushed to the end (the breaker's reset timer included, at 60 430 ms).
 */
export function runHealingRun(attach: (events$: Observable<AgentEvent>, hub: HealHub) => void = () => undefined) {
  const hub = new HealHub();
  const events = new Subject<AgentEvent>();
  let log!: ReturnType<typeof record<AgentEvent>>;
  testScheduler().run(({ flush }) => {
    attach(events.asObservable(), hub);
    log = record(events.asObservable());
    runAgent(healingRunConfig(hub)).subscribe(events);
    flush();
  });
  return log;
}
