/**
 * The local provider's faults: what can be switched on (status codes with retry-after, a dead
 * port, resets after N chunks, stalls, a slow first byte, malformed events, stream errors, bad
 * tool arguments), their validation, and the controller that applies them to requests.
 *
 * @module
 */
import { Subject, type Observable } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import {
  Bool,
  NonEmptyString,
  NonNegativeInteger,
  NonNegativeNumber,
  PositiveInteger,
  check,
  oneOf,
  validateOptions,
  type Props,
} from '../core/errors/options.js';
import { PlainObject } from '../providers/providerOptions.js';

/**
 * Fields every fault has.
 *
 * @example
 * ```ts
 * const oneShot: FaultBase = { id: 'rate-limit', times: 1 };
 * ```
 */
export interface FaultBase {
  /** A name for the fault (a toggle's key). Adding a fault with an id already listed replaces it. Assigned (`f1`, `f2`…) when absent. */
  readonly id?: string;
  /** How many requests it acts on before it removes itself. Absent: until removed. */
  readonly times?: number;
}

/**
 * Answer with an HTTP error status instead of the model's answer, in the protocol's error format.
 *
 * @example
 * ```ts
 * const rateLimited: StatusFault = { kind: 'status', status: 429, retryAfter: 1, times: 1 };
 * ```
 */
export interface StatusFault extends FaultBase {
  readonly kind: 'status';
  /** 400–599. */
  readonly status: number;
  /** `retry-after` header, in seconds. */
  readonly retryAfter?: number;
  /** `retry-after-ms` header, in milliseconds. */
  readonly retryAfterMs?: number;
  /** `x-should-retry: true|false` header. */
  readonly shouldRetry?: boolean;
  /** The error message in the body. Defaults to one naming the status and the fault. */
  readonly message?: string;
}

/**
 * The provider is off: every request's connection is destroyed before any response
 * (`mode: 'destroy'`, the default — `fetch` fails with a network error), or answered 503
 * (`mode: 'status'`).
 *
 * @example
 * ```ts
 * const off: DownFault = { kind: 'down', id: 'primary-off' };
 * ```
 */
export interface DownFault extends FaultBase {
  readonly kind: 'down';
  readonly mode?: 'destroy' | 'status';
}

/**
 * Destroy the connection after `afterChunks` content chunks (text tokens or tool-argument
 * pieces) of a streamed answer — before the stream's final events when the answer is shorter.
 *
 * @example
 * ```ts
 * const dropped: ResetFault = { kind: 'reset', afterChunks: 3, times: 1 };
 * ```
 */
export interface ResetFault extends FaultBase {
  readonly kind: 'reset';
  readonly afterChunks: number;
}

/**
 * Stop sending after `afterChunks` content chunks (default 0: headers, then silence) and keep
 * the connection open until the client gives up.
 *
 * @example
 * ```ts
 * const stalled: StallFault = { kind: 'stall' };
 * ```
 */
export interface StallFault extends FaultBase {
  readonly kind: 'stall';
  readonly afterChunks?: number;
}

/**
 * Wait `delayMs` before the response's first byte (headers included), whatever the response.
 *
 * @example
 * ```ts
 * const slow: SlowFirstByteFault = { kind: 'slow-first-byte', delayMs: 2000 };
 * ```
 */
export interface SlowFirstByteFault extends FaultBase {
  readonly kind: 'slow-first-byte';
  readonly delayMs: number;
}

/**
 * Send one unreadable event (truncated JSON) after `afterChunks` content chunks (default 0),
 * then carry on.
 *
 * @example
 * ```ts
 * const garbled: MalformedFault = { kind: 'malformed', afterChunks: 2, times: 1 };
 * ```
 */
export interface MalformedFault extends FaultBase {
  readonly kind: 'malformed';
  readonly afterChunks?: number;
}

/**
 * End the stream with the protocol's error event after `afterChunks` content chunks (default 0):
 * Anthropic `event: error` with `{ type: errorType }`, OpenAI `data: {"error": …}`.
 *
 * @example
 * ```ts
 * const overloaded: StreamErrorFault = { kind: 'stream-error', errorType: 'overloaded_error', afterChunks: 2 };
 * ```
 */
export interface StreamErrorFault extends FaultBase {
  readonly kind: 'stream-error';
  readonly afterChunks?: number;
  /** Anthropic's error type. Defaults to `'overloaded_error'`. */
  readonly errorType?: string;
  readonly message?: string;
}

/**
 * The model sends bad tool arguments: `args` replaces each call's arguments; by default
 * `get_weather` gets `units: 'kelvin'` and other tools `{}` — what the tool's codec rejects, so
 * reflection kicks in. Acts only on turns that call a tool.
 *
 * @example
 * ```ts
 * const kelvin: BadToolArgsFault = { kind: 'bad-tool-args', times: 1 };
 * ```
 */
