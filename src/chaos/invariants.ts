/**
 * What a healed run must satisfy, whatever its faults: the invariants `checkHealing` checks on
 * every run (see {@link builtinInvariants} for the list and what each catches), and the shape of
 * a custom one.
 *
 * @module
 */
import {
  AllFallbacksFailedError,
  BudgetExceededError,
  BulkheadRejectedError,
  CircuitOpenError,
  HttpError,
  IncompleteStreamError,
  MalformedStreamError,
  RateLimitExceededError,
  RetriesExhaustedError,
  ToolError,
  TotalTimeoutError,
} from '../core/errors/errors.js';
import type { AgentEvent, AssistantMessage } from '../core/events/events.js';
import { canonicalJson } from '../core/journal/idempotency.js';
import type { Budget } from '../sources/budget.js';
import type { FaultSchedule } from './schedule.js';
import type { ModelAttempt, RecordedEvent, ToolExecution } from './recorder.js';

/**
 * How a chaos run ended: completed, errored, or `hang` — still running at the virtual-time bound,
 * or waiting on nothing the scheduler will ever run.
 *
 * @example
 * ```ts
 * const end: ChaosEnd = { kind: 'hang', at: 600_000, reason: 'still running at the bound' };
 * ```
 */
export type ChaosEnd =
  | { readonly kind: 'complete'; readonly at: number }
  | { readonly kind: 'error'; readonly at: number; readonly error: unknown }
  | { readonly kind: 'hang'; readonly at: number; readonly reason: string };

/**
 * One failed check: which invariant, and what it saw.
 *
 * @example
 * ```ts
 * const v: Violation = { invariant: 'side-effects-once', message: "non-idempotent 'book' ran 2 times for 1 call the model made" };
 * ```
 */
export interface Violation {
  readonly invariant: string;
  readonly message: string;
}

/**
 * Everything one chaos run did, in virtual time: its schedule, its end, the run's events and
 * every model call and tool execution (one order, `seq`), what was left behind, and the
 * violations found.
 *
 * @example
 * ```ts
 * const run: ChaosRun = await replaySchedule(agent, { models: { primary: [{ kind: 'stall', afterEvents: 0 }] } });
 * run.end.kind; // 'complete' when the agent's deadline healed the stall
 * ```
 */
export interface ChaosRun {
  readonly schedule: FaultSchedule;
  /** The options it ran with (what a replay of it needs to check the same). */
  readonly options: ReplayOptions;
  readonly end: ChaosEnd;
  readonly events: readonly RecordedEvent[];
  readonly models: readonly ModelAttempt[];
  readonly tools: readonly ToolExecution[];
  /** Actions still scheduled when the run ended. */
  readonly pending: number;
  /** Model streams and tool executions still subscribed when the run ended. */
  readonly live: number;
  /** Errors RxJS could not deliver (thrown in a callback) during the run. */
  readonly unhandled: readonly string[];
  /**
   * Where the run could have crashed, in order (journal writes in flight and committed, calls
   * started, a model's first words; see `crashAt`) — up to its crash, when it crashed.
   */
  readonly crashPoints: readonly string[];
  /** With `crashAt`: where it crashed and when (virtual ms); absent when the run ended before reaching that point. */
  readonly crash?: { readonly point: string; readonly at: number };
  readonly violations: readonly Violation[];
}

/**
 * A check of a run: returns what is wrong (one message or several), or nothing.
 *
 * @example
 * ```ts
 * const noSecondModel: Invariant = {
 *   name: 'primary-only',
 *   check: (run) => (run.models.some((a) => a.model !== 'primary') ? 'asked another model' : undefined),
 * };
 * ```
 */
export interface Invariant {
  readonly name: string;
  readonly check: (run: Omit<ChaosRun, 'violations'>) => string | readonly string[] | undefined;
}

/**
 * Options of `replaySchedule` (and `checkHealing`): the virtual-time bound, what the
 * built-in invariants are told (`errors`, `budget`), custom invariants, and the seed of the
 * run's randomness.
 *
 * @example
 * ```ts
 * const options: ReplayOptions = { boundMs: 120_000, budget: { maxModelCalls: 6 }, invariants: [noSecondModel] };
 * ```
 */
