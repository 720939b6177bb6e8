/**
 * The events hub: where every operator reports what the healing did. Operators never log or
 * export on their own; users (and `runAgent`) subscribe to `events$`.
 *
 * @module
 */
import { Observable, type Observer, type Subscriber, type Subscription } from 'rxjs';
import type { CircuitEvent } from '../circuit/state.js';
import type { HealEvent } from '../events/events.js';
import type { Watchable } from '../circuit/permit.js';

/**
 * A stream of {@link HealEvent}s. Give one to operators (`hub` option) and to `runAgent`, which
 * surfaces its events in the run's own stream.
 *
 * @example
 * ```ts
 * const hub = new HealHub();
 * hub.events$.subscribe((e) => console.log(e.type, e));
 * call$.pipe(retryWithBackoff({ hub, target: 'tool:get_weather' }));
 * ```
 */
export class HealHub {
  /**
   * Who follows `events$`, in subscription order: one subscriber, several (an array replaced, not
   * changed, on each subscription and unsubscription: a report goes to those following when it
   * began, as a Subject's does), or none. Not a Subject: a run's hub has one follower, the run,
   * and a Subject's arrays and per-subscriber subscriptions weigh ~0.55 kB a run (figure g, heap
   * per idle stream: bench/README.md).
   */
  private followers: Subscriber<HealEvent> | readonly Subscriber<HealEvent>[] | undefined = undefined;
  /** Breakers watched (made at the first watch); while the hub has subscribers, it is in each one's {@link Audience}. */
  private watched: Set<Watchable> | undefined;

  /**
   * Every event reported, as it happens. Hot: subscribe before the work starts. Watched breakers
   * are followed only while someone subscribes, so a hub nobody listens to (a finished run's)
   * holds no observer on a breaker that outlives it. A listener that throws disturbs neither the
   * operators reporting nor the other listeners: RxJS reports the throw (`config.onUnhandledError`),
   * as for any subscriber.
   */
  readonly events$: Observable<HealEvent> = new Observable<HealEvent>((subscriber) => {
    const followers = this.followers;
    this.followers =
      followers === undefined ? subscriber : Array.isArray(followers) ? [...followers, subscriber] : [followers as Subscriber<HealEvent>, subscriber];
    if (followers === undefined) this.follow(true);
    return () => this.unfollow(subscriber);
  });

  /** Reports one event to every subscriber. */
  report(event: HealEvent): void {
    const followers = this.followers;
    if (followers === undefined) return;
    if (!Array.isArray(followers)) (followers as Subscriber<HealEvent>).next(event);
    else for (const follower of followers) follower.next(event);
  }

  /** Reports a breaker's transitions (once per breaker, however often called). */
  watch(breaker: Watchable): void {
    const watched = (this.watched ??= new Set());
    if (watched.has(breaker)) return;
    watched.add(breaker);
    if (this.followers !== undefined) audienceOf(breaker).add(this);
  }

  /** A subscriber to `events$` leaves (the last one: watched breakers are let go). */
  private unfollow(subscriber: Subscriber<HealEvent>): void {
    const followers = this.followers;
    if (followers === subscriber) this.followers = undefined;
    else if (Array.isArray(followers)) {
      const i = followers.indexOf(subscriber);
      if (i < 0) return;
      const rest = followers.filter((_, j) => j !== i);
      this.followers = rest.length === 1 ? rest[0] : rest;
    } else return;
    if (this.followers === undefined) this.follow(false);
  }

  /** The first subscriber came (`on`), or the last one left: every watched breaker is followed, or let go. */
  private follow(on: boolean): void {
    const watched = this.watched;
    if (watched === undefined) return;
    for (const breaker of watched) {
      const audience = audienceOf(breaker);
      if (on) audience.add(this);
      else audience.delete(this);
    }
  }
}

/**
 * The hubs following one breaker, on its one channel: a single subscription to the breaker's
 * `events$` while any hub follows it, each transition handed to every hub that follows it when the
 * transition is announced (as a Subject would: a hub that came during it hears the next one).
 * One subscription per breaker rather than per hub: a run's hub follows its models' breakers, and
 * a subscription each weighed ~0.4 kB a breaker per run (figure g, heap per idle stream).
 */
