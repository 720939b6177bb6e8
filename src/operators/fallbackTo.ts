import { isObservable, Observable, type MonoTypeOperatorFunction, type ObservableInput } from 'rxjs';
import { operate, subscribeWithin } from '../core/rx/operate.js';
import { CircuitBreaker } from '../core/breaker/CircuitBreaker.js';
import { classifyError, type ErrorClassification, type ErrorClassifier } from '../core/errors/classify.js';
import { AllFallbacksFailedError, InvalidOptionError } from '../core/errors/errors.js';
import { decideFallback, guardedAttempt, nextAlternative } from '../core/fallback/fallbackChain.js';
import { guard, Thrown } from '../core/rx/guard.js';
import type { TurnEvent } from '../core/events/events.js';
import { joinHubs, type HealHub } from '../core/hub/hub.js';
import { check, Func, Hub, NonEmptyString, validateOptions } from '../core/errors/options.js';
import { streamModel, type Model, type ModelCallContext, type ModelRequest } from '../core/model/model.js';
import { circuitBreak } from './circuitBreak.js';

/**
 * An alternative built when it is needed, given the error of the last attempt made (skipping an
 * alternative whose breaker is open is not an attempt). If it throws, that alternative failed
 * with what it threw, judged like any of its errors.
 *
 * @example
 * ```ts
 * const cached: FallbackFactory<Weather> = (error) => (error instanceof HttpError ? cache.get(city) : EMPTY);
 * ```
 */
export type FallbackFactory<T> = (error: unknown) => ObservableInput<T>;

/**
 * An alternative with a name (for events and `onRestart`) and, optionally, its own breaker.
 *
 * @example
 * ```ts
 * const backup: NamedFallback<Weather> = { name: 'backup-api', source: () => backupWeather(city), breaker: breakers.get('tool:backup-weather') };
 * ```
 */
export interface NamedFallback<T> {
  /** Shown in fallback events and {@link FallbackInfo}. */
  readonly name: string;
  /** The alternative: an observable, or a {@link FallbackFactory}. */
  readonly source: Observable<T> | FallbackFactory<T>;
  /**
   * Guards the alternative: while open it is skipped without a call (its
   * {@link CircuitOpenError} joins the error list), and each call's outcome is counted
   * (the alternative runs through `circuitBreak(breaker)`). None by default.
   */
  readonly breaker?: CircuitBreaker;
}

/**
 * One alternative of {@link fallbackTo}: an observable, a factory `(error) => ObservableInput`,
 * a {@link NamedFallback}, or — for streams of {@link TurnEvent}s, with the `request` option —
 * a {@link Model}, called with that request (named `model:<id>`).
 *
 * @example
 * ```ts
 * const alternatives: FallbackAlternative<Weather>[] = [backup, () => cache.get(city), of(UNKNOWN_WEATHER)];
 * weather$.pipe(fallbackTo(...alternatives));
 * ```
 */
export type FallbackAlternative<T> = Observable<T> | FallbackFactory<T> | NamedFallback<T> | (TurnEvent extends T ? Model : never);

/**
 * What {@link fallbackTo} knows about a switch it is making, given to `onRestart`.
 *
 * @example
 * ```ts
 * const onRestart = (i: FallbackInfo): TurnEvent => ({ type: 'reset', reason: 'fallback', target: i.to });
 * ```
 */
export interface FallbackInfo {
  /** Name of the source or alternative that failed (after it had emitted). */
  readonly from: string;
  /** Name of the alternative about to be subscribed (alternatives skipped on the way are not named). */
  readonly to: string;
  /** 1-based index of `to` among the alternatives. */
  readonly index: number;
  /** The error of `from`. */
  readonly error: unknown;
  /** The classifier's verdict on `error`. */
  readonly classification: ErrorClassification;
  /** Every error so far, the source's first (with the `CircuitOpenError` of each skipped alternative). */
  readonly errors: readonly unknown[];
}

