/**
 * The event model: conversation messages, what a model stream emits, and what the agent loop
 * emits to its consumer. Each type has an io-ts codec (`…Codec`) to validate data crossing a
 * boundary (a provider, a server, a test fixture). Names follow the Vercel AI SDK's style.
 *
 * The root entry exports every type; the codecs, as values, are `rxheal/events`' (each event's
 * and message's own, and the unions `MessageCodec`, `TurnEventCodec`, `AgentEventCodec`, …).
 *
 * @example
 * ```ts
 * import { ToolResultEventCodec } from 'rxheal/events';
 * ToolResultEventCodec.is({ type: 'tool-result', toolCallId: '1', toolName: 'x', result: 1 }); // true
 * ```
 *
 * @module
 */
import * as t from 'io-ts';
import {
  ApprovalRequestedEventCodec,
  SuspendedEventCodec,
  ToolDeduplicatedEventCodec,
  ToolOutcomeUnknownEventCodec,
  TurnResumeEventCodec,
} from './runEvents.js';
import { FinishCodec, MessageCodec, ReasoningDeltaCodec, ReasoningEndCodec, TextDeltaCodec, ToolCallEventCodec, UsageCodec } from './modelEvents.js';

export * from './modelEvents.js';
export * from './runEvents.js';

// ---------------------------------------------------------------------------------------------
// agent events
// ---------------------------------------------------------------------------------------------

export const ToolResultEventCodec = t.type({ type: t.literal('tool-result'), id: t.string, name: t.string, result: t.unknown }, 'ToolResultEvent');
export const ToolErrorEventCodec = t.type(
  { type: t.literal('tool-error'), id: t.string, name: t.string, error: t.string, category: t.string },
  'ToolErrorEvent',
);
export const ReflectionEventCodec = t.type(
  {
    type: t.literal('reflection'),
    tool: t.string,
    callId: t.string,
    attempt: t.number,
    max: t.number,
    exhausted: t.boolean,
    prompt: t.string,
  },
  'ReflectionEvent',
);
export const RetryEventCodec = t.intersection(
  [
    t.type({ type: t.literal('retry'), target: t.string, attempt: t.number, max: t.number, delayMs: t.number, category: t.string }),
    t.partial({ error: t.string }),
  ],
  'RetryEvent',
);
export const RetrySucceededEventCodec = t.type({ type: t.literal('retry-succeeded'), target: t.string, attempt: t.number }, 'RetrySucceededEvent');
/**
 * A retry that `retryWithBackoff`'s rule (`retryOn`) would have made, withheld: `reason`
 * `'not_idempotent'` — a tool that is not idempotent ran and failed, so a side effect may have
 * happened and it is never run again automatically, whatever the error (declare it `idempotent: true` if running it
 * twice is safe).
 */
export const RetryWithheldEventCodec = t.intersection(
  [t.type({ type: t.literal('retry-withheld'), target: t.string, reason: t.literal('not_idempotent'), category: t.string }), t.partial({ error: t.string })],
  'RetryWithheldEvent',
);
export const CallKindCodec = t.keyof({ model: null, tool: null }, 'CallKind');
export const CallStartEventCodec = t.intersection(
  [
    t.type({ type: t.literal('call-start'), kind: CallKindCodec, name: t.string, id: t.string, step: t.number, at: t.number }),
    // parentId: the run's model call a provider attempt was made under
    t.partial({ parentId: t.string }),
  ],
  'CallStartEvent',
);
export const CallEndEventCodec = t.intersection(
  [
    t.type({
      type: t.literal('call-end'),
      kind: CallKindCodec,
      name: t.string,
      id: t.string,
      step: t.number,
      at: t.number,
      durationMs: t.number,
      outcome: t.keyof({ success: null, error: null, cancelled: null }),
    }),
    // status: the HTTP status of a failed call's error (or its cause's); isError: a tool answered an MCP-style `{ isError: true }` result
    t.partial({ error: t.string, category: t.string, status: t.number, isError: t.boolean, usage: UsageCodec, parentId: t.string }),
  ],
  'CallEndEvent',
);
export const CircuitStateCodec = t.keyof({ closed: null, open: null, 'half-open': null }, 'CircuitState');
export const CircuitEventCodec = t.intersection(
  [
    t.type({ type: t.literal('circuit'), breaker: t.string }),
    t.union([
      t.intersection([
        t.type({ kind: t.literal('transition'), from: CircuitStateCodec, to: CircuitStateCodec, reason: t.string, failures: t.number }),
        // at: the breaker's scheduler time; retryAfterMs (on opening): ms until it admits a probe
        t.partial({ at: t.number, retryAfterMs: t.number }),
      ]),
      t.type({ kind: t.literal('rejected'), retryAfterMs: t.number }),
    ]),
  ],
  'CircuitAgentEvent',
);
/**
 * A hand-over to the next alternative. `reason`: the failed one's error category, or
 * `'circuit_open'` past an alternative its breaker rejected. `midStream`: the alternative left had
 * emitted before it failed (a hop past a skipped one never has). `providerSide: true`: the
 * provider made it on its side within one call (Anthropic's server-side fallback: `from` and `to`
 * are `model:<the provider's model name>`, `reason` `'provider_fallback'`), reported by the call's
 * trace; no client-side fallback follows from it. `recommendedModel`: the model the provider
 * recommended, when it said.
 */
