/**
 * Multi-round tool calls (MCP 2026-07-28): a server that needs something from the client (an
 * elicitation, a sampling) answers `tools/call` with `input_required` — its requests, by key, and
 * an opaque `requestState` — and the client calls again with the answers and that state, byte for
 * byte, on a fresh request. {@link callInRounds} drives those rounds inside one call: the same
 * deadlines (each round's answer pushes the idle one back, as progress does), the same
 * cancellation (the signal reaches the application's answer too). No framework import.
 *
 * @module
 */
import { McpInputRequiredError } from './errors.js';

/**
 * One round of a multi-round call, as the application is asked to answer it
 * (`fromMcp`'s `onInputRequired`).
 *
 * @example
 * ```ts
 * const onInputRequired = async (request: McpInputRequest) => {
 *   const [key] = Object.keys(request.inputRequests);
 *   return { [key!]: { action: 'accept', content: await askTheUser(request.inputRequests[key!]!.params) } };
 * };
 * ```
 */
export interface McpInputRequest {
  /** The server's id (`fromMcp`'s `id`). */
  readonly server: string;
  /** The tool called (its MCP name). */
  readonly tool: string;
  /** Its arguments, as sent. */
  readonly arguments: Record<string, unknown>;
  /** What the server asks for, by key: `{ method: 'elicitation/create', params: { message, requestedSchema } }`, `sampling/createMessage`… */
  readonly inputRequests: Readonly<Record<string, { readonly method: string; readonly params?: unknown }>>;
  /** 1 for the first `input_required` of the call, 2 for the next… */
  readonly round: number;
  /** Set when a task of the call asks (MCP Tasks): the answers go back with `tasks/update`, not as another round. */
  readonly taskId?: string;
  /** Aborted when the call is cancelled or its deadline passes: stop asking. */
  readonly signal: AbortSignal;
}

/**
 * Answers one round: the responses by the keys of `inputRequests` (an elicitation's
 * `{ action: 'accept', content }`, a sampling's message…), sent back with the server's
 * `requestState`. A throw or a rejection fails the call with it.
 *
 * @example
 * ```ts
 * const answer: McpInputAnswer = ({ inputRequests }) => Object.fromEntries(Object.keys(inputRequests).map((k) => [k, { action: 'decline' }]));
 * ```
 */
export type McpInputAnswer = (request: McpInputRequest) => Promise<Record<string, unknown>> | Record<string, unknown>;

/** What a round sends besides the tool's name and arguments. */
export interface RoundParams {
  readonly inputResponses: Record<string, unknown>;
  readonly requestState?: string;
}

/** How one multi-round call is driven. */
export interface Rounds {
  readonly server: string;
  readonly tool: string;
  readonly arguments: Record<string, unknown>;
  /** The application's answer; none: the SDK's own handlers fulfil the rounds (2.x), or the call fails. */
  readonly answer: McpInputAnswer | undefined;
  readonly maxRounds: number;
  readonly signal: AbortSignal | undefined;
  /** A round came back or was answered: the idle deadline starts again. */
  readonly alive: () => void;
}

const isInputRequired = (result: { readonly [key: string]: unknown }): boolean => result['resultType'] === 'input_required';

/**
 * `tools/call`, then again with the answers for as long as the server says `input_required` (at
 * most `maxRounds` answers): the final result, or {@link McpInputRequiredError} when nobody can
 * answer (no `answer`) or the rounds ran out. `send(undefined)` is the first request; each later
 * one carries a round's answers and the server's state.
 *
 * @example
 * ```ts
 * const result = await callInRounds(rounds, (extra, manual) => client.callTool({ name, arguments: args, ...extra }, { ...options, allowInputRequired: manual }));
 * ```
 */
export function callInRounds(
  rounds: Rounds,
  send: (extra: RoundParams | undefined, manual: boolean) => PromiseLike<{ readonly [key: string]: unknown }>,
): PromiseLike<{ readonly [key: string]: unknown }> {
  const manual = rounds.answer !== undefined;
  // the first request is made at once (a client that throws instead of rejecting throws here), and
  // its answer handed on as the client delivers it (no microtask in between: a complete answer
  // lands when it comes, in virtual time too)
  const first = send(undefined, manual);
  return {
    then: (ok, fail) =>
      first.then(
        (result) => (isInputRequired(result) ? laterRounds(rounds, result, (extra) => send(extra, manual)).then(ok, fail) : ok?.(result)),
        fail,
      ) as never,
  };
}

/** The rounds after the first answer, while it says `input_required`. */
async function laterRounds(
  rounds: Rounds,
  first: { readonly [key: string]: unknown },
  send: (extra: RoundParams) => PromiseLike<{ readonly [key: string]: unknown }>,
): Promise<{ readonly [key: string]: unknown }> {
  let result = first;
  for (let round = 1; isInputRequired(result); round++) {
    const requestState = typeof result['requestState'] === 'string' ? result['requestState'] : undefined;
    const inputRequests = (result['inputRequests'] ?? {}) as McpInputRequest['inputRequests'];
    if (rounds.answer === undefined || round > rounds.maxRounds) {
      const why = rounds.answer === undefined ? 'nothing answers it (no onInputRequired)' : `still asking after ${rounds.maxRounds} rounds`;
      throw new McpInputRequiredError(rounds.server, rounds.tool, why, inputRequests, requestState);
    }
    rounds.alive();
    const inputResponses = await rounds.answer({
      server: rounds.server,
      tool: rounds.tool,
      arguments: rounds.arguments,
      inputRequests,
      round,
      signal: rounds.signal ?? new AbortController().signal,
    });
    checkedResponses(rounds.tool, inputResponses);
    rounds.alive();
    result = await send(requestState === undefined ? { inputResponses } : { inputResponses, requestState });
  }
  return result;
}

/**
 * What `onInputRequired` answered, checked: the responses by key (an object), or a TypeError naming
 * the tool — the one rule for a round's answers and a task's (tasks.ts).
 *
 * @example
 * ```ts
 * checkedResponses('confirm', { sure: { action: 'accept', content: { sure: true } } }); // passes
 * ```
 */
export function checkedResponses(tool: string, responses: unknown): asserts responses is Record<string, unknown> {
  if (typeof responses !== 'object' || responses === null || Array.isArray(responses))
    throw new TypeError(`onInputRequired answered ${JSON.stringify(responses)} for '${tool}': expected the responses by key (an object)`);
}
