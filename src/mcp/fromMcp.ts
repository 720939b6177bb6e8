/**
 * {@link fromMcp}: an MCP server's tools as rxheal {@link Tool}s —
 * arguments checked against each tool's `inputSchema` by the SDK's own JSON Schema validator
 * before the server is called, `idempotent` from the tools' annotations, `isError` results as tool
 * errors the model can reflect on — every call through the server's breaker (link.ts).
 *
 * @module
 */
import * as t from 'io-ts';
import { asyncScheduler, map, Observable, type SchedulerLike } from 'rxjs';
import { CircuitBreaker } from '../core/breaker/CircuitBreaker.js';
import { CircuitBreakerRegistry } from '../core/breaker/registry.js';
import { CapabilityRegistry } from '../core/capabilities/CapabilityRegistry.js';
import { check, Hub, NonEmptyString, NonNegativeOrInfinity, PositiveNumber, Scheduler, Func, validateOptions } from '../core/errors/options.js';
import type { HealHub } from '../core/hub/hub.js';
import type { Tool } from '../sources/tool.js';
import { McpToolResultError, mcpFailure } from './errors.js';
import { readClient, type McpAnyClient } from './clients.js';
import {
  McpLink,
  type McpCallArgs,
  type McpClientBase,
  type McpInputAnswer,
  type McpProgressListener,
  type McpRequestOptions,
  type McpToolInfo,
  type McpTaskPolling,
  type McpTaskResume,
  type McpTransportFactory,
} from './link.js';

export type { McpAnyClient, McpClientV2 } from './clients.js';
export type {
  McpCallArgs,
  McpCallParams,
  McpClient,
  McpClientBase,
  McpInputAnswer,
  McpInputRequest,
  McpProgressListener,
  McpRequestOptions,
  McpTaskPolling,
  McpTaskResume,
  McpToolInfo,
  McpTransportFactory,
} from './link.js';

/**
 * A JSON Schema validator: the MCP SDK's `jsonSchemaValidator` interface (its
 * `AjvJsonSchemaValidator`, `CfWorkerJsonSchemaValidator`), compiled once per tool.
 *
 * @example
 * ```ts
 * import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
 * const validator: McpSchemaValidator = new AjvJsonSchemaValidator();
 * ```
 */
export interface McpSchemaValidator {
  /** Compiles `schema` once; the function returned checks one value. */
  getValidator(schema: never): (input: unknown) => { valid: boolean; errorMessage?: string | undefined };
}

/**
 * How long between reconnection attempts that fail in a row: `initialMs · 2ⁿ`, at most `maxMs`,
 * half of it random ("equal" jitter) — `retryWithBackoff`'s waits, the failure's `retry-after`
 * when longer. There is no cap on the number of attempts.
 *
 * @example
 * ```ts
 * const backoff: McpReconnectBackoff = { initialMs: 500, maxMs: 10_000 };
 * ```
 */
export interface McpReconnectBackoff {
  /** The wait after the first failed attempt. Defaults to 1 000 ms. */
  readonly initialMs?: number;
  /** The longest wait. Defaults to 30 000 ms. */
  readonly maxMs?: number;
}

/**
 * Options of {@link fromMcp} and `watchMcpTools`.
 *
 * @example
 * ```ts
 * const options: FromMcpOptions = { id: 'weather', prefix: 'wx_', timeoutMs: 30_000, capabilities };
 * ```
 */
