/**
 * Incidents as tests: {@link recordIncident} reads what a real run reported — the hub's or the
 * run's events, or JSON log lines (`logEvents` with a JSON logger such as pino, at level `debug`,
 * or {@link incidentLine}'s own) — and turns it into a fault schedule: which call failed how,
 * with which retry-after, where a stream was cut. {@link replayIncident} runs an agent under it in
 * virtual time and compares the healing it reports with the incident's.
 *
 * @module
 */
import { HTTP_CATEGORIES } from '../core/errors/httpCategories.js';
import type { AgentEvent, HealEvent, HedgeEvent } from '../core/events/events.js';
import { HEDGE_MESSAGES, poolEventOf, RESUME_MESSAGES, TASK_MESSAGES, USUAL_CIRCUIT_FROM } from '../observe/logMessages.js';
import { ChaosInputError, type FaultSchedule, type ModelFault, type ToolFault } from './schedule.js';
import type { ChaosRun } from './invariants.js';
import { replaySchedule, type AgentFactory, type ReplayOptions } from './run.js';

/**
 * The version of incident lines and of {@link Incident} this rxheal reads and writes.
 *
 * @example
 * ```ts
 * JSON.parse(incidentLine(event, 0)).rxheal === `incident/${INCIDENT_VERSION}`; // true
 * ```
 */
export const INCIDENT_VERSION = 1;

/**
 * A recorded incident: the schedule that replays its faults, and the healing the run reported
 * (one {@link healingStep} per event, in order).
 *
 * @example
 * ```ts
 * const incident: Incident = {
 *   version: 1,
 *   schedule: { models: { primary: [{ kind: 'status', status: 503 }] } },
 *   healing: ['retry model:primary #1 after 200 ms'],
 * };
 * ```
 */
export interface Incident {
  readonly version: 1;
  readonly schedule: FaultSchedule;
  readonly healing: readonly string[];
}

/**
 * A healing event in words, without what changes between a live run and its replay (times, error
 * texts): `retry <target> #<attempt> after <delayMs> ms`, `fallback <from> > <to>`,
 * `reset <reason> <target>`, `circuit <breaker> <from> > <to>` / `circuit <breaker> rejected`,
 * `degraded <capability>`, `restored <capability>`, `budget-exceeded <resource>`,
 * `reflection <tool> #<attempt>`, `hedge <target> <kind> #<attempt>` (without the time it waited:
 * measured, where a retry's delay is decided); undefined for any other event.
 *
 * @example
 * ```ts
 * healingStep({ type: 'retry', target: 'model:primary', attempt: 1, max: 2, delayMs: 200, category: 'server_error' }); // 'retry model:primary #1 after 200 ms'
 * ```
 */
export function healingStep(event: AgentEvent): string | undefined {
  switch (event.type) {
    case 'retry':
      return `retry ${event.target} #${event.attempt} after ${event.delayMs} ms`;
    case 'fallback':
      return `fallback ${event.from} > ${event.to}`;
    case 'reset':
      return `reset ${event.reason} ${event.target}`;
    case 'circuit':
      return event.kind === 'rejected' ? `circuit ${event.breaker} rejected` : `circuit ${event.breaker} ${event.from} > ${event.to}`;
    case 'degraded':
    case 'restored':
      return `${event.type} ${event.capability}`;
    case 'budget-exceeded':
      return `budget-exceeded ${event.resource}`;
    case 'reflection':
      return `reflection ${event.tool} #${event.exhausted ? 'exhausted' : event.attempt}`;
    case 'hedge':
      return `hedge ${event.target} ${event.kind} #${event.attempt}`;
    default:
      return undefined;
  }
}

/**
 * One event as an incident line: `{"rxheal":"incident/1","at":<ms>,"event":{…}}`, the event
 * whole. Write one per event (a hub's `events$`, or a run's) to have the most faithful record.
 *
 * @example
 * ```ts
 * hub.events$.subscribe((e) => stream.write(incidentLine(e, Date.now()) + '\n'));
 * ```
 */
