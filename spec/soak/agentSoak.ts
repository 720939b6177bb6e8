/**
 * The agent fault soak, shared by `spec/soak/*.spec.ts` (reduced sizes, inside `npm test`) and
 * `bench/soak.ts` (full size, `npm run soak`).
 *
 * - {@link runAgentSoak}: agent runs in virtual time (one `TestScheduler.run` per batch of runs
 *   sharing a `CircuitBreakerRegistry` and a `CapabilityRegistry`), each generated from a seed:
 *   a `fallbackModel` over 2–3 scripted models (each behind `timeout({ first, each })` and its own
 *   `retryWithBackoff`: around the model with afterEmit 'error', or in `perModel` with afterEmit
 *   'restart', whose resets reach continuations too), a model pipeline (a chain retry and/or a total
 *   budget), tools (idempotent `lookup`, non-idempotent `book`, slow `search` under
 *   `degradeAfter`) through `retryWithBackoff` + `circuitBreak` + `reflectOnError`, and random
 *   faults per model call and per tool execution.
 * - {@link runLoopbackSoak}: the same agent shape in real time against two local HTTP providers
 *   (`startLocalProvider`, one per protocol) with random faults set per run.
 *
 * Every run is checked (see {@link checkRun} and the loopback loop); a batch is checked after its
 * runs ended (scheduler actions, live subscriptions). Problems are collected, not thrown, so a
 * report shows every one with the seed, batch and run that reproduce it.
 */