export interface ReplayOptions extends InvariantOptions {
  /** Virtual time a run may take before it counts as hung. Defaults to 600 000 ms (10 minutes). */
  readonly boundMs?: number;
  /** Checks added to the built-in ones. */
  readonly invariants?: readonly Invariant[];
  /**
   * The seed of everything random in the run that rxheal draws (`retryWithBackoff`'s default
   * jitter, rxheal/mcp's reconnection backoff) and of `chaos.random`: the same seed, the same
   * run. Defaults to 0 — every replay of a schedule draws the same numbers. Randomness of the
   * agent's own that does not come from `chaos.random` is not seeded (`Math.random` is not
   * replaced): a run that depends on it may not replay the same.
   */
  readonly randomSeed?: number;
  /**
   * Crash mode (what `checkHealing({ crash: true })` replays): the run is killed at its
   * `crashAt`th crash point (1-based; see `ChaosRun.crashPoints` for the list a run passes) and
   * resumed from `chaos.journal` by a fresh agent from the factory, then checked against the same
   * schedule's run without a crash (`crash-anywhere`) and by the invariants that hold across a
   * crash (`ends`, `typed-outcome`, `side-effects-once`, `nothing-left` and the custom ones).
   */
  readonly crashAt?: number;
}

/**
 * An error class, or its `name`.
 *
 * @example
 * ```ts
 * const allowed: ErrorKind[] = [AllFallbacksFailedError, 'TimeoutError'];
 * ```
 */
export type ErrorKind = string | (abstract new (...args: never[]) => Error);

/**
 * The errors rxheal documents as the end of a run that could not be healed.
 *
 * @example
 * ```ts
 * await checkHealing(agent, { faults: schedules, errors: [AllFallbacksFailedError, BudgetExceededError] });
 * ```
 */
export const DOCUMENTED_ERRORS: readonly ErrorKind[] = Object.freeze([
  AllFallbacksFailedError,
  BudgetExceededError,
  BulkheadRejectedError,
  CircuitOpenError,
  HttpError,
  IncompleteStreamError,
  MalformedStreamError,
  RateLimitExceededError,
  RetriesExhaustedError,
  ToolError,
  TotalTimeoutError,
]);

/**
 * What the built-in invariants are told about the agent.
 *
 * @example
 * ```ts
 * builtinInvariants({ errors: [...DOCUMENTED_ERRORS, 'TimeoutError'], budget: { maxModelCalls: 6 } });
 * ```
 */
export interface InvariantOptions {
  /** The errors a run may end with. Defaults to {@link DOCUMENTED_ERRORS}. */
  readonly errors?: readonly ErrorKind[];
  /** The budget the agent must hold, counted on the chaos models and tools. None: not checked. */
  readonly budget?: Budget;
}

/** Events that announce another attempt: a retry, a fallback, a hedge, a correction, a skip. */
const ANNOUNCING = new Set<AgentEvent['type']>(['retry', 'fallback', 'hedge', 'reset', 'validation', 'circuit']);

const assistant = (e: AgentEvent): AssistantMessage | undefined => (e.type === 'message' && e.message.role === 'assistant' ? e.message : undefined);

/** The run's assistant messages, each with the model attempts of its turn (made since the previous one). */
function turns(run: Omit<ChaosRun, 'violations'>): { message: AssistantMessage; seq: number; attempts: ModelAttempt[] }[] {
  const out: { message: AssistantMessage; seq: number; attempts: ModelAttempt[] }[] = [];
  let from = -1;
  for (const { event, seq } of run.events) {
    const message = assistant(event);
    if (!message) continue;
    out.push({ message, seq, attempts: run.models.filter((a) => a.seq > from && a.seq < seq) });
    from = seq;
  }
  return out;
}

const errorName = (e: unknown): string => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

function ends(run: Omit<ChaosRun, 'violations'>): string | undefined {
  if (run.end.kind !== 'hang') return undefined;
  const last = run.events.slice(-3).map((e) => e.event.type);
  return `the run did not end: ${run.end.reason} (at ${run.end.at} ms virtual; last events: ${last.join(', ') || 'none'})`;
}