export function incidentLine(event: AgentEvent, at: number): string {
  return JSON.stringify({ rxheal: `incident/${INCIDENT_VERSION}`, at, event });
}

/** What {@link recordIncident} reads out of one line, or undefined for a line that is not rxheal's. */
type Read = { readonly at: number | undefined; readonly event: AgentEvent } | undefined;

/** `model=x` / `tool_name=x` / `target=x` back to `model:x`, `tool:x`, `x`. */
function target(fields: Record<string, unknown>): string {
  if (typeof fields['model'] === 'string') return `model:${fields['model']}`;
  if (typeof fields['tool_name'] === 'string') return `tool:${fields['tool_name']}`;
  return String(fields['target'] ?? fields['breaker'] ?? '');
}

const str = (u: unknown): string | undefined => (typeof u === 'string' ? u : undefined);
const num = (u: unknown): number => (typeof u === 'number' ? u : 0);

/** A `logEvents` record (JSON, pino style) back to the event it logged; undefined for what the incident does not need. */
function fromLogRecord(message: string, f: Record<string, unknown>, where: string): AgentEvent | undefined {
  const call = /^(model|tool) call (started|finished|failed|cancelled)$/.exec(message);
  if (call) {
    const kind = call[1] as 'model' | 'tool';
    const name = str(kind === 'model' ? f['model'] : f['tool_name']) ?? '';
    const base = {
      kind,
      name,
      id: String(f['call_id'] ?? ''),
      step: num(f['step']),
      at: 0,
      ...(typeof f['parent_id'] === 'string' ? { parentId: f['parent_id'] } : {}),
    };
    if (call[2] === 'started') return { type: 'call-start', ...base };
    const outcome = call[2] === 'finished' ? 'success' : call[2] === 'failed' ? 'error' : 'cancelled';
    const error = str(f['error']);
    const category = str(f['category']);
    const status = f['status'];
    return {
      type: 'call-end',
      ...base,
      durationMs: num(f['duration_ms']),
      outcome,
      ...(error === undefined ? {} : { error }),
      ...(category === undefined ? {} : { category }),
      ...(typeof status === 'number' ? { status } : {}),
      ...(f['is_error'] === true ? { isError: true } : {}),
    };
  }
  if (/^(model |tool |)call failed, retrying$/.test(message)) {
    return {
      type: 'retry',
      target: target(f),
      attempt: num(f['attempt']),
      max: num(f['max']),
      delayMs: num(f['backoff_ms']),
      category: String(f['category'] ?? ''),
    };
  }
  switch (message) {
    case 'fallback activated':
      return { type: 'fallback', from: String(f['from']), to: String(f['to']), reason: String(f['reason'] ?? ''), midStream: f['mid_stream'] === true };
    case 'partial output discarded':
      return { type: 'reset', reason: f['reason'] as 'retry' | 'fallback' | 'correction', target: target(f) };
    case 'capability degraded':
      return { type: 'degraded', capability: String(f['capability']), reason: String(f['reason'] ?? '') };
    case 'capability restored':
      return { type: 'restored', capability: String(f['capability']) };
    case 'budget exceeded':
    case 'budget exceeded, call cut': {
      const model = str(f['model']);
      const limiter = str(f['limiter']);
      return {
        type: 'budget-exceeded',
        resource: String(f['resource']),
        limit: num(f['limit']),
        used: num(f['used']),
        ...(message === 'budget exceeded, call cut' ? { cut: true } : {}),
        ...(model === undefined ? {} : { model }),
        ...(limiter === undefined ? {} : { limiter }),
      };
    }
    case 'spend charged':
      return { type: 'spend', model: String(f['model']), usd: num(f['usd']), totalUsd: num(f['total_usd']), estimated: f['estimated'] === true };
    case 'reflection injected':
    case 'reflections exhausted, tool abandoned':
      return {
        type: 'reflection',
        tool: String(f['tool_name']),
        callId: String(f['call_id'] ?? ''),
        attempt: num(f['attempt']),
        max: num(f['max']),
        exhausted: message !== 'reflection injected',
      } as AgentEvent;
    case 'circuit breaker opened':
    case 'circuit breaker half-open':
    case 'circuit breaker closed': {
      const to: CircuitState = message === 'circuit breaker opened' ? 'open' : message === 'circuit breaker half-open' ? 'half-open' : 'closed';
      // logged without `from`: it came the usual way into that state
      const from = CIRCUIT_STATES.has(f['from']) ? (f['from'] as CircuitState) : USUAL_CIRCUIT_FROM[to];
      return {
        type: 'circuit',
        kind: 'transition',
        breaker: target(f),
        from,
        to,
        reason: String(f['reason'] ?? ''),
        failures: num(f['failures']),
      } as AgentEvent;
    }
    case 'tool call answered from the effect ledger':
      return { type: 'tool-deduplicated', callId: String(f['call_id'] ?? ''), tool: String(f['tool_name']), key: String(f['idempotency_key'] ?? '') };
    case 'call rejected by open circuit':
      return { type: 'circuit', kind: 'rejected', breaker: target(f), retryAfterMs: num(f['retry_after_ms']) } as AgentEvent;
    case 'retry succeeded':
    case 'retry withheld: tool not idempotent':
    case RESUME_MESSAGES.dropped:
    case RESUME_MESSAGES.stalled:
    case 'call waited for rate limit':
    case 'call refused by rate limit':
    case 'spend refused by limit':
    case 'spend decided on local share':
    case 'call queued by bulkhead':
    case 'call admitted by bulkhead':
    case 'call refused by bulkhead':
    case 'latency observed':
    case TASK_MESSAGES.created:
    case TASK_MESSAGES.resumed:
    case TASK_MESSAGES.status:
    case TASK_MESSAGES.cancel:
      return undefined;
    default: {
      const hedge = HEDGE_KINDS.get(message);
      if (hedge !== undefined) {
        const afterMs = f['after_ms'];
        const category = str(f['category']);
        return {
          type: 'hedge',
          kind: hedge,
          target: target(f),
          attempt: num(f['attempt']),
          at: 0,
          ...(typeof afterMs === 'number' ? { afterMs } : {}),
          ...(category === undefined ? {} : { category }),
        };
      }
      const pool = poolEventOf(message, f);
      if (pool !== undefined) return pool;
      throw new ChaosInputError(`${where}: ${JSON.stringify(message)} is no message this rxheal's logEvents writes (a log of another version?)`);
    }
  }
}