export interface FromMcpOptions {
  /** The server's id: names its breaker (`mcp:<id>`) and its errors. Defaults to the name the server gave at initialisation, else `'mcp'`. */
  readonly id?: string;
  /** Put before each tool's name (`'wx_'`: `get_weather` → `wx_get_weather`); the server is called with its own name. None by default. */
  readonly prefix?: string;
  /**
   * A call fails with `McpTimeoutError` after this many ms without its result nor a progress
   * notification (each progress notification starts it again). Defaults to 60 000; `Infinity`: none.
   */
  readonly timeoutMs?: number;
  /** A call fails with `McpTimeoutError` after this many ms in all, progress or not. Defaults to `Infinity`. */
  readonly maxTotalTimeoutMs?: number;
  /** Where the server's breaker comes from: `breakers.get('mcp:<id>')`. Defaults to a breaker of its own (`CircuitBreaker` defaults). */
  readonly breakers?: CircuitBreakerRegistry;
  /**
   * While the server's breaker is open, each of its tools is disabled here (`runAgent` tells the
   * model), a `ping` probes the server whenever the breaker turns half-open, and the tools are
   * enabled again when it closes. None by default.
   */
  readonly capabilities?: CapabilityRegistry;
  /** Reports the breaker's transitions and rejections (`circuit` events). None by default. */
  readonly hub?: HealHub;
  /**
   * Makes a fresh transport (e.g. `() => new StdioClientTransport({ command, args })`): a broken
   * connection (its transport closed — the process exited, mid-call or between calls — or the
   * session expired) is replaced by the next call the breaker admits, before that call is sent,
   * with {@link McpReconnectBackoff} between failed attempts. A network error of one HTTP exchange
   * is not a broken connection: the calls in flight keep their session, the next call goes out on
   * it. Without a factory, a closed transport stays closed (every call fails with `McpConnectionError`).
   */
  readonly reconnect?: McpTransportFactory;
  /** Waits between failed reconnection attempts. */
  readonly reconnectBackoff?: McpReconnectBackoff;
  /** Validates arguments against `inputSchema`. Defaults to the SDK's `AjvJsonSchemaValidator` (ajv, as the SDK's client uses). */
  readonly validator?: McpSchemaValidator;
  /**
   * Answers a multi-round call's `input_required` (MCP 2026-07-28: the server asks for an
   * elicitation, a sampling…): called for each round with what the server asks and a signal, its
   * answers sent back with the server's `requestState`, byte for byte, as a fresh request under the
   * same deadlines (each round pushes the idle one back) and cancellation. Without it a 2.x client
   * fulfils the rounds with its own request handlers (`setRequestHandler('elicitation/create', …)`),
   * and a call nobody can answer fails with `McpInputRequiredError`. The model is never asked.
   */
  readonly onInputRequired?: McpInputAnswer;
  /** Rounds of one multi-round call `onInputRequired` answers at most (then `McpInputRequiredError`). Defaults to 10. */
  readonly maxInputRounds?: number;
  /**
   * Long tools as MCP Tasks (the `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28, on a
   * 2.x client): each call declares the extension, and a call the server answers with a task handle
   * is followed to its end as the same call — `tasks/get` polled on the scheduler (the server's
   * `pollIntervalMs`, else this backoff), each poll under `timeoutMs` and the task in all under
   * `maxTotalTimeoutMs`; the task's questions answered by `onInputRequired` (each once) and sent with
   * `tasks/update`; a `task` event on `hub` for each change; `tasks/cancel` sent when the call is
   * unsubscribed or a deadline passes. In a durable run the task's id is checkpointed before the
   * polling starts, so `resumeAgent` polls the same task after a restart instead of calling the
   * tool again. `false`: the extension is not declared (a server then answers in full, or with
   * -32021). Defaults to `{}`.
   */
  readonly tasks?: false | McpTaskPolling;
  /** Where the timeouts and the backoff are timed. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

const props = {
  id: NonEmptyString,
  prefix: check('a string', (u): u is string => typeof u === 'string'),
  timeoutMs: check('a number > 0 or Infinity', (u): u is number => typeof u === 'number' && u > 0),
  maxTotalTimeoutMs: check('a number > 0 or Infinity', (u): u is number => typeof u === 'number' && u > 0),
  breakers: check('a CircuitBreakerRegistry', (u): u is CircuitBreakerRegistry => u instanceof CircuitBreakerRegistry),
  capabilities: check('a CapabilityRegistry', (u): u is CapabilityRegistry => u instanceof CapabilityRegistry),
  hub: Hub,
  reconnect: Func,
  reconnectBackoff: check(
    '{ initialMs?: a finite number > 0, maxMs?: a number >= 0 or Infinity }',
    (u): u is McpReconnectBackoff =>
      typeof u === 'object' &&
      u !== null &&
      ((u as McpReconnectBackoff).initialMs === undefined || PositiveNumber.is((u as McpReconnectBackoff).initialMs)) &&
      ((u as McpReconnectBackoff).maxMs === undefined || NonNegativeOrInfinity.is((u as McpReconnectBackoff).maxMs)),
  ),
  validator: check(
    'a JSON Schema validator (with getValidator)',
    (u): u is McpSchemaValidator => typeof (u as McpSchemaValidator | null)?.getValidator === 'function',
  ),
  onInputRequired: Func,
  maxInputRounds: check('an integer >= 1', (u): u is number => Number.isInteger(u) && (u as number) >= 1),
  tasks: check(
    'false or { initialMs?: a finite number > 0, maxMs?: a finite number > 0, retries?: an integer >= 0 }',
    (u): u is false | McpTaskPolling =>
      u === false ||
      (typeof u === 'object' &&
        u !== null &&
        Object.keys(u).every((k) => k === 'initialMs' || k === 'maxMs' || k === 'retries') &&
        ((u as McpTaskPolling).initialMs === undefined || PositiveNumber.is((u as McpTaskPolling).initialMs)) &&
        ((u as McpTaskPolling).maxMs === undefined || PositiveNumber.is((u as McpTaskPolling).maxMs)) &&
        ((u as McpTaskPolling).retries === undefined || (Number.isInteger((u as McpTaskPolling).retries) && (u as McpTaskPolling).retries! >= 0))),
  ),
  scheduler: Scheduler,
};

/**
 * Whether `fromMcp` takes a tool as safe to run twice (so retries may repeat it): `readOnlyHint`
 * or `idempotentHint`, and not `destructiveHint`. Any other tool is never retried automatically.
 *
 * @example
 * ```ts
 * isIdempotentTool({ annotations: { readOnlyHint: true } }); // true
 * isIdempotentTool({ annotations: { idempotentHint: true, destructiveHint: true } }); // false
 * isIdempotentTool({}); // false: no hint, no retry
 * ```
 */
export function isIdempotentTool(tool: Pick<McpToolInfo, 'annotations'>): boolean {
  const a = tool.annotations;
  return (a?.readOnlyHint === true || a?.idempotentHint === true) && a?.destructiveHint !== true;
}

/**
 * The SDK's validator — of the client's own major, the one installed — loaded only when none was
 * given (a static import would need that SDK installed for the types alone). A bundler follows
 * both imports: a bundle for one major marks the other's external (the demo page does), or passes
 * `validator`.
 */
async function defaultValidator(major: 1 | 2): Promise<McpSchemaValidator> {
  const { AjvJsonSchemaValidator } =
    major === 1 ? await import('@modelcontextprotocol/sdk/validation/ajv') : await import('@modelcontextprotocol/client/validators/ajv');
  return new AjvJsonSchemaValidator() as unknown as McpSchemaValidator;
}

/** An io-ts codec that checks arguments with the compiled schema (its problem names the validator's message). */
function schemaCodec(
  toolName: string,
  validate: (input: unknown) => { valid: boolean; errorMessage?: string | undefined },
): t.Type<Record<string, unknown>, unknown, unknown> {
  const codec: t.Type<Record<string, unknown>, unknown, unknown> = new t.Type<Record<string, unknown>, unknown, unknown>(
    `arguments matching the input schema of '${toolName}'`,
    (u): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u) && validate(u).valid,
    (u, context) => {
      const verdict = typeof u === 'object' && u !== null && !Array.isArray(u) ? validate(u) : { valid: false, errorMessage: 'arguments must be an object' };
      if (verdict.valid) return t.success(u as Record<string, unknown>);
      const named = { ...codec, name: `${codec.name} (${verdict.errorMessage ?? 'invalid'})` } as unknown as t.Decoder<unknown, unknown>;
      return t.failures([{ value: u, context: [{ key: '', type: named, actual: u }, ...context.slice(1)], message: verdict.errorMessage }]);
    },
    t.identity,
  );
  return codec;
}