export const FallbackEventCodec = t.intersection(
  [
    t.type({ type: t.literal('fallback'), from: t.string, to: t.string, reason: t.string, midStream: t.boolean }),
    t.partial({ providerSide: t.boolean, recommendedModel: t.string }),
  ],
  'FallbackEvent',
);
export const ResetEventCodec = t.type(
  { type: t.literal('reset'), reason: t.keyof({ retry: null, fallback: null, correction: null }), target: t.string },
  'ResetEvent',
);
export const DegradedEventCodec = t.type({ type: t.literal('degraded'), capability: t.string, reason: t.string }, 'DegradedEvent');
export const RestoredEventCodec = t.type({ type: t.literal('restored'), capability: t.string }, 'RestoredEvent');
/**
 * A budget ran out: `resource` (`'modelCalls'`, `'tokens'`, `'toolCalls'`, `'steps'`, `'usd'`),
 * its `limit` and what was `used` (for `'usd'`: what the refused reservation, or the live count,
 * would have made it). For money: `model`, the attempt's; `cut`, the attempt was cut mid-stream
 * (its partial answer kept, its turn finished with reason `'budget'`) rather than refused before
 * it started; `limiter`, the fleet-wide limit that refused it (absent: the run's own `maxUsd`).
 */
export const BudgetEventCodec = t.intersection(
  [
    t.type({ type: t.literal('budget-exceeded'), resource: t.string, limit: t.number, used: t.number }),
    t.partial({ model: t.string, cut: t.boolean, limiter: t.string }),
  ],
  'BudgetEvent',
);
/**
 * A provider attempt's cost was charged to its run: `usd` (from its usage at the run's prices;
 * `estimated`: from rxheal's estimate, the provider reported no usage or the call was cut) and the
 * run's `totalUsd` so far.
 */
export const SpendEventCodec = t.type({ type: t.literal('spend'), model: t.string, usd: t.number, totalUsd: t.number, estimated: t.boolean }, 'SpendEvent');
export const ValidationEventCodec = t.type(
  { type: t.literal('validation'), valid: t.boolean, attempt: t.number, problems: t.array(t.string) },
  'ValidationEvent',
);
export const MessageEventCodec = t.type({ type: t.literal('message'), message: MessageCodec }, 'MessageEvent');
/**
 * A call waited `waitMs` for its turn under a shared rate limit (`rateLimit`), reserving `cost`
 * tokens; `rejected`: it would have waited longer than the limiter's `maxWaitMs` and failed
 * instead; `local`: decided on this node's local share (the shared store did not answer).
 */
export const RateLimitedEventCodec = t.intersection(
  [t.type({ type: t.literal('rate-limited'), limiter: t.string, waitMs: t.number, cost: t.number }), t.partial({ rejected: t.boolean, local: t.boolean })],
  'RateLimitedEvent',
);

/**
 * A `SpendLimiter` refused a reservation (`reserve` errors with `BudgetExceededError`, resource
 * `'usd'`): on `key`, `usd` more would have made `usedUsd` of `limitUsd` in the window (the limit
 * that refused: the local share's when the shared store did not answer).
 */
export const SpendRefusedEventCodec = t.type(
  { type: t.literal('spend-refused'), limiter: t.string, key: t.string, usd: t.number, limitUsd: t.number, usedUsd: t.number },
  'SpendRefusedEvent',
);
/** The shared spend store did not answer a `SpendLimiter`'s reservation: it was decided on this node's local `share` (dollars per window). */
export const SpendLocalEventCodec = t.type({ type: t.literal('spend-local'), limiter: t.string, key: t.string, share: t.number }, 'SpendLocalEvent');

