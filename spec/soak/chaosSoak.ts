/**
 * The agent soak on `checkHealing` (rxheal/chaos): the soak's agent shape — a fallbackModel over
 * two or three models, each behind its own deadlines and retries (around the model, afterEmit
 * 'error', or in perModel, afterEmit 'restart'), 'restart' or 'continue' mid-stream; tools
 * `lookup` (idempotent), `book` (not idempotent) and a slow `search` under degradeAfter, through
 * retryWithBackoff + circuitBreak + reflectOnError; a budget and a step limit — under fault
 * schedules fast-check draws and shrinks. The models answer as the seeded soak's do (tool rounds,
 * then an answer naming the model; half the turns reason first, some signed; a continuation
 * repeats the partial's last token, which fallbackModel trims).
 *
 * Beside checkHealing's own invariants, {@link reasoningIntact}: the final answer's reasoning is
 * made of blocks a model emitted, whole, or cut (unsigned) where a model died before a
 * continuation (the check that found the spliced-reasoning bug, commit 7a96e25).
 */
import * as t from 'io-ts';
import { timeout, timer, map, type Observable } from 'rxjs';
import { CapabilityRegistry } from '../../src/core/capabilities/CapabilityRegistry.js';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { AllFallbacksFailedError } from '../../src/core/errors/errors.js';
import type { Message, TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type Model } from '../../src/core/model/model.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { DEFAULT_CONTINUE_INSTRUCTION, fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent, type AgentConfig } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, fromMarbles, reasoning, textDeltas, toolCall } from '../../src/testing/index.js';
import { checkHealing, faults, type AgentFactory, type Invariant, type ScheduleArbitrary } from '../../src/chaos/index.js';
import { breakerObservers } from '../support/observers.js';
import { bump, type Histogram, type SoakReport } from './seeded.js';

/** One combination of the soak's agent (what the seeded soak draws per run; here, one per checkHealing). */
export interface SoakShape {
  readonly models: 2 | 3;
  readonly midStream: 'restart' | 'continue';
  /** 'error': each model's retries around it (afterEmit 'error'); 'restart': in fallbackModel's perModel (afterEmit 'restart'). */
  readonly modelAfterEmit: 'error' | 'restart';
  readonly modelRetries: 0 | 1 | 2;
  readonly budget: { readonly maxModelCalls?: number; readonly maxToolCalls?: number };
  readonly maxSteps: number;
  /**
   * Around the whole chain, in the model pipeline: `retries` of a turn every model failed (2 s
   * apart), within `totalMs` for the turn when set (its retries included).
   */
  readonly chain?: { readonly retries: number; readonly totalMs?: number };
  /**
   * One breaker registry for every run, as an app keeps one (each run starts it afresh: its
   * breakers reset), instead of a registry per run: what the shared-registry leak needed.
   */
  readonly breakers?: CircuitBreakerRegistry;
}

export const MODEL_IDS = ['alpha', 'beta', 'gamma'] as const;
export const TOOL_NAMES = ['lookup', 'book', 'search'] as const;
const ROUNDS: readonly (readonly string[])[] = [['lookup', 'book'], ['search']];
const WORDS = ' kalo mine ruso tiva zepo.';

/** The answer a model gives at the end: distinct per model, so a final text names its attempt. */
export const answerOf = (model: string): string => `${model}:${WORDS}`;

/** Reasoning texts the models emitted in the current run (runs are sequential: reset by each factory call). */
let thoughts = new Set<string>();

/** What a soak model says to a conversation: the next tool round (a failed tool again), else the answer. */
function plan(id: string, messages: readonly Message[]): { tools: string[]; text: string } {
  const called = new Set<string>();
  for (const m of messages) if (m.role === 'assistant') for (const c of m.toolCalls ?? []) called.add(c.name);
  const last = messages[messages.length - 1];
  const failed = last?.role === 'tool' && last.isError && !/Do not call it again/.test(last.content) ? [last.toolName] : [];
  const open = ROUNDS.map((r) => r.filter((n) => !called.has(n))).find((r) => r.length > 0) ?? [];
  const tools = failed.length > 0 && messages.filter((m) => m.role === 'tool' && m.isError).length < 4 ? failed : open;
  return tools.length > 0 ? { tools, text: `(${id} looks it up)` } : { tools: [], text: answerOf(id) };
}