/**
 * Options shared by every `midStream` mode of {@link fallbackTo}.
 *
 * @example
 * ```ts
 * const base: FallbackToBaseOptions = { hub, name: 'weather-api', shouldFallback: (e) => !(e instanceof QuotaError) };
 * ```
 */
export interface FallbackToBaseOptions {
  /**
   * Decides whether an error is worth trying the next alternative. Errors it rejects pass
   * through unchanged, at once. Defaults to the classifier's `fallback` (so programming errors,
   * cancellation and budget errors are never handed on). If it throws, the operator errors with
   * what it threw.
   */
  readonly shouldFallback?: (error: unknown) => boolean;
  /**
   * Gives `fallback` and the category reported as `reason`. Defaults to {@link classifyError}. If
   * it throws, the operator errors with what it threw.
   */
  readonly classifier?: ErrorClassifier;
  /**
   * Where each switch is reported as `{ type: 'fallback', from, to, reason, midStream }`, each
   * skipped alternative as a `circuit` `rejected` event; alternatives' breakers are watched
   * (`hub.watch`). None by default.
   */
  readonly hub?: HealHub;
  /** Name of the source in events. Defaults to `'primary'` (alternatives: `'alternative 1'`, …). */
  readonly name?: string;
  /** The request {@link Model} alternatives are called with. Required when one is given. */
  readonly request?: ModelRequest;
  /**
   * The run's context for {@link Model} alternatives — in `runAgent`'s `modelPipeline`, its
   * `context` argument; inside a model that wraps others, the context its `stream` was handed.
   * Each alternative model called is then a provider attempt of that run: counted against its
   * budget, traced under its call, and this operator's events also go to its `hub` (each once,
   * with the `hub` option's). None by default.
   */
  readonly context?: ModelCallContext;
}

/**
 * Options of {@link fallbackTo}. `midStream` says what happens when the failed source or
 * alternative had emitted values:
 * - `'error'` (default): no fallback after the first item; the error passes on unchanged.
 * - `'restart'`: emit `onRestart(info)` first (e.g. a `reset` event telling the consumer to
 *   discard the partial output), then subscribe to the next alternative from scratch.
 *
 * Two attempts' output is never concatenated silently. (Continuing a model's answer where it
 * stopped is `fallbackModel`'s `'continue'`.)
 *
 * @example
 * ```ts
 * const options: FallbackToOptions<TurnEvent> = {
 *   midStream: 'restart',
 *   onRestart: (i) => ({ type: 'reset', reason: 'fallback', target: i.to }),
 * };
 * ```
 */
export type FallbackToOptions<T> = FallbackToBaseOptions &
  (
    | { readonly midStream?: 'error'; readonly onRestart?: undefined }
    | {
        readonly midStream: 'restart';
        /** The value to emit before the next alternative when the failed one had emitted. If it throws, the operator errors with what it threw. */
        readonly onRestart: (info: FallbackInfo) => NoInfer<T>;
      }
  );

const props = {
  shouldFallback: Func,
  classifier: Func,
  hub: Hub,
  name: NonEmptyString,
  request: check(
    'a ModelRequest ({ messages: [], tools: [] })',
    (u): u is ModelRequest => typeof u === 'object' && u !== null && Array.isArray((u as ModelRequest).messages) && Array.isArray((u as ModelRequest).tools),
  ),
  midStream: check(`"error" | "restart" ("continue" is fallbackModel's)`, (u): u is 'error' | 'restart' => u === 'error' || u === 'restart'),
  onRestart: Func,
  context: check('a model context ({ hub?, budget?, scheduler?, callId?, step? })', (u): u is ModelCallContext => typeof u === 'object' && u !== null),
};

const ALTERNATIVE = 'an Observable, a function (error) => ObservableInput, { name, source, breaker? }, or a Model (with options.request)';

/** One resolved alternative. */
interface Candidate<T> {
  readonly name: string;
  readonly breaker: CircuitBreaker | undefined;
  readonly start: (error: unknown) => ObservableInput<T>;
}

