/**
 * {@link Bulkhead}: at most `maxConcurrent` calls of one model or tool at once, up to `maxQueue`
 * more waiting (first in, first out) for at most `queueTimeoutMs`; anything more is refused with
 * {@link BulkheadRejectedError}. The `bulkhead` operator runs a call under one
 * (operators/bulkhead.ts); {@link BulkheadRegistry} keeps one per name.
 *
 * @module
 */
import { asyncScheduler, type SchedulerLike, type Subscription } from 'rxjs';
import { BulkheadRejectedError, InvalidOptionError } from '../errors/errors.js';
import { Hub, NonEmptyString, NonNegativeInteger, PositiveInteger, Scheduler, check, validateOptions } from '../errors/options.js';
import type { HealHub } from '../hub/hub.js';
import { after } from '../rx/wait.js';

/**
 * Options of a {@link Bulkhead} (and the defaults of a {@link BulkheadRegistry}).
 *
 * @example
 * ```ts
 * const options: BulkheadOptions = { name: 'model:gpt', maxConcurrent: 8, maxQueue: 16, queueTimeoutMs: 2000 };
 * ```
 */
export interface BulkheadOptions {
  /** Its name, in errors and events (`model:<id>`, `tool:<name>`). Defaults to `'bulkhead'`. */
  readonly name?: string;
  /** Calls running at once (a positive integer). Defaults to 25, as resilience4j's. */
  readonly maxConcurrent?: number;
  /** Calls that may wait for a slot (a non-negative integer). Defaults to 0: refused at once when full, as resilience4j's. */
  readonly maxQueue?: number;
  /** The longest a call waits in the queue, in ms (> 0, or `Infinity`). Defaults to `Infinity`. */
  readonly queueTimeoutMs?: number;
  /** Where queue timeouts are scheduled and waits measured. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /** Where `bulkhead` events (queued, admitted, rejected) are reported. None by default. */
  readonly hub?: HealHub;
}

export const bulkheadOptionProps = {
  name: NonEmptyString,
  maxConcurrent: PositiveInteger,
  maxQueue: NonNegativeInteger,
  queueTimeoutMs: check('a number > 0 (ms) or Infinity', (u): u is number => typeof u === 'number' && u > 0),
  scheduler: Scheduler,
  hub: Hub,
};

/**
 * One call as a bulkhead sees it: what it does when admitted or refused. The bulkhead calls
 * `admit` once when the call gets a slot, or `reject` once when it is refused; `leave(entrant)`
 * gives the slot or the queue place back.
 *
 * @example
 * ```ts
 * const entrant: BulkheadEntrant = { admit: () => start(), reject: (error) => fail(error) };
 * bulkhead.enter(entrant); // … later, when done or cancelled: bulkhead.leave(entrant)
 * ```
 */
export interface BulkheadEntrant {
  /** The call has a slot: start it. */
  admit(): void;
  /** The call is refused (with a {@link BulkheadRejectedError}). */
  reject(error: BulkheadRejectedError): void;
}

/** A waiting call: when it came and its queue timeout. */
interface Waiting {
  readonly since: number;
  timer: Subscription | undefined;
}

/**
 * A bulkhead: at most `maxConcurrent` calls at once; up to `maxQueue` more wait their turn, first
 * in first out, at most `queueTimeoutMs` each; a call beyond is refused with
 * {@link BulkheadRejectedError} (`reason: 'full'`), and one that waited too long with
 * `'queue_timeout'`. A call that leaves (done, failed or cancelled) frees its slot for the first
 * waiting call at once; one cancelled while waiting frees its queue place and its timer.
 *
 * @example
 * ```ts
 * const gpt = new Bulkhead({ name: 'model:gpt', maxConcurrent: 8, maxQueue: 16, queueTimeoutMs: 2000, hub });
 * streamModel(model, request).pipe(bulkhead(gpt)).subscribe(render);
 * gpt.active; // calls running now
 * ```
 * @throws {InvalidOptionError} at construction, for an invalid option.
 */
export class Bulkhead {
  /** Its name, in errors and events. */
  readonly name: string;
  /** Calls running at once. */
  readonly maxConcurrent: number;
  /** Calls that may wait. */
  readonly maxQueue: number;
  /** The longest wait in the queue, in ms. */
  readonly queueTimeoutMs: number;
  /** Where time is read. */
  readonly scheduler: SchedulerLike;
  private readonly hub: HealHub | undefined;
  private readonly running = new Set<BulkheadEntrant>();
  /** Waiting calls in arrival order (a Map keeps it, and removes one in O(1)). */
  private readonly queue = new Map<BulkheadEntrant, Waiting>();
  /** Whether {@link admitNext}'s loop is running (a call it admitted is leaving from inside it). */
  private draining = false;

  constructor(options?: BulkheadOptions) {
    const o = validateOptions('Bulkhead', bulkheadOptionProps, options);
    this.name = o.name ?? 'bulkhead';
    this.maxConcurrent = o.maxConcurrent ?? 25;
    this.maxQueue = o.maxQueue ?? 0;
    this.queueTimeoutMs = o.queueTimeoutMs ?? Infinity;
    this.scheduler = o.scheduler ?? asyncScheduler;
    this.hub = o.hub as HealHub | undefined;
  }

