/**
 * Runs one ```marble block (format: scripts/marbleBlocks.ts) against the real operators in
 * `TestScheduler.run`, asserting every `result`, `subs` and `expect` line, and returns a trace of
 * what happened — each subscription of each input, each call's own outcome, each asserted output —
 * from which `npm run docs` draws the diagram. The doc spec (spec/docs/marbleDocs.spec.ts) and the
 * renderer (scripts/marbleDiagram.ts) share this one runner, so a diagram shows what the spec
 * proved.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import * as rx from 'rxjs';
import { catchError, defer, mergeMap, Observable, of, tap, type OperatorFunction } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import * as rxheal from '../src/index.js';
import * as providers from '../src/providers/index.js';
import * as fleet from '../src/fleet/index.js';
import * as events from '../src/events/index.js';
import { BulkheadRejectedError, CircuitOpenError, HttpError, type TurnEvent } from '../src/index.js';
import * as testing from '../src/testing/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import * as mcp from '../src/mcp/index.js';
import { toolset, type FromMcpOptions, type McpSchemaValidator } from '../src/mcp/fromMcp.js';
import type { McpRequestOptions } from '../src/mcp/link.js';
import * as chaos from '../src/chaos/index.js';
import * as a2a from '../src/a2a/index.js';
import { taskStream, type TaskSeams } from '../src/a2a/taskStream.js';
import type { A2AResult, A2AStreamResponse } from '../src/a2a/wire.js';
import { all, named, one, type MarbleBlock } from './marbleBlocks.js';
import { mcpTask } from './marbleTasks.js';

/** A short text for an error, so a diagram's `calls` result can show which error arrived. */
export function label(error: unknown): string {
  if (error instanceof CircuitOpenError) return `open(${error.breaker}, ${error.retryAfterMs})`;
  if (error instanceof HttpError) return `http ${error.status}`;
  if (error instanceof BulkheadRejectedError) return `${error.reason}(${error.bulkhead})`;
  if (error instanceof mcp.McpTimeoutError) return `timeout(${error.kind})`;
  // a tool's failure: what failed it (an MCP server's error, a 503…)
  if (error instanceof rxheal.ToolError && error.cause !== undefined && !(error.cause instanceof rxheal.ToolError)) return label(error.cause);
  if (error instanceof Error) return error.name;
  return String(error);
}

/**
 * `mcpTool(options)`: an operator that makes one call of an `rxheal/mcp` tool (`fromMcp`'s, over
 * its link: breaker, deadlines, cancellation) per subscription, to a server whose answer is the
 * source: `p` a progress notification, any other value the result's text, an error the request's
 * failure. Unsubscribing the source is the request being cancelled. The tool is read-only unless
 * `annotations` say otherwise; its arguments `{}` are checked by the SDK's own validator.
 */
function mcpTool(options: FromMcpOptions & { readonly annotations?: Record<string, boolean> } = {}): OperatorFunction<unknown, unknown> {
  let answer$: Observable<unknown> | undefined;
  const settled = Promise.resolve(undefined);
  const client = {
    callTool: (_params: unknown, _schema: undefined, request: McpRequestOptions = {}) => ({
      // a thenable, not a promise: the server's answer lands at its virtual time, not in a microtask
      then: (ok: (result: unknown) => void, fail: (error: unknown) => void) => {
        const sub = answer$!.subscribe({
          next: (value) => (value === 'p' ? request.onprogress?.({ progress: 1 }) : ok({ content: [{ type: 'text', text: String(value) }] })),
          error: fail,
        });
        request.signal?.addEventListener('abort', () => sub.unsubscribe(), { once: true });
      },
    }),
    listTools: () => Promise.resolve({ tools: [] }),
    ping: () => settled,
    connect: () => Promise.resolve(),
    close: () => Promise.resolve(),
    getServerVersion: () => ({ name: 'docs', version: '1.0.0' }),
  };
  const { annotations, ...fromMcpOptions } = options;
  const set = toolset('fromMcp', client, { id: 'docs', ...fromMcpOptions });
  const [tool] = set.toolsOf(
    [{ name: 'lookup', inputSchema: { type: 'object' }, annotations: annotations ?? { readOnlyHint: true } }],
    new AjvJsonSchemaValidator() as unknown as McpSchemaValidator,
  );
  let n = 0;
  return (source) =>
    defer(() => {
      answer$ = source;
      return rxheal.callTool(tool!, { id: `call-${++n}`, name: 'lookup', args: {} });
    });
}