export interface BadToolArgsFault extends FaultBase {
  readonly kind: 'bad-tool-args';
  readonly args?: Readonly<Record<string, unknown>>;
}

/**
 * The model's safety classifiers block the turn (the Messages endpoint only; other protocols
 * leave it for the next Messages request). With `fallbacks` in the request, the API's
 * server-side fallback: a `fallback` block, then the answer of the fallback model (the first
 * entry's `model`, or `<model>-fallback` for `'default'`), `usage.iterations` with both
 * samplings. Without, a refusal: no content, `stop_reason: 'refusal'` and
 * `stop_details.recommended_model` (`recommendedModel`, default `<model>-fallback`).
 *
 * @example
 * ```ts
 * const blocked: BlockedFault = { kind: 'blocked', times: 1 };
 * ```
 */
export interface BlockedFault extends FaultBase {
  readonly kind: 'blocked';
  readonly recommendedModel?: string;
}

/**
 * The model talks too long: its answer's text said `repeat` times over (default 20), streamed
 * token by token as any answer — what a money budget's live count cuts. Acts only on turns that
 * answer with text.
 *
 * @example
 * ```ts
 * const chatty: VerboseFault = { kind: 'verbose', repeat: 12 };
 * ```
 */
export interface VerboseFault extends FaultBase {
  readonly kind: 'verbose';
  readonly repeat?: number;
}

/**
 * A fault to inject, as JSON (the admin endpoint's body) or in-process. Several may be active;
 * per request, the first active fault of each phase acts: `slow-first-byte`, then `down`, then
 * `status`, then `blocked` (Messages requests), then `bad-tool-args`, then `verbose`, then one stream fault (`reset` / `stall` / `malformed` /
 * `stream-error`). Stream faults act on streamed answers only.
 *
 * @example
 * ```ts
 * server.faults.set([{ kind: 'status', status: 503, times: 2 }, { kind: 'bad-tool-args', times: 1 }]);
 * ```
 */
export type Fault =
  StatusFault | DownFault | ResetFault | StallFault | SlowFirstByteFault | MalformedFault | StreamErrorFault | BadToolArgsFault | BlockedFault | VerboseFault;

/**
 * A fault's `kind`.
 *
 * @example
 * ```ts
 * const kinds: FaultKind[] = ['status', 'down', 'reset', 'stall', 'slow-first-byte', 'malformed', 'stream-error', 'bad-tool-args'];
 * ```
 */
export type FaultKind = Fault['kind'];

/**
 * A fault as listed: its id, uses left (`remaining`, when limited by `times`), and how many
 * requests it has acted on (`hits`).
 *
 * @example
 * ```ts
 * const listed: ActiveFault = { kind: 'status', status: 429, id: 'f1', times: 2, remaining: 1, hits: 1 };
 * ```
 */
export type ActiveFault = Fault & { readonly id: string; readonly remaining?: number; readonly hits: number };

const FAULT_KINDS = ['status', 'down', 'reset', 'stall', 'slow-first-byte', 'malformed', 'stream-error', 'bad-tool-args', 'blocked', 'verbose'] as const;
const HttpStatus = check('an integer from 400 to 599', (u): u is number => Number.isInteger(u) && (u as number) >= 400 && (u as number) <= 599);
/**
 * A wait the server takes (`delayMs`, `tokenDelayMs`): 0 to 2³¹−1 ms — Node fires a longer
 * timer after 1 ms, so a longer one is refused rather than silently shortened.
 *
 * @example
 * ```ts
 * TimerDelayMs.is(3000); // true
 * TimerDelayMs.is(3e9);  // false
 * ```
 */
export const TimerDelayMs = check(
  'a number of ms from 0 to 2147483647 (Node fires longer timers at once)',
  (u): u is number => typeof u === 'number' && u >= 0 && u <= 2147483647,
);
const common = { kind: oneOf(...FAULT_KINDS), id: NonEmptyString, times: PositiveInteger };
const FAULT_PROPS: Readonly<Record<FaultKind, Props>> = {
  status: { ...common, status: HttpStatus, retryAfter: NonNegativeNumber, retryAfterMs: NonNegativeInteger, shouldRetry: Bool, message: NonEmptyString },
  down: { ...common, mode: oneOf('destroy', 'status') },
  reset: { ...common, afterChunks: NonNegativeInteger },
  stall: { ...common, afterChunks: NonNegativeInteger },
  'slow-first-byte': { ...common, delayMs: TimerDelayMs },
  malformed: { ...common, afterChunks: NonNegativeInteger },
  'stream-error': { ...common, afterChunks: NonNegativeInteger, errorType: NonEmptyString, message: NonEmptyString },
  'bad-tool-args': { ...common, args: PlainObject },
  blocked: { ...common, recommendedModel: NonEmptyString },
  verbose: { ...common, repeat: PositiveInteger },
};
const REQUIRED: Readonly<Partial<Record<FaultKind, readonly string[]>>> = { status: ['status'], reset: ['afterChunks'], 'slow-first-byte': ['delayMs'] };

