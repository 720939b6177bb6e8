/**
 * {@link toA2A}: an rxheal agent (`runAgent`'s config) served as an A2A 1.0 server over JSON-RPC
 * on 127.0.0.1 — the SDK's `DefaultRequestHandler` and `JsonRpcTransportHandler` on `node:http`,
 * behind the guard every local server of rxheal's applies (`Host` and `Origin`, server/guard.ts).
 * Each message is one task; the run's answer streams as an artifact, and what the healing did
 * (retries, fallbacks, resets, breakers, resumes) goes out as `working` status updates. The SDK is
 * loaded when a server starts. Node only.
 *
 * @module
 */
/// <reference types="node" />
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { asyncScheduler, type Subscription } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import { check, Func, NonEmptyString, PositiveInteger, validateOptions } from '../core/errors/options.js';
import { errorText } from '../core/errors/sanitize.js';
import type { AgentEvent, HealEvent, Message } from '../core/events/events.js';
import { requestGuard, type RequestGuard } from '../server/guard.js';
import { json, readJson } from '../server/http.js';
import type { AgentConfig } from '../sources/agentConfig.js';
import { runAgent } from '../sources/runAgent.js';
import { partsText, ROLE_AGENT, TASK_STATE, type A2AMessage, type A2ATask } from './wire.js';

/**
 * One message an A2A client sent, as {@link ToA2AConfig}'s `agent` function is handed it.
 *
 * @example
 * ```ts
 * const agent = ({ text, history }: A2AIncoming): AgentConfig => ({ model, tools, messages: [...history, { role: 'user', content: text }] });
 * ```
 */
export interface A2AIncoming {
  /** The text of the message. */
  readonly text: string;
  /** The task it starts (or continues). */
  readonly taskId: string;
  readonly contextId: string;
  /** The task's earlier messages (a continued task), as rxheal messages. */
  readonly history: readonly Message[];
}

/**
 * A skill of the served agent, for its card.
 *
 * @example
 * ```ts
 * const skill: A2ASkill = { id: 'weather', name: 'Weather', description: 'Current weather for a city' };
 * ```
 */
export interface A2ASkill {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly tags?: readonly string[];
}

/**
 * What {@link toA2A} serves.
 *
 * @example
 * ```ts
 * const config: ToA2AConfig = { card: { name: 'weather', description: 'Weather answers' }, agent: ({ text }) => ({ model, messages: [{ role: 'user', content: text }] }) };
 * ```
 */
export interface ToA2AConfig {
  /** The run of one message: a function of it, or a config whose `messages` the message is appended to. */
  readonly agent: AgentConfig | ((incoming: A2AIncoming) => AgentConfig);
  /** The agent card's name, description, version (default `'1.0.0'`) and skills. */
  readonly card: { readonly name: string; readonly description: string; readonly version?: string; readonly skills?: readonly A2ASkill[] };
  /** The port on 127.0.0.1. Defaults to 0 (any free one: see `url`). */
  readonly port?: number;
  /** Browser origins allowed besides the server's own (see server/guard.ts). */
  readonly allowedOrigins?: readonly string[];
  /** `Host` values accepted besides the loopback names. */
  readonly allowedHosts?: readonly string[];
  /** The SDK's `TaskStore` (one that outlives the process keeps tasks across restarts). Defaults to the SDK's `InMemoryTaskStore`. */
  readonly taskStore?: object;
  /** The largest request body, in bytes. Defaults to 1 MiB. */
  readonly maxBodyBytes?: number;
}

/**
 * A running {@link toA2A} server.
 *
 * @example
 * ```ts
 * const server = await toA2A(config);
 * const client = await new ClientFactory().createFromUrl(server.url);
 * await server.close();
 * ```
 */
export interface A2AServer {
  /** `http://127.0.0.1:<port>`: where the card (`/.well-known/agent-card.json`) and the JSON-RPC endpoint (`/`) are. */
  readonly url: string;
  readonly port: number;
  /** Stops accepting and closes every connection (a run in flight goes on to its end, its task stored). */
  close(): Promise<void>;
}

