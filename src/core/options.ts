/**
 * Option validation: io-ts codecs for every public option, and one function that turns a decode
 * failure into an {@link InvalidOptionError} naming the option, the bad value and what was
 * expected. Operators validate once, when they are created, never per subscription.
 *
 * @module
 */
import * as t from 'io-ts';
import type { Either, Left } from 'fp-ts/lib/Either.js';
import type { SchedulerLike } from 'rxjs';
import { InvalidOptionError, showValue } from './errors.js';
import { isSecretName } from './sanitize.js';

/**
 * `fp-ts`'s `isLeft`, here so that a bundle does not carry fp-ts's CommonJS `Either` module next
 * to the ES module io-ts itself imports (≈12 kB minified for one tag check).
 */
export function isLeft<E, A>(either: Either<E, A>): either is Left<E> {
  return either._tag === 'Left';
}

/** A codec from a predicate; `expected` reads as the end of "must be …". */
export function check<A>(expected: string, is: (u: unknown) => u is A): t.Type<A, A, unknown> {
  return new t.Type<A, A, unknown>(expected, is, (u, c) => (is(u) ? t.success(u) : t.failure(u, c)), t.identity);
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

/** A {@link HealHub} (duck-typed: `report()` and `events$`). */
export const Hub = check(
  'a HealHub',
  (u): u is { report: (e: unknown) => void } =>
    typeof u === 'object' && u !== null && typeof (u as { report?: unknown }).report === 'function' && 'events$' in u,
);

/** One of the given string literals. */
export function oneOf<const L extends readonly string[]>(...values: L): t.Type<L[number], L[number], unknown> {
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

/** Pick the context entry that names the failure: the outermost union, else the innermost entry. */
function describeFailure(error: t.ValidationError): ValidationProblem {
  const entries = error.context.slice(1);
  const keys: string[] = [];
  let parent = error.context[0]?.type;
  for (const entry of entries) {
    // an intersection's member index ('0', '1') is not part of the field's path
    if (!(parent instanceof t.IntersectionType)) keys.push(entry.key);
    parent = entry.type;
    if (entry.type instanceof t.UnionType || entry === entries[entries.length - 1]) {
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
 * Validates an options object against `props` (every key optional). Throws
 * {@link InvalidOptionError} for a non-object, an unknown key, or a bad value.
 */
export function validateOptions<P extends t.Props>(target: string, props: P, options: unknown): Partial<t.TypeOf<t.TypeC<P>>> {
  if (options === undefined) return {};
  if (!isPlainObject(options)) throw new InvalidOptionError(target, 'options', options, 'a plain object');
  let valid = true;
  for (const key of Object.keys(options)) {
    if (!Object.prototype.hasOwnProperty.call(props, key)) {
      throw new InvalidOptionError(target, key, options[key], `one of the known options (${Object.keys(props).join(', ')})`);
    }
    // each value through its own codec: operators are often built per call (`defer(…).pipe(
    // retryWithBackoff({…}))`), and building `t.partial(props)` each time cost ≈ 3 µs
    const value = options[key];
    if (valid && value !== undefined && isLeft(props[key]!.decode(value))) valid = false;
  }
  if (valid) return options as Partial<t.TypeOf<t.TypeC<P>>>;
  // a bad value: the whole object through the partial codec, for the path and expectation to name
  const result = partialOf(props).decode(stripUndefined(options));
  if (!isLeft(result)) return options as Partial<t.TypeOf<t.TypeC<P>>>;
  const first = result.left[0];
  if (first === undefined) throw new InvalidOptionError(target, 'options', options, 'valid options');
  const { path, expected, value } = describeFailure(first);
  throw new InvalidOptionError(target, path || 'options', value, expected);
}

/** `t.partial(props)`, built once per props object. */
const partials = new WeakMap<t.Props, t.Mixed>();
function partialOf(props: t.Props): t.Mixed {
  let codec = partials.get(props);
  if (!codec) partials.set(props, (codec = t.partial(props)));
  return codec;
}

/** `{ a: undefined }` means "use the default", as it does for destructuring defaults. */
function stripUndefined(options: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(options)) if (options[key] !== undefined) out[key] = options[key];
  return out;
}
