/**
 * What a model pool remembers between calls: each member's health (blocked until its last 429's
 * `retry-after` ends, calls in flight, a probe in flight, its last success) and each
 * conversation's place (the member it was placed on, the one it is on now, the prefix cached
 * there), least recently used forgotten first; how members are ranked by a strategy; and the
 * default wait-or-move rule.
 *
 * @module
 */

/** One member's health, as the pool saw it. */
export interface MemberHealth {
  /** Until when (scheduler time) its last 429 asked to wait; -Infinity: not blocked. */
  blockedUntil: number;
  /** When a call there last succeeded; -Infinity: never. */
  okAt: number;
  /** A conversation's call is trying the member again after a block (a probe): one at a time. */
  probing: boolean;
  /** Calls at the member now (what `'least-loaded'` ranks by). */
  inFlight: number;
}

/** Where a conversation is. */
export interface Placement {
  /** The member it was placed on (where it returns). */
  readonly home: number;
  /** The member it is on now (its cache is warm there). */
  current: number;
  /** Its last call's input tokens on `current`: the prefix cached there. */
  cachedTokens: number;
}

/**
 * The figures the default rule weighs (see `WaitOrMoveFigures` in `rxheal`'s `modelPool`).
 *
 * @example
 * ```ts
 * const f: WaitFigures = { to: 'model:b', waitMs: 4_000, maxWaitMs: 10_000, deadlineLeftMs: undefined, moveUsd: 0.07, waitUsd: 0.04 };
 * ```
 */
export interface WaitFigures {
  readonly to: string | undefined;
  readonly waitMs: number;
  readonly maxWaitMs: number;
  readonly deadlineLeftMs: number | undefined;
  readonly moveUsd: number | undefined;
  readonly waitUsd: number;
}

/**
 * The default wait-or-move rule: wait when the wait fits `maxWaitMs` and ends before the
 * deadline, and either there is nowhere to move or waiting costs no more than moving (without
 * prices: every wait that fits).
 *
 * @example
 * ```ts
 * waitOrMove({ to: 'model:b', waitMs: 4_000, maxWaitMs: 10_000, deadlineLeftMs: undefined, moveUsd: 0.07, waitUsd: 0.04 }); // 'wait'
 * waitOrMove({ to: 'model:b', waitMs: 9_000, maxWaitMs: 10_000, deadlineLeftMs: undefined, moveUsd: 0.07, waitUsd: 0.09 }); // 'move'
 * ```
 */
export function waitOrMove(f: WaitFigures): 'wait' | 'move' {
  if (f.waitMs > f.maxWaitMs) return 'move';
  if (f.deadlineLeftMs !== undefined && f.waitMs >= f.deadlineLeftMs) return 'move';
  if (f.to === undefined || f.moveUsd === undefined) return 'wait';
  return f.waitUsd <= f.moveUsd ? 'wait' : 'move';
}

/**
 * The state of one pool (see the module): members by index, conversations by key.
 *
 * @example
 * ```ts
 * const state = new PoolState(3, 10_000);
 * state.members[0]!.blockedUntil = now + 5_000;
 * state.rank('round-robin', now, () => false, () => undefined, true); // [1, 2, 0]: the blocked member last
 * ```
 */
export class PoolState {
  readonly members: MemberHealth[];
  private readonly placements = new Map<string, Placement>();
  private turn = 0;

  constructor(
    size: number,
    private readonly maxConversations: number,
  ) {
    this.members = Array.from({ length: size }, () => ({ blockedUntil: -Infinity, okAt: -Infinity, probing: false, inFlight: 0 }));
  }

  /** The conversation's placement (now its most recently used), if it has one. */
  placement(key: string): Placement | undefined {
    const p = this.placements.get(key);
    if (p === undefined) return undefined;
    this.placements.delete(key);
    this.placements.set(key, p);
    return p;
  }

  /** Places a conversation on `member` (the least recently used one forgotten past the limit). */
  place(key: string, member: number): Placement {
    const p: Placement = { home: member, current: member, cachedTokens: 0 };
    this.placements.set(key, p);
    if (this.placements.size > this.maxConversations) this.placements.delete(this.placements.keys().next().value!);
    return p;
  }

  /** Conversations remembered. */
  get conversations(): number {
    return this.placements.size;
  }

  /** Whether the member is waiting out a 429's `retry-after` at `now`. */
  blocked(member: number, now: number): boolean {
    return this.members[member]!.blockedUntil > now;
  }

  /**
   * The members in the order a call should try them: by the strategy, members neither blocked
   * nor `open` (their breaker) first. `'round-robin'` starts from the next member each time a
   * call is placed (`placing`), from the same one otherwise. `latency(j)`: the member's median
   * time to first token, undefined with no sample.
   */
  rank(
    strategy: 'round-robin' | 'least-loaded' | 'lowest-latency',
    now: number,
    open: (j: number) => boolean,
    latency: (j: number) => number | undefined,
    placing: boolean,
  ): number[] {
    const n = this.members.length;
    const start = strategy === 'round-robin' ? (placing ? this.turn++ : this.turn) % n : 0;
    const order = Array.from({ length: n }, (_, i) => (start + i) % n);
    const score = (j: number): number => (strategy === 'least-loaded' ? this.members[j]!.inFlight : strategy === 'lowest-latency' ? (latency(j) ?? -1) : 0);
    const down = (j: number): number => (this.blocked(j, now) || open(j) ? 1 : 0);
    // a stable sort: ties keep the rotation's order
    return order.sort((a, b) => down(a) - down(b) || score(a) - score(b));
  }
}
