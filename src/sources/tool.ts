import * as t from 'io-ts';
import { defer, Observable, tap, type ObservableInput } from 'rxjs';
import { InvalidOptionError, ToolError } from '../core/errors/errors.js';
import type { ToolCall } from '../core/events/events.js';
import { Func, NonEmptyString, check, describeProblems, formatProblem, isLeft, validateOptions } from '../core/errors/options.js';
import { errorText } from '../core/errors/sanitize.js';
import { notApplied } from '../core/errors/notApplied.js';
import { abortable, type AbortContext } from '../core/model/abortable.js';
import type { ToolSpec } from '../core/model/model.js';
import type { JournalData } from '../core/journal/journal.js';
import { bindToRun, type RunScope } from '../core/rx/runScope.js';

/** What {@link defineTool} takes. */
export interface ToolDefinition<A, R> {
  /** The name the model calls it by. */
  readonly name: string;
  /** What it does, for the model. */
  readonly description: string;
  /**
   * An io-ts codec for the arguments: they are decoded before `execute` ever sees them. If its
   * `decode` throws, the call errors with what it threw.
   */
  readonly args: t.Type<A, unknown, unknown>;
  /**
   * Safe to run twice (a read). Defaults to false: a failed run is never retried automatically.
   * `'by-key'`: not safe to repeat by itself, but the service it calls deduplicates by the call's
   * idempotency key (`ctx.idempotencyKey`, sent with `idempotencyHeaders` (rxheal/durable) or MCP `_meta`), so
   * running it again for the same call is: `retryWithBackoff` retries it, `hedge` may hedge it, a
   * resumed run runs it again with the same key.
   */
  readonly idempotent?: boolean | 'by-key';
  /**
   * Runs the tool. `signal` is aborted when the consumer unsubscribes (read it before or after an
   * `await`). If it throws, the call fails with a `ToolError` (`phase: 'execute'`) whose `cause`
   * is what it threw. Returns the result as any `ObservableInput`: a Promise, an Observable or an
   * array (its last value is the result). A string returned as it is is the result itself, not a
   * sequence of characters (RxJS would read it as one value per character).
   */
  readonly execute: (args: A, context: ToolContext) => ObservableInput<R>;
  /**
   * Whether a call waits for a person's approval before it runs (a journaled run only: the run
   * suspends, and `resumeAgent({ approvals })` goes on): `true`, or a predicate of the decoded
   * arguments (a throw ends the run with what it threw). Defaults to false.
   */
  readonly needsApproval?: boolean | ((args: A, context: ToolContext) => boolean);
  /**
   * Asked when a resumed run finds this tool's execution started and never finished (a crash in
   * the middle): whether its effect happened and, if it did, its result — `{ applied: true,
   * result }` or `{ applied: false }` (the tool then runs). If it throws or errors, the outcome
   * stays unknown (see `onUnknownOutcome`). Not asked for an idempotent tool: it simply runs again.
   */
  readonly verify?: (args: A, context: ToolContext) => ObservableInput<Verified<R>>;
}

/** Whether a tool may run again for the same call: idempotent, or deduplicated by its key. */
export const repeatable = (tool: { readonly idempotent: boolean | 'by-key' }): boolean => tool.idempotent !== false;

/**
 * What a tool's `verify` answers: the effect was applied (with its result) or was not.
 *
 * @example
 * ```ts
 * const verify = async ({ seat }: { seat: string }): Promise<Verified<string>> =>
 *   (await bookings.has(seat)) ? { applied: true, result: `booked ${seat}` } : { applied: false };
 * ```
 */
export type Verified<R> = { readonly applied: true; readonly result: R } | { readonly applied: false };

/**
 * What a tool's `execute` is handed: the signal (see {@link AbortContext}) and, when
 * {@link callTool} (or `runAgent`) runs it, the model's tool call it answers — the same `callId`
 * for every retry of that call.
 *
 * @example
 * ```ts
 * const execute = (args: { seat: string }, { signal, callId }: ToolContext) =>
 *   fetch('https://api.example/book', { method: 'POST', body: JSON.stringify(args), headers: { 'x-call-id': callId ?? 'direct' }, signal });
 * ```
 */
