/**
 * What the local provider does on its side, as the APIs do: a prompt cache (prefixes seen before
 * are read from it while they live, cache breakpoints write them; an uncached input can make the
 * answer start later), server-side compaction (a summary of the
 * conversation when it grows past the request's threshold, opaque on the Responses API, and taken
 * back in later requests in place of what it summarised), and Anthropic's server-side fallback
 * (a blocked turn answered by the fallback model, or refused with a recommended model).
 *
 * @module
 */
// Node-only module (Buffer): the library's build has no ambient Node types
/// <reference types="node" />
import { asyncScheduler } from 'rxjs';
import { Func, NonNegativeNumber, NonNegativeOrInfinity, validateOptions } from '../core/errors/options.js';
import type { Message } from '../core/events/events.js';
import { MAX_TIMER_MS } from '../core/rx/wait.js';

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u);

/** Tokens of a text, as the local provider counts them: one per 4 characters. */
export const tokensOf = (chars: number): number => Math.ceil(chars / 4);

/**
 * The prompt cache option of `startLocalProvider`: how long a cached prefix lives, and how much
 * slower an answer starts for each 1 000 input tokens not read from the cache.
 *
 * @example
 * ```ts
 * const promptCache: LocalPromptCacheOptions = { ttlMs: 60_000, uncachedMsPer1kTokens: 50 };
 * ```
 */
export interface LocalPromptCacheOptions {
  /**
   * How long a cached prefix is kept after it was last written or read, in ms (a read refreshes
   * it). Defaults to 300 000 (Anthropic's 5-minute cache); `0` caches nothing, `Infinity` keeps
   * every prefix (up to the 64 most recent per key).
   */
  readonly ttlMs?: number;
  /**
   * The wait before the first byte of an answer, in ms per 1 000 of its input tokens that were
   * not read from the cache (written ones count: the provider processed them), so a warm cache
   * answers sooner as well as cheaper. Defaults to 0 (no wait).
   */
  readonly uncachedMsPer1kTokens?: number;
}

/** The checks of {@link LocalPromptCacheOptions} (named `promptCache.<key>` in errors). */
export const PROMPT_CACHE_PROPS = { ttlMs: NonNegativeOrInfinity, uncachedMsPer1kTokens: NonNegativeNumber };

/**
 * The wait before an answer's first byte: `msPer1kTokens` for each 1 000 input tokens not read
 * from the cache, at most what a Node timer takes.
 *
 * @example
 * ```ts
 * uncachedDelayMs(10, 4000, 3000); // 10 (1 000 tokens not read)
 * ```
 */
export function uncachedDelayMs(msPer1kTokens: number, inputTokens: number, cacheRead: number): number {
  const uncached = Math.max(0, inputTokens - cacheRead);
  return Math.min(MAX_TIMER_MS, (msPer1kTokens * uncached) / 1000);
}

/** One prefix the cache holds, and when it was last written or read. */
interface Entry {
  readonly parts: readonly string[];
  touchedAt: number;
}

/**
 * The server's prompt cache: per cache key, the requests seen (each a list of parts: tools,
 * system, messages) — 64 at most per key (past it, the least recently used goes), each kept
 * `ttlMs` after it was last written or read. A request reads the longest run of leading parts it shares with one kept (and refreshes
 * it); with breakpoints (Anthropic's `cache_control`), what it asks cached past that is written.
 * Its clock is `now` (default: `asyncScheduler.now()`).
 *
 * @example
 * ```ts
 * const cache = new PromptCache({ ttlMs: 300_000 });
 * cache.use('k', ['sys', 'hello'], 2); // { read: 0, write: 2 } (in tokens)
 * cache.use('k', ['sys', 'hello', 'more'], 2); // { read: 2, write: 0 }
 * ```
 * @throws {InvalidOptionError} for a `ttlMs` that is not a number >= 0 (or Infinity), or a `now` that is not a function.
 */
export class PromptCache {
  private readonly seen = new Map<string, Entry[]>();
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(options?: { readonly ttlMs?: number; readonly now?: () => number }) {
    const o = validateOptions('PromptCache', { ttlMs: NonNegativeOrInfinity, now: Func }, options);
    this.ttlMs = o.ttlMs ?? 300_000;
    this.now = (o.now as (() => number) | undefined) ?? (() => asyncScheduler.now());
  }

  /** `parts` of a request under `key`: the tokens read from the cache, and those written (the parts up to `cachedParts` not read). */
  use(key: string, parts: readonly string[], cachedParts: number): { read: number; write: number } {
    const now = this.now();
    const earlier = (this.seen.get(key) ?? []).filter((entry) => now - entry.touchedAt < this.ttlMs);
    let shared = 0;
    let best: Entry | undefined;
    for (const before of earlier) {
      let n = 0;
      while (n < before.parts.length && n < parts.length && before.parts[n] === parts[n]) n++;
      if (n > shared) [shared, best] = [n, before];
    }
    if (best !== undefined) best.touchedAt = now; // read: kept another ttlMs
    const chars = (from: number, to: number): number => parts.slice(from, to).reduce((sum, p) => sum + p.length, 0);
    const read = tokensOf(chars(0, shared));
    const write = cachedParts > shared ? tokensOf(chars(shared, cachedParts)) : 0;
    const same = best !== undefined && best.parts.length === parts.length && shared === parts.length;
    if (!same) {
      if (earlier.length >= 64) {
        // the least recently written or read goes
        const stalest = earlier.reduce((oldest, entry, i) => (entry.touchedAt < earlier[oldest]!.touchedAt ? i : oldest), 0);
        earlier.splice(stalest, 1);
      }
      earlier.push({ parts: [...parts], touchedAt: now });
    }
    if (earlier.length === 0) this.seen.delete(key);
    else this.seen.set(key, earlier);
    return { read, write };
  }
}

