/**
 * Redis Cluster's rules for keys, as the specs check the stores' layout against them: what it
 * hashes of a key (its hash tag), and the keys of a script command.
 */

/** What Redis Cluster hashes of a key: the text between the first `{` and the next `}`, when not empty; else the whole key. */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

/** The keys of an `EVAL`/`EVALSHA` command (`[cmd, script, numkeys, ...keys, ...args]`). */
export function keysOf(args: readonly string[]): string[] {
  return args.slice(3, 3 + Number(args[2]));
}
