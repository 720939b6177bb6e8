/**
 * checkHealing's own gallery: agents broken in the ways its docs and its hostile reviews name,
 * each beside the agent that fixes it — and correct agents that once looked broken to it (an
 * async tool, a follow-up question, retries under the default jitter). The gallery spec checks
 * that each broken one is caught (by the invariants named) and each fixed one passes, twice
 * with the same result.
 */
import * as t from 'io-ts';
import { catchError, of, retry, tap, timeout } from 'rxjs';
import type { AgentFactory, CheckHealingOptions } from '../../src/chaos/index.js';
import { faults } from '../../src/chaos/index.js';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import type { Message, TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type Model } from '../../src/core/model/model.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, fromMarbles, textDeltas, toolCall } from '../../src/testing/index.js';
import { BUDGET, budgetHeld, budgetLeak, concatenates, healing, noDeadline, retriesBooking } from './agents.js';

/** One entry: the agent that breaks (or none: a correct agent once called broken), the one that heals, the check's options, what must catch the broken one. */
export interface GalleryCase {
  readonly name: string;
  readonly broken?: AgentFactory;
  readonly fixed: AgentFactory;
  readonly options: CheckHealingOptions;
  /** The invariants the broken agent's shrunk failure names. */
  readonly caughtBy?: readonly string[];
}

/** A provider stand-in: `text` a token every 2 ms on the run's (virtual) clock; asked about a tool result, `answer`. */
function speaker(id: string, text: string, tool?: { readonly name: string; readonly args: unknown }): Model {
  return {
    id,
    stream: (request, { scheduler }) => {
      const last = request.messages.at(-1);
      const events: TurnEvent[] =
        tool && last?.role !== 'tool' ? [toolCall(`${id}-1`, tool.name, tool.args), finish('tool-calls')] : [...textDeltas(text), finish('stop')];
      const values = Object.fromEntries(events.map((e, i) => [String.fromCharCode(97 + i), e]));
      return fromMarbles({ marbles: `-${Object.keys(values).join('-')}|`, values }, scheduler);
    },
  };
}

const ASK: Message[] = [{ role: 'user', content: 'Weather in Paris?' }];

/** The weather tool in the form defineTool's docs show: async. */
const asyncWeather = defineTool({
  name: 'get_weather',
  description: 'Current weather for a city',
  args: t.type({ city: t.string }),
  idempotent: true,
  execute: async ({ city }) => {
    await Promise.resolve();
    return { city, celsius: 22 };
  },
});

/** A correct agent around an async tool: deadlines, retries, a fallback. */
const asyncToolAgent: AgentFactory = (chaos) =>
  runAgent({
    model: fallbackModel(
      [
        chaos.model(speaker('gpt', 'It is 22 °C.', { name: 'get_weather', args: { city: 'Paris' } })),
        chaos.model(speaker('claude', 'It is 22 °C.', { name: 'get_weather', args: { city: 'Paris' } })),
      ],
      {
        breakers: new CircuitBreakerRegistry(),
        perModel: (_id, stream$, { hub, target }) =>
          stream$.pipe(
            timeout({ first: 5_000, each: 2_000 }),
            retryWithBackoff<TurnEvent>({ hub, target, maxRetries: 2, afterEmit: 'restart', onRestart: () => ({ type: 'reset', reason: 'retry', target }) }),
          ),
      },
    ),
    tools: [chaos.tool(asyncWeather)],
    messages: ASK,
    budget: { maxModelCalls: 12 },
    toolPipeline: (call, call$, { hub }) =>
      call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, maxRetries: 2 }), timeout({ first: 10_000 }), reflectOnError()),
  });

/** A follow-up question whose earlier answer shares its first word with the new one ('It'). */
const FOLLOW_UP: Message[] = [
  { role: 'user', content: 'How is the weather?' },
  { role: 'assistant', content: 'It is sunny.' },
  { role: 'user', content: 'And tomorrow?' },
];
const followUp: AgentFactory = (chaos) =>
  runAgent({
    model: fallbackModel([chaos.model(speaker('gpt', 'It will rain tomorrow.')), chaos.model(speaker('claude', 'It will rain tomorrow.'))], {
      breakers: new CircuitBreakerRegistry(),
      midStream: 'restart',
      perModel: (_id, stream$) => stream$.pipe(timeout({ first: 5_000, each: 2_000 })),
    }),
    messages: FOLLOW_UP,
  });

/** Swallows every model error into an empty finish: the run "answers" "". */
const swallowsToEmpty: AgentFactory = (chaos) =>
  runAgent({
    model: chaos.model(speaker('gpt', 'It is sunny.')),
    messages: ASK,
    modelPipeline: (_r, turn$) =>
      turn$.pipe(
        timeout({ first: 5_000, each: 2_000 }),
        catchError(() => of<TurnEvent>(finish('stop'))),
      ),
  });