import * as t from 'io-ts';
import {
  asyncScheduler,
  concat,
  config as rxConfig,
  defer,
  EMPTY,
  map,
  mergeMap,
  Observable,
  Subject,
  tap,
  throwError,
  timeout,
  timer,
  type Subscription,
} from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { CapabilityRegistry } from '../../src/core/capabilities/CapabilityRegistry.js';
import { type CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { classifyError } from '../../src/core/errors/classify.js';
import {
  AllFallbacksFailedError,
  BudgetExceededError,
  CircuitOpenError,
  HttpError,
  RetriesExhaustedError,
  ToolError,
  TotalTimeoutError,
} from '../../src/core/errors/errors.js';
import { AgentEventCodec, type AgentEvent, type Message, type ToolMessage, type TurnEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { DEFAULT_CONTINUE_INSTRUCTION, fallbackModel, type FallbackModelOptions } from '../../src/sources/fallbackModel.js';
import { streamModel, type Model, type ModelRequest } from '../../src/core/model/model.js';
import { anthropicModel } from '../../src/providers/anthropic.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { IncompleteStreamError, MalformedStreamError } from '../../src/providers/sse.js';
import { runAgent, type AgentConfig } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { scriptedAssistant, startLocalProvider, type Fault, type LocalProvider } from '../../src/server/index.js';
import { describeEvent, finish, reasoning, textDeltas, toolCall } from '../../src/testing/index.js';

// ---------------------------------------------------------------------------------------------
// seeded randomness
// ---------------------------------------------------------------------------------------------

/** mulberry32: a small, fast, seeded PRNG (numbers in [0, 1)). */
export class Rng {
  private a: number;

  constructor(seed: number) {
    this.a = seed >>> 0;
  }

  /** Derives an independent seed for item `i` of stream `seed` (a run, a batch). */
  static derive(seed: number, ...path: number[]): number {
    // murmur3's finaliser after each step: nearby seeds and indices give unrelated streams
    const mix = (x: number): number => {
      x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
      x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
      return (x ^ (x >>> 16)) >>> 0;
    };
    let h = mix(seed >>> 0);
    for (const p of path) h = mix((h + Math.imul(p + 1, 0x9e3779b9)) >>> 0);
    return h;
  }

  next = (): number => {
    this.a = (this.a + 0x6d2b79f5) >>> 0;
    let x = this.a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** One key, with probability proportional to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    let r = this.next() * entries.reduce((n, [, w]) => n + w, 0);
    for (const [key, w] of entries) {
      r -= w;
      if (r < 0) return key;
    }
    return entries[entries.length - 1]![0];
  }
}

// ---------------------------------------------------------------------------------------------
// what a soak reports
// ---------------------------------------------------------------------------------------------

/** Counts by label. */
export type Histogram = Record<string, number>;

const bump = (h: Histogram, key: string, n = 1): void => {
  h[key] = (h[key] ?? 0) + n;
};

/** What a soak found. `problems` is empty when every check passed. */
export interface SoakReport {
  readonly name: string;
  readonly seed: number;
  readonly runs: number;
  readonly elapsedMs: number;
  /** How each run ended: `answer`, or the terminal error's class (and resource / reason). */
  readonly outcomes: Histogram;
  /** Faults injected (model calls and tool executions), by kind. */
  readonly faults: Histogram;
  /** Runs in which each healing action happened at least once. */
  readonly healing: Histogram;
  /** Every failed check, with what reproduces it. */
  readonly problems: string[];
  /**
   * Leak figures measured after all runs (only what is not already a problem): the largest
   * number of observers left on one shared breaker's transition subject (0 expected: a registry
   * follows its breakers only while its own `events$` is observed).
   */
  readonly leaks: { readonly breakerObserversMax: number; readonly breakerObserversTotal: number };
  /** Extra figures (virtual time simulated, requests seen…). */
  readonly figures: Record<string, number | string>;
}

/** A few lines for a terminal. */
export function formatReport(report: SoakReport): string {
  const rate = report.runs / (report.elapsedMs / 1000);
  const hist = (h: Histogram): string =>
    Object.entries(h)
      .sort(([, a], [, b]) => b - a)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  const lines = [
    `${report.problems.length === 0 && report.leaks.breakerObserversMax === 0 ? 'ok  ' : 'FAIL'}  ${report.name}: ${report.runs} runs in ${(report.elapsedMs / 1000).toFixed(2)} s (${rate.toFixed(0)} runs/s, seed ${report.seed})`,
    `      outcomes: ${hist(report.outcomes)}`,
    `      healing (runs): ${hist(report.healing)}`,
    `      faults injected: ${hist(report.faults)}`,
    `      leaks: breaker observers max ${report.leaks.breakerObserversMax} (0 expected), total ${report.leaks.breakerObserversTotal}`,
    `      ${Object.entries(report.figures)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  ];
  for (const p of report.problems.slice(0, 20)) lines.push(`      problem: ${p}`);
  if (report.problems.length > 20) lines.push(`      … and ${report.problems.length - 20} more problems`);
  return lines.join('\n');
}

/** Who follows a breaker's transitions: observers of its (private) subject, and its listeners (hubs, registries). */
export function breakerObservers(breaker: CircuitBreaker): number {
  const b = breaker as unknown as { subject?: { observers: unknown[] }; listeners?: Set<unknown> };
  return (b.subject?.observers.length ?? 0) + (b.listeners?.size ?? 0);
}

/** Whether a hub still has a (private) follower, a subscriber to its events (the run's own subscription ends with it). */
function hubObserved(hub: HealHub): boolean {
  return (hub as unknown as { followers: unknown }).followers !== undefined;
}

function capabilitiesObserved(capabilities: CapabilityRegistry): boolean {
  return (capabilities as unknown as { changes: Subject<unknown> }).changes.observed;
}

/**
 * Catches what must never happen during a soak: unhandled rejections, and errors RxJS could not
 * deliver (thrown inside a callback). (Notifications to an already stopped subscriber are not
 * counted: RxJS's own operators make them — a `timer` completing after a `mergeMap` it feeds has
 * errored — and they are dropped.)
 */
class UnhandledWatch {
  readonly seen: string[] = [];
  private readonly onRejection = (reason: unknown): void => {
    this.seen.push(`unhandled rejection: ${String((reason as Error | undefined)?.stack ?? reason)}`);
  };
  private readonly previous = rxConfig.onUnhandledError;

  start(): void {
    process.on('unhandledRejection', this.onRejection);
    rxConfig.onUnhandledError = (error: unknown) => this.seen.push(`RxJS unhandled error: ${String((error as Error | undefined)?.stack ?? error)}`);
  }

  stop(): void {
    process.off('unhandledRejection', this.onRejection);
    rxConfig.onUnhandledError = this.previous;
  }
}

// ---------------------------------------------------------------------------------------------
// the virtual-time scenario
// ---------------------------------------------------------------------------------------------

const MODEL_IDS = ['alpha', 'beta', 'gamma'] as const;
type ToolName = 'lookup' | 'book' | 'search';

/** One generated run. */
export interface Scenario {
  readonly batch: number;
  readonly index: number;
  readonly models: readonly string[];
  readonly midStream: 'restart' | 'continue';
  readonly modelRetries: number;
  /**
   * Where each model's own retries run: `'error'`, around the model (afterEmit 'error'); `'restart'`,
   * in `fallbackModel`'s `perModel` (afterEmit 'restart': a reset per restart, inside a
   * continuation too, where it may take back only the continuation's own text).
   */
  readonly modelAfterEmit: 'error' | 'restart';
  readonly modelBackoffMs: number;
  readonly jitter: 'none' | 'full';
  readonly firstMs: number;
  readonly idleMs: number;
  /** Retries of the whole chain (the model pipeline) after AllFallbacksFailedError; 0 = none. */
  readonly chainRetries: number;
  /** The model pipeline's total budget per turn, when set. */
  readonly totalTimeoutMs: number | undefined;
  readonly maxReflections: number;
  readonly onExhausted: 'instruct' | 'error';
  readonly budget: { maxModelCalls?: number; maxToolCalls?: number; maxTokens?: number };
  readonly maxSteps: number;
  /** Tool rounds the model plans: each tool at most once, in order. */
  readonly rounds: readonly (readonly ToolName[])[];
  /** Tool-call turns start with a little text. */
  readonly preamble: boolean;
  /** The answer's words (distinct first letters: no word is a prefix of another). */
  readonly words: readonly string[];
  /** Tokens of the partial text a continuing model repeats first (to be trimmed). */
  readonly overlapTokens: number;
  readonly modelFaultRate: number;
  readonly toolFaultRate: number;
  /** When the run starts, in the batch's virtual time. */
  readonly startAt: number;
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'so', 'ti', 'va', 'ze', 'po'];
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

function generateScenario(rng: Rng, batch: number, index: number, startAt: number): Scenario {
  const tools: ToolName[] = (['lookup', 'book', 'search'] as const).filter(() => rng.chance(0.5));
  // shuffle, then split into one or two rounds
  for (let i = tools.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [tools[i], tools[j]] = [tools[j]!, tools[i]!];
  }
  const cut = tools.length > 1 && rng.chance(0.5) ? rng.int(1, tools.length - 1) : tools.length;
  const rounds = [tools.slice(0, cut), tools.slice(cut)].filter((r) => r.length > 0);
  const letters = LETTERS.split('');
  const words = Array.from({ length: rng.int(2, 12) }, () => {
    const first = letters.splice(rng.int(0, letters.length - 1), 1)[0]!;
    return `${first}${rng.pick(SYLLABLES)}${rng.pick(SYLLABLES)}`;
  });
  const storm = rng.weighted({ calm: 3, rough: 4, storm: 2 });
  const rate = { calm: 0.1, rough: 0.3, storm: 0.6 }[storm];
  return {
    batch,
    index,
    models: MODEL_IDS.slice(0, rng.int(2, 3)),
    midStream: rng.chance(0.5) ? 'restart' : 'continue',
    modelRetries: rng.int(0, 2),
    modelBackoffMs: rng.pick([100, 250, 500]),
    jitter: rng.chance(0.5) ? 'none' : 'full',
    firstMs: rng.pick([2_000, 3_000]),
    idleMs: rng.pick([500, 1_000]),
    chainRetries: rng.chance(0.25) ? 1 : 0,
    totalTimeoutMs: rng.chance(0.2) ? rng.int(3_000, 20_000) : undefined,
    maxReflections: rng.int(1, 3),
    onExhausted: rng.chance(0.3) ? 'error' : 'instruct',
    budget: {
      ...(rng.chance(0.3) ? { maxModelCalls: rng.int(3, 20) } : {}),
      ...(rng.chance(0.2) ? { maxToolCalls: rng.int(1, 6) } : {}),
      ...(rng.chance(0.2) ? { maxTokens: rng.int(20, 200) } : {}),
    },
    maxSteps: rng.int(3, 9),
    rounds,
    preamble: rng.chance(0.5),
    words,
    overlapTokens: rng.int(0, 2),
    modelFaultRate: rate,
    toolFaultRate: rate,
    startAt,
    // drawn last: the other fields of a seed's scenario stay what they were
    modelAfterEmit: rng.chance(0.5) ? 'error' : 'restart',
  };
}

/** The answer a model gives at the end: distinct per model, so a final text names its attempt. */
const answerText = (s: Scenario, model: string): string => `${model}:${s.words.map((w) => ` ${w}`).join('')}.`;
const preambleText = (model: string): string => `(${model} looks it up)`;

interface PlannedTurn {
  readonly kind: 'tools' | 'final';
  readonly text: string;
  readonly tools: readonly ToolName[];
}

/** What the scripted model answers to a conversation (deterministic, like the local assistant). */
function decide(s: Scenario, model: string, messages: readonly Message[]): PlannedTurn {
  const history = messages.filter((m) => m.role !== 'system').slice(1);
  const called = new Set<string>();
  const failures = new Map<string, number>();
  for (const m of history) {
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) called.add(c.name);
    if (m.role === 'tool' && m.isError) failures.set(m.toolName, (failures.get(m.toolName) ?? 0) + 1);
  }
  const trailing: ToolMessage[] = [];
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i]!;
    if (m.role !== 'tool') break;
    trailing.unshift(m);
  }
  let tools = [
    ...new Set(trailing.filter((m) => m.isError && (failures.get(m.toolName) ?? 0) < 3 && !/Do not call it again/.test(m.content)).map((m) => m.toolName as ToolName)),
  ];
  if (tools.length === 0) {
    for (const round of s.rounds) {
      const open = round.filter((n) => !called.has(n));
      if (open.length > 0) {
        tools = open;
        break;
      }
    }
  }
  if (tools.length > 0) return { kind: 'tools', text: s.preamble ? preambleText(model) : '', tools };
  return { kind: 'final', text: answerText(s, model), tools: [] };
}

type ModelFault =
  | 'ok'
  | 'slow-first'
  | 'http429'
  | 'http429-long'
  | 'http500'
  | 'http503'
  | 'http400'
  | 'reset'
  | 'malformed'
  | 'incomplete'
  | 'stall-first'
  | 'stall-mid'
  | 'truncated'
  | 'bad-args';

const MODEL_FAULTS: Readonly<Record<Exclude<ModelFault, 'ok'>, number>> = {
  'slow-first': 2,
  http429: 3,
  'http429-long': 1,
  http500: 3,
  http503: 3,
  http400: 1,
  reset: 4,
  malformed: 2,
  incomplete: 2,
  'stall-first': 2,
  'stall-mid': 3,
  truncated: 0.6,
  'bad-args': 3,
};

/** Every fault a scripted model call may get. */
export const MODEL_FAULT_KINDS = Object.keys(MODEL_FAULTS) as readonly Exclude<ModelFault, 'ok'>[];

type ToolFault = 'ok' | 'http503' | 'http429' | 'rejected' | 'slow';

/** One call of a scripted model, as the soak saw it. */
interface ModelCall {
  readonly model: string;
  /** Whose whole text this call's text is part of (itself, or the model a continuation continues). */
  readonly base: string;
  readonly kind: 'tools' | 'final';
  readonly continuation: boolean;
  /** The partial text a continuation was asked to continue. */
  readonly partial: string | undefined;
  readonly fault: ModelFault;
  delivered: boolean;
  /** Whether it emitted any text (before a fault or not). */
  texted: boolean;
}

/** Everything recorded about one run. */
interface RunTrace {
  readonly scenario: Scenario;
  readonly hub: HealHub;
  readonly events: AgentEvent[];
  error: unknown;
  completed: boolean;
  endedAt: number | undefined;
  readonly calls: ModelCall[];
  readonly faults: string[];
  /** Executions of the non-idempotent tool, by call id (carried in the arguments as `nonce`). */
  readonly bookings: Map<string, number>;
  /** Model streams and tool executions subscribed and not yet torn down. */
  active: number;
  readonly problems: string[];
  callIds: number;
  /** The reasoning texts the models emitted (half the turns reason first, some signed). */
  readonly thoughts: Set<string>;
}

const LookupArgs = t.type({ q: t.string, nonce: t.string });
const BookArgs = t.type({ item: t.string, nonce: t.string });
const SearchArgs = t.type({ query: t.string, nonce: t.string });

const goodArgs = (name: ToolName, nonce: string): Record<string, unknown> =>
  name === 'lookup' ? { q: 'order 42', nonce } : name === 'book' ? { item: 'table for two', nonce } : { query: 'refund policy', nonce };
const badArgs = (name: ToolName): Record<string, unknown> => (name === 'lookup' ? { q: 42 } : name === 'book' ? { item: null } : { query: ['x'] });

/**
 * Counts a subscription as live until its teardown (model streams, tool executions); a value
 * produced after the run ended means a subscription outlived the run.
 */
function counted<T>(trace: RunTrace, source: Observable<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    trace.active++;
    const sub = source.subscribe({
      next: (value) => {
        if (trace.endedAt !== undefined && trace.endedAt < asyncScheduler.now()) trace.problems.push('a model stream or tool produced a value after the run ended');
        subscriber.next(value);
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () => subscriber.complete(),
    });
    return () => {
      trace.active--;
      sub.unsubscribe();
    };
  });
}

/** Events `gap` ms apart, then the end. */
function timed<T>(events: readonly T[], gap: number, end: Observable<T>, firstGap = gap): Observable<T> {
  return concat(...events.map((e, i) => timer(i === 0 ? firstGap : gap).pipe(map(() => e))), end);
}

const after = <T>(ms: number, o: Observable<T>): Observable<T> => timer(ms).pipe(mergeMap(() => o));

/** A scripted model of the soak: answers by {@link decide}, faults drawn per call. */
function soakModel(id: string, s: Scenario, rng: Rng, trace: RunTrace, stalls: Subject<TurnEvent>[]): Model {
  return {
    id,
    stream: (request) =>
      counted(
        trace,
        defer(() => {
          if (trace.endedAt !== undefined) trace.problems.push(`model '${id}' called after the run ended`);
          const messages = request.messages;
          const last = messages[messages.length - 1];
          const prev = messages[messages.length - 2];
          let planned: PlannedTurn;
          let base = id;
          let text: string;
          let continuation = false;
          let partial: string | undefined;
          if (last?.role === 'user' && last.content === DEFAULT_CONTINUE_INSTRUCTION && prev?.role === 'assistant') {
            continuation = true;
            if (s.midStream !== 'continue') trace.problems.push(`model '${id}' asked to continue in '${s.midStream}' mode`);
            const before = messages.slice(0, -2);
            const cut = prev.content;
            partial = cut;
            const match = s.models.map((m) => ({ m, turn: decide(s, m, before) })).find(({ turn }) => cut !== '' && turn.text.startsWith(cut));
            if (!match) {
              trace.problems.push(`model '${id}' asked to continue ${JSON.stringify(cut)}, which is no model's text`);
              planned = decide(s, id, before);
              text = planned.text;
            } else {
              planned = match.turn;
              base = match.m;
              const tokens = cut.match(/\s*\S+/g) ?? [];
              const overlap = tokens.slice(Math.max(0, tokens.length - s.overlapTokens)).join('');
              text = (s.overlapTokens > 0 ? overlap : '') + planned.text.slice(cut.length);
            }
          } else {
            planned = decide(s, id, messages);
            text = planned.text;
          }
          let fault: ModelFault = rng.chance(s.modelFaultRate) ? rng.weighted(MODEL_FAULTS) : 'ok';
          if (fault === 'bad-args' && planned.kind !== 'tools') fault = 'ok';
          trace.faults.push(`model:${fault}`);
          const call: ModelCall = { model: id, base, kind: planned.kind, continuation, partial, fault, delivered: false, texted: false };
          trace.calls.push(call);
          // half the turns reason first (a block, signed half the time): it must never reach the text
          const thought = rng.chance(0.5) ? `Planning ${planned.kind} as ${id} (${++trace.callIds}).` : undefined;
          if (thought !== undefined) trace.thoughts.add(thought);
          const content: TurnEvent[] = [
            ...(thought === undefined ? [] : reasoning(thought, rng.chance(0.5) ? `sig-${trace.callIds}` : undefined)),
            ...textDeltas(text),
            ...planned.tools.map((name) => {
              const nonce = `${s.index}-${id}-${++trace.callIds}`;
              return toolCall(nonce, name, fault === 'bad-args' && rng.chance(0.7) ? badArgs(name) : goodArgs(name, nonce));
            }),
          ];
          const usage = { inputTokens: 5, outputTokens: content.length };
          const done = finish(planned.kind === 'tools' ? 'tool-calls' : 'stop', usage);
          const gap = rng.int(5, 80);
          const k = rng.int(0, content.length);
          const whole = [...content, done];
          // whether this call emitted any text (before a fault or not)
          const texted = tap<TurnEvent>((e) => (call.texted ||= e.type === 'text-delta'));
          const stream$ = ((): Observable<TurnEvent> => {
            switch (fault) {
              case 'ok':
              case 'bad-args':
                return timed(whole, gap, EMPTY).pipe(tap((e) => (call.delivered ||= e === done)));
              case 'slow-first':
                return timed(whole, gap, EMPTY, s.firstMs - rng.int(1, 200)).pipe(tap((e) => (call.delivered ||= e === done)));
              case 'http429':
                return after(gap, throwError(() => new HttpError(429, { 'retry-after': String(rng.int(1, 2)) })));
              case 'http429-long':
                return after(gap, throwError(() => new HttpError(429, { 'retry-after': '120' })));
              case 'http500':
                return after(gap, throwError(() => new HttpError(500)));
              case 'http503':
                return after(gap, throwError(() => new HttpError(503)));
              case 'http400':
                return after(gap, throwError(() => new HttpError(400, {}, 'bad request')));
              case 'reset':
                return timed(content.slice(0, k), gap, after(gap, throwError(() => new IncompleteStreamError(id, 'connection reset', k))));
              case 'incomplete':
                return timed(content, gap, after(gap, throwError(() => new IncompleteStreamError(id, 'no [DONE]', content.length))));
              case 'malformed':
                return timed(content.slice(0, k), gap, after(gap, throwError(() => new MalformedStreamError(id, 'invalid JSON', '{"choices":[{"delta":{"content":"Hel'))));
              case 'stall-first':
              case 'stall-mid': {
                const stall = new Subject<TurnEvent>();
                stalls.push(stall);
                return timed(fault === 'stall-first' ? [] : content.slice(0, Math.max(1, k)), gap, stall);
              }
              case 'truncated':
                return timed(content.slice(0, k), gap, EMPTY);
            }
          })();
          return stream$.pipe(texted);
        }),
      ),
  };
}