const props = {
  agent: check('a runAgent config or a function (incoming) => config', (u): u is object => typeof u === 'function' || (typeof u === 'object' && u !== null)),
  card: check(
    '{ name: a non-empty string, description: a string, version?, skills? }',
    (u): u is ToA2AConfig['card'] =>
      typeof u === 'object' &&
      u !== null &&
      NonEmptyString.is((u as { name?: unknown }).name) &&
      typeof (u as { description?: unknown }).description === 'string',
  ),
  port: check('an integer from 0 to 65535', (u): u is number => Number.isInteger(u) && (u as number) >= 0 && (u as number) <= 65535),
  allowedOrigins: check('an array of origins', (u): u is string[] => Array.isArray(u)),
  allowedHosts: check('an array of host:port strings', (u): u is string[] => Array.isArray(u)),
  taskStore: check('a TaskStore (save, load)', (u): u is object => typeof (u as { save?: unknown } | null)?.save === 'function'),
  maxBodyBytes: PositiveInteger,
};

/** The healing worth telling a client (not the calls' starts and ends, nor latency reports). */
const SHOWN = new Set<HealEvent['type']>([
  'retry',
  'retry-succeeded',
  'retry-withheld',
  'fallback',
  'reset',
  'circuit',
  'reflection',
  'degraded',
  'restored',
  'resume',
  'hedge',
  'budget-exceeded',
]);

/** One line for a status message: what healed. */
function describe(event: HealEvent): string {
  const e = event as { type: string; target?: string; from?: string; to?: string; breaker?: string; capability?: string; tool?: string };
  const what = e.target ?? (e.from !== undefined ? `${e.from} → ${e.to}` : (e.breaker ?? e.capability ?? e.tool ?? ''));
  return what === '' ? e.type : `${e.type}: ${what}`;
}

/** A task's earlier messages as rxheal's. */
function historyOf(task: A2ATask & { history?: readonly A2AMessage[] }, current: string): Message[] {
  return (task.history ?? [])
    .filter((m) => m.messageId !== current)
    .map((m): Message => (m.role === ROLE_AGENT ? { role: 'assistant', content: partsText(m.parts) } : { role: 'user', content: partsText(m.parts) }));
}

/** The SDK's pieces a server uses (loaded when it starts). */
type Sdk = typeof import('@a2a-js/sdk/server') & {
  formatSSEEvent: (event: unknown) => string;
  formatSSEErrorEvent: (error: unknown) => string;
  SSE_HEADERS: Record<string, string>;
};

/** The bus the SDK hands an executor (the part used). */
interface Bus {
  publish(event: unknown): void;
  finished(): void;
}

/**
 * The executor: each message one run; its events as the task's. A cancelled task's run is
 * unsubscribed (the model call and tools in flight are aborted).
 */