/** A soak model: answers by {@link plan}, reasons first on every other call (signed every fourth), 10 ms an event. */
function soakModel(id: string): Model {
  let calls = 0;
  return {
    id,
    stream: (request, context) => {
      const n = ++calls;
      const messages = request.messages;
      const last = messages[messages.length - 1];
      const prev = messages[messages.length - 2];
      let text: string;
      let tools: string[] = [];
      if (last?.role === 'user' && last.content === DEFAULT_CONTINUE_INSTRUCTION && prev?.role === 'assistant') {
        const before = messages.slice(0, -2);
        const whole = MODEL_IDS.map((m) => plan(m, before).text).find((x) => x.startsWith(prev.content)) ?? plan(id, before).text;
        // repeat the partial's last token: fallbackModel trims the overlap
        const overlap = (prev.content.match(/\s*\S+$/) ?? [''])[0];
        text = overlap + whole.slice(prev.content.length);
      } else {
        const p = plan(id, messages);
        text = p.text;
        tools = p.tools;
      }
      const thought = n % 2 === 0 ? `Planning as ${id}, call ${n}.` : undefined;
      if (thought !== undefined) thoughts.add(thought);
      const events: TurnEvent[] = [
        ...(thought === undefined ? [] : reasoning(thought, n % 4 === 0 ? `sig-${id}-${n}` : undefined)),
        ...textDeltas(text),
        ...tools.map((name, i) => toolCall(`${id}-${n}-${i}`, name, { q: name })),
        finish(tools.length > 0 ? 'tool-calls' : 'stop', { inputTokens: 5, outputTokens: 3 }),
      ];
      const values = Object.fromEntries(events.map((e, i) => [String.fromCharCode(65 + i), e]));
      return fromMarbles(
        { marbles: `${events.map((_, i) => `${i === 0 ? '' : '9ms '}${String.fromCharCode(65 + i)}`).join(' ')} |`, values },
        context.scheduler,
      );
    },
  };
}

const Query = t.type({ q: t.string });

/** The soak's tools: lookup (idempotent), book (a side effect: never run twice), search (slow, idempotent). */
function soakTools(): ReturnType<typeof defineTool<{ q: string }, unknown>>[] {
  return [
    defineTool({
      name: 'lookup',
      description: 'Looks an order up',
      args: Query,
      idempotent: true,
      execute: () => timer(20).pipe(map(() => ({ ok: 'lookup' }))),
    }),
    defineTool({ name: 'book', description: 'Books a table', args: Query, idempotent: false, execute: () => timer(30).pipe(map(() => ({ ok: 'book' }))) }),
    defineTool({
      name: 'search',
      description: 'Searches the docs',
      args: Query,
      idempotent: true,
      execute: () => timer(400).pipe(map(() => ({ ok: 'search' }))),
    }),
  ];
}

/** The soak's breakers: open after 3 failures, probed after 15 s (a shared registry is made with them too). */
export const BREAKER_DEFAULTS = { failureThreshold: 3, resetTimeoutMs: 15_000 } as const;

/** A turn every model failed, tried again (the whole chain) `retries` times, within `totalMs`. */
function chainRetry(chain: NonNullable<SoakShape['chain']>): NonNullable<AgentConfig['modelPipeline']> {
  return (_request, turn$, { hub }) =>
    turn$.pipe(
      retryWithBackoff<TurnEvent>({
        hub,
        target: 'model:chain',
        maxRetries: chain.retries,
        initialBackoffMs: 2_000,
        jitter: 'none',
        shouldRetry: (e) => e instanceof AllFallbacksFailedError,
        afterEmit: 'restart',
        onRestart: () => ({ type: 'reset', reason: 'retry', target: 'model:chain' }),
        ...(chain.totalMs === undefined ? {} : { totalTimeoutMs: chain.totalMs }),
      }),
    );
}

/**
 * With one registry shared by every run: once a run has ended, no breaker of it keeps an observer
 * for that run (a hub's watch outliving its run: memory and per-transition work growing with the
 * number of runs — the leak the seeded soak found, since fixed).
 */
export function noObserverLeft(breakers: CircuitBreakerRegistry): Invariant {
  return {
    name: 'no-observer-left',
    check: (run) => {
      void run;
      return breakers
        .names()
        .map((name) => [name, breakerObservers(breakers.get(name))] as const)
        .filter(([, n]) => n > 0)
        .map(([name, n]) => `breaker '${name}' of the shared registry still has ${n} observer${n === 1 ? '' : 's'} after the run ended`);
    },
  };
}