function typedOutcome(run: Omit<ChaosRun, 'violations'>, allowed: readonly ErrorKind[]): string | undefined {
  if (run.end.kind === 'complete') {
    const last = run.events.at(-1)?.event;
    const message = last && assistant(last);
    if (!message || (message.toolCalls?.length ?? 0) > 0) return `completed without a final answer (last event: ${last?.type ?? 'none'})`;
    return undefined;
  }
  if (run.end.kind !== 'error') return undefined;
  const error = run.end.error;
  const ok = allowed.some((k) => (typeof k === 'string' ? (error as Error | undefined)?.name === k : error instanceof k));
  return ok ? undefined : `failed with an error that is none of the documented ones: ${errorName(error)}`;
}

function textIntact(run: Omit<ChaosRun, 'violations'>): string[] {
  const problems: string[] = [];
  let shown = '';
  for (const { event } of run.events) {
    if (event.type === 'text-delta') shown += event.text;
    else if (event.type === 'reset') shown = '';
    else if (assistant(event)) {
      const content = assistant(event)!.content;
      if (shown !== content) problems.push(`delivered text ${JSON.stringify(shown)} (reset-aware) != the assistant message ${JSON.stringify(content)}`);
      shown = '';
    }
  }
  if (run.models.length === 0) return problems;
  for (const { message, attempts } of turns(run)) {
    const answered = attempts.filter((a) => a.finished).at(-1);
    if (!answered) {
      // an empty one too: errors swallowed into an empty answer are not an answer
      const failed = run.models.filter((a) => a.outcome === 'error' || a.outcome === 'cancelled').length;
      const after = failed === 0 ? '' : failed === 1 ? ' (after 1 model call failed or was cut)' : ` (after ${failed} model calls failed or were cut)`;
      problems.push(`the assistant message ${JSON.stringify(message.content)} came from no model call that finished${after}`);
      continue;
    }
    const whole = answered.text;
    const partial = answered.continuing;
    if (partial === undefined) {
      if (message.content !== whole)
        problems.push(
          `the assistant message ${JSON.stringify(message.content)} != the text of the call ` +
            `that answered (${answered.model}#${answered.call}) ${JSON.stringify(whole)}`,
        );
    } else if (!message.content.startsWith(partial) || !whole.endsWith(message.content.slice(partial.length))) {
      problems.push(
        `the assistant message ${JSON.stringify(message.content)} is not the partial ` +
          `${JSON.stringify(partial)} continued by ${answered.model}#${answered.call}'s ${JSON.stringify(whole)}`,
      );
    }
  }
  return problems;
}

/**
 * A non-idempotent tool at most once per call. Across a crash (`acrossCrash`), only executions
 * whose own `execute` ran count: one a fault stood in for had no effect in the world, so a resumed
 * run whose `verify` truthfully says "not done" may run it (the run that never crashed is held to
 * the stricter rule: there the agent could not know).
 */
export function sideEffectsOnce(run: Omit<ChaosRun, 'violations'>, acrossCrash = false): string[] {
  const problems: string[] = [];
  const once = run.tools.filter((t) => !t.idempotent && (!acrossCrash || t.ran));
  // per call: the executions of one tool call the model made (its id, in the turn that asked for it)
  const perCall = new Map<string, ToolExecution[]>();
  for (const t of once) {
    if (t.callId === undefined) continue;
    const key = `${t.tool}\u0000${t.turn ?? ''}\u0000${t.callId}`;
    perCall.set(key, [...(perCall.get(key) ?? []), t]);
  }
  for (const runs of perCall.values()) {
    if (runs.length > 1) problems.push(`non-idempotent '${runs[0]!.tool}' ran ${runs.length} times for 1 call the model made (call '${runs[0]!.callId}')`);
  }
  // executions that know no call (execute called directly): counted against the calls the model made of the tool
  const asked = new Map<string, number>();
  for (const { message } of turns(run)) for (const c of message.toolCalls ?? []) asked.set(c.name, (asked.get(c.name) ?? 0) + 1);
  for (const name of new Set(once.filter((t) => t.callId === undefined).map((t) => t.tool))) {
    const ran = once.filter((t) => t.tool === name).length;
    const calls = asked.get(name) ?? 0;
    if (ran > calls) problems.push(`non-idempotent '${name}' ran ${ran} times for ${calls} call${calls === 1 ? '' : 's'} the model made`);
  }
  return [...problems, ...appliedOncePerKey(run)];
}

/**
 * A tool declared `idempotent: 'by-key'` promises that a second execution under a key it has
 * applied answers the first one's result, applying nothing: every execution of it that ran to its
 * end under one key (a lost answer's too, across crashes) answers the same. Two answers under one
 * key are two applied effects: the violation names the key and the tool.
 */