type CircuitState = 'closed' | 'open' | 'half-open';

const CIRCUIT_STATES = new Set<unknown>(['closed', 'open', 'half-open']);

/** A hedge event's kind by the message `logEvents` writes for it. */
const HEDGE_KINDS = new Map(Object.entries(HEDGE_MESSAGES).map(([kind, message]) => [message, kind as HedgeEvent['kind']]));

/** A JSON logger's own keys (pino's), not a record's fields. */
const LINE_KEYS = new Set(['msg', 'message', 'level', 'time', 'pid', 'hostname']);

/** One JSON line: an incident line, or a `logEvents` record; undefined for a line of something else. */
function readLine(line: string, n: number, prefix: string): Read {
  const where = `line ${n}`;
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    throw new ChaosInputError(`${where}: not JSON: ${line.slice(0, 80)}`);
  }
  if (typeof o !== 'object' || o === null) throw new ChaosInputError(`${where}: not a JSON object`);
  if ('rxheal' in o) {
    if (o['rxheal'] !== `incident/${INCIDENT_VERSION}`) {
      throw new ChaosInputError(`${where}: an incident line of ${JSON.stringify(o['rxheal'])}; this rxheal reads "incident/${INCIDENT_VERSION}"`);
    }
    return { at: typeof o['at'] === 'number' ? o['at'] : undefined, event: o['event'] as AgentEvent };
  }
  const msg = str(o['msg']) ?? str(o['message']);
  if (msg === undefined || !msg.startsWith(prefix)) return undefined;
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(o)) if (!LINE_KEYS.has(key)) fields[key] = value;
  const time = o['time'];
  const event = fromLogRecord(msg.slice(prefix.length), fields, where);
  const at = typeof time === 'number' ? time : typeof time === 'string' ? Date.parse(time) : undefined;
  return event === undefined ? undefined : { at, event };
}