function isPlainObject(u: unknown): u is Record<string, unknown> {
  if (typeof u !== 'object' || u === null || Array.isArray(u)) return false;
  const proto: unknown = Object.getPrototypeOf(u);
  return proto === Object.prototype || proto === null;
}

function isModel(u: unknown): u is Model {
  return typeof u === 'object' && u !== null && typeof (u as Model).id === 'string' && typeof (u as Model).stream === 'function';
}

function isNamed(u: unknown): u is NamedFallback<unknown> {
  return typeof u === 'object' && u !== null && !isObservable(u) && 'source' in u;
}

function toCandidate<T>(value: unknown, i: number, request: ModelRequest | undefined, context: ModelCallContext | undefined): Candidate<T> {
  const at = `alternatives[${i}]`;
  if (isObservable(value)) {
    const obs = value as Observable<T>;
    return { name: `alternative ${i + 1}`, breaker: undefined, start: () => obs };
  }
  if (typeof value === 'function') return { name: `alternative ${i + 1}`, breaker: undefined, start: value as FallbackFactory<T> };
  if (isNamed(value)) {
    for (const key of Object.keys(value)) {
      if (key !== 'name' && key !== 'source' && key !== 'breaker')
        throw new InvalidOptionError('fallbackTo', `${at}.${key}`, (value as unknown as Record<string, unknown>)[key], 'absent (known: name, source, breaker)');
    }
    const { name, source, breaker } = value;
    if (typeof name !== 'string' || name === '') throw new InvalidOptionError('fallbackTo', `${at}.name`, name, 'a non-empty string');
    if (breaker !== undefined && !(breaker instanceof CircuitBreaker)) throw new InvalidOptionError('fallbackTo', `${at}.breaker`, breaker, 'a CircuitBreaker');
    if (isObservable(source)) {
      const obs = source as Observable<T>;
      return { name, breaker, start: () => obs };
    }
    if (typeof source === 'function') return { name, breaker, start: source as FallbackFactory<T> };
    throw new InvalidOptionError('fallbackTo', `${at}.source`, source, 'an Observable or a function (error) => ObservableInput');
  }
  if (isModel(value)) {
    if (!request) throw new InvalidOptionError('fallbackTo', 'request', request, `a ModelRequest when an alternative is a Model (${at}: '${value.id}')`);
    const model = value;
    return { name: `model:${model.id}`, breaker: undefined, start: () => streamModel(model, request, context) as unknown as Observable<T> };
  }
  throw new InvalidOptionError('fallbackTo', at, value, ALTERNATIVE);
}

/**
 * On failure, hands over to the next alternative: an error `shouldFallback` accepts (by default
 * the classifier's `fallback`) subscribes to the next alternative; when every one has failed,
 * {@link AllFallbacksFailedError} lists each error in order, the source's first. Errors not worth
 * a fallback (programming errors, cancellation, budget) pass through unchanged, at once.
 *
 * - Alternatives are tried in order; each is subscribed only when needed.
 * - An alternative with an open breaker is skipped without a call; its {@link CircuitOpenError}
 *   joins the error list. Alternatives with a breaker run through `circuitBreak(breaker)`, so
 *   their outcomes count.
 * - Mid-stream (the failed source or alternative had emitted): `midStream: 'error'` (default)
 *   passes the error on unchanged; `'restart'` emits `onRestart(info)`, then the next
 *   alternative from scratch.
 * - Unsubscribing cancels whatever is in flight.
 *
 * ```
 * source:        --#                  (e503)
 * alternative 1:   --#                (e502)
 * alternative 2:     -x|
 * result:        -----x|
 * ```
 *
 * @example
 * ```ts
 * const weather$ = defer(() => primaryWeather(city)).pipe(
 *   fallbackTo(
 *     { name: 'backup-api', source: () => backupWeather(city), breaker: breakers.get('tool:backup-weather') },
 *     of({ condition: 'unknown' }),
 *     { hub, name: 'weather-api' },
 *   ),
 * );
 * ```
 * @example Token streams: tell the consumer to discard partial output, then start over
 * ```ts
 * turn$.pipe(fallbackTo(otherTurn$, {
 *   midStream: 'restart',
 *   onRestart: (i): TurnEvent => ({ type: 'reset', reason: 'fallback', target: i.to }),
 * }));
 * ```
 * @throws {InvalidOptionError} at once, for an argument that is not an alternative, no
 * alternative, or an invalid option.
 */