function executor(sdk: Sdk, agent: ToA2AConfig['agent']) {
  const runs = new Map<string, { run: Subscription | undefined; done: () => void }>();
  const now = (): string => new Date(asyncScheduler.now()).toISOString();
  const agentMessage = (taskId: string, contextId: string, text: string): A2AMessage =>
    ({ messageId: globalThis.crypto.randomUUID(), role: ROLE_AGENT, parts: [{ content: { $case: 'text', value: text } }], taskId, contextId }) as A2AMessage;
  const status = (bus: Bus, taskId: string, contextId: string, state: number, text?: string, metadata?: Record<string, unknown>): void =>
    bus.publish(
      sdk.AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state, message: text === undefined ? undefined : (agentMessage(taskId, contextId, text) as never), timestamp: now() },
        metadata,
      }),
    );
  return {
    execute: (context: InstanceType<Sdk['RequestContext']>, bus: Bus): Promise<void> =>
      new Promise<void>((resolve) => {
        const { taskId, contextId } = context;
        const user = context.userMessage as unknown as A2AMessage;
        if (context.task === undefined) {
          bus.publish(
            sdk.AgentEvent.task({
              id: taskId,
              contextId,
              status: { state: TASK_STATE.submitted, message: undefined, timestamp: now() },
              artifacts: [],
              history: [context.userMessage],
              metadata: undefined,
            }),
          );
        }
        status(bus, taskId, contextId, TASK_STATE.working);
        const entry = { run: undefined as Subscription | undefined, done: () => (runs.delete(taskId), bus.finished(), resolve()) };
        runs.set(taskId, entry);
        const end = (state: number, text?: string): void => {
          if (!runs.has(taskId)) return;
          status(bus, taskId, contextId, state, text);
          entry.done();
        };
        let config: AgentConfig;
        try {
          const incoming: A2AIncoming = {
            text: partsText(user.parts),
            taskId,
            contextId,
            history: context.task ? historyOf(context.task as never, user.messageId) : [],
          };
          config =
            typeof agent === 'function'
              ? agent(incoming)
              : { ...agent, messages: [...agent.messages, ...incoming.history, { role: 'user', content: incoming.text }] };
        } catch (error) {
          return end(TASK_STATE.failed, errorText(error));
        }
        let appending = false;
        const chunk = (text: string): void => {
          bus.publish(
            sdk.AgentEvent.artifactUpdate({
              taskId,
              contextId,
              artifact: {
                artifactId: 'answer',
                name: 'answer',
                description: '',
                parts: [{ content: { $case: 'text', value: text } } as never],
                metadata: undefined,
                extensions: [],
              },
              append: appending,
              lastChunk: false,
              metadata: undefined,
            }),
          );
          appending = true;
        };
        entry.run = runAgent(config).subscribe({
          next: (event: AgentEvent) => {
            if (event.type === 'text-delta') chunk(event.text);
            else if (SHOWN.has(event.type as HealEvent['type'])) {
              // a restarted answer replaces the artifact: the next chunk is not appended
              if (event.type === 'reset') appending = false;
              status(bus, taskId, contextId, TASK_STATE.working, describe(event as HealEvent), { rxheal: event });
            }
          },
          error: (error: unknown) => end(TASK_STATE.failed, errorText(error)),
          complete: () => end(TASK_STATE.completed),
        });
      }),
    cancelTask: (taskId: string, bus: Bus): Promise<void> => {
      const entry = runs.get(taskId);
      entry?.run?.unsubscribe();
      if (entry) {
        bus.publish(
          sdk.AgentEvent.statusUpdate({
            taskId,
            contextId: '',
            status: { state: TASK_STATE.canceled, message: undefined, timestamp: now() },
            metadata: undefined,
          }),
        );
        entry.done();
      }
      return Promise.resolve();
    },
  };
}

/**
 * One JSON-RPC request: its answer as JSON, or its events as SSE. A client gone mid-stream does
 * not stop the reading: the SDK stores the task's progress as the stream is read, so it is read to
 * its end (written to nobody), and a resubscription finds the task as it stands.
 */