/** The parts of an Anthropic request (tools, system, each message) and how many of them its last `cache_control` covers (0: none). */
export function anthropicCacheParts(body: Record<string, unknown>): { parts: string[]; cached: number } {
  const parts: string[] = [];
  let cached = 0;
  const marked = (value: unknown): boolean => JSON.stringify(value ?? null).includes('"cache_control"');
  const tools = body['tools'];
  parts.push(JSON.stringify(tools ?? []));
  if (marked(tools)) cached = parts.length;
  parts.push(JSON.stringify(body['system'] ?? ''));
  if (marked(body['system'])) cached = parts.length;
  for (const message of Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : []) {
    parts.push(JSON.stringify(isRecord(message) ? message['content'] : message));
    if (marked(message)) cached = parts.length;
  }
  // a breakpoint marks where the cached prefix ends; the marks themselves are not part of it
  return { parts: parts.map((p) => p.replace(/,"cache_control":\{[^}]*\}/g, '')), cached };
}

/** A short summary of a conversation, as a compaction gives it: what the user asked, turn by turn. */
export function summaryOf(messages: readonly Message[]): string {
  const asked = messages.filter((m) => m.role === 'user').map((m) => (m.content.length > 60 ? `${m.content.slice(0, 60)}…` : m.content));
  return `Summary of the conversation so far (${messages.length} messages): the user asked ${asked.map((a) => `"${a}"`).join(', then ')}.`;
}

/**
 * The summary to compact an Anthropic conversation with, when the request asks for it
 * (`context_management.edits` with `compact_20260112`) and its input reached the edit's trigger
 * (`trigger.value` input tokens, 150 000 by default); `undefined` otherwise.
 */
export function anthropicCompaction(body: Record<string, unknown>, messages: readonly Message[], inputTokens: number): string | undefined {
  const management = body['context_management'];
  const edits = isRecord(management) && Array.isArray(management['edits']) ? (management['edits'] as unknown[]) : [];
  const edit = edits.find((e) => isRecord(e) && e['type'] === 'compact_20260112');
  if (!isRecord(edit)) return undefined;
  const trigger = isRecord(edit['trigger']) && typeof edit['trigger']['value'] === 'number' ? edit['trigger']['value'] : 150_000;
  return inputTokens >= trigger ? summaryOf(messages) : undefined;
}

/**
 * The summary to compact a Responses conversation with, when the request asks for it
 * (`context_management: [{ type: 'compaction', compact_threshold }]`) and its input reached the
 * threshold; `undefined` otherwise.
 */
export function responsesCompaction(body: Record<string, unknown>, messages: readonly Message[], inputTokens: number): string | undefined {
  const management = Array.isArray(body['context_management']) ? (body['context_management'] as unknown[]) : [];
  const entry = management.find((e) => isRecord(e) && e['type'] === 'compaction');
  if (!isRecord(entry)) return undefined;
  const threshold = typeof entry['compact_threshold'] === 'number' ? entry['compact_threshold'] : Infinity;
  return inputTokens >= threshold ? summaryOf(messages) : undefined;
}

/** The local provider's encrypted compaction: the summary, base64url — opaque to a client, read back when it returns. */
export const encryptedCompaction = (summary: string): string => `local-cmp-${Buffer.from(summary, 'utf8').toString('base64url')}`;

/** The summary of an encrypted compaction this provider made; `undefined` for anything else (another provider's). */
export function compactionSummary(blob: unknown): string | undefined {
  if (typeof blob !== 'string' || !blob.startsWith('local-cmp-')) return undefined;
  return Buffer.from(blob.slice('local-cmp-'.length), 'base64url').toString('utf8');
}

/**
 * Messages after the last compaction: a compaction replaces everything before it with its
 * summary (as a system message, after the request's own system messages).
 */
export function afterCompaction(messages: readonly Message[], at: number, summary: string): Message[] {
  const systems = messages.slice(0, at).filter((m) => m.role === 'system');
  return [...systems, { role: 'system', content: summary }, ...messages.slice(at)];
}

/**
 * Where a blocked Anthropic turn goes: the model of the request's first `fallbacks` entry
 * (`<model>-fallback` for `'default'`); `undefined` without `fallbacks` (then it is refused).
 */
export function fallbackTarget(body: Record<string, unknown>, model: string): string | undefined {
  const fallbacks = body['fallbacks'];
  if (fallbacks === 'default') return `${model}-fallback`;
  if (Array.isArray(fallbacks) && isRecord(fallbacks[0]) && typeof fallbacks[0]['model'] === 'string') return fallbacks[0]['model'];
  return undefined;
}