/**
 * Options of {@link recordIncident}.
 *
 * @example
 * ```ts
 * recordIncident(lines, { prefix: 'agent' }); // lines logged with logEvents(…, { prefix: 'agent' })
 * ```
 */
export interface RecordIncidentOptions {
  /** The `prefix` the log was written with (`logEvents`'s option). Defaults to `'rxheal'`. */
  readonly prefix?: string;
}

/** A status for each HTTP category: what a failure whose `call-end` has no status replays as. */
const CATEGORY_STATUS: ReadonlyMap<string, number> = new Map([
  ...Object.entries(HTTP_CATEGORIES)
    .reverse()
    .map(([status, category]): [string, number] => [category, Number(status)]),
  ['client_error', 400],
  ['server_error', 500],
  ['transient', 503],
]);

/** The HTTP status of a failed call: its `call-end`'s own, one its error text names (`… HTTP 504: …`), or its category's. */
function statusOf(end: Extract<HealEvent, { type: 'call-end' }>): number | undefined {
  if (end.status !== undefined) return end.status;
  const named = /\bHTTP (\d{3})\b/.exec(end.error ?? '');
  if (named) return Number(named[1]);
  return end.category === undefined ? undefined : CATEGORY_STATUS.get(end.category);
}

/** A failed model call's fault, from what its `call-end` said. */
function modelFault(end: Extract<HealEvent, { type: 'call-end' }>, deltas: number | undefined, retryAfter: number | undefined, where: string): ModelFault {
  if (end.outcome === 'success') return { kind: 'ok' };
  if (end.outcome === 'cancelled') return { kind: 'stall', afterEvents: deltas ?? 0 };
  const error = end.error ?? '';
  const cut = /^Connection closed before the stream of .* after (\d+) events?$/.exec(error);
  if (cut) return { kind: 'reset', afterEvents: deltas ?? Number(cut[1]) };
  if (/^Malformed event in the stream/.test(error)) return { kind: 'malformed', afterEvents: deltas ?? 0 };
  if (end.category === 'timeout') return { kind: 'stall', afterEvents: deltas ?? 0 };
  if (end.category === 'connection') return { kind: 'down', forMs: 0 };
  const status = statusOf(end);
  if (status !== undefined)
    return status === 429 && retryAfter !== undefined ? { kind: 'status', status, retryAfterMs: retryAfter } : { kind: 'status', status };
  throw new ChaosInputError(
    `${where}: cannot tell how model call '${end.id}' of '${end.name}' failed: ${JSON.stringify(error)} (category ${String(end.category)})`,
  );
}

/** A tool execution's fault, from what its `call-end` said. */
function toolFault(end: Extract<HealEvent, { type: 'call-end' }>): ToolFault {
  if (end.outcome === 'success') return end.isError === true ? { kind: 'is-error' } : { kind: 'ok' };
  if (end.outcome === 'cancelled') return { kind: 'stall' };
  if (end.category === 'timeout') return { kind: 'timeout', afterMs: Math.round(end.durationMs) };
  const status = end.status ?? /\bHTTP (\d{3})\b/.exec(end.error ?? '')?.[1];
  return status === undefined ? { kind: 'throw' } : { kind: 'throw', status: Number(status) };
}