async function rpc(sdk: Sdk, handler: InstanceType<Sdk['JsonRpcTransportHandler']>, body: unknown, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const version = req.headers['a2a-version'];
  const context = new sdk.ServerCallContext({ requestedVersion: typeof version === 'string' ? version : undefined });
  const out = await handler.handle(body as Record<string, unknown>, context);
  if (typeof (out as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function') return json(res, 200, out);
  const events = (out as AsyncIterable<unknown>)[Symbol.asyncIterator]();
  const id = (body as { id?: unknown } | undefined)?.id ?? null;
  const failure = (error: unknown): object => ({ jsonrpc: '2.0', id, error: sdk.JsonRpcTransportHandler.mapToJSONRPCError(error) });
  let step: IteratorResult<unknown>;
  try {
    // refused before its first event (a task over, unknown): a JSON-RPC error, not a stream
    step = await events.next();
  } catch (error) {
    return json(res, 200, failure(error));
  }
  res.writeHead(200, sdk.SSE_HEADERS);
  try {
    for (; step.done !== true; step = await events.next()) if (!res.destroyed) res.write(sdk.formatSSEEvent(step.value));
  } catch (error) {
    if (!res.destroyed) res.write(sdk.formatSSEErrorEvent(failure(error)));
  }
  res.end();
}

/**
 * Serves an rxheal agent as an A2A 1.0 server on 127.0.0.1 (JSON-RPC, streaming): its card at
 * `/.well-known/agent-card.json`, `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`
 * and `SubscribeToTask` at `/` — the SDK's request handler, so tasks are stored (`taskStore`) and
 * a client whose stream was cut resubscribes to the same task. Each message runs `agent` once:
 *
 * - the task goes `submitted` → `working`; the answer's text streams as the artifact `answer`;
 * - what the healing did — a retry, a fallback, a reset (the next chunk then replaces the artifact
 *   instead of appending: a restarted answer is never concatenated to the old one), a breaker's
 *   change, a resumed stream — is a `working` status update, its text saying what, its
 *   `metadata.rxheal` the event itself;
 * - the run's end is `completed`; its error `failed` (the error's text, secrets redacted);
 *   `CancelTask` unsubscribes the run (aborting its calls) and the task is `canceled`.
 *
 * Every request passes the local servers' guard: a `Host` that is not this server on the loopback
 * interface (or one of `allowedHosts`), or a browser `Origin` not its own nor one of
 * `allowedOrigins`, is refused with 403.
 *
 * @example
 * ```ts
 * import { toA2A } from 'rxheal/a2a';
 * const server = await toA2A({
 *   card: { name: 'weather', description: 'Weather answers' },
 *   agent: ({ text }) => ({ model, tools: [getWeather], messages: [{ role: 'user', content: text }] }),
 * });
 * console.log(server.url); // http://127.0.0.1:<port>
 * ```
 * @throws {InvalidOptionError} at once, for an invalid option.
 */
export function toA2A(config: ToA2AConfig): Promise<A2AServer> {
  if (typeof config !== 'object' || config === null) throw new InvalidOptionError('toA2A', 'config', config, 'an object { agent, card }');
  validateOptions('toA2A', props, config);
  for (const key of ['agent', 'card'] as const) if (config[key] === undefined) throw new InvalidOptionError('toA2A', key, undefined, props[key].name);
  if (typeof config.agent !== 'function' && !Func.is((config.agent.model as Partial<AgentConfig['model']> | undefined)?.stream)) {
    throw new InvalidOptionError('toA2A', 'agent.model', config.agent.model, 'a Model (with stream())');
  }
  return start(config);
}

async function start(config: ToA2AConfig): Promise<A2AServer> {
  const sdk = { ...(await import('@a2a-js/sdk/server')), ...(await import('@a2a-js/sdk')) } as unknown as Sdk;
  /** Set once the port is known: the guard, the card and the handler all name it. */
  // eslint-disable-next-line prefer-const -- assigned once the port is known, read by the request handler before
  let ready: { guard: RequestGuard; card: object; handler: InstanceType<Sdk['JsonRpcTransportHandler']> } | undefined;
  const maxBodyBytes = config.maxBodyBytes ?? 1024 * 1024;
  const server: Server = createServer((req, res) => {
    if (ready === undefined) return json(res, 503, { error: 'starting' });
    const { guard, card, handler } = ready;
    const refusal = guard.refusal(req.headers);
    if (refusal !== undefined) return json(res, 403, { error: refusal });
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/.well-known/agent-card.json') return json(res, 200, card);
    if (req.method !== 'POST' || path !== '/') return json(res, 404, { error: `no route ${req.method ?? ''} ${path ?? ''}` });
    readJson(req, maxBodyBytes)
      .then(({ value }) => rpc(sdk, handler, value, req, res))
      .catch((error: unknown) => {
        const status = (error as { status?: unknown }).status;
        if (!res.headersSent) json(res, typeof status === 'number' ? status : 500, { error: errorText(error) });
        else res.end();
      });
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port ?? 0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
  });
  const url = `http://127.0.0.1:${port}`;
  const { name, description, version = '1.0.0', skills = [] } = config.card;
  const card = {
    name,
    description,
    version,
    supportedInterfaces: [{ url: `${url}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: skills.map((s) => ({ tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [], ...s })),
    signatures: [],
  };
  const requestHandler = new sdk.DefaultRequestHandler(
    card as never,
    (config.taskStore ?? new sdk.InMemoryTaskStore()) as never,
    executor(sdk, config.agent) as never,
  );
  ready = {
    guard: requestGuard({ port, origins: config.allowedOrigins, hosts: config.allowedHosts }),
    card,
    handler: new sdk.JsonRpcTransportHandler(requestHandler),
  };
  return {
    url,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