/**
 * The Server-Sent Events of one short Responses stream, by marble letter: `C` response.created
 * (id `resp_1`), `I` a message item added, one `response.output_text.delta` per letter of `text`
 * (the letter is its text), `O` the item done, `F` response.completed — numbered from 0 in that order.
 */
function responsesEvents(text: string): Record<string, { event: string; data: string }> {
  const events: [string, Record<string, unknown>][] = [
    ['C', { type: 'response.created', response: { id: 'resp_1', status: 'in_progress' } }],
    ['I', { type: 'response.output_item.added', output_index: 0, item: { type: 'message', id: 'msg_1' } }],
    ...[...text].map((letter): [string, Record<string, unknown>] => [letter, { type: 'response.output_text.delta', output_index: 0, delta: letter }]),
    ['O', { type: 'response.output_item.done', output_index: 0, item: { type: 'message', id: 'msg_1' } }],
    ['F', { type: 'response.completed', response: { id: 'resp_1', status: 'completed' } }],
  ];
  return Object.fromEntries(
    events.map(([letter, event], i) => [letter, { event: String(event['type']), data: JSON.stringify({ ...event, sequence_number: i }) }]),
  );
}

/** A task's artifact `out` holding `text` (the letters of the chunks so far). */
const artifact = (text: string) => ({
  artifactId: 'out',
  name: 'out',
  parts: [...text].map((letter) => ({ content: { $case: 'text' as const, value: letter } })),
});

/**
 * The events of one remote A2A task (`t1`), by marble letter: `T` the task submitted, `w` working,
 * `a`–`d` a chunk of the artifact `out` (appended: its letter), `S` the snapshot a resubscription
 * starts with (working, `out` holding `ab`), `F` completed, `X` failed (status message `no`).
 */
export function a2aEvents(): Record<string, A2AStreamResponse> {
  const status = (state: number, text?: string): A2AStreamResponse => ({
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId: 't1',
        contextId: 'c1',
        status: { state, message: text === undefined ? undefined : { messageId: 'm', role: 2, parts: [{ content: { $case: 'text', value: text } }] } },
      },
    },
  });
  const chunk = (letter: string): A2AStreamResponse => ({
    payload: { $case: 'artifactUpdate', value: { taskId: 't1', contextId: 'c1', artifact: artifact(letter), append: true } },
  });
  return {
    T: { payload: { $case: 'task', value: { id: 't1', contextId: 'c1', status: { state: 1 }, artifacts: [] } } },
    w: status(2),
    a: chunk('a'),
    b: chunk('b'),
    c: chunk('c'),
    d: chunk('d'),
    S: { payload: { $case: 'task', value: { id: 't1', contextId: 'c1', status: { state: 2 }, artifacts: [artifact('ab')] } } },
    F: status(3),
    X: status(4, 'no'),
  };
}

/** What a call of `t1` emits: its state and the artifact `out`'s text (none while it has no chunk). */
export function a2aResult(state: A2AResult['state'], text: string): A2AResult {
  return { state, taskId: 't1', contextId: 'c1', text, artifacts: text === '' ? [] : [{ id: 'out', name: 'out', text, data: [] }] };
}

/**
 * `a2aTask(seams, rules)`: one call to a remote agent by rxheal/a2a's rule (`taskStream`, what a
 * `fromA2A` tool runs) — `seams.send` and `seams.resubscribe` (a list, one per resubscription,
 * taken in order), `seams.get` (a task over), the rules' defaults: no deadlines, 5 resubscriptions
 * 2 ms apart; the task ids cancelled go to `seams.cancelled`.
 */
