/**
 * The option codecs and checks the provider adapters share (`openAICompatibleModel`,
 * `anthropicModel`, the SDK adapters): headers, plain objects, http(s) URLs, API keys, required
 * options, and a base URL without its trailing slashes.
 *
 * @module
 */
import { InvalidOptionError } from '../core/errors/errors.js';
import { check, validateOptions } from '../core/errors/options.js';
import { isObject } from './sse.js';

/**
 * Option codec: an object whose values are all strings (headers).
 *
 * @example
 * ```ts
 * StringRecord.is({ 'x-api-key': 'k' }); // true
 * ```
 */
export const StringRecord = check(
  'an object of string values',
  (u): u is Record<string, string> => typeof u === 'object' && u !== null && !Array.isArray(u) && Object.values(u).every((v) => typeof v === 'string'),
);
/**
 * Option codec: any non-array object.
 *
 * @example
 * ```ts
 * PlainObject.is({ temperature: 0 }); // true
 * ```
 */
export const PlainObject = check('a plain object', isObject);
/**
 * Option codec: an absolute `http:` or `https:` URL.
 *
 * @example
 * ```ts
 * HttpUrl.is('http://127.0.0.1:8787/v1'); // true
 * HttpUrl.is('/v1'); // false
 * ```
 */
export const HttpUrl = check('an absolute http(s) URL', (u): u is string => {
  if (typeof u !== 'string') return false;
  try {
    return /^https?:$/.test(new URL(u).protocol);
  } catch {
    return false;
  }
});
/**
 * A base URL without its trailing slashes (`http://x/v1//` → `http://x/v1`), in linear time
 * (`/\/+$/` rescans a run of slashes from each of its positions).
 *
 * @example
 * ```ts
 * withoutTrailingSlashes('https://api.example.test/v1/'); // 'https://api.example.test/v1'
 * ```
 */
export function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url.charCodeAt(end - 1) === 47 /* '/' */) end--;
  return url.slice(0, end);
}

/**
 * Option codec: any string (an empty API key is allowed: "none").
 *
 * @example
 * ```ts
 * AnyString.is(''); // true
 * ```
 */
export const AnyString = check('a string', (u): u is string => typeof u === 'string');

/**
 * Validates an adapter's options (`validateOptions`), and that each of `required` is present.
 *
 * @example
 * ```ts
 * checkProviderOptions('anthropicModel', { model: NonEmptyString }, options, ['model']);
 * ```
 * @throws {InvalidOptionError} for an unknown key, a bad value or a missing required one.
 */
export function checkProviderOptions(target: string, codecs: Parameters<typeof validateOptions>[1], options: unknown, required: readonly string[]): void {
  validateOptions(target, codecs, options);
  for (const key of required) {
    if ((options as Record<string, unknown> | undefined)?.[key] === undefined) {
      throw new InvalidOptionError(target, key, undefined, codecs[key]?.name ?? 'present');
    }
  }
}