/**
 * The validator of one tool's schema. A schema that does not compile (a `$ref` to nowhere, a bad
 * `type`, a validator that throws) refuses every call of that tool alone, saying why: the rest of
 * the listing stands, and the server never sees arguments nobody could check.
 */
function compiled(
  validator: McpSchemaValidator,
  schema: McpToolInfo['inputSchema'],
): (input: unknown) => { valid: boolean; errorMessage?: string | undefined } {
  try {
    return validator.getValidator(schema as never);
  } catch (error) {
    const errorMessage = `its inputSchema does not compile (${error instanceof Error ? error.message : String(error)}): the call is refused`;
    return () => ({ valid: false, errorMessage });
  }
}

/** A successful result as the tool's value: `structuredContent` when present, else its text (or its content, if not all text). */
function resultValue(tool: string, result: { readonly [key: string]: unknown }): unknown {
  const content = Array.isArray(result['content']) ? (result['content'] as { type?: unknown; text?: unknown }[]) : [];
  const allText = content.every((part) => part.type === 'text' && typeof part.text === 'string');
  const text = allText ? content.map((part) => part.text as string).join('\n') : undefined;
  if (result['isError'] === true) throw new McpToolResultError(tool, text ?? JSON.stringify(content), result);
  if (result['structuredContent'] !== undefined) return result['structuredContent'];
  return text ?? content;
}

