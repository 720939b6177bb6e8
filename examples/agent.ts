/**
 * `npm run example` (second part, after basic.ts): a whole agent run healing itself, in real
 * time (about 2 s), with scripted models and tools from `rxheal/testing` — no API key, no
 * network.
 *
 * - The model calls get_weather with bad units; the tool fails; reflectOnError turns the error
 *   into a reflection; the model corrects its arguments.
 * - knowledge_search is slower than its 800 ms deadline: the run degrades and continues.
 * - The primary model dies after three words of its answer; fallbackModel restarts the answer on
 *   the secondary (the UI is told to discard the partial text).
 */
import * as t from 'io-ts';
import { asyncScheduler, Subject } from 'rxjs';
import {
  CapabilityRegistry,
  CircuitBreakerRegistry,
  HealHub,
  defineTool,
  degradeAfter,
  fallbackModel,
  reflectOnError,
  retryWithBackoff,
  runAgent,
  summarize,
  type AgentEvent,
  type ResilienceSummary,
  type TurnEvent,
} from 'rxheal';
import { finish, scriptedModel, scriptedTool, textDeltas, toolCall } from 'rxheal/testing';

const start = asyncScheduler.now();
const at = (): string => `${String(asyncScheduler.now() - start).padStart(5)} ms`;

const getWeather = defineTool({
  name: 'get_weather',
  description: 'Current weather for a city',
  args: t.type({ city: t.string, units: t.string }),
  idempotent: true,
  execute: ({ city, units }) => {
    if (units !== 'celsius' && units !== 'fahrenheit') throw new Error('Invalid units. Supported: celsius, fahrenheit');
    return [{ city, temperature: 22, condition: 'sunny' }];
  },
});
const search = scriptedTool('knowledge_search', [{ marbles: '1500ms (r|)', values: { r: 'umbrella policy' } }], {
  args: t.type({ query: t.string }),
  idempotent: true,
});

// the primary streams three words of its final answer, then its connection drops
const words = (text: string): Record<string, TurnEvent> => Object.fromEntries(textDeltas(text).map((e, i) => [String.fromCharCode(97 + i), e]));
const primary = scriptedModel('primary', [
  { marbles: '100ms (ab|)', values: { a: toolCall('c1', 'get_weather', { city: 'nyc', units: 'kelvin' }), b: finish('tool-calls') } },
  { marbles: '100ms (ab|)', values: { a: toolCall('c2', 'get_weather', { city: 'NYC', units: 'celsius' }), b: finish('tool-calls') } },
  { marbles: '100ms (ab|)', values: { a: toolCall('c3', 'knowledge_search', { query: 'umbrella' }), b: finish('tool-calls') } },
  { marbles: '100ms a 50ms b 50ms c 50ms #', values: words('It is sunny'), error: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) },
]);
const secondary = scriptedModel('secondary', [
  { marbles: '200ms a 40ms b 40ms c 40ms d 40ms e 40ms f 40ms g 40ms (hz|)', values: { ...words('It is 22 °C and sunny in NYC.'), z: finish() } },
]);

const hub = new HealHub();
const capabilities = new CapabilityRegistry();
const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 30_000 });

const shown: string[] = [];
const print = (e: AgentEvent): void => {
  switch (e.type) {
    case 'text-delta':
      shown.push(e.text);
      return console.log(`${at()}  text      ${JSON.stringify(e.text)}   → shown: ${JSON.stringify(shown.join(''))}`);
    case 'reset':
      shown.length = 0;
      return console.log(`${at()}  reset     (${e.reason}: discard the partial answer)`);
    case 'tool-call':
      return console.log(`${at()}  tool-call ${e.name}(${JSON.stringify(e.args)})`);
    case 'tool-result':
      return console.log(`${at()}  result    ${e.name} → ${JSON.stringify(e.result)}`);
    case 'tool-error':
      return console.log(`${at()}  tool-err  ${e.name}: ${e.error}`);
    case 'reflection':
      return console.log(`${at()}  reflect   ${e.tool} ${e.attempt}/${e.max}: ${e.prompt}`);
    case 'fallback':
      return console.log(`${at()}  fallback  ${e.from} → ${e.to} (${e.reason}${e.midStream ? ', mid-stream' : ''})`);
    case 'degraded':
      return console.log(`${at()}  degraded  ${e.capability}: ${e.reason}`);
    case 'retry':
      return console.log(`${at()}  retry     ${e.target} #${e.attempt} in ${e.delayMs} ms (${e.category})`);
    case 'circuit':
      return console.log(`${at()}  circuit   ${e.breaker} ${e.kind === 'transition' ? `${e.from} → ${e.to}` : 'rejected a call'}`);
    case 'message':
      if (e.message.role === 'assistant' && !e.message.toolCalls) console.log(`${at()}  answer    ${JSON.stringify(e.message.content)}`);
      return;
    default:
      return;
  }
};

/** The article's resilience metrics for the run, from `summarize`. */
const printSummary = (s: ResilienceSummary): void => {
  const pct = (rate: number | null): string => (rate === null ? '–' : `${Math.round(rate * 100)} %`);
  console.log('\nresilience summary');
  for (const [target, t] of Object.entries(s.targets)) {
    if (t.retries > 0)
      console.log(`  retries   ${target}: ${t.retries} in ${t.calls} executions (${pct(t.retryRate)}), ${JSON.stringify(t.retriesByCategory)}`);
  }
  for (const [name, b] of Object.entries(s.circuits)) console.log(`  breaker   ${name}: opened ${b.opened}×, open ${b.openMs} ms`);
  console.log(`  fallbacks ${s.fallbacks.total} (${pct(s.fallbacks.perModelCall)} of model calls) ${JSON.stringify(s.fallbacks.byRoute)}`);
  console.log(`  self-correction ${s.reflections.corrected}/${s.reflections.total - s.reflections.exhausted} reflections (${pct(s.reflections.successRate)})`);
  for (const [name, c] of Object.entries(s.capabilities))
    console.log(`  degraded  ${name}: ${c.degraded}×, ${c.degradedMs} ms${c.degradedSince === undefined ? '' : ' (still)'}`);
};

export function runAgentExample(): Promise<void> {
  return new Promise((resolve, reject) => {
    // one stream of the run's events, for the printout and the summary
    const events = new Subject<AgentEvent>();
    summarize(events, { emit: 'final' }).subscribe(printSummary);
    events.subscribe({ next: print, error: reject, complete: () => resolve() });
    runAgent({
      model: fallbackModel([primary, secondary], { breakers, hub, midStream: 'restart' }),
      tools: [getWeather, search],
      hub,
      capabilities,
      instruction: 'You are a helpful assistant with access to external APIs.',
      messages: [{ role: 'user', content: "What's the weather in NYC, and do I need an umbrella?" }],
      toolPipeline: (call, call$, { hub }) => {
        const healed = call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, initialBackoffMs: 100 }), reflectOnError());
        return call.name === 'knowledge_search'
          ? healed.pipe(degradeAfter(800, 'Knowledge search is unavailable right now.', { capability: call.name, capabilities }))
          : healed;
      },
    }).subscribe(events);
  });
}