function appliedOncePerKey(run: Omit<ChaosRun, 'violations'>): string[] {
  const perKey = new Map<string, { tool: string; key: string; answers: string[] }>();
  for (const t of run.tools) {
    if (t.idempotent !== 'by-key' || t.key === undefined || t.answer === undefined) continue;
    const id = `${t.tool}\u0000${t.key}`;
    const entry = perKey.get(id) ?? { tool: t.tool, key: t.key, answers: [] };
    entry.answers.push(canonicalJson(t.answer.value));
    perKey.set(id, entry);
  }
  const problems: string[] = [];
  for (const { tool, key, answers } of perKey.values()) {
    const distinct = [...new Set(answers)];
    if (distinct.length > 1)
      problems.push(
        `'${tool}' (idempotent: 'by-key') applied its effect ${distinct.length} times under idempotency key '${key}': ` +
          `it answered ${distinct.join(', then ')} — a repeated key must answer the first result`,
      );
  }
  return problems;
}

function budgetHeld(run: Omit<ChaosRun, 'violations'>, budget: Budget | undefined): string[] {
  if (!budget) return [];
  const problems: string[] = [];
  const { maxModelCalls, maxToolCalls, maxTokens } = budget;
  if (maxModelCalls !== undefined && run.models.length > maxModelCalls)
    problems.push(`${run.models.length} model calls were made, the budget is ${maxModelCalls}`);
  if (maxToolCalls !== undefined && run.tools.length > maxToolCalls) problems.push(`${run.tools.length} tool executions ran, the budget is ${maxToolCalls}`);
  if (maxTokens !== undefined) {
    let spent = 0;
    for (const a of [...run.models].sort((x, y) => x.seq - y.seq)) {
      if (spent > maxTokens) {
        problems.push(`${a.model}#${a.call} was called after ${spent} tokens were spent, the budget is ${maxTokens}`);
        break;
      }
      if (a.usage) spent += a.usage.inputTokens + a.usage.outputTokens;
    }
    if (run.end.kind === 'complete' && spent > maxTokens) problems.push(`the run answered after spending ${spent} tokens, the budget is ${maxTokens}`);
  }
  return problems;
}

function healingAnnounced(run: Omit<ChaosRun, 'violations'>): string[] {
  const problems: string[] = [];
  const announced = (from: number, to: number): boolean => run.events.some((e) => e.seq > from && e.seq < to && ANNOUNCING.has(e.event.type));
  // model attempts of one turn: each after the first is announced since the one before
  const bounds = [...turns(run).map((t) => t.seq), Infinity];
  let from = -1;
  for (const to of bounds) {
    const attempts = run.models.filter((a) => a.seq > from && a.seq < to);
    for (let i = 1; i < attempts.length; i++) {
      const a = attempts[i]!;
      if (!announced(attempts[i - 1]!.seq, a.seq))
        problems.push(`${a.model}#${a.call} was another attempt of a turn, and nothing on the hub said so (no retry, fallback or hedge event before it)`);
    }
    from = to;
  }
  // tool executions beyond the calls the model made: each announced by a retry or hedge naming the tool
  const asked = new Map<string, number>();
  for (const { message } of turns(run)) for (const c of message.toolCalls ?? []) asked.set(c.name, (asked.get(c.name) ?? 0) + 1);
  for (const name of new Set(run.tools.map((t) => t.tool))) {
    const ran = run.tools.filter((t) => t.tool === name).length;
    // the target names this tool exactly (`tool:<name>` or `<name>`): a retry of 'websearch' is no retry of 'search'
    const retries = run.events.filter(
      ({ event: e }) => (e.type === 'retry' || (e.type === 'hedge' && e.kind === 'started')) && (e.target === `tool:${name}` || e.target === name),
    ).length;
    if (ran > (asked.get(name) ?? 0) + retries)
      problems.push(`'${name}' ran ${ran} times for ${asked.get(name) ?? 0} calls and ${retries} announced retries: a retry the hub never saw`);
  }
  return problems;
}