export interface ToolContext extends AbortContext {
  /** The id of the model's tool call this execution answers; absent when `execute` is called directly. */
  readonly callId?: string;
  /**
   * The call's idempotency key, the same for every retry, hedge, fallback and resume of this
   * logical call (`<runId>/<step>/<index>/<tool>`, see `effectKey`): send it to a service that
   * deduplicates (`idempotencyHeaders(ctx)`). Absent when `execute` is called directly.
   */
  readonly idempotencyKey?: string;
  /**
   * What this call checkpointed ({@link ToolContext.checkpoint}) in an earlier execution — in a
   * process that died, read back by `resumeAgent` from the journal, or in this process by an
   * earlier attempt (a retry): carry on from it instead of starting the work again. Absent when
   * nothing was checkpointed, and outside a durable run.
   */
  readonly resumed?: JournalData;
  /**
   * Journals `state` for this call (a durable run only): emits once (undefined) and completes once
   * the record is durable; errors as the journal's append does (an `InvalidOptionError`, nothing
   * written, for state that is not JSON data). The newest checkpoint is what a later execution of
   * the call — after a crash, or a retry — gets as {@link ToolContext.resumed | resumed}, and a
   * resumed call that checkpointed is run again (it carries on its own work) whatever its
   * idempotency. Unsubscribed before it is durable, the record may still land. Absent outside a
   * durable run.
   */
  readonly checkpoint?: (state: JournalData) => Observable<void>;
}

/**
 * Where one call's checkpoints are kept while it runs: the newest state, and how to journal one.
 *
 * @example
 * ```ts
 * const holder: CheckpointHolder = { resumed: plan.checkpoint, write: (state) => session.append({ type: 'tool-checkpoint', callId, state }) };
 * ```
 */
export interface CheckpointHolder {
  resumed: JournalData | undefined;
  readonly write: (state: JournalData) => Observable<void>;
}

/**
 * A tool's context: the attempt's signal (made only when read) and its call's id.
 *
 * @example
 * ```ts
 * tool.execute(args, new CallContext(attempt, call.id));
 * ```
 */
export class CallContext implements ToolContext {
  constructor(
    private readonly attempt: AbortContext,
    readonly callId: string,
    readonly idempotencyKey?: string,
    private readonly holder?: CheckpointHolder,
  ) {}

  get signal(): AbortSignal {
    return this.attempt.signal;
  }

  get resumed(): JournalData | undefined {
    return this.holder?.resumed;
  }

  get checkpoint(): ((state: JournalData) => Observable<void>) | undefined {
    const holder = this.holder;
    if (holder === undefined) return undefined;
    return (state) => holder.write(state).pipe(tap(() => (holder.resumed = state)));
  }
}

/** A tool, ready for {@link callTool} and `runAgent`. */
export interface Tool<A = unknown, R = unknown> extends ToolSpec {
  readonly args: t.Type<A, unknown, unknown>;
  /** See {@link ToolDefinition.idempotent}. */
  readonly idempotent: boolean | 'by-key';
  readonly execute: (args: A, context: ToolContext) => ObservableInput<R>;
  /** Whether a call waits for approval (see {@link ToolDefinition.needsApproval}); false when not given. */
  readonly needsApproval?: boolean | ((args: A, context: ToolContext) => boolean);
  /** See {@link ToolDefinition.verify}. */
  readonly verify?: (args: A, context: ToolContext) => ObservableInput<Verified<R>>;
  /** A JSON-schema rendering of `args`, for providers' tool definitions. */
  readonly parameters: JsonSchema;
}

// `@__PURE__`: only defineTool needs these; a bundle of runAgent alone then carries no io-ts
const Codec = /* @__PURE__ */ check('an io-ts codec', (u): u is t.Type<unknown, unknown, unknown> => u instanceof t.Type);