export function fallbackTo<T>(...alternatives: FallbackAlternative<T>[]): MonoTypeOperatorFunction<T>;
export function fallbackTo<T>(...args: [...alternatives: FallbackAlternative<T>[], options: FallbackToOptions<T>]): MonoTypeOperatorFunction<T>;
export function fallbackTo<T>(...args: unknown[]): MonoTypeOperatorFunction<T> {
  const last = args[args.length - 1];
  const hasOptions = args.length > 0 && (last === undefined || (isPlainObject(last) && !isNamed(last) && !isModel(last)));
  const o = validateOptions('fallbackTo', props, hasOptions ? last : undefined);
  const raw = hasOptions ? args.slice(0, -1) : args;
  if (raw.length === 0) throw new InvalidOptionError('fallbackTo', 'alternatives', raw, 'at least one alternative');
  const context = o.context as ModelCallContext | undefined;
  const candidates = raw.map((value, i) => toCandidate<T>(value, i, o.request, context));
  const restart = o.midStream === 'restart';
  const onRestart = o.onRestart as ((info: FallbackInfo) => T) | undefined;
  if (restart && !onRestart) throw new InvalidOptionError('fallbackTo', 'onRestart', onRestart, "a function when midStream is 'restart'");
  if (!restart && onRestart) throw new InvalidOptionError('fallbackTo', 'midStream', o.midStream, "'restart' when onRestart is given");
  const shouldFallback = o.shouldFallback as ((error: unknown) => boolean) | undefined;
  const classifier = (o.classifier as ErrorClassifier | undefined) ?? classifyError;
  // the run's hub (of a model context) hears this operator's events too, once each
  const hub = joinHubs([o.hub as HealHub | undefined, context?.hub]);
  const primaryName = o.name ?? 'primary';
  // with a hub, circuitBreak watches each breaker and reports the calls it rejects
  const guards = candidates.map((c) => (c.breaker ? circuitBreak<T>(c.breaker, { hub }) : undefined));

  return operate<T>((source, subscriber) => {
    let errors: unknown[] | undefined;

    /** Subscribes to one attempt, linked to `subscriber`; `index` 0 is the source, n the n-th alternative. */
    const attempt = (index: number, input: Observable<T>, called: () => boolean): void => {
      let emitted = false;
      subscribeWithin(subscriber, input, {
        next: (value) => {
          emitted = true;
          subscriber.next(value);
        },
        error: (error: unknown) => onError(index, error, emitted, called()),
        complete: () => subscriber.complete(),
      });
    };

    const onError = (index: number, error: unknown, emitted: boolean, called: boolean): void => {
      const list = (errors ??= []);
      list.push(error);
      if (emitted && !restart) return subscriber.error(error);
      const verdict = decideFallback(error, called, classifier, shouldFallback);
      if ('fail' in verdict) return subscriber.error(verdict.fail);
      const from = index === 0 ? primaryName : candidates[index - 1]!.name;
      const next = nextAlternative(candidates, index, { from, reason: verdict.reason, midStream: emitted }, list, hub);
      if (next < 0) return subscriber.error(new AllFallbacksFailedError(list));
      const candidate = candidates[next]!;
      // the marker goes right before the alternative that is actually called
      if (emitted && onRestart) {
        const marker = guard(onRestart, { from, to: candidate.name, index: next + 1, error, classification: verdict.classification, errors: [...list] });
        if (marker instanceof Thrown) return subscriber.error(marker.error);
        subscriber.next(marker);
        if (subscriber.closed) return;
      }
      const { input, called: wasCalled } = guardedAttempt(() => candidate.start(error), guards[next]);
      attempt(next + 1, input, wasCalled);
    };

    attempt(0, source, () => true);
  });
}
