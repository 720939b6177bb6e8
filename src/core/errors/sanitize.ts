/**
 * Error text is untrusted input on its way into a prompt or a log: bound its length and redact
 * secrets. One place, used by the agent loop and reflectOnError.
 *
 * @module
 */
import { showValue } from './errors.js';

/** Keeps a key and its quote style, redacting the value. */
const keepQuotes = (_m: string, key: string, value: string): string =>
  `${key}${value.startsWith('"') ? '"[REDACTED]"' : value.startsWith("'") ? "'[REDACTED]'" : '[REDACTED]'}`;

type Replacer = (substring: string, ...groups: string[]) => string;

/**
 * Name endings whose values are secrets (`password`, `db_password`, `client_secret`,
 * `openai_api_key`, `AWS_SECRET_ACCESS_KEY`, `private_key`, `session_token`…): the name may have
 * any prefix, so only its ending is matched.
 */
const SECRET_NAME_END =
  String.raw`(?:api[_-]?key|apikey|secret[_-]?access[_-]?key|private[_-]?key|access[_-]?token|` +
  String.raw`auth[_-]?token|refresh[_-]?token|token|secret|password|passwd|passphrase)`;

/**
 * The formats redacted, in order. Every pattern is linear (eslint-plugin-regexp checks the
 * literal ones; the one built from {@link SECRET_NAME_END} has the same shape) and recognises a
 * secret by its start, taking it to its end or to the end of the text: a secret cut by the
 * processing window is still redacted, never half-kept. See the table in spec/core/errors/sanitize.spec.ts.
 */
const SECRETS: readonly (readonly [RegExp, string | Replacer])[] = [
  // PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, PGP…), also inside JSON ("private_key": "-----BEGIN…\n…")
  [/(-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY[A-Z ]{0,10}-----)[\s\S]*?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY[A-Z ]{0,10}-----|$)/g, '$1[REDACTED]'],
  // Authorization / Proxy-Authorization / Cookie / Set-Cookie headers: to the end of the line
  [/\b((?:proxy-)?authorization|(?:set-)?cookie)(["']?\s*[:=]\s*)("?)[^\r\n"]+/gi, '$1$2$3[REDACTED]'],
  [/(x-api-key["']?\s*[:=]\s*)("?)[^\s"]+/gi, '$1$2[REDACTED]'],
  [/\bBearer\s+[A-Za-z0-9._~+/=-]+/g, 'Bearer [REDACTED]'],
  // URL credentials: scheme://user:password@host
  [/(:\/\/[^\s:@/?#]*:)[^\s@/?#]+@/g, '$1[REDACTED]@'],
  // secret query parameters of signed and keyed URLs (?key=AIza…, &sig=…, X-Amz-Signature=…)
  [/([?&;](?:key|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential)=)[^&#\s"'<>]+/gi, '$1[REDACTED]'],
  // provider key formats: OpenAI / Anthropic (sk-, sk-ant-), GitHub (ghp_…, github_pat_), Slack (xoxb-…), Google (AIza…)
  [/\bsk-[A-Za-z0-9_-]{6,}/g, 'sk-[REDACTED]'],
  [/\b(gh[pousr]_|github_pat_)[A-Za-z0-9_]{16,}/g, '$1[REDACTED]'],
  [/\b(xox[abeoprs]-)[A-Za-z0-9-]{6,}/g, '$1[REDACTED]'],
  [/\bAIza[0-9A-Za-z_-]{20,}/g, 'AIza[REDACTED]'],
  // JWTs (eyJ… header, payload, signature): from the header on
  [/\beyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*){0,2}/g, '[REDACTED JWT]'],
  // key=value, key: value, "key": "value", 'key'='value' (query strings, env lines, headers,
  // JSON bodies, arguments); an unterminated quoted value is redacted to the end of its line
  [new RegExp(String.raw`(${SECRET_NAME_END}["']?\s*[=:]\s*)("(?:[^"\\\r\n]|\\.)*"?|'(?:[^'\\\r\n]|\\.)*'?|[^&\s"',;}]+)`, 'gi'), keepQuotes],
];

const SECRET_NAME = new RegExp(`${SECRET_NAME_END}$`, 'i');
const NAME_CHARS = /^[A-Za-z0-9_.-]*$/;

/**
 * Whether a field name holds a secret (`password`, `api_key`, `client_secret`…).
 *
 * @example
 * ```ts
 * isSecretName('db_password'); // true
 * isSecretName('max_tokens'); // false
 * ```
 */
export function isSecretName(name: string): boolean {
  if (name.length > 80 || !NAME_CHARS.test(name)) return false;
  return SECRET_NAME.test(name);
}

/** Default cap on error text placed in a prompt. */
export const DEFAULT_MAX_ERROR_CHARS = 2000;

/**
 * How far past `maxChars` the text is read for redaction, so that a secret straddling the cut is
 * still recognised (every format is recognised within its first few dozen characters).
 */
const REDACTION_MARGIN = 512;

/**
 * Redacts secrets and caps the length, marking what was cut. Formats: `Authorization:` /
 * `Proxy-Authorization:` / `Cookie:` / `Set-Cookie:` / `x-api-key:` values, `Bearer …`,
 * `scheme://user:password@host`, secret URL parameters (`?key=…`, `sig=`, `X-Amz-Signature=`…),
 * `sk-…` (OpenAI, `sk-ant-…` Anthropic), `ghp_…` / `github_pat_…`, `xoxb-…` (Slack), `AIza…`
 * (Google), JWTs, PEM private keys, and any `name=value` / `"name": "value"` whose name ends in
 * a secret word (`api_key`, `token`, `password`, `secret`, `AWS_SECRET_ACCESS_KEY`,
 * `private_key`…).
 *
 * Redaction comes before the cut, and a secret is recognised by its start, so one straddling
 * the cut is never half-kept. Linear time, and at most `maxChars` + 512 characters are read: a
 * 1 MB error costs what a 2 kB one does.
 *
 * @example
 * ```ts
 * sanitizeText('401 for https://x.io/v1?api_key=abc123 (Authorization: Bearer eyJhbGci)');
 * // '401 for https://x.io/v1?api_key=[REDACTED] (Authorization: [REDACTED]'
 * ```
 */
export function sanitizeText(text: string, maxChars: number = DEFAULT_MAX_ERROR_CHARS): string {
  const window = maxChars + REDACTION_MARGIN;
  const cut = text.length > window;
  let out = cut ? text.slice(0, window) : text;
  for (const [pattern, replacement] of SECRETS) {
    out = typeof replacement === 'string' ? out.replace(pattern, replacement) : out.replace(pattern, replacement);
  }
  if (out.length > maxChars || cut) {
    const more = (cut ? text.length : out.length) - maxChars;
    out = `${out.slice(0, maxChars)}… [${more} more characters cut]`;
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
    } else text = showValue(error);
  } catch {
    text = 'unknown error';
  }
  return sanitizeText(text, maxChars);
}
