/**
 * The agents of the chaos specs (and of the bench row): one that heals, and four broken on
 * purpose, each in one way an agent's healing goes wrong (a stall, an unclassified error, a repeated side effect, a budget overrun). Every factory builds its
 * world fresh per run (models, breakers) and wraps its models and tools with `chaos`.
 */
import * as t from 'io-ts';
import { catchError, retry, tap, timeout, type Observable, type OperatorFunction } from 'rxjs';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import type { AgentEvent, Message, TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type Model, type ModelRequest } from '../../src/core/model/model.js';
import { fallbackTo } from '../../src/operators/fallbackTo.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { DEFAULT_CONTINUE_INSTRUCTION, fallbackModel } from '../../src/sources/fallbackModel.js';
import type { PerModelContext } from '../../src/sources/fallbackModelOptions.js';
import { runAgent, type PipelineContext } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, fromMarbles, textDeltas, toolCall } from '../../src/testing/index.js';
import type { AgentFactory, Chaos } from '../../src/chaos/index.js';

export const ANSWER = 'Your table for two is booked at eight.';
export const PREAMBLE = 'Let me book it.';
const QUESTION: Message[] = [{ role: 'user', content: 'Book a table for two at eight.' }];

/**
 * A model that answers like a person at a booking desk: it books (one `book` call, again after a
 * failed one), then answers; asked to continue a partial answer, it sends the rest. Its events
 * are 10 ms apart on the run's scheduler; each call reports usage (5 in, 1 per event out).
 */
export function desk(id: string): Model {
  return {
    id,
    stream: (request, context) => {
      const messages = request.messages;
      const last = messages[messages.length - 1];
      const prev = messages[messages.length - 2];
      let events: TurnEvent[];
      if (last?.role === 'user' && last.content === DEFAULT_CONTINUE_INSTRUCTION && prev?.role === 'assistant') {
        events = [...textDeltas(ANSWER.slice(prev.content.length)), finish('stop')];
      } else if (last?.role === 'tool' && !last.isError) {
        events = [...textDeltas(ANSWER), finish('stop')];
      } else {
        const n = messages.filter((m) => m.role === 'assistant').length + 1;
        events = [...textDeltas(PREAMBLE), toolCall(`${id}-${n}`, 'book', { table: 2, at: '20:00' }), finish('tool-calls')];
      }
      const done = events.map((e, i) =>
        i === events.length - 1 && e.type === 'finish' ? { ...e, usage: { inputTokens: 5, outputTokens: events.length } } : e,
      );
      const letters = 'abcdefghijklmnopqrstuvwxyz';
      const values = Object.fromEntries(done.map((e, i) => [letters[i]!, e]));
      const marbles = `-${done.map((_, i) => letters[i]).join('-')}|`;
      return fromMarbles({ marbles, values }, context.scheduler);
    },
  };
}

/** The booking tool: not idempotent (a second run books a second table). */
export const book = defineTool({
  name: 'book',
  description: 'Books a table',
  args: t.type({ table: t.number, at: t.string }),
  idempotent: false,
  execute: () => [{ booked: true }],
});

/**
 * The agent that heals: two desks behind fallbackModel ('restart'), each behind its own deadlines
 * (5 s to the first event, 2 s between events) and two retries (afterEmit 'restart'); the tool
 * behind retryWithBackoff (which never retries a non-idempotent tool that ran), then a 3 s
 * deadline on the whole call (outside the retries: a deadline inside them would be an error
 * retryWithBackoff cannot tell from a failed read, and a stalled booking would run again — the
 * first version of this agent did, and checkHealing shrank it to one stalled booking), then
 * reflectOnError; a budget of 12 model calls.
 */
/** The healing agents' model pipeline: deadlines on the first and each event, two retries that restart a turn cut after its first words. */
export const healingTurns = (_id: string, stream$: Observable<TurnEvent>, { hub, target }: PerModelContext): Observable<TurnEvent> =>
  stream$.pipe(
    timeout({ first: 5_000, each: 2_000 }),
    retryWithBackoff<TurnEvent>({
      hub,
      target,
      maxRetries: 2,
      initialBackoffMs: 200,
      jitter: 'none',
      afterEmit: 'restart',
      onRestart: () => ({ type: 'reset', reason: 'retry', target }),
    }),
  );

export const healing: AgentFactory = (chaos) =>
  runAgent({
    model: fallbackModel([chaos.model(desk('primary')), chaos.model(desk('secondary'))], {
      breakers: new CircuitBreakerRegistry(),
      midStream: 'restart',
      perModel: healingTurns,
    }),
    tools: [chaos.tool(book)],
    messages: QUESTION,
    maxSteps: 6,
    budget: { maxModelCalls: 12 },
    toolPipeline: (call, call$, { hub }) =>
      call$.pipe(
        retryWithBackoff({ hub, target: `tool:${call.name}`, maxRetries: 2, initialBackoffMs: 100, jitter: 'none' }),
        timeout({ first: 3_000 }),
        reflectOnError(),
      ),
  });