/**
 * Turns what a run reported into an {@link Incident}: events (a hub's `events$` or a run's,
 * collected in order; with the run's own events, the text deltas tell where a stream was cut) or
 * JSON lines (one string, or an array; `logEvents` records at level `debug`, or
 * {@link incidentLine}s). Each provider attempt (a `call-end` of a model call made by no other,
 * in order per model) and each tool execution becomes the fault it suffered: an HTTP status (a
 * 429 with the retry's delay as its retry-after), a reset after so many events, a malformed
 * event, a stall (a timeout or a cancelled call), a refused connection; healthy calls are `ok`,
 * but for one whose tool calls the tool refused (`validation_error`: the arguments did not fit
 * its schema, and it never ran), which had `bad-tool-args`.
 * Where a stream was cut: with the run's own events, the text deltas the call delivered
 * (exactly); from the hub's events or log lines, which carry no text, the provider's own count of
 * the events it had received (`IncompleteStreamError`'s, which may count events that carry no
 * text, such as a first chunk naming the role), and 0 for a malformed event or a stall.
 *
 * @example
 * ```ts
 * const incident = recordIncident(readFileSync('incident.log', 'utf8'));
 * const replay = await replayIncident(incident, agent);
 * expect(replay.healing).to.deep.equal(incident.healing);
 * ```
 * @throws {ChaosInputError} for a line that is not JSON, an incident line of another version, a
 * log message this rxheal does not write, or a failure it cannot tell the kind of.
 */
export function recordIncident(input: readonly AgentEvent[] | string | readonly string[], options: RecordIncidentOptions = {}): Incident {
  const prefix = options.prefix === undefined ? 'rxheal: ' : options.prefix === '' ? '' : `${options.prefix}: `;
  const events: { event: AgentEvent; where: string }[] = [];
  if (typeof input === 'string' || (input.length > 0 && typeof input[0] === 'string')) {
    const lines = typeof input === 'string' ? input.split('\n') : (input as readonly string[]);
    lines.forEach((line, i) => {
      if (line.trim() === '') return;
      const read = readLine(line, i + 1, prefix);
      if (read) events.push({ event: read.event, where: `line ${i + 1}` });
    });
  } else {
    (input as readonly AgentEvent[]).forEach((event, i) => events.push({ event, where: `event ${i}` }));
  }
  const parents = new Set(events.flatMap(({ event: e }) => (e.type === 'call-start' && e.parentId !== undefined ? [e.parentId] : [])));
  const models: Record<string, ModelFault[]> = {};
  const tools: Record<string, ToolFault[]> = {};
  const open = new Map<string, number>();
  let deltas = 0;
  /** The model whose call ended last: its tool calls are the ones run next. */
  let asked: string | undefined;
  // the run's own events show the text each call delivered: where a stream was cut, exactly
  const texts = events.some(({ event }) => event.type === 'text-delta');
  events.forEach(({ event: e, where }, i) => {
    if (e.type === 'text-delta') deltas++;
    if (e.type === 'call-start' && e.kind === 'model') open.set(e.id, deltas);
    if (e.type !== 'call-end') return;
    if (e.kind === 'tool') {
      // arguments the tool refused (it never ran): the model call that asked for them had bad arguments
      if (e.category === 'validation_error') {
        if (asked !== undefined) {
          const list = models[asked]!;
          if (list[list.length - 1]?.kind === 'ok') list[list.length - 1] = { kind: 'bad-tool-args' };
        }
        return;
      }
      (tools[e.name] ??= []).push(toolFault(e));
      return;
    }
    if (parents.has(e.id)) return;
    const next = events.slice(i + 1).find(({ event: r }) => r.type === 'retry' || r.type === 'call-start');
    const retryAfter = next?.event.type === 'retry' && next.event.category === 'rate_limit' ? next.event.delayMs : undefined;
    (models[e.name] ??= []).push(modelFault(e, texts ? deltas - (open.get(e.id) ?? deltas) : undefined, retryAfter, where));
    asked = e.name;
  });
  const schedule: FaultSchedule = { ...(Object.keys(models).length ? { models } : {}), ...(Object.keys(tools).length ? { tools } : {}) };
  const healing = events.map(({ event }) => healingStep(event)).filter((s): s is string => s !== undefined);
  return { version: INCIDENT_VERSION, schedule, healing };
}

