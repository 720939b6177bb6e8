/**
 * The demo's agent for a run replayed as a test ("Download this run as a test" under an answer):
 * the same healing as the page's (demoRun: the fallback chain, each provider's hedge, deadlines
 * and retries, the tools' retries, breakers, reflection and the search's deadline), over
 * stand-ins under rxheal/chaos — the local providers' scripted assistant for `primary` and
 * `secondary`, the MCP server's two tools in-process — in virtual time.
 *
 * What a stand-in does not have: the HTTP and MCP layers under the adapters. A run whose healing
 * happened there (the MCP server's own breaker, a new MCP session, a resumed Responses stream) is
 * replayed by what the agent saw of it: the tool call failed, or the stream went on.
 */
import * as t from 'io-ts';
import { concatMap, from, map, timer, type Observable, type SchedulerLike } from 'rxjs';
import { defineTool, type AgentEvent, type AnyTool, type Message, type Model, type TurnEvent } from '../../src/index.js';
import type { AgentFactory } from '../../src/chaos/index.js';
import { scriptedAssistant, tokenize } from '../../src/server/index.js';
import { demoRun, demoWorld } from './agent.js';
import { articleFor, SEARCH_MS, weatherIn } from './toolAnswers.js';

/**
 * How one answer of the page is replayed: the conversation up to its question, and the page's
 * settings then.
 *
 * @example
 * ```ts
 * const asked: DemoReplay = { history: [{ role: 'user', content: 'Tell me a story about a river' }], midStream: 'restart', open: ['model:primary'] };
 * ```
 */
export interface DemoReplay {
  /** The conversation up to and including the question (what `ask` was given). */
  readonly history: readonly Message[];
  /** What fallbackModel did when a provider died mid-answer. */
  readonly midStream: 'restart' | 'continue';
  /** Breakers that were open when the question was asked (they open again at the replay's start). */
  readonly open?: readonly string[];
  /** The providers' ids, in the page's order of preference. Defaults to the local ones, `primary` then `secondary`. */
  readonly providers?: readonly string[];
}

/** The local providers' pace (the page server's `tokenDelayMs`): one event every 35 ms. */
const EVENT_MS = 35;

/** A local provider as the replay sees it: the scripted assistant's turn, an event every 35 ms on the run's scheduler. */
function standInProvider(id: string, scheduler: SchedulerLike): Model {
  let calls = 0;
  return {
    id,
    stream: (request) => {
      const turn = scriptedAssistant({
        protocol: 'openai',
        model: 'local',
        messages: request.messages,
        tools: (request.tools ?? []).map((tool) => ({ name: tool.name })),
      });
      const n = ++calls;
      const events: TurnEvent[] = [
        ...tokenize(turn.text ?? '').map((text): TurnEvent => ({ type: 'text-delta', text })),
        ...(turn.toolCalls ?? []).map((call, i): TurnEvent => ({ type: 'tool-call', id: `${id}_call_${n}_${i}`, name: call.name, args: call.args })),
        { type: 'finish', reason: turn.finishReason ?? (turn.toolCalls?.length ? 'tool-calls' : 'stop') },
      ];
      return from(events).pipe(concatMap((e) => timer(EVENT_MS, scheduler).pipe(map(() => e))));
    },
  };
}

/** The MCP server's tools in-process (examples/demo/mcpTools.ts): the same names, arguments and answers; the search takes 300 ms. */
function standInTools(scheduler: SchedulerLike): AnyTool[] {
  return [
    defineTool({
      name: 'get_weather',
      description: 'Current weather for a city',
      args: t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) }),
      execute: ({ city, units }) => [weatherIn(city, units)],
    }),
    defineTool({
      name: 'knowledge_search',
      description: 'Searches the help-centre articles',
      args: t.type({ query: t.string }),
      execute: ({ query }): Observable<string> => timer(SEARCH_MS.normal, scheduler).pipe(map(() => articleFor(query))),
    }),
  ];
}

/**
 * The agent factory a downloaded test replays an answer with: a fresh demo world (its breakers
 * open as `replay.open` says), the demo's pipeline over the stand-ins, each under the schedule.
 *
 * @example
 * ```ts
 * const run = await replayIncident(incident, demoReplayAgent({ history: [{ role: 'user', content: 'Tell me a story about a river' }], midStream: 'restart' }));
 * ```
 */
export function demoReplayAgent(replay: DemoReplay): AgentFactory {
  return (chaos): Observable<AgentEvent> => {
    const world = demoWorld();
    // open as the page's were when the question was asked: a failure each (they open after one), probed 15 s later
    for (const name of replay.open ?? []) {
      const permit = world.breakers.get(name).acquire();
      if (!(permit instanceof Error)) permit.failure(new Error(`${name} was open when the question was asked`));
    }
    const models = (replay.providers ?? ['primary', 'secondary']).map((id) => chaos.model(standInProvider(id, chaos.scheduler)));
    const tools = standInTools(chaos.scheduler).map((tool) => chaos.tool(tool));
    return demoRun(world, models, tools, replay.history, replay.midStream);
  };
}
