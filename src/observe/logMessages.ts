/**
 * The messages `logEvents` writes that another part reads back (rxheal/chaos's `recordIncident`
 * parses a production log): kept apart from the logger so that reading them costs no logger.
 *
 * @module
 */
import type { HedgeEvent } from '../core/events/events.js';

/** What a hedge event is logged as, by kind (read back by rxheal/chaos's recordIncident). */
export const HEDGE_MESSAGES: Readonly<Record<HedgeEvent['kind'], string>> = {
  started: 'hedge started',
  won: 'hedge won',
  cancelled: 'hedge cancelled',
  failed: 'hedge failed',
  skipped: 'hedge skipped: circuit open',
  denied: 'hedge denied: budget spent',
};