const definitionProps = {
  name: NonEmptyString,
  description: /* @__PURE__ */ check('a string', (u): u is string => typeof u === 'string'),
  args: Codec,
  idempotent: /* @__PURE__ */ check("a boolean or 'by-key'", (u): u is boolean | 'by-key' => typeof u === 'boolean' || u === 'by-key'),
  execute: Func,
  needsApproval: /* @__PURE__ */ check(
    'a boolean or a function (args, context) => boolean',
    (u): u is boolean | ((...args: never[]) => unknown) => typeof u === 'boolean' || typeof u === 'function',
  ),
  verify: Func,
};

/**
 * Defines a tool whose arguments are decoded with an io-ts codec before it runs.
 *
 * @example
 * ```ts
 * const getWeather = defineTool({
 *   name: 'get_weather',
 *   description: 'Current weather for a city',
 *   args: t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) }),
 *   idempotent: true,
 *   execute: ({ city, units }, { signal }) => fetch(`https://wx.example/${city}?units=${units}`, { signal }).then((r) => r.json()),
 * });
 * ```
 * @throws {InvalidOptionError} for a malformed definition.
 */
export function defineTool<A, R>(definition: ToolDefinition<A, R>): Tool<A, R> {
  if (definition === undefined) throw new InvalidOptionError('defineTool', 'definition', definition, 'an object { name, description, args, execute }');
  validateOptions('defineTool', definitionProps, definition);
  for (const key of ['name', 'description', 'args', 'execute'] as const) {
    if (definition[key] === undefined) throw new InvalidOptionError('defineTool', key, undefined, definitionProps[key].name);
  }
  return {
    name: definition.name,
    description: definition.description,
    args: definition.args,
    idempotent: definition.idempotent ?? false,
    execute: definition.execute,
    needsApproval: definition.needsApproval ?? false,
    ...(definition.verify === undefined ? {} : { verify: definition.verify }),
    parameters: toJsonSchema(definition.args),
  };
}

/**
 * A tool's error message is kept to this many characters (redacted first): the message is read
 * once, not sanitised whole (a 32 MiB message took seconds). The error itself stays the `cause`.
 */
const MAX_TOOL_ERROR_CHARS = 16_000;

/** Options of {@link callTool}. */
export interface CallToolOptions {
  /** The run this call belongs to (set by `runAgent`; errors are bound to it). */
  readonly scope?: RunScope;
  /** The call's idempotency key, handed to `execute` as `ctx.idempotencyKey` (set by `runAgent`). */
  readonly idempotencyKey?: string;
  /** The call's checkpoints (set by a durable run): `ctx.resumed` and `ctx.checkpoint`. */
  readonly checkpoints?: CheckpointHolder;
}

/**
 * A cold observable of one tool call: decodes `call.args`, then runs the tool. Unsubscribing
 * aborts its signal. Every failure is a {@link ToolError}: `phase: 'validate'` (the tool never
 * ran) or `'execute'` (`cause` is what it threw or emitted). Its `idempotent` is true for a tool
 * that may run again (`idempotent: true` or `'by-key'`), and for a `NotAppliedError` (rxheal/durable): the tool
 * said its effect did not happen, so running it again is safe.
 *
 * @example
 * ```ts
 * callTool(getWeather, { id: 'call_1', name: 'get_weather', args: { city: 'NYC', units: 'celsius' } })
 *   .subscribe((weather) => console.log(weather));
 * ```
 */
export function callTool<A, R>(tool: Tool<A, R>, call: ToolCall, options: CallToolOptions = {}): Observable<R> {
  const fail = (phase: 'validate' | 'execute', message: string, cause?: unknown): ToolError => {
    const idempotent = repeatable(tool) || notApplied(cause);
    const error = new ToolError({ toolName: tool.name, callId: call.id, args: call.args, phase, idempotent, message, cause });
    bindToRun(error, options.scope);
    return error;
  };
  return defer(() => {
    const decoded = tool.args.decode(call.args);
    if (isLeft(decoded)) {
      const problems = describeProblems(decoded.left).map(formatProblem).join('; ');
      return new Observable<R>((subscriber) => subscriber.error(fail('validate', problems)));
    }
    const args = decoded.right;
    return new Observable<R>((subscriber) =>
      abortable((context) => wholeString(tool.execute(args, new CallContext(context, call.id, options.idempotencyKey, options.checkpoints)))).subscribe({
        next: (value) => subscriber.next(value),
        error: (cause: unknown) => subscriber.error(fail('execute', errorText(cause, MAX_TOOL_ERROR_CHARS), cause)),
        complete: () => subscriber.complete(),
      }),
    );
  });
}