/** The soak's tools: lookup (idempotent), book (not idempotent), search (slow, idempotent). */
function soakTools(s: Scenario, rng: Rng, trace: RunTrace) {
  const outcome = (name: ToolName): Observable<unknown> => {
    if (trace.endedAt !== undefined) trace.problems.push(`tool '${name}' executed after the run ended`);
    const roll: ToolFault = rng.chance(s.toolFaultRate)
      ? name === 'search'
        ? rng.weighted({ slow: 3, http503: 1 } as Record<ToolFault, number>)
        : name === 'book'
          ? rng.weighted({ http503: 2, rejected: 2 } as Record<ToolFault, number>)
          : rng.weighted({ http503: 2, http429: 1, rejected: 2, slow: 1 } as Record<ToolFault, number>)
      : 'ok';
    trace.faults.push(`tool:${roll}`);
    const latency = rng.int(10, 300);
    switch (roll) {
      case 'ok':
        return timer(latency).pipe(map(() => ({ ok: name })));
      case 'slow':
        return timer(name === 'search' ? rng.int(2_500, 6_000) : rng.int(600, 1_500)).pipe(map(() => ({ ok: name, slow: true })));
      case 'http503':
        return after(latency, throwError(() => new HttpError(503)));
      case 'http429':
        return after(latency, throwError(() => new HttpError(429, { 'retry-after': '1' })));
      case 'rejected':
        return after(latency, throwError(() => new Error(`${name} rejected the request: no such record`)));
    }
  };
  return [
    defineTool({ name: 'lookup', description: 'Looks an order up', args: LookupArgs, idempotent: true, execute: () => counted(trace, defer(() => outcome('lookup'))) }),
    defineTool({
      name: 'book',
      description: 'Books a table (a side effect: never run twice)',
      args: BookArgs,
      idempotent: false,
      execute: ({ nonce }) =>
        counted(
          trace,
          defer(() => {
            trace.bookings.set(nonce, (trace.bookings.get(nonce) ?? 0) + 1);
            return outcome('book');
          }),
        ),
    }),
    defineTool({ name: 'search', description: 'Searches the docs (slow)', args: SearchArgs, idempotent: true, execute: () => counted(trace, defer(() => outcome('search'))) }),
  ];
}