/**
 * A bulkhead's decision about a call (`bulkhead`): `queued` — every slot was taken, it waits
 * (`queued` calls now wait); `admitted` — it got a slot after waiting `waitMs`; `rejected` —
 * `reason` `'full'` (no slot, no queue place) or `'queue_timeout'` (waited `waitMs`). `active`:
 * calls running after the decision.
 */
export const BulkheadEventCodec = t.intersection(
  [
    t.type({
      type: t.literal('bulkhead'),
      bulkhead: t.string,
      kind: t.keyof({ queued: null, admitted: null, rejected: null }),
      active: t.number,
      queued: t.number,
    }),
    t.partial({ waitMs: t.number, reason: t.keyof({ full: null, queue_timeout: null }) }),
  ],
  'BulkheadEvent',
);
/**
 * What a `hedge` did with one attempt of a call (`attempt` 0 is the first, 1… the hedges; `target`
 * what it calls): `started` (a hedge, `afterMs` after the attempt before it), `won` (it delivered
 * first: the call is its), `cancelled` (another won, or the consumer left: unsubscribed at once),
 * `failed` (it errored while another ran: the call goes on; `category` the classifier's),
 * `skipped` (its breaker was open: not started) or `denied` (the hedge budget was spent: not
 * started). `at`: scheduler time.
 */
export const HedgeEventCodec = t.intersection(
  [
    t.type({
      type: t.literal('hedge'),
      target: t.string,
      kind: t.keyof({ started: null, won: null, cancelled: null, failed: null, skipped: null, denied: null }),
      attempt: t.number,
      at: t.number,
    }),
    t.partial({ afterMs: t.number, category: t.string }),
  ],
  'HedgeEvent',
);

/**
 * A model pool's decision about a conversation (`modelPool`): `kind` `'wait'` (its member answered
 * 429, or is still blocked by one, and it waits for the `retry-after`, warm), `'move'` (it landed on
 * another member: `reason` why it left — `'rate_limit'` with the wait-or-move figures when the
 * rule chose to move, else the category of what skipped the member), or `'return'` (its member is
 * healthy again and took it back). `pool` the pool's id, `key` the conversation's affinity key,
 * `from` / `to` members (`model:<id>`); the figures as in `WaitOrMoveFigures` (ms, tokens, $).
 */
export const PoolEventCodec = t.intersection(
  [
    t.type({ type: t.literal('pool'), pool: t.string, kind: t.keyof({ wait: null, move: null, return: null }), key: t.string, from: t.string }),
    t.partial({
      to: t.string,
      reason: t.string,
      waitMs: t.number,
      deadlineLeftMs: t.number,
      cachedTokens: t.number,
      moveUsd: t.number,
      waitUsd: t.number,
    }),
  ],
  'PoolEvent',
);

/**
 * A long tool call that runs as a task on its server (MCP Tasks: `fromMcp` on MCP 2026-07-28):
 * `kind` `'created'` (the server answered with a task handle), `'resumed'` (a call picked its task
 * up again from its checkpoint — after its process restarted, or on a retry — instead of calling
 * the tool again), `'status'` (the task's status or message changed, as a poll found it) or
 * `'cancel'` (the call sent `tasks/cancel`: it was unsubscribed, or a deadline passed). `target`
 * `mcp:<server>/<tool>`, `status` the task's as last seen, `message` its `statusMessage`.
 */
export const TaskEventCodec = t.intersection(
  [
    t.type({
      type: t.literal('task'),
      target: t.string,
      taskId: t.string,
      kind: t.keyof({ created: null, resumed: null, status: null, cancel: null }),
      status: t.keyof({ working: null, input_required: null, completed: null, failed: null, cancelled: null }),
    }),
    t.partial({ message: t.string }),
  ],
  'TaskEvent',
);

/**
 * A latency tracker's quantiles (`latency`), reported to its hub every `reportEvery` samples of
 * one kind: `kind` `'first'` (time to the first item: time to first token) or `'gap'` (between
 * items), `count` samples in its windows, and their p50, p95 and p99 in ms.
 */
export const LatencyEventCodec = t.type(
  { type: t.literal('latency'), target: t.string, kind: t.keyof({ first: null, gap: null }), count: t.number, p50: t.number, p95: t.number, p99: t.number },
  'LatencyEvent',
);

