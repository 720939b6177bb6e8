/**
 * {@link fromA2A}: a remote A2A agent as an rxheal {@link Tool} that streams — each call one
 * message and one task, under the agent's breaker, with first-event and idle deadlines, a cut
 * stream resubscribed (taskStream.ts), `tasks/cancel` when the caller leaves, and the task's end
 * mapped to a result or an error rxheal classifies (errors.ts). The client is read by shape
 * ({@link A2AClient}: the SDK's `Client` is one).
 *
 * @module
 */
import * as t from 'io-ts';
import { asyncScheduler, from, Observable, type SchedulerLike } from 'rxjs';
import { CircuitBreaker } from '../core/breaker/CircuitBreaker.js';
import { CircuitBreakerRegistry } from '../core/breaker/registry.js';
import { InvalidOptionError } from '../core/errors/errors.js';
import { check, Hub, NonEmptyString, NonNegativeInteger, NonNegativeNumber, Scheduler, validateOptions } from '../core/errors/options.js';
import type { HealHub } from '../core/hub/hub.js';
import { circuitBreak } from '../operators/circuitBreak.js';
import { toJsonSchema, type Tool } from '../sources/tool.js';
import { a2aFailure } from './errors.js';
import { taskStream, type TaskRules, type TaskSeams } from './taskStream.js';
import { ROLE_USER, type A2AMessage, type A2AResult, type A2AStreamResponse, type A2ATask } from './wire.js';

/**
 * The request options `fromA2A` hands the client: the signal that aborts a request when its call
 * is cancelled or a deadline passes.
 *
 * @example
 * ```ts
 * const options: A2ARequestOptions = { signal: AbortSignal.timeout(30_000) };
 * ```
 */
export interface A2ARequestOptions {
  readonly signal?: AbortSignal;
}

/**
 * What `fromA2A` needs of an A2A client: the `@a2a-js/sdk` 1.x `Client`
 * (`await new ClientFactory().createFromUrl(url)`), read by shape.
 *
 * @example
 * ```ts
 * import { ClientFactory } from '@a2a-js/sdk/client';
 * const client: A2AClient = await new ClientFactory().createFromUrl('http://127.0.0.1:41241');
 * ```
 */
export interface A2AClient {
  /** `SendStreamingMessage`: the task's events. */
  sendMessageStream(params: { readonly message: A2AMessage | undefined }, options?: A2ARequestOptions): AsyncIterable<A2AStreamResponse>;
  /** `SubscribeToTask`: the task's snapshot, then its events. */
  resubscribeTask(params: { readonly id: string }, options?: A2ARequestOptions): AsyncIterable<A2AStreamResponse>;
  /** `GetTask`. */
  getTask(params: { readonly id: string }, options?: A2ARequestOptions): Promise<A2ATask>;
  /** `CancelTask`. */
  cancelTask(params: { readonly id: string }, options?: A2ARequestOptions): Promise<unknown>;
  /** The agent's card: its name and description are the tool's defaults. */
  getAgentCard(
    options?: A2ARequestOptions,
  ): Promise<{ readonly name: string; readonly description: string; readonly skills?: readonly { readonly name: string; readonly description: string }[] }>;
}

/**
 * Options of {@link fromA2A}.
 *
 * @example
 * ```ts
 * const options: FromA2AOptions = { id: 'travel', firstEventMs: 30_000, idleMs: 60_000, maxResubscribes: 5 };
 * ```
 */