/** A model behind its own deadlines (the first event, then each next). */
function timedModel(model: Model, s: { firstMs: number; idleMs: number }): Model {
  return { id: model.id, stream: (request) => streamModel(model, request).pipe(timeout({ first: s.firstMs, each: s.idleMs })) };
}

type ModelRetryTiming = { modelRetries: number; modelBackoffMs: number; jitter: 'none' | 'full' };

/** A model's own retries: `maxRetries`, backoff and jitter of the scenario. */
const modelRetryOptions = (hub: HealHub, target: string, s: ModelRetryTiming, random: () => number) =>
  ({ hub, target, maxRetries: s.modelRetries, initialBackoffMs: s.modelBackoffMs, maxBackoffMs: 4_000, jitter: s.jitter, random }) as const;

/** A model behind its own deadlines and retries (what the demo does per provider). */
function healedModel(model: Model, hub: HealHub, s: { firstMs: number; idleMs: number } & ModelRetryTiming, random: () => number): Model {
  const timed = timedModel(model, s);
  return {
    id: model.id,
    stream: (request) => streamModel(timed, request).pipe(retryWithBackoff({ ...modelRetryOptions(hub, `model:${model.id}`, s, random), afterEmit: 'error' })),
  };
}

/** A batch's shared state: one breaker registry and one capability registry for all its runs. */
interface Shared {
  readonly breakers: CircuitBreakerRegistry;
  readonly capabilities: CapabilityRegistry;
}

function agentConfig(s: Scenario, rng: Rng, trace: RunTrace, shared: Shared, stalls: Subject<TurnEvent>[]): AgentConfig {
  const { breakers, capabilities } = shared;
  const hub = trace.hub;
  const restarting = s.modelAfterEmit === 'restart';
  const models = s.models.map((id) => (restarting ? timedModel(soakModel(id, s, rng, trace, stalls), s) : healedModel(soakModel(id, s, rng, trace, stalls), hub, s, rng.next)));
  // 'restart': each model's retries run in perModel, their resets through the chain (into continuations)
  const perModel: FallbackModelOptions['perModel'] = (_id, stream$, { hub: runHub, target }) =>
    stream$.pipe(
      retryWithBackoff<TurnEvent>({ ...modelRetryOptions(runHub ?? hub, target, s, rng.next), afterEmit: 'restart', onRestart: () => ({ type: 'reset', reason: 'retry', target }) }),
    );
  const reflect = reflectOnError({ maxReflections: s.maxReflections, onExhausted: s.onExhausted });
  const chain = s.chainRetries > 0 || s.totalTimeoutMs !== undefined;
  return {
    model: fallbackModel(models, { breakers, hub, midStream: s.midStream, ...(restarting ? { perModel } : {}) }),
    tools: soakTools(s, rng, trace),
    hub,
    capabilities,
    instruction: 'You are the soak assistant.',
    messages: [{ role: 'user', content: `Question ${s.index}` }],
    maxSteps: s.maxSteps,
    budget: s.budget,
    toolPipeline: (call, call$, { hub: runHub }) => {
      const guarded = call$.pipe(
        retryWithBackoff({ hub: runHub, target: `tool:${call.name}`, maxRetries: 2, initialBackoffMs: 200, jitter: 'none' }),
        circuitBreak(breakers.get(`tool:${call.name}`), { hub: runHub }),
        reflect,
      );
      return call.name === 'search' ? guarded.pipe(degradeAfter(2_000, 'unavailable', { capability: 'search', capabilities })) : guarded;
    },
    ...(chain
      ? {
          modelPipeline: (_request: ModelRequest, turn$: Observable<TurnEvent>, { hub: runHub }: { hub: HealHub }) =>
            turn$.pipe(
              retryWithBackoff<TurnEvent>({
                hub: runHub,
                target: 'model:chain',
                maxRetries: s.chainRetries,
                initialBackoffMs: 2_000,
                jitter: 'none',
                shouldRetry: (e) => s.chainRetries > 0 && e instanceof AllFallbacksFailedError,
                afterEmit: 'restart',
                onRestart: () => ({ type: 'reset', reason: 'retry', target: 'model:chain' }),
                ...(s.totalTimeoutMs === undefined ? {} : { totalTimeoutMs: s.totalTimeoutMs }),
              }),
            ),
        }
      : {}),
  };
}

