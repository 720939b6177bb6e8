/**
 * The messages `logEvents` writes that another part reads back (rxheal/chaos's `recordIncident`
 * parses a production log): kept apart from the logger so that reading them costs no logger.
 *
 * @module
 */
import type { CircuitAgentEvent, HedgeEvent, ResumeEvent } from '../core/events/events.js';

type CircuitState = Extract<CircuitAgentEvent, { kind: 'transition' }>['to'];

/** What a hedge event is logged as, by kind (read back by rxheal/chaos's recordIncident). */
export const HEDGE_MESSAGES: Readonly<Record<HedgeEvent['kind'], string>> = {
  started: 'hedge started',
  won: 'hedge won',
  cancelled: 'hedge cancelled',
  failed: 'hedge failed',
  skipped: 'hedge skipped: circuit open',
  denied: 'hedge denied: budget spent',
};

/** What a resumed stream is logged as, by why it was resumed (read back by rxheal/chaos's recordIncident). */
export const RESUME_MESSAGES: Readonly<Record<ResumeEvent['reason'], string>> = {
  dropped: 'stream dropped, resuming',
  stalled: 'stream stalled, resuming',
};

/**
 * How a breaker usually comes into each state: its transition is logged without `from` when it
 * came this way (the reference's `circuit breaker opened tool_name=… failures=… reset_ms=…`),
 * with `from` otherwise (a failed probe: half-open → open). recordIncident reads a record
 * without `from` as this.
 */
export const USUAL_CIRCUIT_FROM: Readonly<Record<CircuitState, CircuitState>> = { open: 'closed', 'half-open': 'open', closed: 'half-open' };
