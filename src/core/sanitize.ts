/**
 * Error text is untrusted input on its way into a prompt or a log: bound its length and redact
 * secrets. One place, used by the agent loop and reflectOnError.
 *
 * @module
 */
import { showValue } from './errors.js';

const keepQuotes = (_m: string, key: string, value: string): string =>
  `${key}${value.startsWith('"') ? '"[REDACTED]"' : value.startsWith("'") ? "'[REDACTED]'" : '[REDACTED]'}`;

type Replacer = (substring: string, key: string, value: string) => string;

/** Names whose values are secrets, with any prefix (`db_password`, `client_secret`, `openai_api_key`). */
const SECRET_NAME = String.raw`[A-Za-z0-9_.-]{0,40}?(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|token|secret|password|passwd)`;
/** A quoted value (escaped quotes inside included) or a bare one. */
const VALUE = String.raw`("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^&\s"',;}]+)`;

const SECRETS: readonly (readonly [RegExp, string | Replacer])[] = [
  // Authorization: Basic …, "Authorization": "Bearer …"
  [/(authorization["']?\s*[:=]\s*)("?)[^\r\n"]+/gi, '$1$2[REDACTED]'],
  [/(x-api-key["']?\s*[:=]\s*)("?)[^\s"]+/gi, '$1$2[REDACTED]'],
  [/\bBearer\s+[A-Za-z0-9._~+/=-]+/g, 'Bearer [REDACTED]'],
  [/\bsk-[A-Za-z0-9_-]{6,}/g, 'sk-[REDACTED]'],
  // key=value, key: value, "key": "value", 'key'='value' (query strings, headers, JSON bodies, arguments)
  [new RegExp(String.raw`(${SECRET_NAME}["']?\s*[=:]\s*)` + VALUE, 'gi'), keepQuotes],
];

/** Whether a field name holds a secret (`password`, `api_key`, `client_secret`…). */
export function isSecretName(name: string): boolean {
  return new RegExp(`^${SECRET_NAME}$`, 'i').test(name);
}

/** Default cap on error text placed in a prompt. */
export const DEFAULT_MAX_ERROR_CHARS = 2000;

/**
 * Redacts secrets (`Bearer …`, `sk-…`, `api_key=…`, `Authorization:` / `x-api-key:` values,
 * `token=`, `password=`) and caps the length, marking what was cut.
 *
 * @example
 * ```ts
 * sanitizeText('401 for https://x.io/v1?api_key=abc123 (Authorization: Bearer eyJhbGci)');
 * // '401 for https://x.io/v1?api_key=[REDACTED] (Authorization: [REDACTED]'
 * ```
 */
export function sanitizeText(text: string, maxChars: number = DEFAULT_MAX_ERROR_CHARS): string {
  // redact only what can be kept (plus a margin, so a secret across the cut is still caught):
  // a 1 MB error costs no more than a 2 kB one
  const window = maxChars + 512;
  let out = text.length > window ? text.slice(0, window) : text;
  for (const [pattern, replacement] of SECRETS) {
    out = typeof replacement === 'string' ? out.replace(pattern, replacement) : out.replace(pattern, replacement);
  }
  if (out.length > maxChars || text.length > window) {
    const cut = (text.length > window ? text.length : out.length) - maxChars;
    out = `${out.slice(0, maxChars)}… [${cut} more characters cut]`;
  }
  return out;
}

/**
 * The readable text of any thrown value (an `Error`'s message, a string, else a short JSON
 * rendering), sanitised with {@link sanitizeText}. Never throws.
 *
 * @example
 * ```ts
 * errorText(new Error('Invalid units. Supported: celsius, fahrenheit')); // 'Invalid units. Supported: celsius, fahrenheit'
 * ```
 */
export function errorText(error: unknown, maxChars: number = DEFAULT_MAX_ERROR_CHARS): string {
  let text: string;
  try {
    if (typeof error === 'string') text = error;
    else if (error instanceof Error) {
      const message: unknown = error.message;
      text = typeof message === 'string' ? message || String(error.name) : showValue(message);
    }
    else text = showValue(error);
  } catch {
    text = 'unknown error';
  }
  return sanitizeText(text, maxChars);
}
