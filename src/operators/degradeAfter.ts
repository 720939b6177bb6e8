import { asyncScheduler, isObservable, Observable, type OperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
import { CapabilityRegistry } from '../core/CapabilityRegistry.js';
import { classifyError } from '../core/classify.js';
import { InvalidOptionError } from '../core/errors.js';
import type { HealHub } from '../core/hub.js';
import { check, Func, Hub, NonEmptyString, Scheduler, validateOptions } from '../core/options.js';
import { guard, Thrown } from '../core/guard.js';
import { after } from '../core/wait.js';

/**
 * The deadlines of {@link degradeAfter}. Each is in ms; `Infinity` means "no deadline".
 *
 * @example
 * ```ts
 * const streaming: DegradeDeadline = { firstMs: 15_000, idleMs: 5_000 }; // first token, then gaps
 * ```
 */
export interface DegradeDeadline {
  /** Longest wait from subscription to the first item. Defaults to `idleMs`. */
  readonly firstMs?: number;
  /**
   * Longest gap between two items, measured from the previous item: catches a stream that stalls
   * after its headers or first chunks. No idle deadline by default.
   */
  readonly idleMs?: number;
}

/**
 * Why {@link degradeAfter} degraded.
 *
 * @example
 * ```ts
 * degradeAfter({ idleMs: 500 }, (r: DegradeReason) => (r.kind === 'idle' ? '[stalled]' : '[unavailable]'));
 * ```
 */
export interface DegradeReason {
  /** `'first'`: no item before `firstMs`; `'idle'`: no item for `idleMs`; `'error'`: the source failed (and `onError` accepted it). */
  readonly kind: 'first' | 'idle' | 'error';
  /** Milliseconds (scheduler time) since subscription (`first`, `error`) or since the last item (`idle`). */
  readonly afterMs: number;
  /** The source's error, for kind `'error'`. */
  readonly error?: unknown;
}

/**
 * What {@link degradeAfter} emits instead: a value, an observable (its values, then its
 * completion or error), or a factory given the {@link DegradeReason}. A function is always taken
 * as a factory; if it throws, the operator errors with what it threw.
 *
 * @example
 * ```ts
 * const noDocs: Degraded<Doc[]> = [];
 * const fromCache: Degraded<Doc[]> = () => cache.lookup(query); // an Observable<Doc[]>
 * ```
 */
export type Degraded<D> = D | Observable<D> | ((reason: DegradeReason) => D | Observable<D>);

/**
 * Options of {@link degradeAfter}.
 *
 * @example
 * ```ts
 * const options: DegradeAfterOptions = { capability: 'knowledge_search', capabilities, onError: true };
 * ```
 */
export interface DegradeAfterOptions {
  /**
   * Degrade instead of erroring when the source fails: `true` for every error, or a predicate.
   * Errors it rejects pass through unchanged. Defaults to `false`. If the predicate throws, the
   * operator errors with what it threw.
   */
  readonly onError?: boolean | ((error: unknown) => boolean);
  /** Name of what degrades (e.g. `'knowledge_search'`), for the registry and events. Required with `capabilities` or `hub`. */
  readonly capability?: string;
  /**
   * Registry to update: when the operator degrades, `capabilities.disable(capability, reason)`;
   * when a later subscription completes within its deadlines, `capabilities.enable(capability)`.
   * None by default.
   */
  readonly capabilities?: CapabilityRegistry;
  /**
   * Where `degraded` / `restored` events are reported (once per change, as the registry does).
   * When `capabilities` reports to the same hub already, nothing is reported twice. None by
   * default.
   */
  readonly hub?: HealHub;
  /**
   * The reason text given to the registry and in events. Defaults to `no result within {firstMs}
   * ms`, `stalled: no data for {idleMs} ms`, or `failed ({classifier category})` — never the
   * error's own message, which may carry secrets into a prompt. If it throws, the operator errors
   * with what it threw instead of degrading.
   */
  readonly describe?: (reason: DegradeReason) => string;
  /** Where deadlines are scheduled and time is read. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

const props = {
  onError: check('a boolean or a function', (u): u is boolean | ((error: unknown) => boolean) => typeof u === 'boolean' || typeof u === 'function'),
  capability: NonEmptyString,
  capabilities: check('a CapabilityRegistry', (u): u is CapabilityRegistry => u instanceof CapabilityRegistry),
  hub: Hub,
  describe: Func,
  scheduler: Scheduler,
};

const isDeadline = (u: unknown): u is number => typeof u === 'number' && u > 0 && !Number.isNaN(u);
const DEADLINE = 'a number > 0 (ms) or Infinity';

function parseDeadline(deadline: unknown): { firstMs: number; idleMs: number } {
  if (typeof deadline === 'number') {
    if (!isDeadline(deadline) || !Number.isFinite(deadline)) throw new InvalidOptionError('degradeAfter', 'deadline', deadline, 'a finite number > 0 (ms) or { firstMs?, idleMs? }');
    return { firstMs: deadline, idleMs: Infinity };
  }
  const o: unknown = deadline;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) {
    throw new InvalidOptionError('degradeAfter', 'deadline', deadline, 'a finite number > 0 (ms) or { firstMs?, idleMs? }');
  }
  for (const key of Object.keys(o)) {
    if (key !== 'firstMs' && key !== 'idleMs') throw new InvalidOptionError('degradeAfter', `deadline.${key}`, (o as Record<string, unknown>)[key], 'absent (known: firstMs, idleMs)');
  }
  const { firstMs, idleMs } = o as DegradeDeadline;
  if (idleMs !== undefined && !isDeadline(idleMs)) throw new InvalidOptionError('degradeAfter', 'deadline.idleMs', idleMs, DEADLINE);
  if (firstMs !== undefined && !isDeadline(firstMs)) throw new InvalidOptionError('degradeAfter', 'deadline.firstMs', firstMs, DEADLINE);
  if (firstMs === undefined && idleMs === undefined) throw new InvalidOptionError('degradeAfter', 'deadline', deadline, 'a deadline with firstMs or idleMs');
  return { firstMs: firstMs ?? idleMs ?? Infinity, idleMs: idleMs ?? Infinity };
}

/**
 * Degrades gracefully when a source is too slow (or fails): instead of waiting on, or erroring,
 * it unsubscribes the source, emits a fallback result (`degraded`) and completes. For optional
 * work an agent can do without: a knowledge search, a reranker, a slow tool.
 *
 * - `deadline` as a number: ms until the first item. As `{ firstMs, idleMs }`: also the longest
 *   gap between items (a stream that stalls after its first chunks).
 * - On a missed deadline: the source is unsubscribed, `degraded` is emitted (after whatever the
 *   source had emitted), then completion.
 * - `onError`: degrade instead of erroring.
 * - With `{ capability, capabilities }`: degrading disables the capability (before the degraded
 *   value is emitted, so the next prompt already knows); the next subscription that completes
 *   within its deadlines enables it again.
 *
 * ```
 * source:   3500ms (r|)
 * result:   3000ms (d|)        degradeAfter(3000, 'd')
 * ```
 *
 * Deadlines are one scheduled action per subscription, re-armed lazily (an item only records
 * the time), and none is left behind after completion, error or unsubscription.
 *
 * @example
 * ```ts
 * const capabilities = new CapabilityRegistry();
 * const docs$ = searchKnowledge(query).pipe(
 *   degradeAfter(3000, { docs: [], note: 'search unavailable' }, { capability: 'knowledge_search', capabilities }),
 * );
 * ```
 * @example A stream that stalls after its first tokens
 * ```ts
 * tokens$.pipe(degradeAfter({ firstMs: 15_000, idleMs: 5_000 }, (reason) => `[stalled after ${reason.afterMs} ms]`));
 * ```
 * @throws {InvalidOptionError} at once, for an invalid deadline or option.
 */
export function degradeAfter<T, D>(
  deadline: number | DegradeDeadline,
  degraded: Degraded<D>,
  options?: DegradeAfterOptions,
): OperatorFunction<T, T | D> {
  const { firstMs, idleMs } = parseDeadline(deadline);
  const o = validateOptions('degradeAfter', props, options);
  const capability = o.capability;
  if (capability === undefined && (o.capabilities !== undefined || o.hub !== undefined)) {
    throw new InvalidOptionError('degradeAfter', 'capability', capability, `a non-empty string when ${o.capabilities ? 'capabilities' : 'hub'} is given`);
  }
  const onError = o.onError ?? false;
  const scheduler = o.scheduler ?? asyncScheduler;
  const describe =
    (o.describe as ((reason: DegradeReason) => string) | undefined) ??
    ((reason: DegradeReason): string =>
      reason.kind === 'first'
        ? `no result within ${firstMs} ms`
        : reason.kind === 'idle'
          ? `stalled: no data for ${idleMs} ms`
          : `failed (${classifyError(reason.error).category})`);
  // Without a registry, a private one keeps "report once per change" for the hub.
  const hub = o.hub as HealHub | undefined;
  const registry = o.capabilities ?? (hub ? new CapabilityRegistry({ hub }) : undefined);
  const extraHub = o.capabilities && hub && o.capabilities.hub !== hub ? hub : undefined;

  const markDegraded = (reason: DegradeReason): void => {
    if (!registry || capability === undefined) return;
    const text = describe(reason);
    if (registry.disable(capability, text)) extraHub?.report({ type: 'degraded', capability, reason: text });
  };
  const markRestored = (): void => {
    if (!registry || capability === undefined) return;
    if (registry.enable(capability)) extraHub?.report({ type: 'restored', capability });
  };
  /** What to emit instead, once the capability is marked degraded. */
  const replacementFor = (reason: DegradeReason): D | Observable<D> => {
    markDegraded(reason);
    return typeof degraded === 'function' ? (degraded as (r: DegradeReason) => D | Observable<D>)(reason) : degraded;
  };

  return (source) =>
    new Observable<T | D>((subscriber) => {
      const start = scheduler.now();
      let last = start;
      let seen = false;
      let finished = false;
      let timer: Subscription | undefined;
      let armedAt = Infinity;
      // assigned once, but read by degrade() before that when the source fails synchronously
      // eslint-disable-next-line prefer-const
      let upstream: Subscription | undefined;
      let replacement: Subscription | undefined;

      const deadlineAt = (): number => (seen ? last + idleMs : start + firstMs);

      const arm = (at: number): void => {
        armedAt = at;
        timer = at === Infinity ? undefined : after(Math.max(0, at - scheduler.now()), scheduler, onTimer);
      };

      const disarm = (): void => {
        timer?.unsubscribe();
        timer = undefined;
        armedAt = Infinity;
      };

      function onTimer(): void {
        timer = undefined;
        if (finished) return;
        const now = scheduler.now();
        const at = deadlineAt();
        // items arrived since the timer was armed: the deadline moved on; wait for the new one
        if (now < at) return arm(at);
        degrade(seen ? { kind: 'idle', afterMs: now - last } : { kind: 'first', afterMs: now - start });
      }

      const degrade = (reason: DegradeReason): void => {
        finished = true;
        disarm();
        upstream?.unsubscribe();
        const out = guard(replacementFor, reason);
        if (out instanceof Thrown) return subscriber.error(out.error);
        if (isObservable(out)) {
          replacement = out.subscribe({
            next: (value) => subscriber.next(value),
            error: (error: unknown) => subscriber.error(error),
            complete: () => subscriber.complete(),
          });
        } else {
          subscriber.next(out);
          subscriber.complete();
        }
      };

      arm(start + firstMs);
      upstream = source.subscribe({
        next: (value) => {
          if (finished) return;
          // without an idle deadline only the first item's time matters (and not even that):
          // no clock read per item
          if (idleMs !== Infinity || !seen) last = scheduler.now();
          if (!seen) {
            seen = true;
            // the first item switches from the first deadline to the idle one, which may be sooner
            if (last + idleMs < armedAt) {
              disarm();
              arm(last + idleMs);
            } else if (idleMs === Infinity) {
              disarm();
            }
          }
          subscriber.next(value);
        },
        error: (error: unknown) => {
          if (finished) return;
          const degradeIt = typeof onError === 'function' ? guard(onError, error) : onError;
          if (degradeIt instanceof Thrown) {
            finished = true;
            disarm();
            subscriber.error(degradeIt.error);
            return;
          }
          if (degradeIt) return degrade({ kind: 'error', afterMs: scheduler.now() - start, error });
          finished = true;
          disarm();
          subscriber.error(error);
        },
        complete: () => {
          if (finished) return;
          finished = true;
          disarm();
          const restored = guard(markRestored);
          if (restored instanceof Thrown) return subscriber.error(restored.error);
          subscriber.complete();
        },
      });
      if (finished) upstream.unsubscribe();

      return () => {
        finished = true;
        disarm();
        upstream?.unsubscribe();
        replacement?.unsubscribe();
      };
    });
}
