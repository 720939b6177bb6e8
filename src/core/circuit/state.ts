/**
 * A breaker's vocabulary: its states, why it moves, and the event of each move — plain types
 * that the breaker, the permit protocol, the hub and the fleet all speak, so none of them needs
 * the state machine itself.
 *
 * @module
 */
/** The breaker's state. */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** Why the breaker changed state. */
export type TransitionReason =
  | 'failure_threshold'
  | 'failure_rate'
  | 'reset_timeout'
  | 'probe_success'
  | 'probe_failure'
  | 'probe_timeout'
  | 'isolated'
  | 'reset'
  | 'restored'
  // with a fleet: a 429 with retry-after seen here; a quorum of nodes opened; another node saw a
  // 429; the fleet's prober failed / succeeded; isolated / reset by hand on another node; this node
  // holds the probe lease
  | 'rate_limit'
  | 'fleet_open'
  | 'fleet_rate_limit'
  | 'fleet_probe_failure'
  | 'fleet_probe_success'
  | 'fleet_isolated'
  | 'fleet_reset'
  | 'probe_lease';

/** One state change, as emitted by {@link CircuitBreaker.events$}. */
export interface CircuitEvent {
  readonly breaker: string;
  readonly from: CircuitState;
  /**
   * The new state. Equal to `from` (`open`) only in a fleet, for a node waiting on the fleet's
   * prober (open, its own period over) that the prober's failure re-opens for a fresh period
   * (`fleet_probe_failure`, or another verdict re-opening it then).
   */
  readonly to: CircuitState;
  /** Scheduler time of the change. */
  readonly at: number;
  readonly reason: TransitionReason;
  /** Failures counted when the breaker opened (consecutive, or in the window); else 0. */
  readonly failures: number;
  /** On opening (not by `isolate()` or `restoreBreaker`): ms until it admits a probe, i.e. `resetTimeoutMs`. */
  readonly retryAfterMs?: number;
}
