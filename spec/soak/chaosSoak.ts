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
import type { Message, TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type Model } from '../../src/core/model/model.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { DEFAULT_CONTINUE_INSTRUCTION, fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, fromMarbles, reasoning, textDeltas, toolCall } from '../../src/testing/index.js';
import type { AgentFactory, Invariant } from '../../src/chaos/index.js';

/** One combination of the soak's agent (what the seeded soak draws per run; here, one per checkHealing). */
export interface SoakShape {
  readonly models: 2 | 3;
  readonly midStream: 'restart' | 'continue';
  /** 'error': each model's retries around it (afterEmit 'error'); 'restart': in fallbackModel's perModel (afterEmit 'restart'). */
  readonly modelAfterEmit: 'error' | 'restart';
  readonly modelRetries: 0 | 1 | 2;
  readonly budget: { readonly maxModelCalls?: number; readonly maxToolCalls?: number };
  readonly maxSteps: number;
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
      return fromMarbles({ marbles: `${events.map((_, i) => `${i === 0 ? '' : '9ms '}${String.fromCharCode(65 + i)}`).join(' ')} |`, values }, context.scheduler);
    },
  };
}

const Query = t.type({ q: t.string });

/** The soak's tools: lookup (idempotent), book (a side effect: never run twice), search (slow, idempotent). */
function soakTools(): ReturnType<typeof defineTool<{ q: string }, unknown>>[] {
  return [
    defineTool({ name: 'lookup', description: 'Looks an order up', args: Query, idempotent: true, execute: () => timer(20).pipe(map(() => ({ ok: 'lookup' }))) }),
    defineTool({ name: 'book', description: 'Books a table', args: Query, idempotent: false, execute: () => timer(30).pipe(map(() => ({ ok: 'book' }))) }),
    defineTool({ name: 'search', description: 'Searches the docs', args: Query, idempotent: true, execute: () => timer(400).pipe(map(() => ({ ok: 'search' }))) }),
  ];
}

/** The soak's agent for one shape, as a checkHealing factory. */
export function soakAgent(shape: SoakShape): AgentFactory {
  return (chaos) => {
    thoughts = new Set();
    const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 15_000 });
    const capabilities = new CapabilityRegistry();
    const retries = { maxRetries: shape.modelRetries, initialBackoffMs: 250, maxBackoffMs: 4_000, jitter: 'none' } as const;
    const deadlines = <T>(o: Observable<T>): Observable<T> => o.pipe(timeout({ first: 3_000, each: 1_000 }));
    const models = MODEL_IDS.slice(0, shape.models).map((id): Model => {
      const chaotic = chaos.model(soakModel(id));
      if (shape.modelAfterEmit === 'restart') return chaotic;
      return { id, stream: (request, context) => deadlines(streamModel(chaotic, request, context)).pipe(retryWithBackoff({ ...retries, hub: context.hub, target: `model:${id}`, afterEmit: 'error' })) };
    });
    const reflect = reflectOnError({ maxReflections: 2 });
    return runAgent({
      model: fallbackModel(models, {
        breakers,
        midStream: shape.midStream,
        ...(shape.modelAfterEmit === 'restart'
          ? {
              perModel: (_id: string, stream$: Observable<TurnEvent>, { hub, target }: { hub?: import('../../src/core/hub/hub.js').HealHub; target: string }) =>
                deadlines(stream$).pipe(retryWithBackoff<TurnEvent>({ ...retries, ...(hub ? { hub } : {}), target, afterEmit: 'restart', onRestart: () => ({ type: 'reset', reason: 'retry', target }) })),
            }
          : {}),
      }),
      tools: soakTools().map((tool) => chaos.tool(tool)),
      capabilities,
      instruction: 'You are the soak assistant.',
      messages: [{ role: 'user', content: 'Book a table and find the refund policy.' }],
      maxSteps: shape.maxSteps,
      budget: shape.budget,
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