export interface FromA2AOptions {
  /** The agent's id: names its breaker (`a2a:<id>`), its errors and its events. Defaults to the card's name. */
  readonly id?: string;
  /** The tool's name. Defaults to the card's name, with anything but letters, digits, `_` and `-` as `_`. */
  readonly name?: string;
  /** The tool's description. Defaults to the card's description and its skills. */
  readonly description?: string;
  /** No first event of a request (the message sent, a resubscription) within this many ms: `A2ATimeoutError`. Defaults to 60 000; `Infinity`: none. */
  readonly firstEventMs?: number;
  /** No event for this many ms after one: a stall (resubscribed, as a cut stream). Defaults to `Infinity` (an agent may work long between two events). */
  readonly idleMs?: number;
  /** Resubscriptions of one call's task, in all. Defaults to 5. */
  readonly maxResubscribes?: number;
  /** The wait before each resubscription: `initialMs · 2ⁿ` (defaults 500), at most `maxMs` (defaults 10 000). */
  readonly resubscribeBackoff?: { readonly initialMs?: number; readonly maxMs?: number };
  /** Where the agent's breaker comes from: `breakers.get('a2a:<id>')`. Defaults to a breaker of its own. */
  readonly breakers?: CircuitBreakerRegistry;
  /** Reports the breaker's transitions and rejections (`circuit`) and each resubscription (`resume`). */
  readonly hub?: HealHub;
  /** Where the deadlines and the backoff are timed. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

const Deadline = check('a number > 0 (ms) or Infinity', (u): u is number => typeof u === 'number' && u > 0);
const props = {
  id: NonEmptyString,
  name: check('a tool name (letters, digits, _ and -, 1 to 64)', (u): u is string => typeof u === 'string' && /^[\w-]{1,64}$/.test(u)),
  description: check('a string', (u): u is string => typeof u === 'string'),
  firstEventMs: Deadline,
  idleMs: Deadline,
  maxResubscribes: NonNegativeInteger,
  resubscribeBackoff: check(
    '{ initialMs?: a finite number >= 0, maxMs?: a finite number >= 0 }',
    (u): u is { initialMs?: number; maxMs?: number } =>
      typeof u === 'object' &&
      u !== null &&
      ['initialMs', 'maxMs'].every((k) => (u as Record<string, unknown>)[k] === undefined || NonNegativeNumber.is((u as Record<string, unknown>)[k])),
  ),
  breakers: check('a CircuitBreakerRegistry', (u): u is CircuitBreakerRegistry => u instanceof CircuitBreakerRegistry),
  hub: Hub,
  scheduler: Scheduler,
};

const CLIENT_METHODS = ['sendMessageStream', 'resubscribeTask', 'getTask', 'cancelTask', 'getAgentCard'] as const;

/**
 * The arguments of a {@link fromA2A} tool: the message, and the task it answers (one that asked
 * for input), with its context.
 *
 * @example
 * ```ts
 * const answer: A2AToolArgs = { message: 'Economy, please', taskId: 't1' };
 * ```
 */
export interface A2AToolArgs {
  readonly message: string;
  readonly taskId?: string;
  readonly contextId?: string;
}

const Args: t.Type<A2AToolArgs, unknown, unknown> = t.intersection(
  [t.type({ message: t.string }), t.partial({ taskId: t.string, contextId: t.string })],
  'A2AToolArgs',
) as t.Type<A2AToolArgs, unknown, unknown>;

/** A stream of the client's as a cold observable: unsubscribing aborts its request (and ends its iteration). */
function stream<T>(agent: string, open: (options: A2ARequestOptions) => AsyncIterable<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    const abort = new AbortController();
    let iterator: AsyncIterator<T> | undefined;
    void (async () => {
      try {
        iterator = open({ signal: abort.signal })[Symbol.asyncIterator]();
        for (;;) {
          const step = await iterator.next();
          if (subscriber.closed) return;
          if (step.done === true) return subscriber.complete();
          subscriber.next(step.value);
        }
      } catch (error) {
        if (!subscriber.closed) subscriber.error(a2aFailure(agent, error));
      }
    })();
    return () => {
      abort.abort(new DOMException('The consumer unsubscribed', 'AbortError'));
      void iterator?.return?.().catch(() => undefined);
    };
  });
}

/** A request of the client's as a cold observable, its failure translated. */
function request<T>(agent: string, send: (options: A2ARequestOptions) => Promise<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    const abort = new AbortController();
    from(Promise.resolve().then(() => send({ signal: abort.signal }))).subscribe({
      next: (value) => subscriber.next(value),
      error: (error: unknown) => subscriber.error(a2aFailure(agent, error)),
      complete: () => subscriber.complete(),
    });
    return () => abort.abort(new DOMException('The consumer unsubscribed', 'AbortError'));
  });
}

/** The user's message of one call (a fresh id; the task it answers, when given). */
function userMessage(args: A2AToolArgs, messageId: string): A2AMessage {
  return {
    messageId,
    role: ROLE_USER,
    parts: [{ content: { $case: 'text', value: args.message } }],
    ...(args.taskId === undefined ? {} : { taskId: args.taskId }),
    ...(args.contextId === undefined ? {} : { contextId: args.contextId }),
  };
}

/** The client's streams and requests as the rule's seams, for one call. */
function seamsOf(agent: string, client: A2AClient, message: A2AMessage): TaskSeams {
  return {
    send: () => stream(agent, (options) => client.sendMessageStream({ message }, options)),
    resubscribe: (id) => stream(agent, (options) => client.resubscribeTask({ id }, options)),
    get: (id) => request(agent, (options) => client.getTask({ id }, options)),
    cancel: (id) => void Promise.resolve().then(() => client.cancelTask({ id }).catch(() => undefined)),
  };
}

