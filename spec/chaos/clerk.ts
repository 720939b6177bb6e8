/**
 * The five-step durable agent of the crash-mode spec and of the bench's crash figure: a clerk
 * model that calls one tool a turn (lookup → hold → book → notify), then answers, behind
 * fallbackModel with deadlines and retries; the tools behind retryWithBackoff, a deadline and
 * reflectOnError; the run journaled on `chaos.journal`. Its variants are broken on purpose: a
 * booking tool whose `verify` lies (the booking runs again on resume), a run not journaled.
 */
import * as t from 'io-ts';
import { finalize, timeout } from 'rxjs';
import type { Message, TurnEvent } from '../../src/core/events/events.js';
import type { Model } from '../../src/core/model/model.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, fromMarbles, textDeltas, toolCall } from '../../src/testing/index.js';
import { healingTurns } from './agents.js';
import type { AgentFactory, Chaos } from '../../src/chaos/index.js';

const ANSWER = 'Seat 1A is yours and you have been texted.';
const QUESTION: Message[] = [{ role: 'user', content: 'Book seat 1A and text me.' }];
const STEPS = ['lookup', 'hold', 'book', 'notify'] as const;

/** A clerk: one tool a turn, by how many tool results it has (lookup → hold → book → notify), then the answer; events 10 ms apart. */
function clerk(id: string): Model {
  return {
    id,
    stream: (request, context) => {
      const done = request.messages.filter((m) => m.role === 'tool').length;
      const tool = STEPS[done];
      const events: TurnEvent[] =
        tool === undefined
          ? [...textDeltas(ANSWER), finish('stop', { inputTokens: 5, outputTokens: 9 })]
          : [...textDeltas('One moment.'), toolCall(`${id}-${done}`, tool, { seat: '1A' }), finish('tool-calls', { inputTokens: 5, outputTokens: 3 })];
      const letters = 'abcdefghijklmnopqrstuvwxyz';
      const values = Object.fromEntries(events.map((e, i) => [letters[i]!, e]));
      return fromMarbles({ marbles: `-${events.map((_, i) => letters[i]).join('-')}|`, values }, context.scheduler);
    },
  };
}

/** The world's ledger of bookings (what outlives a crash), by call id. */
const ledger = (chaos: Chaos): Set<string> => {
  if (!chaos.world.has('bookings')) chaos.world.set('bookings', new Set<string>());
  return chaos.world.get('bookings') as Set<string>;
};

export interface Variant {
  /** The booking tool's verify lies: "not booked" always, so a resume books again. */
  readonly lyingVerify?: boolean;
  /** The run is not journaled: a restart starts over. */
  readonly noJournal?: boolean;
  /**
   * Bookings are kept in the process and written to the world's ledger by the run's teardown (as
   * an exit hook flushes them): only a crash that runs that teardown leaves the ledger right.
   */
  readonly flushesOnExit?: boolean;
}

export function agentFor(variant: Variant = {}): AgentFactory {
  return (chaos) => {
    const Seat = t.type({ seat: t.string });
    const unflushed = new Set<string>();
    const lookup = defineTool({
      name: 'lookup',
      description: 'Is the seat free',
      args: Seat,
      idempotent: true,
      execute: async ({ seat }) => `${seat} is free`,
    });
    const hold = defineTool({
      name: 'hold',
      description: 'Holds the seat a minute',
      args: Seat,
      idempotent: true,
      execute: async ({ seat }) => `${seat} held`,
    });
    const book = defineTool({
      name: 'book',
      description: 'Books the seat (charges the card)',
      args: Seat,
      execute: async ({ seat }, { callId }) => {
        (variant.flushesOnExit ? unflushed : ledger(chaos)).add(callId!);
        return `${seat} booked`;
      },
      verify: async ({ seat }, { callId }) =>
        !variant.lyingVerify && ledger(chaos).has(callId!) ? { applied: true as const, result: `${seat} booked` } : { applied: false as const },
    });
    const notify = defineTool({ name: 'notify', description: 'Texts the customer', args: Seat, execute: async () => 'sent' });
    const run$ = runAgent({
      model: fallbackModel([chaos.model(clerk('primary')), chaos.model(clerk('secondary'))], {
        midStream: 'restart',
        perModel: healingTurns,
      }),
      tools: [chaos.tool(lookup), chaos.tool(hold), chaos.tool(book), chaos.tool(notify)],
      toolPipeline: (call, call$, { hub }) =>
        call$.pipe(
          retryWithBackoff({ hub, target: `tool:${call.name}`, maxRetries: 2, initialBackoffMs: 100, jitter: 'none' }),
          timeout({ first: 3_000 }),
          reflectOnError(),
        ),
      messages: QUESTION,
      ...(variant.noJournal ? {} : { runId: chaos.runId, journal: chaos.journal }),
    });
    return variant.flushesOnExit ? run$.pipe(finalize(() => unflushed.forEach((id) => ledger(chaos).add(id)))) : run$;
  };
}
