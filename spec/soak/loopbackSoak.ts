/**
 * The loopback soak, shared by spec/soak/loopbackSoak.spec.ts (a few dozen runs, inside `npm
 * test`) and `bench/soak.ts` (a few hundred, `npm run soak`): {@link runLoopbackSoak} runs the
 * soak's agent shape in real time against two local HTTP providers (`startLocalProvider`, one per
 * protocol) with random faults set per run, and checks every run (the whole answer or an allowed
 * terminal error, no hang, the non-idempotent tool once per call) and what is left after all of
 * them (no socket, no handle, no observer). Problems are collected, not thrown, so a report shows
 * every one with the seed and run that reproduce it.
 *
 * (The virtual-time agent soak that shared this file is now spec/soak/chaosSoak.ts, on
 * rxheal/chaos's checkHealing; the bugs it found are fixed cases there.)
 */
import * as t from 'io-ts';
import { config as rxConfig, defer, map, mergeMap, Observable, Subject, throwError, timeout, timer, type Subscription } from 'rxjs';
import { CapabilityRegistry } from '../../src/core/capabilities/CapabilityRegistry.js';
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
import { AgentEventCodec, type AgentEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { streamModel, type Model, type ModelRequest } from '../../src/core/model/model.js';
import { anthropicModel } from '../../src/providers/anthropic.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { IncompleteStreamError, MalformedStreamError } from '../../src/providers/sse.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { scriptedAssistant, startLocalProvider, type Fault, type LocalProvider } from '../../src/server/index.js';
import { describeEvent } from '../../src/testing/index.js';
import { breakerObservers } from '../support/observers.js';
import { bump, Rng, type Histogram, type SoakReport } from './seeded.js';

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
// the agent's parts and the checks
// ---------------------------------------------------------------------------------------------

const after = <T>(ms: number, o: Observable<T>): Observable<T> => timer(ms).pipe(mergeMap(() => o));

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

/** What a run was allowed to end with: its models, budget, chain retries, total budget, and what reflection does when exhausted. */
export interface RunLimits {
  readonly models: readonly string[];
  readonly budget: { readonly maxModelCalls?: number; readonly maxToolCalls?: number; readonly maxTokens?: number };
  readonly chainRetries: number;
  readonly totalTimeoutMs: number | undefined;
  readonly onExhausted: 'instruct' | 'error';
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
export function terminalOutcome(error: unknown, s: RunLimits): { label: string; problem?: string } {
  if (error instanceof AllFallbacksFailedError) {
    const bad = error.errors.filter((e) => !isKnownModelError(e));
    if (error.errors.length !== s.models.length)
      return { label: 'AllFallbacksFailedError', problem: `AllFallbacksFailedError lists ${error.errors.length} errors for ${s.models.length} models` };
    if (bad.length > 0)
      return { label: 'AllFallbacksFailedError', problem: `AllFallbacksFailedError lists unclassified errors: ${bad.map(String).join('; ')}` };
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
    if (!(error.cause instanceof AllFallbacksFailedError))
      return { label: 'RetriesExhaustedError', problem: `RetriesExhaustedError caused by ${String(error.cause)}` };
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
  return {
    label: `unexpected ${(error as Error | undefined)?.name ?? typeof error}`,
    problem: `unexpected terminal error: ${String((error as Error | undefined)?.stack ?? error)}`,
  };
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
        out.push({
          kind: 'status',
          status,
          ...(status === 429 ? { retryAfterMs: rng.int(10, 60) } : {}),
          ...(status === 503 && rng.chance(0.3) ? { shouldRetry: false } : {}),
          ...base,
        });
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
          if (roll === 'http503')
            return liveTool(
              after(
                5,
                throwError(() => new HttpError(503)),
              ),
            );
          if (roll === 'rejected')
            return liveTool(
              after(
                5,
                throwError(() => new Error('the weather backend rejected the request')),
              ),
            );
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
            if (final.message.content !== expected)
              runProblems.push(`final answer ${JSON.stringify(final.message.content)} != the whole answer ${JSON.stringify(expected)} (${midStream})`);
          }
        } else {
          const { label, problem } = terminalOutcome(trace.error, {
            models: ['primary', 'secondary'],
            budget: {},
            chainRetries: 0,
            totalTimeoutMs: undefined,
            onExhausted,
          });
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
    figures: {
      'run ms mean': (runMsTotal / Math.max(1, made)).toFixed(0),
      'run ms max': runMsMax.toFixed(0),
      questions: JSON.stringify(questions),
      requests,
      'request ends': JSON.stringify(ends),
      'active resources after': JSON.stringify(now),
    },
  };
}