/** The fix: retries and a fallback; what cannot be healed ends the run with a typed error. */
const surfacesErrors: AgentFactory = (chaos) =>
  runAgent({
    model: fallbackModel([chaos.model(speaker('gpt', 'It is sunny.')), chaos.model(speaker('claude', 'It is sunny.'))], {
      breakers: new CircuitBreakerRegistry(),
      perModel: (_id, stream$, { hub, target }) =>
        stream$.pipe(
          timeout({ first: 5_000, each: 2_000 }),
          retryWithBackoff<TurnEvent>({ hub, target, maxRetries: 1, afterEmit: 'restart', onRestart: () => ({ type: 'reset', reason: 'retry', target }) }),
        ),
    }),
    messages: ASK,
  });

/** Two search tools: 'websearch' retried with retryWithBackoff (announced), 'search' with RxJS's retry (silent). */
const searchTool = (name: string) =>
  defineTool({ name, description: name, args: t.type({ q: t.string }), idempotent: true, execute: () => [`${name}: 3 results`] });
const twoSearches =
  (silent: boolean): AgentFactory =>
  (chaos) =>
    runAgent({
      model: chaos.model({
        id: 'gpt',
        stream: (request, { scheduler }) => {
          const events: TurnEvent[] =
            request.messages.at(-1)?.role === 'tool'
              ? [...textDeltas('Found.'), finish()]
              : [toolCall('w1', 'websearch', { q: 'x' }), toolCall('s1', 'search', { q: 'x' }), finish('tool-calls')];
          return fromMarbles(
            {
              marbles: `-${events.map((_, i) => String.fromCharCode(97 + i)).join('')}|`,
              values: Object.fromEntries(events.map((e, i) => [String.fromCharCode(97 + i), e])),
            },
            scheduler,
          );
        },
      }),
      tools: [chaos.tool(searchTool('websearch')), chaos.tool(searchTool('search'))],
      messages: ASK,
      toolPipeline: (call, call$, { hub }) =>
        silent && call.name === 'search'
          ? call$.pipe(retry(2), timeout({ first: 10_000 }))
          : call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, maxRetries: 2 }), timeout({ first: 10_000 }), reflectOnError()),
    });

/** Two bookings asked at once, the second with arguments its codec refuses; the tool retried with RxJS's retry. */
const book = defineTool({ name: 'book', description: 'Books a seat', args: t.type({ seat: t.string }), idempotent: false, execute: () => ['booked'] });
const twoBookings =
  (pipeline: 'retry' | 'retryWithBackoff'): AgentFactory =>
  (chaos) =>
    runAgent({
      model: chaos.model({
        id: 'gpt',
        stream: (request, { scheduler }) => {
          const events: TurnEvent[] =
            request.messages.at(-1)?.role === 'tool'
              ? [...textDeltas('Booked 1A.'), finish()]
              : [toolCall('b1', 'book', { seat: '1A' }), toolCall('b2', 'book', { seat: 7 }), finish('tool-calls')];
          return fromMarbles(
            {
              marbles: `-${events.map((_, i) => String.fromCharCode(97 + i)).join('')}|`,
              values: Object.fromEntries(events.map((e, i) => [String.fromCharCode(97 + i), e])),
            },
            scheduler,
          );
        },
      }),
      tools: [chaos.tool(book)],
      messages: [{ role: 'user', content: 'Book 1A and 7' }],
      toolPipeline: (call, call$, { hub }) =>
        pipeline === 'retry'
          ? call$.pipe(retry(2), timeout({ first: 10_000 }))
          : call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, maxRetries: 2 }), timeout({ first: 10_000 }), reflectOnError()),
    });

/** The hand-made wrapper of marble-docs/chaos.md (retries, says so, sends no reset), fixed with retryWithBackoff's restart. */
const gptWrapped =
  (fixed: boolean): AgentFactory =>
  (chaos) => {
    const inner = chaos.model(speaker('gpt', 'It is sunny.'));
    const patched: Model = {
      id: 'patched',
      stream: (request, context) =>
        fixed
          ? streamModel(inner, request, context).pipe(
              retryWithBackoff<TurnEvent>({
                hub: context.hub,
                target: 'model:gpt',
                maxRetries: 1,
                initialBackoffMs: 0,
                jitter: 'none',
                afterEmit: 'restart',
                onRestart: () => ({ type: 'reset', reason: 'retry', target: 'model:gpt' }),
              }),
            )
          : streamModel(inner, request, context).pipe(
              tap({ error: () => context.hub?.report({ type: 'retry', target: 'model:gpt', attempt: 1, max: 1, delayMs: 0, category: 'connection' }) }),
              retry(1),
            ),
    };
    return runAgent({ model: patched, messages: ASK });
  };

