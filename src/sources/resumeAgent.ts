/**
 * {@link resumeAgent}: a journaled run resumed from its journal, in any process that builds the
 * same configuration (the machinery is durableRun.ts; the plan it follows, resumePlan.ts).
 *
 * @module
 */
import type { Observable } from 'rxjs';
import type { AgentEvent } from '../core/events/events.js';
import { InvalidOptionError } from '../core/errors/errors.js';
import { NAMES, resolveAgent, type AgentConfig, type ResumeConfig } from './agentConfig.js';
import { agentOf } from './runAgent.js';

/**
 * Resumes a journaled run (`runAgent({ runId, journal })`), in any process that builds the same
 * configuration: the journal's events are replayed first, each with `replayed: true`, then the
 * run goes on live. What the journal holds is never done again: a completed model turn is not
 * requested again, a completed tool call not run again, and the budget counts what was spent.
 *
 * - A model turn cut in the middle is run again (no delta is journaled, so none is replayed).
 * - A tool call whose execution started and never finished runs again if the tool is
 *   `idempotent`; otherwise it is never run blindly: its `verify` says whether the effect
 *   happened (its result then is the call's), or else a `tool-outcome-unknown` event and either
 *   a tool message telling the model (`onUnknownOutcome: 'tell-model'`, the default) or
 *   `ToolOutcomeUnknownError` (`'error'`).
 * - A run that answered replays its answer and calls nothing; one that failed replays its error
 *   (an `Error` with the journaled name and message).
 * - A run suspended for approvals: `approvals` decides each waiting call by its id (approved: it
 *   runs; denied: the model is told it was denied, and why). Calls of the same turn that need no
 *   approval run first; the run suspends once, with every call still waiting. Without approvals
 *   (or with some calls still undecided) it suspends again.
 * - A configuration that changed since the start (instruction, tools, schemas, models, the
 *   conversation) is a `JournalMismatchError` naming what differs, unless `allowChanged` lists it.
 *
 * As in `runAgent`, a `message` event means its record is in the journal.
 *
 * @example
 * ```ts
 * const journal = fileJournal({ dir: './runs' });
 * resumeAgent({ ...config, runId: 'order-7421', journal, approvals: { call_1: { approved: true } } })
 *   .subscribe((e) => console.log(e.replayed ? 'replayed' : 'live', e.type));
 * ```
 * @throws {InvalidOptionError} at once, without a `journal` or a `runId`, or for any other invalid
 *   option. The run errors with `InvalidOptionError` for an approval naming a call that does not
 *   wait for one, `JournalCorruptError` for a journal that is not an rxheal run's (or of a newer
 *   version), `JournalMismatchError`, or `RunLockedError` while another holder runs it — nothing written.
 */
export function resumeAgent(config: ResumeConfig): Observable<AgentEvent> {
  const given: unknown = config;
  // not an object: resolveAgent says so
  if (typeof given !== 'object' || given === null) return agentOf(resolveAgent(config, 'resumeAgent'));
  const { approvals, ...rest } = config;
  for (const key of ['journal', 'runId'] as const)
    if (rest[key] === undefined) throw new InvalidOptionError('resumeAgent', key, undefined, `${NAMES[key]} (resumeAgent resumes a journaled run)`);
  return agentOf(resolveAgent(rest as AgentConfig, 'resumeAgent', approvals));
}