/** A listed tool as the proxy forwards it: what the server said of it, and its checks. */
export interface ListedTool {
  readonly info: McpToolInfo;
  readonly idempotent: boolean;
  readonly args: t.Type<Record<string, unknown>, unknown, unknown>;
}

/**
 * One server's tools, listed as often as asked, sharing one link (one breaker, one reconnection).
 *
 * @internal exported for the proxy (proxy.ts), which forwards the raw results
 */
export class McpToolset {
  private validator: McpSchemaValidator | undefined;
  /** The tools of the last listing, by their MCP name. */
  listed: ReadonlyMap<string, ListedTool> = new Map();
  /** Listings begun: only the newest one's answer (or failure) counts. */
  private listings = 0;

  constructor(
    private readonly link: McpLink,
    private readonly prefix: string,
    validator: McpSchemaValidator | undefined,
    /** The client's SDK major (its validator is the default one). */
    readonly major: 1 | 2,
    /** Whether the connection speaks 2026-07-28 (clients.ts). */
    readonly stateless: () => boolean,
  ) {
    this.validator = validator;
  }

  /**
   * `tools/list`, every page, as rxheal tools, which become the server's tools — unless a newer
   * listing began meanwhile: then `undefined`, its answer and its failure alike (the newer one
   * decides; an older list answering late never replaces it).
   */
  async list(): Promise<Tool<Record<string, unknown>, unknown>[] | undefined> {
    const mine = ++this.listings;
    try {
      const [infos, validator] = await this.fetchAll();
      return mine === this.listings ? this.toolsOf(infos, validator) : undefined;
    } catch (error) {
      if (mine === this.listings) throw error;
      return undefined;
    }
  }