/** Errors a model may fail with: one of the known kinds, each one the classifier understands. */
function isKnownModelError(e: unknown): boolean {
  const known =
    e instanceof HttpError ||
    e instanceof IncompleteStreamError ||
    e instanceof MalformedStreamError ||
    e instanceof CircuitOpenError ||
    e instanceof RetriesExhaustedError ||
    e instanceof TotalTimeoutError ||
    (e instanceof Error && e.name === 'TimeoutError') ||
    // fetch's own network failure (a provider that is down), as is
    (e instanceof TypeError && classifyError(e).category === 'connection');
  return known && classifyError(e).category !== 'unknown';
}

/**
 * The terminal errors a run may end with, given its configuration. Returns the outcome label, or
 * a problem.
 */
export function terminalOutcome(
  error: unknown,
  s: Pick<Scenario, 'models' | 'budget' | 'chainRetries' | 'totalTimeoutMs' | 'onExhausted'>,
  faults: readonly string[],
): { label: string; problem?: string } {
  if (error instanceof AllFallbacksFailedError) {
    const bad = error.errors.filter((e) => !isKnownModelError(e));
    if (error.errors.length !== s.models.length) return { label: 'AllFallbacksFailedError', problem: `AllFallbacksFailedError lists ${error.errors.length} errors for ${s.models.length} models` };
    if (bad.length > 0) return { label: 'AllFallbacksFailedError', problem: `AllFallbacksFailedError lists unclassified errors: ${bad.map(String).join('; ')}` };
    return { label: 'AllFallbacksFailedError' };
  }
  if (error instanceof BudgetExceededError) {
    const label = `BudgetExceededError(${error.resource})`;
    const limits: Record<string, number | undefined> = { modelCalls: s.budget.maxModelCalls, toolCalls: s.budget.maxToolCalls, tokens: s.budget.maxTokens };
    if (error.resource !== 'steps' && limits[error.resource] === undefined) return { label, problem: `${label} without that budget` };
    return { label };
  }
  if (error instanceof RetriesExhaustedError) {
    if (s.chainRetries === 0) return { label: 'RetriesExhaustedError', problem: 'RetriesExhaustedError reached the run without a chain retry' };
    if (!(error.cause instanceof AllFallbacksFailedError)) return { label: 'RetriesExhaustedError', problem: `RetriesExhaustedError caused by ${String(error.cause)}` };
    return { label: 'RetriesExhaustedError' };
  }
  if (error instanceof TotalTimeoutError) {
    if (s.totalTimeoutMs === undefined) return { label: 'TotalTimeoutError', problem: 'TotalTimeoutError without a total budget' };
    return { label: 'TotalTimeoutError' };
  }
  if (error instanceof ToolError) {
    if (s.onExhausted !== 'error') return { label: 'ToolError', problem: `ToolError ended a run with onExhausted 'instruct': ${error.message}` };
    return { label: 'ToolError(reflections exhausted)' };
  }
  if (error instanceof IncompleteStreamError && faults.includes('model:truncated')) return { label: 'IncompleteStreamError(turn ended without finish)' };
  if (error instanceof Error && /ended without a finish event/.test(error.message) && faults.includes('model:truncated')) {
    // not healed: see the soak spec's "turn without finish" case
    return { label: 'Error(turn ended without finish: unhealed)' };
  }
  return { label: `unexpected ${(error as Error | undefined)?.name ?? typeof error}`, problem: `unexpected terminal error: ${String((error as Error | undefined)?.stack ?? error)}` };
}

/** Per-turn text checks: what a consumer assembles (deltas appended, `reset` clears) is each assistant message. */
export function checkTexts(events: readonly AgentEvent[], problems: string[]): void {
  let shown = '';
  for (const e of events) {
    if (e.type === 'text-delta') shown += e.text;
    else if (e.type === 'reset') shown = '';
    else if (e.type === 'message' && e.message.role === 'assistant') {
      if (shown !== e.message.content) problems.push(`shown text ${JSON.stringify(shown)} != assistant message ${JSON.stringify(e.message.content)}`);
      shown = '';
    }
  }
}

/** Every check on one run of the virtual soak. */
function checkRun(trace: RunTrace, outcomes: Histogram, healing: Histogram): void {
  const { scenario: s, events, problems } = trace;
  if (!trace.completed && trace.error === undefined) {
    problems.push(`hung: no completion and no error after flush (last events: ${events.slice(-5).map(describeEvent).join(', ')})`);
    bump(outcomes, 'HUNG');
    return;
  }
  for (const e of events) {
    if (!AgentEventCodec.is(e)) {
      problems.push(`malformed event ${JSON.stringify(e)}`);
      break;
    }
  }
  checkTexts(events, problems);
  const final = events[events.length - 1];
  if (trace.completed) {
    bump(outcomes, 'answer');
    if (final?.type !== 'message' || final.message.role !== 'assistant' || final.message.toolCalls?.length) {
      problems.push(`completed without a final assistant message (last: ${final ? describeEvent(final) : 'none'})`);
    } else {
      const delivered = trace.calls.filter((c) => c.delivered && c.kind === 'final').at(-1);
      const expected = delivered ? answerText(s, delivered.base) : undefined;
      if (final.message.content !== expected) {
        problems.push(`final answer ${JSON.stringify(final.message.content)} != the attempt's whole text ${JSON.stringify(expected)} (${s.midStream})`);
      }
      // its reasoning: the blocks the models emitted, each apart — whole, or (unsigned) cut where a
      // model died before a continuation took over; never two models' reasoning spliced
      for (const part of final.message.reasoning ?? []) {
        const whole = trace.thoughts.has(part.text);
        const cut = !whole && part.signature === undefined && [...trace.thoughts].some((t) => t.startsWith(part.text) && part.text !== '');
        if (!whole && !cut) problems.push(`final answer's reasoning ${JSON.stringify(part.text)} is no block a model emitted (whole, or cut unsigned)`);
      }
    }
  } else {
    const { label, problem } = terminalOutcome(trace.error, s, trace.faults);
    bump(outcomes, label);
    if (problem) problems.push(problem);
    if (events.some((e) => e.type === 'message' && e.message.role === 'assistant' && !e.message.toolCalls?.length)) problems.push('errored after a final answer');
  }
  for (const [nonce, n] of trace.bookings) if (n > 1) problems.push(`non-idempotent 'book' executed ${n} times for call ${nonce}`);
  if (trace.active !== 0) problems.push(`${trace.active} model streams / tool executions still subscribed after the run ended`);
  if (hubObserved(trace.hub)) problems.push("the run's hub is still observed after the run ended");
  // what healed, for the histogram
  const labels = new Set(events.map((e) => e.type));
  for (const type of ['retry', 'fallback', 'reset', 'reflection', 'degraded'] as const) if (labels.has(type)) bump(healing, type);
  if (events.some((e) => e.type === 'circuit' && e.kind === 'rejected')) bump(healing, 'circuit-rejected');
  if (events.some((e) => e.type === 'circuit' && e.kind === 'transition' && e.to === 'open')) bump(healing, 'circuit-opened');
  if (trace.calls.some((c) => c.continuation && c.delivered)) bump(healing, 'continued');
  // a model's own retry inside a continuation: the same model asked twice in a row to continue the
  // same text; restarted, when its first attempt had emitted text (the reset may take back only that)
  const retried = trace.calls.filter((c, i) => i > 0 && c.continuation && trace.calls[i - 1]!.continuation && trace.calls[i - 1]!.model === c.model && trace.calls[i - 1]!.partial === c.partial);
  if (retried.length > 0) bump(healing, 'continuation-retried');
  if (retried.some((c) => trace.calls[trace.calls.indexOf(c) - 1]!.texted)) bump(healing, 'continuation-restarted');
  if (events.some((e) => e.type === 'tool-error')) bump(healing, 'tool-error');
}