  /** Calls running now. */
  get active(): number {
    return this.running.size;
  }

  /** Calls waiting now. */
  get queued(): number {
    return this.queue.size;
  }

  /**
   * A call asks for a slot: `entrant.admit()` now when one is free (nobody waiting before it),
   * else it waits (`admit` later) when the queue has room, else `entrant.reject(…)` now. An
   * entrant already running or waiting is not entered twice.
   */
  enter(entrant: BulkheadEntrant): void {
    if (this.running.has(entrant) || this.queue.has(entrant)) return;
    if (this.running.size < this.maxConcurrent && this.queue.size === 0) {
      this.running.add(entrant);
      entrant.admit();
      return;
    }
    if (this.queue.size >= this.maxQueue) {
      this.report('rejected', 0, 'full');
      entrant.reject(new BulkheadRejectedError(this.name, 'full', this.maxConcurrent, this.maxQueue, 0));
      return;
    }
    const waiting: Waiting = { since: this.scheduler.now(), timer: undefined };
    this.queue.set(entrant, waiting);
    this.report('queued');
    if (this.queueTimeoutMs !== Infinity) waiting.timer = after(this.queueTimeoutMs, this.scheduler, () => this.timeOut(entrant));
  }

  /**
   * A call is done with the bulkhead — finished, failed or cancelled: its slot goes to the first
   * waiting call, or its queue place (and timer) is freed. Leaving twice, or without entering, does nothing.
   */
  leave(entrant: BulkheadEntrant): void {
    const waiting = this.queue.get(entrant);
    if (waiting) {
      this.queue.delete(entrant);
      waiting.timer?.unsubscribe();
      return;
    }
    if (!this.running.delete(entrant)) return;
    this.admitNext();
  }

  /**
   * Fills free slots from the head of the queue, in one loop: a call admitted may leave at once
   * (a cached answer), and its `leave` only frees its slot — this loop, already running below it
   * on the stack, hands that slot on. Handing it on from inside `leave` would nest one stack
   * frame per waiting call, and a long queue would overflow the stack midway, stranding the rest.
   */
  private admitNext(): void {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.running.size < this.maxConcurrent && this.queue.size > 0) {
        const [entrant, waiting] = this.queue.entries().next().value as [BulkheadEntrant, Waiting];
        this.queue.delete(entrant);
        waiting.timer?.unsubscribe();
        this.running.add(entrant);
        this.report('admitted', this.scheduler.now() - waiting.since);
        entrant.admit();
      }
    } finally {
      this.draining = false;
    }
  }

  private timeOut(entrant: BulkheadEntrant): void {
    const waiting = this.queue.get(entrant);
    if (!waiting) return;
    this.queue.delete(entrant);
    const waited = this.scheduler.now() - waiting.since;
    this.report('rejected', waited, 'queue_timeout');
    entrant.reject(new BulkheadRejectedError(this.name, 'queue_timeout', this.maxConcurrent, this.maxQueue, waited));
  }

  private report(kind: 'queued' | 'admitted' | 'rejected', waitMs?: number, reason?: 'full' | 'queue_timeout'): void {
    const hub = this.hub;
    if (!hub) return;
    hub.report({
      type: 'bulkhead',
      bulkhead: this.name,
      kind,
      active: this.running.size,
      queued: this.queue.size,
      ...(kind === 'queued' || (kind === 'rejected' && reason === 'full') ? {} : { waitMs: waitMs ?? 0 }),
      ...(reason === undefined ? {} : { reason }),
    });
  }
}

/**
 * One bulkhead per name (a tool, a model), created on first use with shared defaults, as
 * `CircuitBreakerRegistry` keeps breakers.
 *
 * @example
 * ```ts
 * const bulkheads = new BulkheadRegistry({ maxConcurrent: 8, maxQueue: 16, queueTimeoutMs: 2000, hub });
 * search$.pipe(bulkhead(bulkheads.get('tool:search')));
 * gpt$.pipe(bulkhead(bulkheads.get('model:gpt', { maxConcurrent: 4 })));
 * ```
 * @throws {InvalidOptionError} at construction, for an invalid default or a `name` among them.
 */
export class BulkheadRegistry {
  private readonly bulkheads = new Map<string, Bulkhead>();

  constructor(private readonly defaults: Omit<BulkheadOptions, 'name'> = {}) {
    validateOptions('BulkheadRegistry', bulkheadOptionProps, defaults);
    if ('name' in defaults)
      throw new InvalidOptionError('BulkheadRegistry', 'name', (defaults as { name?: unknown }).name, 'absent (names are given to get())');
  }

  /** The bulkhead called `name`, created with the defaults and `overrides` on first use (later `overrides` are ignored). */
  get(name: string, overrides?: Omit<BulkheadOptions, 'name'>): Bulkhead {
    let bulkhead = this.bulkheads.get(name);
    if (!bulkhead) {
      bulkhead = new Bulkhead({ ...this.defaults, ...overrides, name });
      this.bulkheads.set(name, bulkhead);
    }
    return bulkhead;
  }

  /** Whether a bulkhead called `name` exists. */
  has(name: string): boolean {
    return this.bulkheads.has(name);
  }

  /** Names of every bulkhead created so far. */
  names(): string[] {
    return [...this.bulkheads.keys()];
  }
}