  /** Every page of `tools/list`, and the validator to check them with. */
  private async fetchAll(): Promise<[McpToolInfo[], McpSchemaValidator]> {
    const { client, id, timeoutMs } = this.link.settings;
    const validator = (this.validator ??= await defaultValidator(this.major));
    const infos: McpToolInfo[] = [];
    const cursors = new Set<string>();
    let cursor: string | undefined;
    do {
      let page: Awaited<ReturnType<McpClientBase['listTools']>>;
      try {
        page = await client.listTools(cursor === undefined ? undefined : { cursor });
      } catch (error) {
        throw mcpFailure(id, 'tools/list', error, timeoutMs);
      }
      infos.push(...page.tools);
      cursor = page.nextCursor;
      if (cursor !== undefined) {
        if (cursors.has(cursor)) throw new Error(`MCP server '${id}': tools/list repeated the cursor ${JSON.stringify(cursor)}`);
        cursors.add(cursor);
      }
    } while (cursor !== undefined);
    return [infos, validator];
  }

  /**
   * The tools of one listing (`tools/list`'s infos), which become the server's tools: their names
   * are what the breaker disables while open. Synchronous (the executable diagrams build tools
   * with it, in virtual time).
   */
  toolsOf(infos: readonly McpToolInfo[], validator: McpSchemaValidator): Tool<Record<string, unknown>, unknown>[] {
    const tools = infos.map((info) => this.tool(info, validator));
    this.link.names = tools.map((tool) => tool.name);
    this.listed = new Map(infos.map((info, i) => [info.name, { info, idempotent: tools[i]!.idempotent !== false, args: tools[i]!.args }]));
    return tools;
  }

  /** One call's raw result (`isError` ones included), through the breaker and the reconnection; `onProgress` hears the server's progress notifications. */
  callRaw(...call: McpCallArgs): Observable<{ readonly [key: string]: unknown }> {
    return this.link.call(...call);
  }

  /** One request of another kind, on the same connection (`McpLink.request`: reconnected first, deadlines, cancellation; no breaker). */
  request<T>(label: string, send: (options: McpRequestOptions) => Promise<T>, onProgress?: McpProgressListener): Observable<T> {
    return this.link.request(label, send, onProgress);
  }

  private tool(info: McpToolInfo, validator: McpSchemaValidator): Tool<Record<string, unknown>, unknown> {
    const idempotent = isIdempotentTool(info);
    const name = this.prefix + info.name;
    const validate = compiled(validator, info.inputSchema);
    return {
      name,
      description: info.description ?? '',
      parameters: info.inputSchema,
      idempotent,
      args: schemaCodec(name, validate),
      // the call's idempotency key in `_meta` (IDEMPOTENCY_META_KEY), for a server that deduplicates
      // a durable run's context also hands over the call's checkpoint (MCP Tasks: the task picked up again)
      execute: (args, context) =>
        this.link
          .call(info.name, args, idempotent, undefined, context?.idempotencyKey, context as McpTaskResume | undefined)
          .pipe(map((result) => resultValue(info.name, result))),
    };
  }
}

/**
 * The options checked and resolved into a link.
 *
 * @internal exported for the proxy
 */
export function toolset(target: string, clientIn: unknown, options: FromMcpOptions | undefined): McpToolset {
  const { client, major, callTool, stateless, probe, tasks } = readClient(target, clientIn);
  const o = validateOptions(target, props, options) as FromMcpOptions;
  const id = o.id ?? client.getServerVersion()?.name ?? 'mcp';
  const scheduler = o.scheduler ?? asyncScheduler;
  const breaker = o.breakers ? o.breakers.get(`mcp:${id}`) : new CircuitBreaker({ name: `mcp:${id}`, scheduler });
  const link = new McpLink({
    id,
    client,
    callTool,
    stateless,
    probe,
    onInputRequired: o.onInputRequired,
    maxInputRounds: o.maxInputRounds ?? 10,
    tasks:
      tasks === undefined || o.tasks === false
        ? undefined
        : { wire: tasks, polling: { initialMs: o.tasks?.initialMs ?? 1000, maxMs: o.tasks?.maxMs ?? 30_000 }, pollRetries: o.tasks?.retries ?? 5 },
    breaker,
    hub: o.hub,
    capabilities: o.capabilities,
    reconnect: o.reconnect,
    reconnectBackoff: { initialMs: o.reconnectBackoff?.initialMs ?? 1000, maxMs: o.reconnectBackoff?.maxMs ?? 30_000 },
    timeoutMs: o.timeoutMs ?? 60_000,
    maxTotalTimeoutMs: o.maxTotalTimeoutMs ?? Infinity,
    scheduler,
  });
  return new McpToolset(link, o.prefix ?? '', o.validator, major, stateless);
}