/** The soak's agent for one shape, as a checkHealing factory. */
export function soakAgent(shape: SoakShape): AgentFactory {
  return (chaos) => {
    thoughts = new Set();
    const breakers = shape.breakers ?? new CircuitBreakerRegistry(BREAKER_DEFAULTS);
    for (const name of breakers.names()) breakers.get(name).reset();
    const capabilities = new CapabilityRegistry();
    const retries = { maxRetries: shape.modelRetries, initialBackoffMs: 250, maxBackoffMs: 4_000, jitter: 'none' } as const;
    const deadlines = <T>(o: Observable<T>): Observable<T> => o.pipe(timeout({ first: 3_000, each: 1_000 }));
    const models = MODEL_IDS.slice(0, shape.models).map((id): Model => {
      const chaotic = chaos.model(soakModel(id));
      if (shape.modelAfterEmit === 'restart') return chaotic;
      return {
        id,
        stream: (request, context) =>
          deadlines(streamModel(chaotic, request, context)).pipe(retryWithBackoff({ ...retries, hub: context.hub, target: `model:${id}`, afterEmit: 'error' })),
      };
    });
    const reflect = reflectOnError({ maxReflections: 2 });
    return runAgent({
      model: fallbackModel(models, {
        breakers,
        midStream: shape.midStream,
        ...(shape.modelAfterEmit === 'restart'
          ? {
              perModel: (_id: string, stream$: Observable<TurnEvent>, { hub, target }: { hub?: import('../../src/core/hub/hub.js').HealHub; target: string }) =>
                deadlines(stream$).pipe(
                  retryWithBackoff<TurnEvent>({
                    ...retries,
                    ...(hub ? { hub } : {}),
                    target,
                    afterEmit: 'restart',
                    onRestart: () => ({ type: 'reset', reason: 'retry', target }),
                  }),
                ),
            }
          : {}),
      }),
      tools: soakTools().map((tool) => chaos.tool(tool)),
      capabilities,
      instruction: 'You are the soak assistant.',
      messages: [{ role: 'user', content: 'Book a table and find the refund policy.' }],
      maxSteps: shape.maxSteps,
      budget: shape.budget,
      ...(shape.chain === undefined ? {} : { modelPipeline: chainRetry(shape.chain) }),
      toolPipeline: (call, call$, { hub }) => {
        const guarded = call$.pipe(
          retryWithBackoff({ hub, target: `tool:${call.name}`, maxRetries: 2, initialBackoffMs: 200, jitter: 'none' }),
          timeout({ first: 5_000 }),
          circuitBreak(breakers.get(`tool:${call.name}`), { hub }),
          reflect,
        );
        return call.name === 'search' ? guarded.pipe(degradeAfter(2_000, 'unavailable', { capability: 'search', capabilities })) : guarded;
      },
    });
  };
}

/**
 * The final answer's reasoning is blocks a model emitted, each whole, or cut unsigned where a
 * model died before a continuation: never two models' reasoning spliced into one block.
 */
export const reasoningIntact: Invariant = {
  name: 'reasoning-intact',
  check: (run) => {
    const last = run.events.at(-1)?.event;
    if (run.end.kind !== 'complete' || last?.type !== 'message' || last.message.role !== 'assistant') return undefined;
    const problems: string[] = [];
    for (const part of last.message.reasoning ?? []) {
      const whole = thoughts.has(part.text);
      const cut = !whole && part.signature === undefined && part.text !== '' && [...thoughts].some((x) => x.startsWith(part.text));
      if (!whole && !cut) problems.push(`the final answer's reasoning ${JSON.stringify(part.text)} is no block a model emitted (whole, or cut unsigned)`);
    }
    return problems;
  },
};

/**
 * Runs in which each healing event happened (and a continuation finished, a circuit rejected a
 * call or opened, the chain was retried), and how runs ended: counted by an invariant that finds
 * nothing, for the soak's coverage checks and report.
 */
export function healingCounter(): { readonly healed: Histogram; readonly ends: Histogram; readonly faults: Histogram; readonly count: Invariant } {
  const healed: Histogram = {};
  const ends: Histogram = {};
  const injected: Histogram = {};
  const count: Invariant = {
    name: 'count',
    check: (run) => {
      for (const a of run.models) bump(injected, `model:${a.fault.kind}`);
      for (const x of run.tools) bump(injected, `tool:${x.fault.kind}`);
      for (const type of new Set(run.events.map((e) => e.event.type))) bump(healed, type);
      if (run.models.some((a) => a.continuing !== undefined && a.finished)) bump(healed, 'continued');
      if (run.events.some((e) => e.event.type === 'circuit' && e.event.kind === 'rejected')) bump(healed, 'circuit-rejected');
      if (run.events.some((e) => e.event.type === 'circuit' && e.event.kind === 'transition' && e.event.to === 'open')) bump(healed, 'circuit-opened');
      if (run.events.some((e) => e.event.type === 'retry' && e.event.target === 'model:chain')) bump(healed, 'chain-retry');
      bump(ends, run.end.kind === 'error' ? ((run.end.error as Error | undefined)?.name ?? 'error') : run.end.kind);
      return undefined;
    },
  };
  return { healed, ends, faults: injected, count };
}