function a2aTask(
  seams: { send: rx.Observable<A2AStreamResponse>; resubscribe?: rx.Observable<A2AStreamResponse>[]; get?: rx.Observable<unknown>; cancelled?: string[] },
  rules: { firstEventMs?: number; idleMs?: number; maxResubscribes?: number } = {},
): rx.Observable<A2AResult> {
  const again = [...(seams.resubscribe ?? [])];
  const transport: TaskSeams = {
    send: () => seams.send,
    resubscribe: () => again.shift() ?? rx.throwError(() => new Error('no more resubscriptions scripted')),
    get: () => (seams.get ?? rx.throwError(() => new Error('no tasks/get scripted'))) as rx.Observable<never>,
    cancel: (id) => seams.cancelled?.push(id),
  };
  return taskStream(
    'docs',
    transport,
    {
      firstEventMs: rules.firstEventMs ?? Infinity,
      idleMs: rules.idleMs ?? Infinity,
      maxResubscribes: rules.maxResubscribes ?? 5,
      backoff: { initialMs: 2, maxMs: 2 },
    },
    rx.asyncScheduler,
  );
}

/**
 * What doc expressions can name: rxjs, rxheal, rxheal/providers, rxheal/fleet, rxheal/events, rxheal/testing, rxheal/mcp as `mcp`, rxheal/a2a as `a2a` (and `a2aTask`, `a2aEvents`, `a2aResult`), rxheal/chaos,
 * io-ts as `t` (tool arguments), a few errors, `delta(text)`, one text-delta event, `responsesEvents(text)`
 * `mcpTool(options)` and `mcpTask(server, options)` (scripts/marbleTasks.ts).
 */
export const base: Readonly<Record<string, unknown>> = {
  ...rx,
  ...events,
  ...providers,
  ...fleet,
  ...rxheal,
  ...testing,
  ...chaos,
  t,
  mcp,
  mcpTool,
  mcpTask,
  a2a,
  a2aTask,
  a2aEvents,
  a2aResult,
  label,
  delta: (text: string): TurnEvent => ({ type: 'text-delta', text }),
  responsesEvents,
  e400: new HttpError(400),
  e429: (retryAfter: string) => new HttpError(429, { 'retry-after': retryAfter }),
  e500: new HttpError(500),
  e502: new HttpError(502),
  e503: new HttpError(503),
};

/**
 * What a diagram's values and errors are compared as: errors become `{ name, message, …own fields }`
 * (chai alone compares errors by name and message only), so a `result-error` such as
 * `new AllFallbacksFailedError([e503, e502])` also checks the list it carries.
 */
export function comparable(value: unknown, seen: Set<unknown> = new Set()): unknown {
  if (typeof value !== 'object' || value === null || seen.has(value)) return value;
  const inner = new Set(seen).add(value);
  if (Array.isArray(value)) return value.map((v) => comparable(v, inner));
  if (value instanceof Error) {
    const fields = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, comparable(v, inner)]));
    return { name: value.name, message: value.message, ...fields };
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, comparable(v, inner)]));
}

/** Whether `name` can be a parameter name in strict code (a CommonJS module's namespace carries `default`). */
const usable = new Map<string, boolean>();
function isParameterName(name: string): boolean {
  let ok = usable.get(name);
  if (ok === undefined) {
    try {
      new Function(name, '"use strict";');
      ok = /^[A-Za-z_$][\w$]*$/.test(name);
    } catch {
      ok = false;
    }
    usable.set(name, ok);
  }
  return ok;
}