/** An incident of another version than this rxheal's: a `ChaosInputError` naming it (for `replayIncident` and `incidentSpec`). */
export function checkIncidentVersion(where: string, verb: 'reads' | 'writes', incident: unknown): void {
  const version = (incident as { version?: unknown } | undefined)?.version;
  if (version !== INCIDENT_VERSION)
    throw new ChaosInputError(`${where}: an incident of version ${JSON.stringify(version)}; this rxheal ${verb} version ${INCIDENT_VERSION}`);
}

/**
 * What {@link replayIncident} returns: the run, the healing it reported and the calls it made,
 * the incident's, and whether they are the same.
 *
 * @example
 * ```ts
 * const { same, healing, expected, calls, expectedCalls } = await replayIncident(incident, agent);
 * ```
 */
export interface IncidentReplay {
  readonly run: ChaosRun;
  readonly healing: readonly string[];
  readonly expected: readonly string[];
  /** How many times the replay called each model (`model:<id>`) and tool (`tool:<name>`). */
  readonly calls: Readonly<Record<string, number>>;
  /** How many times the incident did: one per fault in its schedule (its `ok` calls included). */
  readonly expectedCalls: Readonly<Record<string, number>>;
  /**
   * The replay did what the incident did: the same healing steps, in the same order, with the
   * same delays — and as many calls of each model and tool.
   */
  readonly same: boolean;
}

/** Calls per model and tool, keyed `model:<id>` / `tool:<name>`, in a stable order. */
function callCounts(entries: readonly (readonly [string, number])[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const [key, n] of [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) if (n > 0) counts[key] = (counts[key] ?? 0) + n;
  return counts;
}

/**
 * Replays an incident: the agent (its models and tools under `chaos`, stand-ins with the real
 * ones' ids and names) runs under the incident's schedule in virtual time, deterministically.
 * The run is checked against the invariants as in `replaySchedule`; `healing` is what it
 * reported and `calls` what it called, `same` whether both are the incident's.
 *
 * @example
 * ```ts
 * const replay = await replayIncident(recordIncident(lines), agent);
 * assert.deepEqual(replay.healing, replay.expected);
 * assert.deepEqual(replay.calls, replay.expectedCalls);
 * assert.deepEqual(replay.run.violations, []);
 * ```
 * @throws {ChaosInputError} (a rejection) for an incident of another version, or one naming a
 * model or tool the agent does not wrap.
 */
export async function replayIncident(incident: Incident, agent: AgentFactory, options: ReplayOptions = {}): Promise<IncidentReplay> {
  checkIncidentVersion('replayIncident', 'reads', incident);
  const run = await replaySchedule(agent, incident.schedule, options);
  const healing = run.events.map(({ event }) => healingStep(event)).filter((s): s is string => s !== undefined);
  const expectedCalls = callCounts([
    ...Object.entries(incident.schedule.models ?? {}).map(([id, list]): [string, number] => [`model:${id}`, list.length]),
    ...Object.entries(incident.schedule.tools ?? {}).map(([name, list]): [string, number] => [`tool:${name}`, list.length]),
  ]);
  const calls = callCounts([
    ...run.models.map((a): [string, number] => [`model:${a.model}`, 1]),
    ...run.tools.map((t): [string, number] => [`tool:${t.tool}`, 1]),
  ]);
  const sameHealing = healing.length === incident.healing.length && healing.every((s, i) => s === incident.healing[i]);
  const sameCalls = JSON.stringify(calls) === JSON.stringify(expectedCalls);
  return { run, healing, expected: incident.healing, calls, expectedCalls, same: sameHealing && sameCalls };
}
