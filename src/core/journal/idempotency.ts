/**
 * Idempotency keys: one per logical tool call, the same for every retry, hedge, fallback and
 * resume of it, derived from where the call stands in its run — the run's id, the step (the
 * model turn that asked for it), the call's index in that turn's message and the tool's name —
 * never from the provider's call id (a model asked again would make another). What carries the
 * key to a remote service: {@link idempotencyHeaders} (HTTP), {@link IDEMPOTENCY_META_KEY} (MCP
 * `_meta`). And the hash the effect ledger keys by and keeps of a call's arguments.
 *
 * @module
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

/**
 * The name of the key in an MCP `tools/call` request's `_meta` (rxheal/mcp and `rxheal-mcp-proxy`
 * set it when a key is known): a server that deduplicates by key reads it there.
 *
 * @example
 * ```ts
 * const key = request.params._meta?.[IDEMPOTENCY_META_KEY]; // 'order-7421/3/0/charge'
 * ```
 */
export const IDEMPOTENCY_META_KEY = 'io.rxheal/idempotency-key';

/**
 * The idempotency key of one tool call: `<runId>/<step>/<index>/<tool>`.
 *
 * @example
 * ```ts
 * effectKey('order-7421', 3, 0, 'charge'); // 'order-7421/3/0/charge'
 * ```
 */
export function effectKey(runId: string, step: number, index: number, tool: string): string {
  return `${runId}/${step}/${index}/${tool}`;
}

/**
 * A fresh random name: `prefix-` and a UUID (where the runtime has `crypto.randomUUID`).
 *
 * @example
 * ```ts
 * randomName('run'); // 'run-0b6f2c1e-…'
 * ```
 */
export function randomName(prefix: string): string {
  const random = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto?.randomUUID?.() ?? Math.random().toString(36).slice(2);
  // joined, not concatenated: one flat string. Node builds a UUID by concatenating its hex bytes, and
  // V8 keeps such a string as the tree of its concatenations (15 nodes, ~480 B) until something
  // flattens it; a run's id lives as long as the run (an idle run's heap, figure g)
  return [prefix, random].join('-');
}

/**
 * A run id for the keys of a run that is not journaled (one per run: its retries and hedges share
 * it; nothing outside the run can).
 *
 * @example
 * ```ts
 * freshRunId(); // 'run-0b6f2c1e-…'
 * ```
 */
export const freshRunId = (): string => randomName('run');

/**
 * The HTTP header that carries a tool call's key (`Idempotency-Key`, as Stripe and the IETF draft
 * name it), from the context `execute` was handed; no header when the context has no key (a
 * direct call of `execute`, outside a run).
 *
 * @example
 * ```ts
 * execute: (args, ctx) => fetch(url, { method: 'POST', body: JSON.stringify(args), headers: { ...idempotencyHeaders(ctx) }, signal: ctx.signal }),
 * ```
 */
export function idempotencyHeaders(context: { readonly idempotencyKey?: string | undefined } | undefined): Record<string, string> {
  const key = context?.idempotencyKey;
  return typeof key === 'string' && key !== '' ? { 'Idempotency-Key': key } : {};
}

/**
 * A value's JSON with every object's keys in order: two argument objects that differ only in key
 * order are the same arguments.
 *
 * @example
 * ```ts
 * canonicalJson({ b: 1, a: [true, { d: 2, c: 3 }] }); // '{"a":[true,{"c":3,"d":2}],"b":1}'
 * ```
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
}

/**
 * The name of the hash the ledger keys and compares by, as its store runs' prefix says it
 * (`fx2-`): SHA-256 (`@noble/hashes`, audited, synchronous — the ledger runs in the scheduler's
 * time, virtual time too, where a Web Crypto promise would never settle — and the same in every
 * runtime). A change of hash takes a new prefix, so a ledger never compares hashes of two kinds.
 *
 * @example
 * ```ts
 * HASH_SCHEME; // 'fx2'
 * ```
 */
export const HASH_SCHEME = 'fx2';

/**
 * A text's SHA-256 (of its UTF-8 bytes), its first 128 bits as 32 hex digits: the same in every
 * process, runtime and version of this scheme ({@link HASH_SCHEME}). Not a secret: a key or
 * arguments can be guessed from it.
 *
 * @example
 * ```ts
 * textHash('order-7421/3/0/charge').length; // 32
 * ```
 */
export function textHash(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text))).slice(0, 32);
}

/**
 * The hash of a call's arguments as the model sent them (key order aside): what the ledger keeps
 * to tell a re-planned call from the recorded one.
 *
 * @example
 * ```ts
 * argsHash({ amount: 5, to: 'acct_1' }) === argsHash({ to: 'acct_1', amount: 5 }); // true
 * ```
 */
export function argsHash(args: unknown): string {
  return textHash(canonicalJson(args)).slice(0, 16);
}