/**
 * A mid-stream failure healed by resuming, not restarting (`openAIResponsesModel({ resume })`):
 * the stream of a stored background response (`responseId`) was lost — `reason` `'dropped'` (the
 * connection broke or the body ended early) or `'stalled'` (no event for the `idleMs` deadline) —
 * and is picked up again after event `startingAfter` (its `sequence_number`): nothing already
 * shown is sent again, so no `reset` follows. `attempt` of `max` resumes for this call; `error`:
 * what the lost stream ended with.
 */
export const ResumeEventCodec = t.intersection(
  [
    t.type({
      type: t.literal('resume'),
      target: t.string,
      responseId: t.string,
      startingAfter: t.number,
      attempt: t.number,
      max: t.number,
      reason: t.keyof({ dropped: null, stalled: null }),
    }),
    t.partial({ error: t.string }),
  ],
  'ResumeEvent',
);

/** Resilience events: what the healing did. Also what the events hub carries. */
export const HealEventCodec = t.union(
  [
    RetryEventCodec,
    RetrySucceededEventCodec,
    RetryWithheldEventCodec,
    CallStartEventCodec,
    CallEndEventCodec,
    CircuitEventCodec,
    FallbackEventCodec,
    ReflectionEventCodec,
    DegradedEventCodec,
    RestoredEventCodec,
    BudgetEventCodec,
    SpendEventCodec,
    ResetEventCodec,
    RateLimitedEventCodec,
    SpendRefusedEventCodec,
    SpendLocalEventCodec,
    BulkheadEventCodec,
    HedgeEventCodec,
    LatencyEventCodec,
    ResumeEventCodec,
    ToolDeduplicatedEventCodec,
    PoolEventCodec,
    TaskEventCodec,
  ],
  'HealEvent',
);

/** What a model turn emits once operators are applied: model events, and `reset` when a retry or
 * fallback starts the turn over. */
export const TurnEventCodec = t.union([TextDeltaCodec, ReasoningDeltaCodec, ReasoningEndCodec, ToolCallEventCodec, FinishCodec, ResetEventCodec], 'TurnEvent');

/**
 * Everything `runAgent` emits. An event of a resumed run read back from its journal, not happening
 * now, carries `replayed: true`.
 */
export const AgentEventCodec = t.intersection(
  [
    t.union([
      TextDeltaCodec,
      ReasoningDeltaCodec,
      ReasoningEndCodec,
      ToolCallEventCodec,
      FinishCodec,
      ToolResultEventCodec,
      ToolErrorEventCodec,
      ValidationEventCodec,
      MessageEventCodec,
      HealEventCodec,
      ApprovalRequestedEventCodec,
      SuspendedEventCodec,
      ToolOutcomeUnknownEventCodec,
      TurnResumeEventCodec,
    ]),
    t.partial({ replayed: t.literal(true) }),
  ],
  'AgentEvent',
);

/**
 * What a model turn emits once operators are applied: {@link ModelEvent}s, plus `reset` when a
 * retry or fallback starts the turn over (the consumer discards the partial output).
 *
 * @example
 * ```ts
 * const restarted: TurnEvent[] = [
 *   { type: 'text-delta', text: 'The weath' },
 *   { type: 'reset', reason: 'fallback', target: 'model:secondary' },
 *   { type: 'text-delta', text: 'The weather is sunny.' },
 *   { type: 'finish', reason: 'stop' },
 * ];
 * ```
 */
export type TurnEvent = t.TypeOf<typeof TurnEventCodec>;
/** A tool's result reached the model. */
export type ToolResultEvent = t.TypeOf<typeof ToolResultEventCodec>;
/** A tool failed; `error` is the sanitised message the model saw, `category` the classifier's. */
export type ToolErrorEvent = t.TypeOf<typeof ToolErrorEventCodec>;
/** A reflection prompt replaced a tool's error (`exhausted`: the give-up instruction). */
export type ReflectionEvent = t.TypeOf<typeof ReflectionEventCodec>;
/** A retry was scheduled (`target`: e.g. `tool:get_weather`, `model:gpt-4o`). */
export type RetryEvent = t.TypeOf<typeof RetryEventCodec>;
/** An attempt after one or more retries succeeded (its first value, or completion). */
export type RetrySucceededEvent = t.TypeOf<typeof RetrySucceededEventCodec>;
/** A retry was withheld for a non-idempotent tool (see {@link RetryWithheldEventCodec}). */
export type RetryWithheldEvent = t.TypeOf<typeof RetryWithheldEventCodec>;
/**
 * A model call or a tool execution started: a run's model call (`step-<n>.<m>`, one per
 * subscription to the turn, retries included), a provider attempt under it (`<id>/<k>`, with
 * `parentId`: each model a `fallbackModel` or another wrapping model calls), or a tool execution.
 */