function evaluate(expression: string, scope: Record<string, unknown>, where: string): unknown {
  const names = Object.keys(scope).filter(isParameterName);
  try {
    return new Function(...names, `"use strict"; return (${expression});`)(...names.map((n) => scope[n]));
  } catch (e) {
    throw new Error(`${where}: cannot evaluate ${JSON.stringify(expression)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

function lines(marbles: string | undefined): string[] {
  return marbles === undefined ? [] : marbles.split('\n').map((l) => l.trim());
}

/** One notification at a virtual time; `letter` is the marble character that stands for it. */
export interface Note {
  readonly frame: number;
  readonly kind: 'N' | 'E' | 'C';
  readonly value?: unknown;
  readonly letter?: string;
}

/** One line of a diagram: a subscription of an input, one call, or an asserted output. */
export interface TraceLine {
  readonly title: string;
  /** The observable's name (`source`, a `let` name, a `source X` name, a model id) or the call's source. */
  readonly name?: string;
  /** When it starts (the subscription, or the call). */
  readonly start: number;
  readonly notes: readonly Note[];
  /** When it was unsubscribed before it ended by itself, if it was. */
  readonly cut?: number;
  /** The expression or marble it comes from (for legends). */
  readonly source?: string;
}

/** What a block did, for drawing it. */
export interface Trace {
  readonly block: MarbleBlock;
  /** One line per subscription of each input observable, in order of first subscription. */
  readonly inputs: readonly TraceLine[];
  /** With `calls`: one line per call, the caller's view (errors as errors). */
  readonly calls: readonly TraceLine[];
  /** The asserted outputs: `result`, then each `expect` line. */
  readonly outputs: readonly TraceLine[];
  /** Inputs never subscribed (`subs X: (none)`, or a `let` observable nobody subscribed). */
  readonly unsubscribed: readonly string[];
  /** With `calls`: what each call's source does, by source name. */
  readonly callSources: ReadonlyMap<string, readonly Note[]>;
  /** `unsubscribe` of the result, if given. */
  readonly unsubscribeAt?: number;
}

/** Notes of a marble string (run mode: one frame = 1 ms), with the letter of each value. */
export function notesOf(marbles: string, values?: Record<string, unknown>, error?: unknown): Note[] {
  const factor = TestScheduler.frameTimeFactor;
  TestScheduler.frameTimeFactor = 1;
  try {
    const letters: Record<string, string> = {};
    for (const ch of marbles.replace(/\d+(ms|s|m)\b/g, '')) if (/[^\s\-()|#^!]/.test(ch)) letters[ch] = ch;
    return TestScheduler.parseMarbles(marbles, letters, 'error', false, true).map(({ frame, notification }) => {
      if (notification.kind === 'N') {
        const letter = String(notification.value);
        return { frame, kind: 'N' as const, letter, value: values && letter in values ? values[letter] : letter };
      }
      return notification.kind === 'E' ? { frame, kind: 'E' as const, value: error } : { frame, kind: 'C' as const };
    });
  } finally {
    TestScheduler.frameTimeFactor = factor;
  }
}

/** An observable made with the run's `cold()` or `hot()`, and what it was made from. */
interface Made {
  readonly kind: 'cold' | 'hot';
  readonly observable: { subscriptions: { subscribedFrame: number; unsubscribedFrame: number }[] };
  readonly marbles: string;
  readonly values?: Record<string, unknown>;
  readonly error?: unknown;
  name?: string;
}

/** Keys that assert something: a block without one would pass whatever the code does. */
const ASSERTING = /^(result|subs|expect)( |$)/;

/** The frame of the `!` in an `unsubscribe` marble. */
function unsubscribeFrame(marbles: string): number {
  const factor = TestScheduler.frameTimeFactor;
  TestScheduler.frameTimeFactor = 1;
  try {
    return TestScheduler.parseMarblesAsSubscriptions(marbles, true).unsubscribedFrame;
  } finally {
    TestScheduler.frameTimeFactor = factor;
  }
}

/**
 * Runs `block`, asserting it (a mismatch throws, as in a failing test), and returns its trace.
 * `where` names the block in errors (`page.md:line`).
 */
export function runBlock(block: MarbleBlock, where: string): Trace {
  if (!block.entries.some(([key]) => ASSERTING.test(key))) throw new Error(`${where}: the block asserts nothing (give "result", "subs" or "expect")`);
  const ts = new TestScheduler((actual, expected) => {
    expect(comparable(actual)).to.deep.equal(comparable(expected));
  });
  const made: Made[] = [];
  const callLines: { title: string; letter: string; start: number; notes: Note[] }[] = [];
  let scope: Record<string, unknown> = {};
  const ev = (key: string): unknown => {
    const expr = one(block, key);
    return expr === undefined ? undefined : evaluate(expr, scope, where);
  };

  ts.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
    const recordCold = <T>(marbles: string, values?: Record<string, T>, error?: unknown, name?: string) => {
      const observable = cold<T>(marbles, values, error);
      made.push({ kind: 'cold', observable, marbles, values, error, name });
      return observable;
    };
    const recordHot = <T>(marbles: string, values?: Record<string, T>, error?: unknown) => {
      const observable = hot<T>(marbles, values, error);
      made.push({ kind: 'hot', observable, marbles, values, error });
      return observable;
    };
    // pendingAt(ms) emits, at ms, how many actions wait on the virtual clock (0: no timer left behind)
    const pendingAt = (ms: number): Observable<number> => testing.pendingAt(ts, ms);
    // a scripted model's marble turns become the run's cold observables, so their subscriptions show
    const scriptedModel = (id: string, turns: readonly testing.ScriptedTurn[], options?: { scheduler?: rx.SchedulerLike }) =>
      testing.scriptedModel(
        id,
        turns.map((turn) =>
          typeof turn === 'object' && !Array.isArray(turn) && 'marbles' in turn
            ? () => recordCold<TurnEvent>(turn.marbles, turn.values as Record<string, TurnEvent> | undefined, turn.error, id)
            : turn,
        ),
        options,
      );
    scope = { ...base, cold: recordCold, hot: recordHot, pendingAt, scriptedModel };
    for (const [name, expr] of named(block, 'let')) {
      scope[name] = evaluate(expr, scope, where);
      const own = made.find((m) => m.observable === scope[name]);
      if (own && own.name === undefined) own.name = name;
    }
    const values = ev('values') as Record<string, unknown> | undefined;
    const error = one(block, 'error') === undefined ? base['e503'] : ev('error');
    const errors = new Map(named(block, 'error').map(([name, expr]) => [name, evaluate(expr, scope, where)]));
    const resultValues = ev('result-values') as Record<string, unknown> | undefined;
    const resultError = ev('result-error');
    const operator = ev('operator') as OperatorFunction<unknown, unknown> | undefined;
    const result = one(block, 'result');
    const calls = one(block, 'calls');
    let sources: Record<string, Observable<unknown>> = {};

    for (const [name] of errors) {
      if (calls === undefined || !named(block, 'source').some(([n]) => n === name)) throw new Error(`${where}: "error ${name}" names no source of "calls"`);
    }

    if (calls !== undefined) {
      if (!operator) throw new Error(`${where}: "calls" needs an "operator"`);
      sources = Object.fromEntries(
        named(block, 'source').map(([name, marbles]) => [name, recordCold(marbles, values, errors.has(name) ? errors.get(name) : error, name)]),
      );
      const letters = Object.fromEntries(Object.keys(sources).map((k) => [k, k]));
      const result$ = hot(calls, letters).pipe(
        mergeMap((letter) => {
          const line = { title: letter, letter, start: ts.now(), notes: [] as Note[] };
          callLines.push(line);
          return sources[letter]!.pipe(
            operator,
            tap({
              next: (value) => line.notes.push({ frame: ts.now(), kind: 'N', value }),
              error: (e: unknown) => line.notes.push({ frame: ts.now(), kind: 'E', value: e }),
              complete: () => line.notes.push({ frame: ts.now(), kind: 'C' }),
            }),
            catchError((e: unknown) => of(label(e))),
          );
        }),
      );
      if (result !== undefined) expectObservable(result$).toBe(result, resultValues);
      else result$.subscribe();
    } else if (operator) {
      const single = one(block, 'source');
      const attempts = all(block, 'attempt').map((m, i) => recordCold(m, values, error, `attempt ${i + 1}`));
      if (single === undefined && attempts.length === 0) throw new Error(`${where}: give "source", "attempt" lines or "calls"`);
      const source = single !== undefined ? recordCold(single, values, error, 'source') : undefined;
      let n = 0;
      const input: Observable<unknown> = source ?? defer(() => attempts[Math.min(n++, attempts.length - 1)]!);
      if (result === undefined) throw new Error(`${where}: "result" is missing`);
      expectObservable(input.pipe(operator), one(block, 'unsubscribe')).toBe(result, resultValues, resultError);
      const subs = one(block, 'subs');
      if (subs !== undefined) {
        if (!source) throw new Error(`${where}: "subs" needs a single "source"`);
        expectSubscriptions(source.subscriptions).toBe(lines(subs).filter((l) => l !== '(none)'));
      }
    }
    // `subs NAME`: a named source, or a `let` observable made with cold() or hot()
    for (const [name, subs] of named(block, 'subs')) {
      const target = sources[name] ?? scope[name];
      const logs = (target as { subscriptions?: unknown } | undefined)?.subscriptions;
      if (!Array.isArray(logs)) throw new Error(`${where}: "subs ${name}" names no source and no cold() or hot() observable`);
      expectSubscriptions(logs as Parameters<typeof expectSubscriptions>[0]).toBe(lines(subs).filter((l) => l !== '(none)'));
    }
    for (const [expr, marbles] of named(block, 'expect')) {
      expectObservable(evaluate(expr, scope, where) as Observable<unknown>).toBe(marbles, resultValues, resultError);
    }
  });

  return trace(block, made, callLines, scope);
}

/** The trace of a block that has run (and passed). */
function trace(
  block: MarbleBlock,
  made: Made[],
  callLines: { title: string; letter: string; start: number; notes: Note[] }[],
  scope: Record<string, unknown>,
): Trace {
  const evaluated = (key: string): unknown => {
    const expr = one(block, key);
    return expr === undefined ? undefined : evaluate(expr, scope, block.file);
  };
  const resultValues = evaluated('result-values') as Record<string, unknown> | undefined;
  const resultError = evaluated('result-error');
  const calls = one(block, 'calls') !== undefined;

  // inputs: each subscription of each recorded observable, in order of subscription
  const subscribed = made.flatMap((m) =>
    // a hot observable's timeline does not depend on who subscribes: drawn once
    (m.kind === 'hot' ? m.observable.subscriptions.slice(0, 1) : m.observable.subscriptions).map((log, k) => ({
      made: m,
      log,
      k,
      count: m.observable.subscriptions.length,
    })),
  );
  // hot observables first (their timeline is the diagram's clock), then by subscription time
  subscribed.sort(
    (a, b) =>
      Number(b.made.kind === 'hot') - Number(a.made.kind === 'hot') ||
      a.log.subscribedFrame - b.log.subscribedFrame ||
      made.indexOf(a.made) - made.indexOf(b.made),
  );
  const single = one(block, 'source') !== undefined && !calls;
  const inputs: TraceLine[] = subscribed.map(({ made: m, log, k, count }) => {
    const name = m.name ?? `${m.kind}('${m.marbles}')`;
    const own = notesOf(m.marbles, m.values, m.error);
    if (m.kind === 'hot') return { title: name, name, start: 0, notes: own, source: m.marbles };
    const start = log.subscribedFrame;
    const end = log.unsubscribedFrame;
    const terminal = own.find((n) => n.kind !== 'N');
    const naturalEnd = terminal === undefined ? Infinity : terminal.frame + start;
    const notes = own.map((n) => ({ ...n, frame: n.frame + start })).filter((n) => n.frame <= end);
    const title = single && name === 'source' && count > 1 ? `attempt ${k + 1}` : count > 1 ? `${name} #${k + 1}` : name;
    return { title, name, start, notes, ...(Number.isFinite(end) && end < naturalEnd ? { cut: end } : {}), source: m.marbles };
  });
  // a retried `attempt` list: number the attempts by subscription, whichever script each played
  if (all(block, 'attempt').length > 0 && !calls) {
    let n = 0;
    for (let i = 0; i < inputs.length; i++) if (/^attempt \d+/.test(inputs[i]!.title)) inputs[i] = { ...inputs[i]!, title: `attempt ${++n}` };
  }

  const unsubscribed = made.filter((m) => m.name !== undefined && m.observable.subscriptions.length === 0).map((m) => m.name!);

  const callCount = new Map<string, number>();
  for (const c of callLines) callCount.set(c.letter, (callCount.get(c.letter) ?? 0) + 1);
  // a value a call received, by the letter that stands for it in `result-values`, the sources' `values`, or itself
  const sourceValues = evaluated('values') as Record<string, unknown> | undefined;
  const same = (a: unknown, b: unknown): boolean => a === b || JSON.stringify(comparable(a)) === JSON.stringify(comparable(b));
  const letterOf = (value: unknown): string | undefined =>
    Object.entries(resultValues ?? {}).find(([, v]) => same(v, value))?.[0] ??
    Object.entries(sourceValues ?? {}).find(([, v]) => same(v, value))?.[0] ??
    (typeof value === 'string' && value.length === 1 ? value : undefined);
  const seen = new Map<string, number>();
  const callTrace: TraceLine[] = callLines.map((c) => {
    const k = (seen.get(c.letter) ?? 0) + 1;
    seen.set(c.letter, k);
    const notes = c.notes.map((n) => {
      const letter = n.kind === 'N' ? letterOf(n.value) : undefined;
      return letter === undefined ? n : { ...n, letter };
    });
    return { title: `call ${c.letter}${(callCount.get(c.letter) ?? 0) > 1 ? ` #${k}` : ''}`, name: c.letter, start: c.start, notes };
  });
  // a call's own source: its subscriptions belong to the latest call of that name started by then (retries: attempts)
  const owner = inputs.map((line) => {
    if (!calls || line.name === undefined || !callCount.has(line.name)) return undefined;
    let found: number | undefined;
    callTrace.forEach((c, i) => {
      if (c.name === line.name && c.start <= line.start) found = i;
    });
    return found;
  });
  owner.forEach((callIndex, i) => {
    if (callIndex === undefined) return;
    const siblings = owner.map((o, j) => (o === callIndex ? j : -1)).filter((j) => j >= 0);
    const base = callTrace[callIndex]!.title.replace(/^call /, '');
    inputs[i] = { ...inputs[i]!, title: siblings.length > 1 ? `${base} attempt ${siblings.indexOf(i) + 1}` : base };
  });
  const callSources = new Map<string, Note[]>(
    made
      .filter((m) => calls && m.name !== undefined && named(block, 'source').some(([n]) => n === m.name))
      .map((m) => [m.name!, notesOf(m.marbles, m.values, m.error)]),
  );

  const outputs: TraceLine[] = [];
  const result = one(block, 'result');
  const unsubscribe = one(block, 'unsubscribe');
  const unsubscribeAt = unsubscribe === undefined ? undefined : unsubscribeFrame(unsubscribe);
  if (result !== undefined && !calls) {
    const notes = notesOf(result, resultValues, resultError);
    outputs.push({ title: 'result', start: 0, notes, ...(unsubscribeAt === undefined ? {} : { cut: unsubscribeAt }), source: result });
  }
  for (const [expr, marbles] of named(block, 'expect')) {
    outputs.push({ title: expr, start: 0, notes: notesOf(marbles, resultValues, resultError), source: marbles });
  }
  return { block, inputs, calls: callTrace, outputs, unsubscribed, callSources, ...(unsubscribeAt === undefined ? {} : { unsubscribeAt }) };
}