/**
 * A remote A2A agent as one rxheal {@link Tool} for `runAgent`: the model calls it with
 * `{ message }` (and `taskId`, to answer a task that asked for input); each call sends one
 * message (`SendStreamingMessage`) and emits the remote task as it stands (`A2AResult`: whole each
 * time, the last one the result the model reads).
 *
 * - **One breaker per agent** (`a2a:<id>`): while open, calls fail at once with `CircuitOpenError`.
 * - **Deadlines** on the scheduler (`degradeAfter`): `firstEventMs` for the first event of each
 *   request, `idleMs` between events.
 * - **A cut stream** (a network error, a stall, an end before the task's) is resubscribed
 *   (`SubscribeToTask`), with backoff, at most `maxResubscribes` times: the message is never sent
 *   twice, so the agent runs one task. A task over meanwhile is read with `GetTask`. Each
 *   resubscription is a `resume` event on `hub`.
 * - **Cancellation**: unsubscribing before the task is over (or giving up on it) sends
 *   `CancelTask`.
 * - **The task's end**: `completed` is the result; `input-required` too (`state`,
 *   `question`, `taskId`: the model answers by calling again with that `taskId`); `failed`,
 *   `rejected`, `canceled`, `auth-required` fail with `A2ATaskError`, and the client's errors are
 *   translated (errors.ts) so the classifier reads them right.
 * - **Not idempotent**: a message may start work with effects; a failed call is never retried
 *   automatically (resubscribing is not retrying: it never starts the work again).
 *
 * @example
 * ```ts
 * import { ClientFactory } from '@a2a-js/sdk/client';
 * import { fromA2A } from 'rxheal/a2a';
 *
 * const client = await new ClientFactory().createFromUrl('http://127.0.0.1:41241');
 * const travel = await fromA2A(client, { id: 'travel', firstEventMs: 30_000, idleMs: 60_000 });
 * runAgent({ model, tools: [travel], messages });
 * ```
 * @throws {InvalidOptionError} at once, for a client that is not an A2A `Client` or an invalid option.
 */
export function fromA2A(client: A2AClient, options?: FromA2AOptions): Promise<Tool<A2AToolArgs, A2AResult>> {
  const missing = CLIENT_METHODS.find((m) => typeof (client as unknown as Record<string, unknown> | null | undefined)?.[m] !== 'function');
  if (missing !== undefined) throw new InvalidOptionError('fromA2A', 'client', client, `an A2A Client of @a2a-js/sdk 1.x (no ${missing}())`);
  const o = validateOptions('fromA2A', props, options) as FromA2AOptions;
  const scheduler = o.scheduler ?? asyncScheduler;
  const rules: TaskRules = {
    firstEventMs: o.firstEventMs ?? 60_000,
    idleMs: o.idleMs ?? Infinity,
    maxResubscribes: o.maxResubscribes ?? 5,
    backoff: { initialMs: o.resubscribeBackoff?.initialMs ?? 500, maxMs: o.resubscribeBackoff?.maxMs ?? 10_000 },
  };
  const needsCard = o.id === undefined || o.name === undefined || o.description === undefined;
  return (needsCard ? client.getAgentCard() : Promise.resolve(undefined)).then((card) => {
    const id = o.id ?? card!.name;
    const name = o.name ?? (card!.name.replace(/[^\w-]/g, '_').slice(0, 64) || 'a2a_agent');
    const skills = (card?.skills ?? []).map((s) => `- ${s.name}: ${s.description}`).join('\n');
    const description = o.description ?? [card!.description, skills === '' ? '' : `Skills:\n${skills}`].filter((s) => s !== '').join('\n');
    const breaker = o.breakers ? o.breakers.get(`a2a:${id}`) : new CircuitBreaker({ name: `a2a:${id}`, scheduler });
    const underBreaker = circuitBreak<A2AResult>(breaker, { hub: o.hub });
    const report = o.hub && ((event: Parameters<HealHub['report']>[0]) => o.hub!.report(event));
    return {
      name,
      description,
      args: Args,
      idempotent: false,
      parameters: toJsonSchema(Args),
      execute: (args: A2AToolArgs) =>
        taskStream(id, seamsOf(id, client, userMessage(args, globalThis.crypto.randomUUID())), rules, scheduler, report).pipe(underBreaker),
    };
  });
}