function nothingLeft(run: Omit<ChaosRun, 'violations'>): string[] {
  const problems = run.unhandled.map((u) => `an error RxJS could not deliver: ${u}`);
  if (run.end.kind === 'hang') return problems;
  if (run.pending > 0) problems.push(`${run.pending} action${run.pending === 1 ? ' was' : 's were'} still scheduled after the run ended`);
  if (run.live > 0)
    problems.push(`${run.live} model stream${run.live === 1 ? '' : 's'} or tool execution${run.live === 1 ? '' : 's'} still running after the run ended`);
  return problems;
}

/**
 * The invariants every run is checked against, in order:
 *
 * - `ends`: the run completes or errors within the virtual-time bound. Catches a stall no deadline
 *   ends, a wait that never fires, a retry loop without end.
 * - `typed-outcome`: it answers (a final assistant message), or fails with one of `errors`. Catches
 *   an unclassified error escaping (a TypeError, a bare timeout), a run that ends on a tool call.
 * - `text-intact`: it shows (deltas, reset-aware) what each assistant message says, and that
 *   message is the whole text of the call that answered, or a delivered partial continued. Catches
 *   two attempts' text concatenated, a lost or doubled delta, a reset that takes back too much, an
 *   answer (an empty one too) that no model call gave: errors swallowed into a canned reply.
 * - `side-effects-once`: it runs a tool declared `idempotent: false` at most once per tool call the
 *   model made (counted by the call's id), and a tool declared `idempotent: 'by-key'` applies its
 *   effect at most once per idempotency key (every execution under one key that ran to its end
 *   answers the same, the first one's result). Catches a pipeline that retries a booking, a hedge or
 *   restart that runs it again, a by-key tool that ignores its key (a `lost-answer` fault and a
 *   retry find it).
 * - `budget-held`: it makes no more model calls or tool executions than the budget, calls no model
 *   after its tokens are spent. Catches fallbacks or retries outside the run's budget.
 * - `healing-announced`: it says on the hub (its events) every attempt after the first of a turn
 *   and every tool retry. Catches a silent `retry()`, a fallback made outside the run's hub.
 * - `nothing-left`: it leaves nothing scheduled, no stream or execution subscribed, no
 *   undeliverable error. Catches a deadline left armed, a stream never torn down.
 *
 * `side-effects-once` knows a side effect only by the tool's `idempotent` declaration: a tool
 * declared idempotent that is not (a payment marked safe to repeat) is retried without a word
 * from it. Guard such a tool with an invariant of your own:
 *
 * @example
 * ```ts
 * builtinInvariants({ budget: { maxModelCalls: 6 } }).map((i) => i.name); // ['ends', 'typed-outcome', …]
 * // `charge` is declared idempotent, but every execution charges: at most one per call
 * const chargedOnce: Invariant = {
 *   name: 'charged-once',
 *   check: (run) => {
 *     const byCall = new Map<string, number>();
 *     for (const t of run.tools) if (t.tool === 'charge') byCall.set(t.callId ?? '?', (byCall.get(t.callId ?? '?') ?? 0) + 1);
 *     return [...byCall].filter(([, n]) => n > 1).map(([id, n]) => `'charge' ran ${n} times for call '${id}'`);
 *   },
 * };
 * ```
 */
export function builtinInvariants(options: InvariantOptions = {}): Invariant[] {
  const allowed = options.errors ?? DOCUMENTED_ERRORS;
  return [
    { name: 'ends', check: ends },
    { name: 'typed-outcome', check: (run) => typedOutcome(run, allowed) },
    { name: 'text-intact', check: textIntact },
    { name: 'side-effects-once', check: sideEffectsOnce },
    { name: 'budget-held', check: (run) => budgetHeld(run, options.budget) },
    { name: 'healing-announced', check: healingAnnounced },
    { name: 'nothing-left', check: nothingLeft },
  ];
}

/**
 * The violations of `run` against `invariants`; an invariant that throws is a violation of its own.
 *
 * @example
 * ```ts
 * const violations = checkInvariants(run, builtinInvariants());
 * ```
 */
export function checkInvariants(run: Omit<ChaosRun, 'violations'>, invariants: readonly Invariant[]): Violation[] {
  const out: Violation[] = [];
  for (const invariant of invariants) {
    let found: string | readonly string[] | undefined;
    try {
      found = invariant.check(run);
    } catch (error) {
      found = `the invariant threw: ${errorName(error)}`;
    }
    const list = typeof found === 'string' ? [found] : (found ?? []);
    for (const message of list) out.push({ invariant: invariant.name, message });
  }
  return out;
}
