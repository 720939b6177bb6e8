/**
 * Names in the Redis stores' keys and where those keys live: a name as one key part
 * ({@link keyPart}: no two names share a key), the hash tag of a breaker, a rate-limit or a spend key
 * ({@link hashTag}: all its keys in one slot), and a key's Redis Cluster slot ({@link keySlot}:
 * which master a command goes to, for its clock).
 *
 * @module
 */
// Node-only module (Buffer: a key's bytes in UTF-8), as the rest of rxheal/redis
/// <reference types="node" />

/**
 * A name as one part of a Redis key (a breaker's name, a rate limiter's key, a limit's id): the
 * one rule both stores build their keys with. `%`, `:`, `{` and `}` are percent-escaped (`%25`,
 * `%3A`, `%7B`, `%7D`), so an escaped name holds no `:` and no brace, and a key — the hash tag
 * (see {@link hashTag}) and fixed suffixes (`:votes`, `:nodes`, `:<limit id>`), joined by `:` —
 * reads back one way: no two names ever share a key (the breaker `tool:x:votes` is not `tool:x`'s
 * vote set), nor a hash tag. Names with none of these characters keep their text as it is.
 *
 * @example
 * ```ts
 * keyPart('tool:x:votes'); // 'tool%3Ax%3Avotes'
 * keyPart('gpt-4o'); // 'gpt-4o'
 * ```
 */
export function keyPart(name: string): string {
  return name.replace(/[%:{}]/g, (c) => ESCAPES[c]!);
}
const ESCAPES: Readonly<Record<string, string>> = { '%': '%25', ':': '%3A', '{': '%7B', '}': '%7D' };

/**
 * `{namespace:kind:name}`: the hash tag of one breaker (`kind` `b`), one rate-limit key (`rl`), one spend key (`sp`) or one journaled run (`j`),
 * which begins every key of it. Redis Cluster hashes only the text inside the braces, so all the
 * keys of one breaker (its verdict, votes, node set) share one slot — one script may touch them
 * all — while two breakers' keys spread over the cluster's slots (no one hot slot for a whole
 * fleet). The name is one {@link keyPart} (no `:`, no brace) and the namespace has no `}`, so the
 * tag ends where it should and reads back one way.
 *
 * @example
 * ```ts
 * hashTag('rxheal', 'b', 'model:gpt-4o'); // '{rxheal:b:model%3Agpt-4o}'
 * ```
 */
export function hashTag(namespace: string, kind: 'b' | 'rl' | 'sp' | 'j', name: string): string {
  return `{${namespace}:${kind}:${keyPart(name)}}`;
}

/** CRC16-CCITT (XMODEM), a byte at a time: Redis Cluster's key hash. */
const CRC16 = Array.from({ length: 256 }, (_, byte) => {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  return crc;
});

/**
 * The Redis Cluster slot of `key`, as Redis computes it (`CLUSTER KEYSLOT`): CRC16 of its hash
 * tag — the text between its first `{` and the first `}` after it, when that is not empty — or
 * of the whole key, in UTF-8, modulo 16 384. How a store knows which master a command goes to.
 *
 * @example
 * ```ts
 * keySlot('somekey'); // 11058
 * keySlot('{rxheal:b:model%3Agpt}:votes') === keySlot('{rxheal:b:model%3Agpt}'); // true: one tag, one slot
 * ```
 */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const byte of Buffer.from(hashed, 'utf8')) crc = ((crc << 8) & 0xffff) ^ CRC16[((crc >> 8) ^ byte) & 0xff]!;
  return crc & 16383;
}