class Audience implements Partial<Observer<CircuitEvent>> {
  private readonly hubs = new Set<HealHub>();
  private following: Subscription | undefined = undefined;

  constructor(private readonly breaker: Watchable) {}

  add(hub: HealHub): void {
    this.hubs.add(hub);
    this.following ??= this.breaker.events$.subscribe(this);
  }

  delete(hub: HealHub): void {
    if (!this.hubs.delete(hub) || this.hubs.size > 0) return;
    const following = this.following;
    this.following = undefined;
    following?.unsubscribe();
  }

  next(event: CircuitEvent): void {
    const hubs = this.hubs;
    const { breaker, from, to, at, reason, failures, retryAfterMs } = event;
    for (const hub of Array.from(hubs)) {
      // an event object per hub, as when each followed the breaker itself
      if (hubs.has(hub))
        hub.report({ type: 'circuit', breaker, kind: 'transition', from, to, reason, failures, at, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
    }
  }
}

/** Each watched breaker's audience (weakly held: a breaker nobody keeps takes its audience with it). */
const audiences = new WeakMap<Watchable, Audience>();

function audienceOf(breaker: Watchable): Audience {
  let audience = audiences.get(breaker);
  if (audience === undefined) audiences.set(breaker, (audience = new Audience(breaker)));
  return audience;
}

/** The hub (and target name) operators report to when created without a `hub` option; see {@link withDefaultHub}. */
export interface DefaultHub {
  readonly hub: HealHub;
  /** What a `retryWithBackoff` created without a `target` names (e.g. `model:gpt`). */
  readonly target: string;
}

let current: DefaultHub | undefined;

/**
 * Runs `build` — a user callback that composes operators, such as `fallbackModel`'s `perModel` —
 * so that the operators it creates without a `hub` option report to `defaults.hub` (and a
 * `retryWithBackoff` without a `target` names `defaults.target`). Only operators created while
 * `build` runs, synchronously, are affected; an explicit `hub` or `target` always wins.
 *
 * @example
 * ```ts
 * const healed$ = withDefaultHub({ hub: runHub, target: 'model:gpt' }, () => perModel('gpt', stream$));
 * ```
 */
export function withDefaultHub<T>(defaults: DefaultHub | undefined, build: () => T): T {
  const previous = current;
  current = defaults;
  try {
    return build();
  } finally {
    current = previous;
  }
}

/**
 * The default hub of the callback running now (see {@link withDefaultHub}), if any: what an
 * operator reports to when created without a `hub` option.
 *
 * @example
 * ```ts
 * const hub = options.hub ?? defaultHub()?.hub;
 * ```
 */
export function defaultHub(): DefaultHub | undefined {
  return current;
}

/**
 * Several hubs as one (an operator's own `hub` and the run's): each event reported reaches each
 * hub once, and a watched breaker is watched by each. Its own `events$` has what was reported
 * through it. Made by {@link joinHubs}.
 */
class JoinedHub extends HealHub {
  constructor(readonly members: readonly HealHub[]) {
    super();
  }

  override report(event: HealEvent): void {
    super.report(event);
    for (const hub of this.members) hub.report(event);
  }

  override watch(breaker: Watchable): void {
    for (const hub of this.members) hub.watch(breaker);
  }
}

/**
 * The distinct hubs given, as one: `undefined` for none, the hub itself for one (the same hub
 * given twice is one), else a hub that reports each event to every one of them once — never
 * twice to the same hub.
 *
 * @example
 * ```ts
 * const hub = joinHubs([options.hub, context.hub]); // a fallbackModel's own hub and the run's
 * hub?.report({ type: 'fallback', from: 'model:gpt', to: 'model:claude', reason: 'server_error', midStream: false });
 * ```
 */
export function joinHubs(hubs: readonly (HealHub | undefined)[]): HealHub | undefined {
  const distinct: HealHub[] = [];
  const add = (hub: HealHub | undefined): void => {
    if (hub === undefined) return;
    if (hub instanceof JoinedHub) for (const member of hub.members) add(member);
    else if (!distinct.includes(hub)) distinct.push(hub);
  };
  for (const hub of hubs) add(hub);
  return distinct.length <= 1 ? distinct[0] : new JoinedHub(distinct);
}