/** Options of {@link runAgentSoak}. */
export interface AgentSoakOptions {
  readonly runs: number;
  readonly seed: number;
  /** Runs sharing breakers and capabilities, started a random 0–3 s apart. Defaults to 20. */
  readonly batchSize?: number;
  /**
   * Fields every scenario gets instead of the drawn ones (the rest is drawn as always), to aim
   * the soak at one combination: `{ midStream: 'continue', modelAfterEmit: 'restart' }`.
   */
  readonly fix?: Partial<Pick<Scenario, 'midStream' | 'modelAfterEmit' | 'modelRetries'>>;
}

/**
 * The virtual-time agent soak. Each batch runs inside one `TestScheduler.run`, stepping virtual
 * time only until every run of the batch has ended, so what is still scheduled then is what the
 * runs left behind.
 */
export function runAgentSoak(options: AgentSoakOptions): SoakReport {
  const { runs, seed } = options;
  const batchSize = options.batchSize ?? 20;
  const outcomes: Histogram = {};
  const faults: Histogram = {};
  const healing: Histogram = {};
  const problems: string[] = [];
  let breakerObserversMax = 0;
  let breakerObserversTotal = 0;
  let virtualMs = 0;
  let events = 0;
  const watch = new UnhandledWatch();
  const started = performance.now();
  watch.start();
  try {
    for (let batch = 0, done = 0; done < runs; batch++) {
      const size = Math.min(batchSize, runs - done);
      const batchRng = new Rng(Rng.derive(seed, batch));
      const ts = new TestScheduler(() => undefined);
      const traces: RunTrace[] = [];
      const stalls: Subject<TurnEvent>[] = [];
      const shared: Shared = { breakers: new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 15_000 }), capabilities: new CapabilityRegistry() };
      const where = (i: number): string => `[seed ${seed}, batch ${batch}, run ${i}]`;
      ts.run(() => {
        let at = 0;
        for (let i = 0; i < size; i++) {
          const index = done + i;
          at += batchRng.int(0, 3_000);
          const rng = new Rng(Rng.derive(seed, batch, i));
          const s = { ...generateScenario(rng, batch, index, at), ...options.fix };
          const trace: RunTrace = { scenario: s, hub: new HealHub(), events: [], error: undefined, completed: false, endedAt: undefined, calls: [], faults: [], bookings: new Map(), active: 0, problems: [], callIds: 0, thoughts: new Set() };
          traces.push(trace);
          asyncScheduler.schedule(() => {
            try {
              runAgent(agentConfig(s, rng, trace, shared, stalls)).subscribe({
                next: (e) => trace.events.push(e),
                error: (e: unknown) => {
                  trace.error = e;
                  trace.endedAt = ts.now();
                },
                complete: () => {
                  trace.completed = true;
                  trace.endedAt = ts.now();
                },
              });
            } catch (e) {
              trace.problems.push(`runAgent threw at subscription: ${String(e)}`);
              trace.error = e;
              trace.endedAt = ts.now();
            }
          }, at);
        }
        // step virtual time only until every run has ended (or nothing is left to run: a hang)
        let steps = 0;
        while (traces.some((tr) => tr.endedAt === undefined) && ts.actions.length > 0) {
          ts.maxFrames = ts.actions[0]!.delay;
          ts.flush();
          if (++steps > 1_000_000) {
            problems.push(`${where(-1)} runaway: a million scheduler steps`);
            break;
          }
        }
        virtualMs += ts.now();
        // what the runs left behind: nothing (an open breaker nobody observes schedules no notice)
        const breakers = shared.breakers.names().map((n) => shared.breakers.get(n));
        const open = breakers.filter((b) => b.state === 'open').length;
        if (ts.actions.length !== 0) problems.push(`${where(-1)} ${ts.actions.length} scheduled actions left after every run ended, ${open} open breakers`);
        for (const b of breakers) b.reset();
        if (ts.actions.length !== 0) problems.push(`${where(-1)} ${ts.actions.length} scheduled actions left after resetting the breakers`);
        for (const b of breakers) {
          const n = breakerObservers(b);
          breakerObserversMax = Math.max(breakerObserversMax, n);
          breakerObserversTotal += n;
        }
        ts.maxFrames = Infinity;
      });
      if (stalls.some((st) => st.observed)) problems.push(`${where(-1)} ${stalls.filter((st) => st.observed).length} stalled streams still subscribed`);
      if (capabilitiesObserved(shared.capabilities)) problems.push(`${where(-1)} the capability registry is still observed`);
      traces.forEach((trace, i) => {
        checkRun(trace, outcomes, healing);
        for (const f of trace.faults) bump(faults, f);
        events += trace.events.length;
        for (const p of trace.problems) problems.push(`${where(i)} ${p} — scenario ${JSON.stringify(trace.scenario)}`);
      });
      done += size;
    }
  } finally {
    watch.stop();
  }
  problems.push(...watch.seen);
  return {
    name: 'agent fault soak (virtual time)',
    seed,
    runs,
    elapsedMs: performance.now() - started,
    outcomes,
    faults,
    healing,
    problems,
    leaks: { breakerObserversMax, breakerObserversTotal },
    figures: { 'virtual time simulated (h)': (virtualMs / 3_600_000).toFixed(1), events },
  };
}

// ---------------------------------------------------------------------------------------------
// the loopback soak (real time, real HTTP)
// ---------------------------------------------------------------------------------------------

/**
 * File-system requests: the test runner's and tsx's (loading and caching modules), never the
 * code under test's; they come and go on their own.
 */
const FS_RESOURCES = new Set(['FSReqCallback', 'FSReqPromise', 'CloseReq', 'FileHandleCloseReq', 'StatWatcher']);

/** Active handles and requests by type (`process.getActiveResourcesInfo()`), file-system requests left out. */
export function activeResources(): Histogram {
  const h: Histogram = {};
  for (const r of process.getActiveResourcesInfo()) if (!FS_RESOURCES.has(r)) bump(h, r);
  return h;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => timer(ms).subscribe({ complete: resolve }));