/** Model retries under the default jitter ('equal'): every wait drawn at random, seeded by the replay. */
const jittered: AgentFactory = (chaos) =>
  runAgent({
    model: chaos.model(speaker('gpt', 'It is sunny.')),
    messages: ASK,
    modelPipeline: (_r, turn$, { hub }) =>
      turn$.pipe(
        timeout({ first: 5_000, each: 2_000 }),
        retryWithBackoff<TurnEvent>({
          hub,
          target: 'model:gpt',
          maxRetries: 3,
          totalTimeoutMs: 20_000,
          afterEmit: 'restart',
          onRestart: () => ({ type: 'reset', reason: 'retry', target: 'model:gpt' }),
        }),
      ),
  });

const SEED = 33;
const models = (ids: string[], weights?: Record<string, number>) => faults.schedule({ models: ids, ...(weights ? { model: { weights } } : {}) });

export const GALLERY: readonly GalleryCase[] = [
  {
    name: 'a booking retried by RxJS retry',
    broken: retriesBooking,
    fixed: healing,
    options: { faults: faults.schedule({ tools: ['book'], tool: { weights: { stall: 0, timeout: 0 } } }), runs: 150, seed: SEED },
    caughtBy: ['side-effects-once'],
  },
  {
    name: "two attempts' text joined (the docs' hand-made wrapper)",
    broken: gptWrapped(false),
    fixed: gptWrapped(true),
    options: { faults: models(['gpt'], { stall: 0, down: 0 }), runs: 150, seed: SEED },
    caughtBy: ['text-intact'],
  },
  {
    name: 'the desk wrapper that concatenates',
    broken: concatenates,
    fixed: healing,
    options: { faults: models(['primary'], { stall: 0 }), runs: 150, seed: SEED },
    caughtBy: ['text-intact'],
  },
  {
    name: 'a fallback chain with no deadline',
    broken: noDeadline,
    fixed: healing,
    options: { faults: models(['primary', 'secondary']), runs: 150, seed: SEED },
    caughtBy: ['ends'],
  },
  {
    name: 'a fallback outside the budget',
    broken: budgetLeak,
    fixed: budgetHeld,
    options: { faults: models(['primary', 'secondary'], { stall: 0, 'slow-first-byte': 0 }), runs: 150, seed: SEED, budget: BUDGET },
    caughtBy: ['budget-held'],
  },
  {
    name: 'errors swallowed into an empty answer',
    broken: swallowsToEmpty,
    fixed: surfacesErrors,
    options: { faults: models(['gpt'], { stall: 0 }), runs: 150, seed: SEED },
    caughtBy: ['text-intact'],
  },
  {
    name: "a silent retry of 'search' beside an announced one of 'websearch'",
    broken: twoSearches(true),
    fixed: twoSearches(false),
    options: {
      faults: faults.schedule({ tools: ['websearch', 'search'], tool: { weights: { stall: 0, timeout: 0, slow: 0, 'is-error': 0 } } }),
      runs: 150,
      seed: SEED,
    },
    caughtBy: ['healing-announced'],
  },
  {
    name: 'a booking run twice beside a call its codec refused',
    broken: twoBookings('retry'),
    fixed: twoBookings('retryWithBackoff'),
    options: { faults: faults.schedule({ tools: ['book'], tool: { weights: { stall: 0, timeout: 0, slow: 0, 'is-error': 0 } } }), runs: 150, seed: SEED },
    caughtBy: ['side-effects-once'],
  },
  {
    name: 'an async tool (correct)',
    fixed: asyncToolAgent,
    options: { faults: faults.schedule({ models: ['gpt', 'claude'], tools: ['get_weather'] }), runs: 150, seed: SEED, budget: { maxModelCalls: 12 } },
  },
  {
    name: 'a follow-up question restarted after a cut (correct)',
    fixed: followUp,
    options: { faults: models(['gpt', 'claude'], { stall: 0 }), runs: 150, seed: SEED },
  },
  {
    name: 'retries under the default jitter (correct)',
    fixed: jittered,
    options: {
      faults: models(['gpt'], { stall: 0 }),
      runs: 150,
      seed: SEED,
      errors: ['TimeoutError', 'RetriesExhaustedError', 'TotalTimeoutError', 'HttpError', 'IncompleteStreamError', 'MalformedStreamError'],
    },
  },
];
