/**
 * Option validation: one check per public option, and one function that turns a bad value into an
 * {@link InvalidOptionError} naming the option, the bad value and what was expected. Operators
 * validate once, when they are created, never per subscription.
 *
 * Option checks are predicates, not decoders: a {@link Check} is a name and a type guard. io-ts
 * stays where untrusted data is decoded (tool arguments, events, model output); it is not imported
 * here, so an application that only configures operators does not bundle it. An io-ts codec has
 * the same `name` and `is`, so it may still stand in a props object.
 *
 * @module
 */
import type * as t from 'io-ts';
import type { Either, Left } from 'fp-ts/lib/Either.js';
import type { SchedulerLike } from 'rxjs';
import { InvalidOptionError, showValue } from './errors.js';
import { isSecretName } from './sanitize.js';

/**
 * `fp-ts`'s `isLeft` on the tag, so that a bundle carries no fp-ts module for one tag check.
 *
 * @example
 * ```ts
 * if (isLeft(codec.decode(input))) console.log('invalid');
 * ```
 */
export function isLeft<E, A>(either: Either<E, A>): either is Left<E> {
  return either._tag === 'Left';
}

/**
 * A check of one option value: `name` says what the value must be (read as the end of "must be
 * …") and `is` tests it. An io-ts codec has both, so one can stand in a props object too.
 *
 * @example
 * ```ts
 * const Port: Check<number> = check('an integer from 1 to 65535', (u): u is number => Number.isInteger(u) && (u as number) >= 1 && (u as number) <= 65535);
 * ```
 */
export interface Check<A> {
  readonly name: string;
  readonly is: (u: unknown) => u is A;
}

/**
 * The checks of an options object, by option name (every option optional).
 *
 * @example
 * ```ts
 * const props: Props = { maxRetries: NonNegativeInteger, label: NonEmptyString };
 * ```
 */
export type Props = Readonly<Record<string, Check<unknown>>>;

/**
 * The options a props object describes, each of the type its check guards.
 *
 * @example
 * ```ts
 * type O = OptionsOf<{ n: typeof PositiveInteger }>; // { n: number }
 * ```
 */
export type OptionsOf<P> = { [K in keyof P]: P[K] extends Check<infer A> ? A : never };

/**
 * A check from a predicate; `expected` reads as the end of "must be …".
 *
 * @example
 * ```ts
 * const Even = check('an even integer', (u): u is number => Number.isInteger(u) && (u as number) % 2 === 0);
 * Even.is(4); // true
 * ```
 */
// `@__NO_SIDE_EFFECTS__`: a bundler may drop any check a bundle does not use (each is made at
// module level, and an unannotated call would be kept for its possible side effects)
/* @__NO_SIDE_EFFECTS__ */
export function check<A>(expected: string, is: (u: unknown) => u is A): Check<A> {
  return { name: expected, is };
}

const isNumber = (u: unknown): u is number => typeof u === 'number' && !Number.isNaN(u);

/** A finite number ≥ 0. */
export const NonNegativeNumber = check('a finite number >= 0', (u): u is number => isNumber(u) && Number.isFinite(u) && u >= 0);
/** A finite number > 0. */
export const PositiveNumber = check('a finite number > 0', (u): u is number => isNumber(u) && Number.isFinite(u) && u > 0);
/** A number ≥ 0, `Infinity` allowed. */
export const NonNegativeOrInfinity = check('a number >= 0 or Infinity', (u): u is number => isNumber(u) && u >= 0);
/** An integer ≥ 0. */
export const NonNegativeInteger = check('a non-negative integer', (u): u is number => Number.isInteger(u) && (u as number) >= 0);
/** An integer ≥ 0 or `Infinity`. */
export const NonNegativeIntegerOrInfinity = check(
  'a non-negative integer or Infinity',
  (u): u is number => u === Infinity || (Number.isInteger(u) && (u as number) >= 0),
);
/**
 * Whole ms from 1 to 2^31 − 1: a TTL a Redis script can pass to `PEXPIRE` (no fraction, no float
 * formatting). The Redis stores' `nodeTtlMs` and the fleet quorum's `windowMs`.
 *
 * @example
 * ```ts
 * PositiveIntegerMs.is(60_000); // true
 * PositiveIntegerMs.is(1.5); // false
 * ```
 */
export const PositiveIntegerMs = check(
  'an integer number of ms from 1 to 2147483647',
  (u): u is number => Number.isInteger(u) && (u as number) >= 1 && (u as number) <= 2 ** 31 - 1,
);
/** An integer ≥ 1. */
export const PositiveInteger = check('a positive integer', (u): u is number => Number.isInteger(u) && (u as number) >= 1);
/** A number ≥ 1. */
export const AtLeastOne = check('a finite number >= 1', (u): u is number => isNumber(u) && Number.isFinite(u) && u >= 1);
/** A ratio in (0, 1]. */
export const Ratio = check('a number in (0, 1]', (u): u is number => isNumber(u) && u > 0 && u <= 1);
/** A non-empty string. */
export const NonEmptyString = check('a non-empty string', (u): u is string => typeof u === 'string' && u.length > 0);
/** A boolean. */
export const Bool = check('a boolean', (u): u is boolean => typeof u === 'boolean');
/** Any function. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const Func = check('a function', (u): u is Function => typeof u === 'function');
/** An RxJS scheduler (`now()` and `schedule()`). */
export const Scheduler = check(
  'an RxJS scheduler (an object with now() and schedule())',
  (u): u is SchedulerLike =>
    typeof u === 'object' && u !== null && typeof (u as SchedulerLike).now === 'function' && typeof (u as SchedulerLike).schedule === 'function',
);