/**
 * An MCP server's tools as rxheal {@link Tool}s, for `runAgent` (one per tool of `tools/list`,
 * every page): the same name (or `prefix` + name), description, and `parameters` = `inputSchema`.
 *
 * - **Arguments** are validated against `inputSchema` before the server is called — by the SDK's
 *   own validator (ajv) unless `validator` says otherwise: bad ones fail with a `ToolError`
 *   (`phase: 'validate'`) naming the problem, and the server never sees the call. A tool whose
 *   schema does not compile is refused alone (each call such a `ToolError`, saying so).
 * - **`idempotent`** from the annotations: `readOnlyHint` or `idempotentHint`, and not
 *   `destructiveHint`. Any other tool is never retried automatically, whatever fails.
 * - **Results**: `structuredContent` when present, else the text of the content. `isError: true`
 *   fails with a `ToolError` (`phase: 'execute'`, cause {@link McpToolResultError}, its text as
 *   message): `reflectOnError` hands it to the model to correct its call.
 * - **Cancellation**: unsubscribing cancels the request (the server gets `notifications/cancelled`).
 * - **Timeouts**: `timeoutMs` without a result nor a progress notification (each one starts it
 *   again: the SDK's `onprogress` is wired, so it sends a progress token), `maxTotalTimeoutMs` in
 *   all; the SDK's own 60 s default never applies.
 * - **Errors** in rxheal's words (errors.ts): a dead process, a refused or reset connection, an
 *   HTTP 5xx are retryable service failures; a JSON-RPC "method not found" / "invalid params" is
 *   not retried and not counted by the breaker.
 * - **One breaker per server** (`mcp:<id>`): while open, calls fail at once with
 *   `CircuitOpenError` and, with `capabilities`, the tools are unavailable (the model is told) until
 *   a probe succeeds.
 * - **Reconnection** with `reconnect` (a transport factory): a broken connection (a closed
 *   transport, an expired session — not one HTTP exchange's network error) is replaced by the next
 *   admitted call before it is sent, one attempt at a time, with backoff between failed attempts
 *   (or the failure's `retry-after`, when longer) and no cap; an expired
 *   Streamable-HTTP session (404) is re-initialised and an idempotent call made once more (any other
 *   fails with {@link McpSessionExpiredError}: not run, never silently lost).
 *
 * @example
 * ```ts
 * import { Client } from '@modelcontextprotocol/sdk/client/index.js';
 * import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
 * import { fromMcp } from 'rxheal/mcp';
 *
 * const transport = () => new StdioClientTransport({ command: 'node', args: ['weather-server.js'] });
 * const client = new Client({ name: 'my-agent', version: '1.0.0' });
 * await client.connect(transport());
 * const tools = await fromMcp(client, { id: 'weather', reconnect: transport, capabilities });
 * runAgent({ model, tools, capabilities, messages, toolPipeline: (call, call$) => call$.pipe(retryWithBackoff(), reflectOnError()) });
 * ```
 * @throws {InvalidOptionError} at once, for a client that is not a 1.x `Client` or an invalid option.
 */
export function fromMcp(client: McpAnyClient, options?: FromMcpOptions): Promise<Tool<Record<string, unknown>, unknown>[]> {
  // the toolset's only listing: never superseded
  return toolset('fromMcp', client, options)
    .list()
    .then((tools) => tools!);
}