function sameCounts(a: Histogram, b: Histogram): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((k) => (a[k] ?? 0) === (b[k] ?? 0));
}

const QUESTIONS = ["What's the weather in Paris?", 'What is the refund policy?', 'Tell me something about streams.', 'Temperature in Oslo in fahrenheit?'];

function providerFaults(rng: Rng): Fault[] {
  const out: Fault[] = [];
  const n = rng.weighted({ 0: 3, 1: 4, 2: 1 } as Record<string, number>);
  for (let i = 0; i < Number(n); i++) {
    const times = rng.chance(0.1) ? undefined : rng.int(1, 2);
    const base = times === undefined ? {} : { times };
    const kind = rng.weighted({ status: 4, down: 1, reset: 3, stall: 2, 'slow-first-byte': 1, malformed: 2, 'stream-error': 2, 'bad-tool-args': 2 });
    switch (kind) {
      case 'status': {
        const status = rng.pick([429, 500, 503, 503, 400]);
        out.push({ kind: 'status', status, ...(status === 429 ? { retryAfterMs: rng.int(10, 60) } : {}), ...(status === 503 && rng.chance(0.3) ? { shouldRetry: false } : {}), ...base });
        break;
      }
      case 'down':
        out.push({ kind: 'down', ...base });
        break;
      case 'reset':
        out.push({ kind: 'reset', afterChunks: rng.int(0, 6), ...base });
        break;
      case 'stall':
        out.push({ kind: 'stall', afterChunks: rng.int(0, 4), ...base });
        break;
      case 'slow-first-byte':
        out.push({ kind: 'slow-first-byte', delayMs: rng.chance(0.8) ? rng.int(20, 120) : 400, ...base });
        break;
      case 'malformed':
        out.push({ kind: 'malformed', afterChunks: rng.int(0, 4), ...base });
        break;
      case 'stream-error':
        out.push({ kind: 'stream-error', afterChunks: rng.int(0, 4), errorType: rng.pick(['overloaded_error', 'api_error', 'rate_limit_error']), ...base });
        break;
      case 'bad-tool-args':
        out.push({ kind: 'bad-tool-args', ...base });
        break;
    }
  }
  return out;
}

/** Options of {@link runLoopbackSoak}. */
export interface LoopbackSoakOptions {
  readonly runs: number;
  readonly seed: number;
  /** The providers' wait before each streamed chunk. Defaults to 1 ms. */
  readonly tokenDelayMs?: number;
  /** A run still going after this long is a hang. Defaults to 10 000 ms. */
  readonly hangMs?: number;
  /** No run starts after this long (the report counts the runs made). Defaults to no limit. */
  readonly budgetMs?: number;
}

/**
 * The loopback soak: two local providers on 127.0.0.1 (primary: OpenAI protocol, secondary:
 * Anthropic), random faults per run, one run at a time, the same agent shape and checks as the
 * virtual soak, plus: every request the servers saw has ended before they close, and the
 * process's active handles after closing them are those before starting them.
 */