/** A {@link HealHub} (duck-typed: `report()`, `watch()` and `events$`: what the operators call on it). */
export const Hub = check(
  'a HealHub',
  (u): u is { report: (e: unknown) => void; watch: (breaker: unknown) => void } =>
    typeof u === 'object' &&
    u !== null &&
    typeof (u as { report?: unknown }).report === 'function' &&
    typeof (u as { watch?: unknown }).watch === 'function' &&
    'events$' in u,
);

/** One of the given string literals. */
/* @__NO_SIDE_EFFECTS__ */
export function oneOf<const L extends readonly string[]>(...values: L): Check<L[number]> {
  return check(values.map((v) => JSON.stringify(v)).join(' | '), (u): u is L[number] => typeof u === 'string' && values.includes(u));
}

function isPlainObject(u: unknown): u is Record<string, unknown> {
  if (typeof u !== 'object' || u === null || Array.isArray(u)) return false;
  const proto: unknown = Object.getPrototypeOf(u);
  return proto === Object.prototype || proto === null;
}

/** One decode problem: where (dotted path; '' for the value itself), what was expected, what came. */
export interface ValidationProblem {
  readonly path: string;
  readonly expected: string;
  readonly value: unknown;
}

/** io-ts's own tag of a codec's class (`'UnionType'`, `'IntersectionType'`…), read without importing io-ts. */
const tagOf = (codec: t.Decoder<unknown, unknown> | undefined): unknown => (codec as { _tag?: unknown } | undefined)?._tag;

/** Pick the context entry that names the failure: the outermost union, else the innermost entry. */
function describeFailure(error: t.ValidationError): ValidationProblem {
  const entries = error.context.slice(1);
  const keys: string[] = [];
  let parent = error.context[0]?.type;
  for (const entry of entries) {
    // an intersection's member index ('0', '1') is not part of the field's path
    if (tagOf(parent) !== 'IntersectionType') keys.push(entry.key);
    parent = entry.type;
    if (tagOf(entry.type) === 'UnionType' || entry === entries[entries.length - 1]) {
      return { path: keys.join('.'), expected: entry.type.name, value: entry.actual };
    }
  }
  return { path: '', expected: error.context[0]?.type.name ?? 'valid', value: error.value };
}

/**
 * io-ts decode errors as readable problems, one per path (a union reports once, by its name).
 *
 * @example
 * ```ts
 * const r = t.type({ units: t.keyof({ celsius: null, fahrenheit: null }) }).decode({ units: 'kelvin' });
 * if (isLeft(r)) describeProblems(r.left).map(formatProblem); // ['units: expected "celsius" | "fahrenheit", got "kelvin"']
 * ```
 */
export function describeProblems(errors: readonly t.ValidationError[]): ValidationProblem[] {
  const seen = new Set<string>();
  const out: ValidationProblem[] = [];
  for (const error of errors) {
    const problem = describeFailure(error);
    if (seen.has(problem.path)) continue;
    seen.add(problem.path);
    out.push(problem);
  }
  return out;
}

/** `path: expected X, got Y` (or `expected X, got Y` for the value itself). */
export function formatProblem(problem: ValidationProblem): string {
  const field = problem.path.split('.').pop() ?? '';
  // a secret in a field of the wrong type is not echoed back (into a prompt, a log)
  const got = field !== '' && isSecretName(field) ? '[REDACTED]' : showValue(problem.value);
  return `${problem.path ? `${problem.path}: ` : ''}expected ${problem.expected}, got ${got}`;
}

/**
 * Validates an options object against `props` (every key optional; `undefined` means "use the
 * default"). Throws {@link InvalidOptionError} for a non-object, an unknown key, or a bad value,
 * naming the option, what it must be and the value given.
 *
 * @example
 * ```ts
 * const o = validateOptions('myOperator', { maxRetries: NonNegativeInteger }, options);
 * // myOperator: option "maxRetries" must be a non-negative integer, got -1
 * ```
 *
 * `path` names a nested options object (`'fleet'`): its keys are then named `fleet.store`, ….
 */
export function validateOptions<P extends Props>(target: string, props: P, options: unknown, path?: string): Partial<OptionsOf<P>> {
  if (options === undefined) return {};
  const name = (key: string): string => (path === undefined ? key : `${path}.${key}`);
  if (!isPlainObject(options)) throw new InvalidOptionError(target, path ?? 'options', options, 'a plain object');
  let bad: string | undefined;
  for (const key of Object.keys(options)) {
    const value = options[key];
    const expected = Object.prototype.hasOwnProperty.call(props, key) ? props[key] : undefined;
    // an unknown key is named first, wherever it is (most likely a typo of the bad value's name)
    if (expected === undefined) throw new InvalidOptionError(target, name(key), value, `one of the known options (${Object.keys(props).join(', ')})`);
    if (bad === undefined && value !== undefined && !expected.is(value)) bad = key;
  }
  if (bad !== undefined) throw new InvalidOptionError(target, name(bad), options[bad], props[bad]!.name);
  return options as Partial<OptionsOf<P>>;
}