/** What the soak's report counts as healing (of every event type seen). */
const HEALING = [
  'retry',
  'retry-withheld',
  'fallback',
  'reset',
  'continued',
  'reflection',
  'degraded',
  'tool-error',
  'circuit-opened',
  'circuit-rejected',
  'chain-retry',
  'budget-exceeded',
];

/** The soak's budget (what budget-held checks). */
export const SOAK_BUDGET = { maxModelCalls: 24, maxToolCalls: 12 } as const;

/** One of the four combinations of mid-stream handling and model retries, three models. */
export const soakShape = (midStream: SoakShape['midStream'], modelAfterEmit: SoakShape['modelAfterEmit']): SoakShape => ({
  models: 3,
  midStream,
  modelAfterEmit,
  modelRetries: 1,
  budget: SOAK_BUDGET,
  maxSteps: 8,
});

/** The soak's schedules: cuts mid-answer weighted up (ok 8, reset 4: a continuation needs a model's every attempt cut). */
export const soakSchedules = (): ScheduleArbitrary =>
  faults.schedule({ models: [...MODEL_IDS], tools: [...TOOL_NAMES], maxCalls: 5, model: { weights: { ok: 8, reset: 4 } } });

/** Harsher schedules over two models (down, statuses and cuts as often as ok): whole turns fail, for the chain retry. */
export const harshSchedules = (): ScheduleArbitrary =>
  faults.schedule({ models: MODEL_IDS.slice(0, 2), tools: [...TOOL_NAMES], maxCalls: 6, model: { weights: { ok: 3, status: 3, down: 2, reset: 2 } } });

/**
 * The agent soak at any size (`npm run soak`: 10 000 runs): checkHealing over the four
 * combinations, the chain retry with a total budget, and a registry shared by every run, the runs
 * split between them; each failure's report (shrunk schedule, marble diagram, spec) is a problem.
 */
export async function runChaosSoak(options: { readonly runs: number; readonly seed: number }): Promise<SoakReport> {
  const started = performance.now();
  const per = Math.max(1, Math.ceil(options.runs / 6));
  const { healed, ends, faults: injected, count } = healingCounter();
  const problems: string[] = [];
  const shared = new CircuitBreakerRegistry(BREAKER_DEFAULTS);
  const cases: [string, SoakShape, ScheduleArbitrary, Invariant[]][] = [
    ...(['restart', 'continue'] as const).flatMap((m) =>
      (['error', 'restart'] as const).map((a): [string, SoakShape, ScheduleArbitrary, Invariant[]] => [`${m}/${a}`, soakShape(m, a), soakSchedules(), []]),
    ),
    ['chain retry + total budget', { ...soakShape('restart', 'error'), models: 2, chain: { retries: 2, totalMs: 20_000 } }, harshSchedules(), []],
    ['shared registry', { ...soakShape('continue', 'restart'), breakers: shared }, soakSchedules(), [noObserverLeft(shared)]],
  ];
  let runs = 0;
  for (const [name, shape, schedules, extra] of cases) {
    const report = await checkHealing(soakAgent(shape), {
      faults: schedules,
      runs: per,
      seed: options.seed,
      budget: SOAK_BUDGET,
      invariants: [reasoningIntact, ...extra, count],
      spec: { from: './chaosSoak.js' },
    });
    runs += report.runs;
    if (!report.ok) problems.push(`[${name}, seed ${options.seed}] ${report.message}`);
  }
  return {
    name: 'agent soak on checkHealing (virtual time)',
    seed: options.seed,
    runs,
    elapsedMs: performance.now() - started,
    outcomes: ends,
    faults: injected,
    healing: Object.fromEntries(HEALING.filter((h) => healed[h] !== undefined).map((h) => [h, healed[h]!])),
    problems,
    leaks: { breakerObserversMax: 0, breakerObserversTotal: 0 },
    figures: { combinations: cases.length, 'runs per combination': per },
  };
}