export type CallStartEvent = t.TypeOf<typeof CallStartEventCodec>;
/** …and ended: with its duration (scheduler time), outcome, error category and token usage. */
export type CallEndEvent = t.TypeOf<typeof CallEndEventCodec>;
/** A breaker changed state, or rejected a call. */
export type CircuitAgentEvent = t.TypeOf<typeof CircuitEventCodec>;
/** A fallback took over from `from` to `to`. */
export type FallbackEvent = t.TypeOf<typeof FallbackEventCodec>;
/** Discard the partial assistant output shown so far: a retry or fallback starts over. */
export type ResetEvent = t.TypeOf<typeof ResetEventCodec>;
/** A capability became unavailable. */
export type DegradedEvent = t.TypeOf<typeof DegradedEventCodec>;
/** A capability is available again. */
export type RestoredEvent = t.TypeOf<typeof RestoredEventCodec>;
/** A budget ran out (the run errors with `BudgetExceededError` right after). */
export type BudgetEvent = t.TypeOf<typeof BudgetEventCodec>;
/** A provider attempt's cost was charged to its run (see {@link SpendEventCodec}). */
export type SpendEvent = t.TypeOf<typeof SpendEventCodec>;
/** Output validation: an answer's problems, or that it passed. */
export type ValidationEvent = t.TypeOf<typeof ValidationEventCodec>;
/** A completed message (assistant or tool). */
export type MessageEvent = t.TypeOf<typeof MessageEventCodec>;
/** A call waited for (or was refused) its turn under a shared rate limit. */
export type RateLimitedEvent = t.TypeOf<typeof RateLimitedEventCodec>;
/** A spend limiter refused a reservation (see {@link SpendRefusedEventCodec}). */
export type SpendRefusedEvent = t.TypeOf<typeof SpendRefusedEventCodec>;
/** A spend limiter decided on its local share (see {@link SpendLocalEventCodec}). */
export type SpendLocalEvent = t.TypeOf<typeof SpendLocalEventCodec>;
/** A bulkhead queued, admitted or refused a call (see {@link BulkheadEventCodec}). */
export type BulkheadEvent = t.TypeOf<typeof BulkheadEventCodec>;
/** A hedge started, won, was cancelled, failed, was skipped or denied (see {@link HedgeEventCodec}). */
export type HedgeEvent = t.TypeOf<typeof HedgeEventCodec>;
/** A model pool waited, moved or returned a conversation (see {@link PoolEventCodec}). */
export type PoolEvent = t.TypeOf<typeof PoolEventCodec>;
/** A tool call's task on its server was created, resumed, changed or cancelled (see {@link TaskEventCodec}). */
export type TaskEvent = t.TypeOf<typeof TaskEventCodec>;
/** A latency tracker's quantiles, every so many samples (see {@link LatencyEventCodec}). */
export type LatencyEvent = t.TypeOf<typeof LatencyEventCodec>;
/** A cut stream picked up again where it stopped (see {@link ResumeEventCodec}). */
export type ResumeEvent = t.TypeOf<typeof ResumeEventCodec>;
/**
 * What the healing did: retries (and retries withheld), circuit changes, fallbacks, reflections,
 * degradations, resets, budget, rate-limit waits, spend limits, bulkheads, hedges, observed latency, resumed streams,
 * tool calls answered from the effect ledger.
 *
 * @example
 * ```ts
 * const e: HealEvent = { type: 'retry', target: 'tool:get_weather', attempt: 1, max: 3, delayMs: 500, category: 'rate_limit' };
 * ```
 */
export type HealEvent = t.TypeOf<typeof HealEventCodec>;
/**
 * Everything `runAgent` emits to its consumer.
 *
 * @example
 * ```ts
 * runAgent(config).subscribe((e: AgentEvent) => {
 *   if (e.type === 'text-delta') ui.append(e.text);
 *   if (e.type === 'reset') ui.discardPartial();
 * });
 * ```
 */
export type AgentEvent = t.TypeOf<typeof AgentEventCodec>;