export async function runLoopbackSoak(options: LoopbackSoakOptions): Promise<SoakReport> {
  const { runs, seed } = options;
  const tokenDelayMs = options.tokenDelayMs ?? 1;
  const hangMs = options.hangMs ?? 10_000;
  const outcomes: Histogram = {};
  const faultsSeen: Histogram = {};
  const healing: Histogram = {};
  const problems: string[] = [];
  const watch = new UnhandledWatch();
  const started = performance.now();
  // a caller's own timers (a test runner's timeout) are armed once its async function yields
  await sleep(0);
  const before = activeResources();
  watch.start();
  let primary: LocalProvider | undefined;
  let secondary: LocalProvider | undefined;
  let requests = 0;
  let ends: Histogram = {};
  let breakerObserversMax = 0;
  let breakerObserversTotal = 0;
  let runMsTotal = 0;
  let runMsMax = 0;
  let made = 0;
  const questions: Histogram = {};
  try {
    primary = await startLocalProvider({ name: 'primary', tokenDelayMs });
    secondary = await startLocalProvider({ name: 'secondary', tokenDelayMs });
    const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 100 });
    const capabilities = new CapabilityRegistry();
    const timing = { firstMs: 300, idleMs: 100, modelRetries: 1, modelBackoffMs: 20, jitter: 'none' as const };
    for (let i = 0; i < runs; i++) {
      if (options.budgetMs !== undefined && performance.now() - started > options.budgetMs) break;
      made++;
      const rng = new Rng(Rng.derive(seed, i));
      const where = `[seed ${seed}, loopback run ${i}]`;
      // an open breaker rejects every run until its probe: mostly wait for the probe, sometimes not
      if (breakers.names().some((n) => breakers.get(n).state === 'open') && rng.chance(0.75)) await sleep(110);
      // a degraded search is restored only by an on-time search, which the model no longer tries
      if (rng.chance(0.8)) capabilities.enable('knowledge_search');
      const midStream = rng.chance(0.5) ? ('restart' as const) : ('continue' as const);
      const onExhausted = rng.chance(0.3) ? ('error' as const) : ('instruct' as const);
      const faultSets = [providerFaults(rng), providerFaults(rng)];
      primary.faults.set(faultSets[0]!);
      secondary.faults.set(faultSets[1]!);
      for (const f of [...faultSets[0]!, ...faultSets[1]!]) bump(faultsSeen, `provider:${f.kind}${f.kind === 'status' ? ` ${f.status}` : ''}`);
      const hub = new HealHub();
      const executions = new Map<string, number>();
      let current: string | undefined;
      let active = 0;
      const liveTool = <T>(o: Observable<T>): Observable<T> =>
        new Observable<T>((subscriber) => {
          active++;
          const sub = o.subscribe(subscriber);
          return () => {
            active--;
            sub.unsubscribe();
          };
        });
      const weather = defineTool({
        name: 'get_weather',
        description: 'Current weather for a city (books a forecast slot: not idempotent)',
        args: t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) }),
        idempotent: false,
        execute: ({ city, units }) => {
          const id = current ?? '?';
          executions.set(id, (executions.get(id) ?? 0) + 1);
          const roll = rng.weighted({ ok: 6, http503: 1, rejected: 1 });
          bump(faultsSeen, `tool:${roll}`);
          if (roll === 'http503') return liveTool(after(5, throwError(() => new HttpError(503))));
          if (roll === 'rejected') return liveTool(after(5, throwError(() => new Error('the weather backend rejected the request'))));
          return liveTool(timer(5).pipe(map(() => ({ city, temperature: units === 'celsius' ? 22 : 72, units, condition: 'sunny' }))));
        },
      });
      const search = defineTool({
        name: 'knowledge_search',
        description: 'Searches the help-centre articles',
        args: t.type({ query: t.string }),
        idempotent: true,
        execute: ({ query }) => {
          const slow = rng.chance(0.4);
          bump(faultsSeen, `tool:${slow ? 'slow' : 'ok'}`);
          return liveTool(timer(slow ? 400 : 5).pipe(map(() => `Article "${query}": refunds are accepted within 30 days.`)));
        },
      });
      const models = [
        healedModel(openAICompatibleModel({ id: 'primary', baseURL: primary.openAIBaseURL, model: 'local' }), hub, timing, rng.next),
        healedModel(anthropicModel({ id: 'secondary', baseURL: secondary.anthropicBaseURL, model: 'local', maxTokens: 512 }), hub, timing, rng.next),
      ];
      const reflect = reflectOnError({ maxReflections: 2, onExhausted });
      const requestsOfTurns: ModelRequest[] = [];
      const question = rng.pick(QUESTIONS);
      bump(questions, question.split(' ').slice(0, 3).join(' '));
      const trace = { events: [] as AgentEvent[], error: undefined as unknown, completed: false };
      const run$ = runAgent({
        model: fallbackModel(models, { breakers, hub, midStream }),
        tools: [weather, search],
        hub,
        capabilities,
        instruction: 'You are a helpful assistant.',
        messages: [{ role: 'user', content: question }],
        maxSteps: 8,
        modelPipeline: (request, turn$) => {
          requestsOfTurns.push(request);
          return turn$;
        },
        toolPipeline: (call, call$, { hub: runHub }) => {
          const tracked = defer(() => {
            current = call.id;
            return call$;
          });
          const guarded = tracked.pipe(
            retryWithBackoff({ hub: runHub, target: `tool:${call.name}`, maxRetries: 2, initialBackoffMs: 10, jitter: 'none' }),
            circuitBreak(breakers.get(`tool:${call.name}`), { hub: runHub }),
            reflect,
          );
          return call.name === 'knowledge_search' ? guarded.pipe(degradeAfter(150, 'unavailable', { capability: 'knowledge_search', capabilities })) : guarded;
        },
      });
      let subscription: Subscription | undefined;
      const runStart = performance.now();
      const ended = await new Promise<boolean>((resolve) => {
        const guard = timer(hangMs).subscribe(() => resolve(false));
        subscription = run$.subscribe({
          next: (e) => trace.events.push(e),
          error: (e: unknown) => {
            trace.error = e;
            guard.unsubscribe();
            resolve(true);
          },
          complete: () => {
            trace.completed = true;
            guard.unsubscribe();
            resolve(true);
          },
        });
      });
      const runMs = performance.now() - runStart;
      runMsTotal += runMs;
      runMsMax = Math.max(runMsMax, runMs);
      const runProblems: string[] = [];
      if (!ended) {
        subscription?.unsubscribe();
        runProblems.push(`hung: still running after ${hangMs} ms (last events: ${trace.events.slice(-5).map(describeEvent).join(', ')})`);
        bump(outcomes, 'HUNG');
      } else {
        for (const e of trace.events) {
          if (!AgentEventCodec.is(e)) {
            runProblems.push(`malformed event ${JSON.stringify(e)}`);
            break;
          }
        }
        checkTexts(trace.events, runProblems);
        if (trace.completed) {
          bump(outcomes, 'answer');
          const final = trace.events[trace.events.length - 1];
          const last = requestsOfTurns[requestsOfTurns.length - 1];
          if (final?.type !== 'message' || final.message.role !== 'assistant' || final.message.toolCalls?.length || !last) {
            runProblems.push(`completed without a final assistant message (last: ${final ? describeEvent(final) : 'none'})`);
          } else {
            // both providers run the same scripted assistant: one attempt's whole text, exactly
            const expected = scriptedAssistant({ protocol: 'openai', model: 'local', messages: last.messages, tools: last.tools }).text ?? '';
            if (final.message.content !== expected) runProblems.push(`final answer ${JSON.stringify(final.message.content)} != the whole answer ${JSON.stringify(expected)} (${midStream})`);
          }
        } else {
          const { label, problem } = terminalOutcome(trace.error, { models: ['primary', 'secondary'], budget: {}, chainRetries: 0, totalTimeoutMs: undefined, onExhausted }, []);
          bump(outcomes, label);
          if (problem) runProblems.push(problem);
        }
      }
      for (const [id, n] of executions) if (n > 1) runProblems.push(`non-idempotent get_weather executed ${n} times for call ${id}`);
      if (active !== 0) runProblems.push(`${active} tool executions still subscribed after the run ended`);
      if (hubObserved(hub)) runProblems.push("the run's hub is still observed after the run ended");
      const types = new Set(trace.events.map((e) => e.type));
      for (const type of ['retry', 'fallback', 'reset', 'reflection', 'degraded'] as const) if (types.has(type)) bump(healing, type);
      if (trace.events.some((e) => e.type === 'circuit' && e.kind === 'rejected')) bump(healing, 'circuit-rejected');
      if (trace.events.some((e) => e.type === 'circuit' && e.kind === 'transition' && e.to === 'open')) bump(healing, 'circuit-opened');
      // a mid-stream fallback without a reset: the next provider continued the partial answer
      if (midStream === 'continue' && trace.events.some((e) => e.type === 'fallback' && e.midStream) && !types.has('reset')) bump(healing, 'continued');
      for (const p of runProblems) problems.push(`${where} ${p} — faults ${JSON.stringify(faultSets)}, midStream ${midStream}, onExhausted ${onExhausted}`);
      primary.faults.clear();
      secondary.faults.clear();
    }
    // every request has ended (client-closed ones end when the server notices): no socket left open
    const servers = [primary, secondary];
    const settle = performance.now();
    while (servers.some((s) => s.requests.some((r) => r.end === undefined)) && performance.now() - settle < 2_000) await sleep(10);
    for (const s of servers) {
      const open = s.requests.filter((r) => r.end === undefined);
      if (open.length > 0) problems.push(`${s.name}: ${open.length} requests still open after every run ended: ${open.map((r) => r.id).join(', ')}`);
      requests += s.requests.length;
      for (const r of s.requests) bump(ends, r.end ?? 'open');
    }
    if (capabilitiesObserved(capabilities)) problems.push('the capability registry is still observed after every run ended');
    for (const name of breakers.names()) {
      const n = breakerObservers(breakers.get(name));
      breakerObserversMax = Math.max(breakerObserversMax, n);
      breakerObserversTotal += n;
    }
  } catch (e) {
    problems.push(`the loopback soak failed: ${String((e as Error | undefined)?.stack ?? e)}`);
  } finally {
    await Promise.all([primary?.close(), secondary?.close()]);
    ends = { ...ends };
  }
  // the servers are closed: the process holds what it held before (fetch's pooled sockets close
  // when the server drops them, a little later)
  let now = activeResources();
  const settle = performance.now();
  while (!sameCounts(before, now) && performance.now() - settle < 3_000) {
    await sleep(20);
    now = activeResources();
  }
  if (!sameCounts(before, now)) problems.push(`active resources before ${JSON.stringify(before)} != after ${JSON.stringify(now)}`);
  watch.stop();
  problems.push(...watch.seen);
  return {
    name: 'loopback soak (two local providers, real time)',
    seed,
    runs: made,
    elapsedMs: performance.now() - started,
    outcomes,
    faults: faultsSeen,
    healing,
    problems,
    leaks: { breakerObserversMax, breakerObserversTotal },
    figures: { 'run ms mean': (runMsTotal / Math.max(1, made)).toFixed(0), 'run ms max': runMsMax.toFixed(0), questions: JSON.stringify(questions), requests, 'request ends': JSON.stringify(ends), 'active resources after': JSON.stringify(now) },
  };
}