/**
 * Checks a fault's shape; throws {@link InvalidOptionError} naming the bad field.
 *
 * @example
 * ```ts
 * validateFault({ kind: 'reset', afterChunks: 3 }); // ok
 * validateFault({ kind: 'reset' }); // throws: fault "reset": option "afterChunks" must be a non-negative integer, got undefined
 * ```
 */
export function validateFault(fault: unknown): asserts fault is Fault {
  const kind = (fault as { kind?: unknown } | null | undefined)?.kind;
  if (typeof kind !== 'string' || !(FAULT_KINDS as readonly string[]).includes(kind)) {
    throw new InvalidOptionError('fault', 'kind', kind, common.kind.name);
  }
  const props = FAULT_PROPS[kind as FaultKind];
  validateOptions(`fault "${kind}"`, props, fault);
  for (const key of REQUIRED[kind as FaultKind] ?? []) {
    if ((fault as Record<string, unknown>)[key] === undefined) throw new InvalidOptionError(`fault "${kind}"`, key, undefined, props[key]?.name ?? 'present');
  }
}

/**
 * The faults of one provider instance. Change them in-process (`set`, `add`, `remove`, `clear`)
 * or over HTTP (`/admin/faults`); both see the same list.
 *
 * @example
 * ```ts
 * const server = await startLocalProvider();
 * server.faults.add({ kind: 'status', status: 429, retryAfter: 1, times: 1 }); // the next request gets a 429
 * server.faults.set({ kind: 'down', id: 'off' });                              // every request fails
 * server.faults.remove('off');
 * ```
 */
export class FaultController {
  private faults: ActiveFault[] = [];
  private seq = 0;
  private readonly subject = new Subject<readonly ActiveFault[]>();
  /** The list after each change (including a fault used up). */
  readonly changes$: Observable<readonly ActiveFault[]> = this.subject.asObservable();

  constructor(initial: Fault | readonly Fault[] = []) {
    this.set(initial);
  }

  /** The active faults, in order. */
  list(): ActiveFault[] {
    return this.faults.map((f) => ({ ...f }));
  }

  /** Replaces every fault (all are validated first: a bad one changes nothing). */
  set(faults: Fault | readonly Fault[]): ActiveFault[] {
    const list: readonly Fault[] = Array.isArray(faults) ? faults : [faults as Fault];
    list.forEach((f) => validateFault(f));
    this.faults = [];
    for (const fault of list) this.insert(fault);
    this.changed();
    return this.list();
  }

  /** Adds one fault (replacing one with the same `id`); returns it as listed. */
  add(fault: Fault): ActiveFault {
    validateFault(fault);
    const active = this.insert(fault);
    this.changed();
    return { ...active };
  }

  /** Removes the fault with this id; false when there was none. */
  remove(id: string): boolean {
    const before = this.faults.length;
    this.faults = this.faults.filter((f) => f.id !== id);
    if (this.faults.length === before) return false;
    this.changed();
    return true;
  }

  /** Removes every fault. */
  clear(): void {
    this.faults = [];
    this.changed();
  }

  /**
   * Takes the first active fault of one of `kinds` for a request, counting the use (a fault
   * with `times` disappears when used up). The server calls this; tests need not.
   */
  consume<K extends FaultKind>(...kinds: K[]): Extract<ActiveFault, { kind: K }> | undefined {
    const index = this.faults.findIndex((f) => (kinds as FaultKind[]).includes(f.kind));
    const fault = this.faults[index];
    if (fault === undefined) return undefined;
    const used: ActiveFault = { ...fault, hits: fault.hits + 1, ...(fault.remaining === undefined ? {} : { remaining: fault.remaining - 1 }) };
    if (used.remaining === 0) this.faults.splice(index, 1);
    else this.faults[index] = used;
    this.changed();
    return used as Extract<ActiveFault, { kind: K }>;
  }

  /** Completes `changes$` (the server's `close()` calls this). */
  dispose(): void {
    this.subject.complete();
  }

  private insert(fault: Fault): ActiveFault {
    const id = fault.id ?? `f${++this.seq}`;
    const active = { ...fault, id, hits: 0, ...(fault.times === undefined ? {} : { remaining: fault.times }) } as ActiveFault;
    const at = this.faults.findIndex((f) => f.id === id);
    if (at === -1) this.faults.push(active);
    else this.faults[at] = active;
    return active;
  }

  private changed(): void {
    this.subject.next(this.list());
  }
}