/** Broken 1: the tool pipeline retries with RxJS's `retry` — a failed booking runs again. */
export const retriesBooking: AgentFactory = (chaos) =>
  runAgent({
    model: chaos.model(desk('primary')),
    tools: [chaos.tool(book)],
    messages: QUESTION,
    toolPipeline: (_call, call$) => call$.pipe(retry(2)),
  });

/**
 * Broken 2: a hand-made model wrapper that retries a failed stream with `retry` (and says so on the
 * hub) but sends no `reset`: two attempts' text joined into one answer.
 */
export const concatenates: AgentFactory = (chaos) => {
  const inner = chaos.model(desk('primary'));
  let attempt = 0;
  const patched: Model = {
    id: 'patched',
    stream: (request, context) =>
      streamModel(inner, request, context).pipe(
        tap({ error: () => context.hub?.report({ type: 'retry', target: 'model:primary', attempt: ++attempt, max: 2, delayMs: 0, category: 'connection' }) }),
        retry(2),
      ),
  };
  return runAgent({ model: patched, tools: [chaos.tool(book)], messages: QUESTION, maxSteps: 4 });
};

/** Broken 3: a fallback chain with no deadline: a provider that stalls is waited on forever. */
export const noDeadline: AgentFactory = (chaos) =>
  runAgent({
    model: fallbackModel([chaos.model(desk('primary')), chaos.model(desk('secondary'))], { breakers: new CircuitBreakerRegistry() }),
    tools: [chaos.tool(book)],
    messages: QUESTION,
  });

/** The budget the next two agents are meant to hold. */
export const BUDGET = { maxModelCalls: 2 } as const;

/** An agent on the primary whose model pipeline falls back to the secondary, as `fallback` says. */
function withFallback(
  chaos: Chaos,
  fallback: (secondary: Model, request: ModelRequest, context: PipelineContext) => OperatorFunction<TurnEvent, TurnEvent>,
): Observable<AgentEvent> {
  const secondary = chaos.model(desk('secondary'));
  return runAgent({
    model: chaos.model(desk('primary')),
    tools: [chaos.tool(book)],
    messages: QUESTION,
    budget: BUDGET,
    modelPipeline: (request, turn$, context) => turn$.pipe(fallback(secondary, request, context)),
  });
}

/** Broken 4: a fallback outside the run's budget (fallbackTo given the run's hub but not its `context`): the secondary's calls are never counted. */
export const budgetLeak: AgentFactory = (chaos) => withFallback(chaos, (secondary, request, { hub }) => fallbackTo(secondary, { request, hub }));

/** Fixed 4: the same fallback given the run's context: the secondary's calls count, the run stops at the budget. */
export const budgetHeld: AgentFactory = (chaos) => withFallback(chaos, (secondary, request, context) => fallbackTo(secondary, { request, context }));

/** An agent whose factory throws before any fault acts. */
export const throwsAtOnce: AgentFactory = () => {
  throw new TypeError('tools is not iterable');
};

/** A raw observable passes too (what a factory returns is any run's events). */
export const swallowed: AgentFactory = (chaos): Observable<AgentEvent> =>
  runAgent({ model: chaos.model(desk('primary')), tools: [chaos.tool(book)], messages: QUESTION }).pipe(catchError(() => []));

/**
 * A booking service that deduplicates by idempotency key (`honoursKey`: a key it has booked under
 * answers the first booking and books nothing), or one that says so and ignores the key (a planted
 * defect: every request books again). Its bookings live in the world, as a service's do.
 */
const keyedBook = (chaos: Chaos, honoursKey: boolean) =>
  defineTool({
    name: 'book',
    description: 'Books a table (the service deduplicates by Idempotency-Key)',
    args: t.type({ table: t.number, at: t.string }),
    idempotent: 'by-key',
    execute: (_args, ctx) => {
      if (!chaos.world.has('booked')) chaos.world.set('booked', { count: 0, byKey: new Map<string, string>() });
      const booked = chaos.world.get('booked') as { count: number; byKey: Map<string, string> };
      const key = ctx.idempotencyKey ?? '';
      const first = booked.byKey.get(key);
      if (honoursKey && first !== undefined) return [{ booking: first }];
      const booking = `bk_${++booked.count}`;
      if (first === undefined) booked.byKey.set(key, booking);
      return [{ booking }];
    },
  });

/** An agent whose booking tool says `idempotent: 'by-key'` (so retryWithBackoff retries it), its service as `honoursKey` says. */
export const byKey =
  (honoursKey: boolean): AgentFactory =>
  (chaos) =>
    runAgent({
      model: chaos.model(desk('primary')),
      tools: [chaos.tool(keyedBook(chaos, honoursKey))],
      messages: QUESTION,
      maxSteps: 6,
      toolPipeline: (call, call$, { hub }) =>
        call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, maxRetries: 2, initialBackoffMs: 100, jitter: 'none' }), reflectOnError()),
    });