/**
 * A tool's result as the text of its tool message: a string as it is, anything else as JSON.
 *
 * @example
 * ```ts
 * resultText({ temperature: 22 }); // '{"temperature":22}'
 * ```
 */
export function resultText(result: unknown): string {
  if (typeof result === 'string') return result;
  try {
    return JSON.stringify(result) ?? 'null';
  } catch {
    return String(result);
  }
}

/** A tool's string result is one value: RxJS would emit it character by character (an iterable). */
function wholeString<R>(output: ObservableInput<R>): ObservableInput<R> {
  return typeof output === 'string' ? [output] : output;
}

/**
 * A {@link ToolError} for a call naming a tool that does not exist (a model mistake the model
 * can correct).
 */
export function unknownToolError(call: ToolCall, available: readonly string[], scope?: RunScope): ToolError {
  const error = new ToolError({
    toolName: call.name,
    callId: call.id,
    args: call.args,
    phase: 'validate',
    idempotent: true,
    message: `unknown tool '${call.name}'; available: ${available.map((n) => `'${n}'`).join(', ') || 'none'}`,
  });
  bindToRun(error, scope);
  return error;
}

/** A JSON Schema (the subset providers' tool definitions use). */
export type JsonSchema = { readonly [key: string]: unknown };

/**
 * Renders an io-ts codec as JSON Schema for providers' tool definitions: objects (required and
 * optional fields), strings, numbers, booleans, literals, `keyof` enums, arrays, unions,
 * intersections; refinements and brands by their base type. Anything else: `{}` (any).
 *
 * @example
 * ```ts
 * toJsonSchema(t.type({ city: t.string })); // { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
 * ```
 */
export function toJsonSchema(codec: t.Mixed | t.Type<unknown, unknown, unknown>): JsonSchema {
  const c = codec as t.Mixed;
  if (c instanceof t.StringType) return { type: 'string' };
  if (c instanceof t.NumberType) return { type: 'number' };
  if (c instanceof t.BooleanType) return { type: 'boolean' };
  if (c instanceof t.NullType) return { type: 'null' };
  if (c instanceof t.LiteralType) return { const: c.value as unknown, type: typeof c.value };
  if (c instanceof t.KeyofType) return { type: 'string', enum: Object.keys(c.keys as object) };
  if (c instanceof t.ArrayType || c instanceof t.ReadonlyArrayType) return { type: 'array', items: toJsonSchema((c as t.ArrayType<t.Mixed>).type) };
  if (c instanceof t.InterfaceType || c instanceof t.StrictType) return objectSchema(c.props as t.Props, true);
  if (c instanceof t.PartialType) return objectSchema(c.props as t.Props, false);
  if (c instanceof t.ExactType || c instanceof t.RefinementType || c instanceof t.ReadonlyType) return toJsonSchema((c as t.ExactType<t.Mixed>).type);
  if (c instanceof t.UnionType) {
    const members = (c.types as t.Mixed[]).map(toJsonSchema);
    const literals = members.every((m) => 'const' in m && m['type'] === 'string');
    return literals ? { type: 'string', enum: members.map((m) => m['const']) } : { anyOf: members };
  }
  if (c instanceof t.IntersectionType) {
    const parts = (c.types as t.Mixed[]).map(toJsonSchema);
    if (parts.every((p) => p['type'] === 'object')) {
      return {
        type: 'object',
        properties: Object.assign({}, ...parts.map((p) => p['properties'])) as JsonSchema,
        required: parts.flatMap((p) => (p['required'] as string[] | undefined) ?? []),
        additionalProperties: false,
      };
    }
    return { allOf: parts };
  }
  return {};
}

function objectSchema(props: t.Props, required: boolean): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const [key, value] of Object.entries(props)) properties[key] = toJsonSchema(value);
  return { type: 'object', properties, required: required ? Object.keys(props) : [], additionalProperties: false };
}
