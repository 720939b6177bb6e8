/** What a chat UI shows of a run's or a turn's events. */
import type { AgentEvent } from '../../src/core/events/events.js';

/** The answer text a consumer would show: deltas appended, `reset` clears. */
export function shownText(events: readonly AgentEvent[]): string {
  let text = '';
  for (const e of events) {
    if (e.type === 'reset') text = '';
    if (e.type === 'text-delta') text += e.text;
  }
  return text;
}
